"""The ``CORBA`` module of the IDL-to-Python mapping.

Strategy: a namespace that re-exports the runtime under the mapping's names
(``CORBA.Any``, ``CORBA.TC_long``, ``CORBA.tk_struct``, ``CORBA.BAD_PARAM``,
``CORBA.ORB_init`` ...), so user code written for omniORBpy reads the same.
"""

from __future__ import annotations

from cosnotify.orb.any import Any
from cosnotify.orb.exceptions import (
    ACTIVITY_COMPLETED as ACTIVITY_COMPLETED,
)
from cosnotify.orb.exceptions import (
    ACTIVITY_REQUIRED as ACTIVITY_REQUIRED,
)
from cosnotify.orb.exceptions import (
    BAD_CONTEXT as BAD_CONTEXT,
)
from cosnotify.orb.exceptions import (
    BAD_INV_ORDER as BAD_INV_ORDER,
)
from cosnotify.orb.exceptions import (
    BAD_OPERATION as BAD_OPERATION,
)
from cosnotify.orb.exceptions import (
    BAD_PARAM as BAD_PARAM,
)
from cosnotify.orb.exceptions import (
    BAD_QOS as BAD_QOS,
)
from cosnotify.orb.exceptions import (
    BAD_TYPECODE as BAD_TYPECODE,
)
from cosnotify.orb.exceptions import (
    CODESET_INCOMPATIBLE as CODESET_INCOMPATIBLE,
)
from cosnotify.orb.exceptions import (
    COMM_FAILURE as COMM_FAILURE,
)
from cosnotify.orb.exceptions import (
    COMPLETED_MAYBE as COMPLETED_MAYBE,
)
from cosnotify.orb.exceptions import (
    COMPLETED_NO as COMPLETED_NO,
)
from cosnotify.orb.exceptions import (
    COMPLETED_YES as COMPLETED_YES,
)
from cosnotify.orb.exceptions import (
    DATA_CONVERSION as DATA_CONVERSION,
)
from cosnotify.orb.exceptions import (
    FREE_MEM as FREE_MEM,
)
from cosnotify.orb.exceptions import (
    IMP_LIMIT as IMP_LIMIT,
)
from cosnotify.orb.exceptions import (
    INITIALIZE as INITIALIZE,
)
from cosnotify.orb.exceptions import (
    INTERNAL as INTERNAL,
)
from cosnotify.orb.exceptions import (
    INTF_REPOS as INTF_REPOS,
)
from cosnotify.orb.exceptions import (
    INV_FLAG as INV_FLAG,
)
from cosnotify.orb.exceptions import (
    INV_IDENT as INV_IDENT,
)
from cosnotify.orb.exceptions import (
    INV_OBJREF as INV_OBJREF,
)
from cosnotify.orb.exceptions import (
    INV_POLICY as INV_POLICY,
)
from cosnotify.orb.exceptions import (
    INVALID_ACTIVITY as INVALID_ACTIVITY,
)
from cosnotify.orb.exceptions import (
    INVALID_TRANSACTION as INVALID_TRANSACTION,
)
from cosnotify.orb.exceptions import (
    MARSHAL as MARSHAL,
)
from cosnotify.orb.exceptions import (
    NO_IMPLEMENT as NO_IMPLEMENT,
)
from cosnotify.orb.exceptions import (
    NO_MEMORY as NO_MEMORY,
)
from cosnotify.orb.exceptions import (
    NO_PERMISSION as NO_PERMISSION,
)
from cosnotify.orb.exceptions import (
    NO_RESOURCES as NO_RESOURCES,
)
from cosnotify.orb.exceptions import (
    NO_RESPONSE as NO_RESPONSE,
)
from cosnotify.orb.exceptions import (
    OBJ_ADAPTER as OBJ_ADAPTER,
)
from cosnotify.orb.exceptions import (
    OBJECT_NOT_EXIST as OBJECT_NOT_EXIST,
)
from cosnotify.orb.exceptions import (
    OMGVMCID as OMGVMCID,
)
from cosnotify.orb.exceptions import (
    PERSIST_STORE as PERSIST_STORE,
)
from cosnotify.orb.exceptions import (
    REBIND as REBIND,
)
from cosnotify.orb.exceptions import (
    SYSTEM_EXCEPTIONS as SYSTEM_EXCEPTIONS,
)
from cosnotify.orb.exceptions import (
    TIMEOUT as TIMEOUT,
)
from cosnotify.orb.exceptions import (
    TRANSACTION_MODE as TRANSACTION_MODE,
)
from cosnotify.orb.exceptions import (
    TRANSACTION_REQUIRED as TRANSACTION_REQUIRED,
)
from cosnotify.orb.exceptions import (
    TRANSACTION_ROLLEDBACK as TRANSACTION_ROLLEDBACK,
)
from cosnotify.orb.exceptions import (
    TRANSACTION_UNAVAILABLE as TRANSACTION_UNAVAILABLE,
)
from cosnotify.orb.exceptions import (
    TRANSIENT as TRANSIENT,
)
from cosnotify.orb.exceptions import (
    UNKNOWN as UNKNOWN,
)
from cosnotify.orb.exceptions import (
    CompletionStatus as CompletionStatus,
)
from cosnotify.orb.exceptions import (
    Exception as Exception,
)
from cosnotify.orb.exceptions import (
    SystemException as SystemException,
)
from cosnotify.orb.exceptions import (
    UserException as UserException,
)
from cosnotify.orb.interface import Object
from cosnotify.orb.orb import ORB, ORB_ID, ORB_init
from cosnotify.orb.tcfactory import StructMember, UnionMember
from cosnotify.orb.typecode import (
    TC_any,
    TC_boolean,
    TC_char,
    TC_double,
    TC_float,
    TC_long,
    TC_longdouble,
    TC_longlong,
    TC_null,
    TC_Object,
    TC_octet,
    TC_Principal,
    TC_short,
    TC_string,
    TC_TypeCode,
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

__all__ = [
    "ACTIVITY_COMPLETED",
    "ACTIVITY_REQUIRED",
    "BAD_CONTEXT",
    "BAD_INV_ORDER",
    "BAD_OPERATION",
    "BAD_PARAM",
    "BAD_QOS",
    "BAD_TYPECODE",
    "CODESET_INCOMPATIBLE",
    "COMM_FAILURE",
    "COMPLETED_MAYBE",
    "COMPLETED_NO",
    "COMPLETED_YES",
    "DATA_CONVERSION",
    "FALSE",
    "FREE_MEM",
    "IMP_LIMIT",
    "INITIALIZE",
    "INTERNAL",
    "INTF_REPOS",
    "INVALID_ACTIVITY",
    "INVALID_TRANSACTION",
    "INV_FLAG",
    "INV_IDENT",
    "INV_OBJREF",
    "INV_POLICY",
    "MARSHAL",
    "NO_IMPLEMENT",
    "NO_MEMORY",
    "NO_PERMISSION",
    "NO_RESOURCES",
    "NO_RESPONSE",
    "OBJECT_NOT_EXIST",
    "OBJ_ADAPTER",
    "OMGVMCID",
    "ORB",
    "ORB_ID",
    "PERSIST_STORE",
    "REBIND",
    "SYSTEM_EXCEPTIONS",
    "TIMEOUT",
    "TRANSACTION_MODE",
    "TRANSACTION_REQUIRED",
    "TRANSACTION_ROLLEDBACK",
    "TRANSACTION_UNAVAILABLE",
    "TRANSIENT",
    "TRUE",
    "UNKNOWN",
    "Any",
    "CompletionStatus",
    "Exception",
    "ORB_init",
    "Object",
    "StructMember",
    "SystemException",
    "TCKind",
    "TC_Object",
    "TC_Principal",
    "TC_TypeCode",
    "TC_any",
    "TC_boolean",
    "TC_char",
    "TC_double",
    "TC_float",
    "TC_long",
    "TC_longdouble",
    "TC_longlong",
    "TC_null",
    "TC_octet",
    "TC_short",
    "TC_string",
    "TC_ulong",
    "TC_ulonglong",
    "TC_ushort",
    "TC_void",
    "TC_wchar",
    "TC_wstring",
    "TypeCode",
    "UnionMember",
    "UserException",
    "tk_Principal",
    "tk_TypeCode",
    "tk_abstract_interface",
    "tk_alias",
    "tk_any",
    "tk_array",
    "tk_boolean",
    "tk_char",
    "tk_component",
    "tk_double",
    "tk_enum",
    "tk_event",
    "tk_except",
    "tk_fixed",
    "tk_float",
    "tk_home",
    "tk_local_interface",
    "tk_long",
    "tk_longdouble",
    "tk_longlong",
    "tk_native",
    "tk_null",
    "tk_objref",
    "tk_octet",
    "tk_sequence",
    "tk_short",
    "tk_string",
    "tk_struct",
    "tk_ulong",
    "tk_ulonglong",
    "tk_union",
    "tk_ushort",
    "tk_value",
    "tk_value_box",
    "tk_void",
    "tk_wchar",
    "tk_wstring",
]
