"""The ``CORBA`` module of the IDL-to-Python mapping.

Strategy: a namespace that re-exports the runtime under the mapping's names
(``CORBA.Any``, ``CORBA.TC_long``, ``CORBA.tk_struct``, ``CORBA.BAD_PARAM``,
``CORBA.ORB_init`` ...), so user code written for omniORBpy reads the same.
"""

from __future__ import annotations

from cosnotify.orb.any import Any
from cosnotify.orb.exceptions import *  # noqa: F403 - the system exceptions
from cosnotify.orb.exceptions import (
    COMPLETED_MAYBE,
    COMPLETED_NO,
    COMPLETED_YES,
    OMGVMCID,
    CompletionStatus,
    Exception,
    SystemException,
    UserException,
)
from cosnotify.orb.interface import Object
from cosnotify.orb.orb import ORB, ORB_ID, ORB_init
from cosnotify.orb.tcfactory import StructMember, UnionMember
from cosnotify.orb.typecode import (
    TC_Object,
    TC_Principal,
    TC_TypeCode,
    TC_any,
    TC_boolean,
    TC_char,
    TC_double,
    TC_float,
    TC_long,
    TC_longdouble,
    TC_longlong,
    TC_null,
    TC_octet,
    TC_short,
    TC_string,
    TC_ulong,
    TC_ulonglong,
    TC_ushort,
    TC_void,
    TC_wchar,
    TC_wstring,
    TCKind,
    TypeCode,
    tk_abstract_interface,
    tk_alias,
    tk_any,
    tk_array,
    tk_boolean,
    tk_char,
    tk_component,
    tk_double,
    tk_enum,
    tk_event,
    tk_except,
    tk_fixed,
    tk_float,
    tk_home,
    tk_local_interface,
    tk_long,
    tk_longdouble,
    tk_longlong,
    tk_native,
    tk_null,
    tk_objref,
    tk_octet,
    tk_Principal,
    tk_sequence,
    tk_short,
    tk_string,
    tk_struct,
    tk_TypeCode,
    tk_ulong,
    tk_ulonglong,
    tk_union,
    tk_ushort,
    tk_value,
    tk_value_box,
    tk_void,
    tk_wchar,
    tk_wstring,
)

TRUE = True
FALSE = False
