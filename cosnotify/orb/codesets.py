"""Code set negotiation: the TAG_CODE_SETS component and the CodeSets service context.

Strategy: plain frozen values for the IDL structures of CORBA 3.0 section
13.10.2 (``CONV_FRAME::CodeSetComponent``, ``CodeSetComponentInfo`` and
``CodeSetContext``), each able to write and read its own encapsulation, plus
:func:`negotiate`, the client-side choice of transmission code sets of
13.10.2.6, as a pure function of the two components. The ORB puts
:data:`OUR_CODE_SETS` in the IORs it makes, calls :func:`negotiate` on an
IOR's component before the first request on a connection, sends the result
as service context 1, and builds its :class:`cosnotify.orb.cdr.Codec` from it.

Our native char code set is UTF-8 (with ISO-8859-1 as a conversion set) and
our native wchar code set UTF-16, which is what omniORB, TAO and JacORB can
all meet.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from cosnotify.orb.cdr import Decoder, Encoder
from cosnotify.orb.cdr_core import ISO_8859_1, UTF_8, UTF_16, Codec
from cosnotify.orb.exceptions import CODESET_INCOMPATIBLE, COMPLETED_NO, MARSHAL, SystemException

__all__ = [
    "CODE_SET_NAMES",
    "ISO_8859_1",
    "OUR_CODE_SETS",
    "SERVICE_CONTEXT_ID",
    "TAG_CODE_SETS",
    "UTF_8",
    "UTF_16",
    "CodeSetComponent",
    "CodeSetComponentInfo",
    "CodeSetContext",
    "codec_for",
    "negotiate",
]

#: IOP::TAG_CODE_SETS (13.10.2.4) and IOP::CodeSets (13.7.1).
TAG_CODE_SETS = 1
SERVICE_CONTEXT_ID = 1
#: ISO 646 (ASCII) and UCS-2 level 1, which peers sometimes list.
ISO_646 = 0x00010020
UCS_2 = 0x00010100

CODE_SET_NAMES = {
    ISO_8859_1: "ISO-8859-1", UTF_8: "UTF-8", UTF_16: "UTF-16", ISO_646: "ISO-646",
    UCS_2: "UCS-2",
}
_CHAR_SETS = frozenset({UTF_8, ISO_8859_1})
_WCHAR_SETS = frozenset({UTF_16})
#: The fallback transmission code sets of 13.10.2.6.
FALLBACK_CHAR = UTF_8
FALLBACK_WCHAR = UTF_16
#: What a client assumes when an IOR has no TAG_CODE_SETS component (13.10.2.6).
DEFAULT_CHAR = ISO_8859_1


@attrs.frozen
class CodeSetComponent:
    """``CONV_FRAME::CodeSetComponent``: a native code set and conversion sets."""

    native_code_set: int
    conversion_code_sets: tuple[int, ...] = ()


@attrs.frozen
class CodeSetComponentInfo:
    """``CONV_FRAME::CodeSetComponentInfo``: the data of a TAG_CODE_SETS component."""

    for_char_data: CodeSetComponent
    for_wchar_data: CodeSetComponent

    def encode(self, little_endian: bool = True) -> bytes:
        """The component data: an encapsulation of this structure."""
        encoder = Encoder.encapsulation(Codec(little_endian))
        for part in (self.for_char_data, self.for_wchar_data):
            encoder.write_ulong(part.native_code_set)
            encoder.write_ulong(len(part.conversion_code_sets))
            for code_set in part.conversion_code_sets:
                encoder.write_ulong(code_set)
        return encoder.getvalue()

    @classmethod
    def decode(cls, data: bytes) -> CodeSetComponentInfo:
        """Parse component data; ``MARSHAL`` if it is malformed."""
        decoder = Decoder.from_encapsulation(data)
        parts = []
        for _ in range(2):
            native = decoder.read_ulong()
            count = decoder.read_ulong()
            if count * 4 > decoder.remaining():
                raise MARSHAL(0, COMPLETED_NO, f"{count} conversion code sets in {decoder.remaining()} octets")
            parts.append(CodeSetComponent(native, tuple(decoder.read_ulong() for _ in range(count))))
        return cls(parts[0], parts[1])


@attrs.frozen
class CodeSetContext:
    """``CONV_FRAME::CodeSetContext``: the TCS-C and TCS-W a client chose."""

    char_data: int
    wchar_data: int

    def encode(self, little_endian: bool = True) -> bytes:
        """The service context data: an encapsulation of two ulongs."""
        encoder = Encoder.encapsulation(Codec(little_endian))
        encoder.write_ulong(self.char_data)
        encoder.write_ulong(self.wchar_data)
        return encoder.getvalue()

    @classmethod
    def decode(cls, data: bytes) -> CodeSetContext:
        """Parse service context data; ``MARSHAL`` if it is malformed."""
        decoder = Decoder.from_encapsulation(data)
        return cls(decoder.read_ulong(), decoder.read_ulong())


#: What our IORs advertise.
OUR_CODE_SETS = CodeSetComponentInfo(CodeSetComponent(UTF_8, (ISO_8859_1,)),
                                     CodeSetComponent(UTF_16, ()))


def _choose(client: CodeSetComponent, server: CodeSetComponent, fallback: int,
            supported: Iterable[int], what: str) -> int:
    """One transmission code set by the rules of 13.10.2.6."""
    cncs, sncs = client.native_code_set, server.native_code_set
    if cncs == sncs:
        return cncs
    if cncs in server.conversion_code_sets:
        return cncs
    if sncs in client.conversion_code_sets:
        return sncs
    for code_set in server.conversion_code_sets:
        if code_set in client.conversion_code_sets:
            return code_set
    known = frozenset(supported)
    if cncs in known and (sncs in known or sncs in CODE_SET_NAMES):
        return fallback  # compatible native sets with no common one: the fallback
    raise CODESET_INCOMPATIBLE(0, COMPLETED_NO,
                               f"no common {what} code set: ours 0x{cncs:08x}, theirs 0x{sncs:08x}")


def negotiate(server: CodeSetComponentInfo | None,
              client: CodeSetComponentInfo = OUR_CODE_SETS) -> CodeSetContext:
    """The transmission code sets a client uses with a server (13.10.2.6).

    With no server component (an IOR without TAG_CODE_SETS, e.g. from a
    corbaloc URL) char data is ISO-8859-1 and wchar data cannot be sent
    (``wchar_data`` 0).
    """
    if server is None:
        return CodeSetContext(DEFAULT_CHAR, 0)
    char = _choose(client.for_char_data, server.for_char_data, FALLBACK_CHAR, _CHAR_SETS, "char")
    try:
        wchar = _choose(client.for_wchar_data, server.for_wchar_data, FALLBACK_WCHAR,
                        _WCHAR_SETS, "wchar")
    except SystemException:
        wchar = 0  # only a problem if wchar data is ever sent
    return CodeSetContext(char, wchar)


def codec_for(context: CodeSetContext | None, little_endian: bool,
              giop: tuple[int, int] = (1, 2)) -> Codec:
    """The codec for a connection whose code sets are ``context``.

    ``None`` (no CodeSets service context received) means the defaults of
    13.10.2.6: ISO-8859-1 and no wchar. Code sets we cannot use raise
    ``CODESET_INCOMPATIBLE``.
    """
    if context is None:
        return Codec(little_endian, DEFAULT_CHAR, 0, giop)
    wchar = context.wchar_data if context.wchar_data in _WCHAR_SETS else 0
    if context.char_data not in _CHAR_SETS:
        raise CODESET_INCOMPATIBLE(0, COMPLETED_NO, f"char code set 0x{context.char_data:08x}")
    return Codec(little_endian, context.char_data, wchar, giop)
