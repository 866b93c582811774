"""Where an object reference points: the IIOP address in its IOR.

Strategy: the server keys a client's lane of workers by the process behind
its references (docs/architecture.md, Lanes): the host and port of the
first IIOP profile. omniORB gives no accessor for that, so the stringified
reference (``orb.object_to_string``) is read here: the IOR is a CDR
encapsulation (CORBA 3.0 section 13.6.2) decoded by omniORB's own
``cdrUnmarshal``, and the IIOP ProfileBody's version, host and port are its
first fields (section 15.7.2), read directly. Anything malformed gives None:
the caller then treats the reference as having no known address.
"""

from __future__ import annotations

import struct
from typing import Any

import omniORB
from omniORB import CORBA, tcInternal

__all__ = ["TAG_INTERNET_IOP", "iiop_address"]

TAG_INTERNET_IOP = 0

_OCTETS = (tcInternal.tv_sequence, tcInternal.tv_octet, 0)
_TAGGED_PROFILE = (tcInternal.tv_struct, None, "IDL:omg.org/IOP/TaggedProfile:1.0",
                   "TaggedProfile", "tag", tcInternal.tv_ulong, "profile_data", _OCTETS)
_IOR = (tcInternal.tv_struct, None, "IDL:omg.org/IOP/IOR:1.0", "IOR",
        "type_id", (tcInternal.tv_string, 0),
        "profiles", (tcInternal.tv_sequence, _TAGGED_PROFILE, 0))


def _tc() -> Any:
    profile = list(_TAGGED_PROFILE)
    profile[1] = omniORB.createUnknownStruct(profile[2], ["tag", "profile_data"])
    ior = list(_IOR)
    ior[1] = omniORB.createUnknownStruct(ior[2], ["type_id", "profiles"])
    ior[7] = (tcInternal.tv_sequence, tuple(profile), 0)
    return tcInternal.createTypeCode(tuple(ior))


_IOR_TC = _tc()


def iiop_address(orb: Any, reference: Any) -> tuple[str, int] | None:
    """(host, port) of the first IIOP profile of ``reference``; None if it has none."""
    try:
        text = orb.object_to_string(reference)
        if not text.startswith("IOR:"):
            return None
        ior = omniORB.cdrUnmarshal(_IOR_TC, bytes.fromhex(text[4:]))
    except (CORBA.SystemException, ValueError):
        return None
    for profile in ior.profiles:
        if profile.tag == TAG_INTERNET_IOP:
            return _profile_address(profile.profile_data)
    return None


def _profile_address(data: bytes) -> tuple[str, int] | None:
    """Host and port from an encapsulated IIOP ProfileBody (any version)."""
    if len(data) < 8:
        return None
    order = "<" if data[0] & 1 else ">"
    # octet byte order, octet major, octet minor, (pad to 4), ulong host length
    (length,) = struct.unpack_from(order + "I", data, 4)
    end = 8 + length
    if length == 0 or end > len(data):
        return None
    host = data[8:end - 1].decode("latin-1")  # the string's NUL terminator dropped
    at = end + (-end % 2)
    if at + 2 > len(data):
        return None
    (port,) = struct.unpack_from(order + "H", data, at)
    return host, port
