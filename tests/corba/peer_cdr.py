"""Values as a C++ peer sends them, which omniORBpy 4.3.3 cannot marshal (docs/orb.md).

omniORBpy unmarshals a ``sequence<unsigned long long>`` holding 2**63 or more,
but cannot marshal it again; an omniORBpy client cannot even send one. The
CDR here is built by hand, as omniORB C++ writes it, and unmarshalled with
``cdrUnmarshal``: the same code that unmarshals it from IIOP.
"""

from __future__ import annotations

import struct
from typing import Any

import omniORB
from omniORB import CORBA

from cosnotify.corba import descriptors as D

#: Values >= 2**63 that a C++ peer may send in a sequence<unsigned long long>.
BIG = [2**63, 2**64 - 1]


def ulonglong_sequence_cdr(values: list[int], little: bool = True) -> bytes:
    """An Any holding ``sequence<unsigned long long>``, encoded as a C++ peer sends it."""
    order = "<" if little else ">"
    element = struct.pack(order + "II", D.ULONGLONG, 0)  # the content's kind, the bound
    params = bytes([little, 0, 0, 0]) + element  # the sequence TypeCode's encapsulation
    return (bytes([little, 0, 0, 0]) + struct.pack(order + "II", D.SEQUENCE, len(params))
            + params + struct.pack(order + "I", len(values)) + b"\0" * 4  # align on 8
            + b"".join(struct.pack(order + "Q", v) for v in values))


def received_ulonglongs(values: list[int] | None = None) -> Any:
    """The Any a server's ORB hands its servant when a C++ peer sends ``values``."""
    return omniORB.cdrUnmarshal(CORBA.TC_any, ulonglong_sequence_cdr(BIG if values is None
                                                                     else values))
