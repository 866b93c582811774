"""The Event Heap wire bundle protocol, sans IO: bytes in, WireBundles out, and back.

Strategy: the h11 model. :class:`BundleReader` is fed the bytes a peer sent
(``feed``) and hands out what they hold (``next_event``): first the peer's
protocol version (the seed's "Initial Hand-Shake": "send the version (as a
UTF-8 String) of the wire protocol running on this entity (e.g.
"EHWPv1" ...)"), then one :class:`WireBundle` at a time, or None while a
bundle is not whole. :func:`encode_version` and :func:`encode_bundle` are the
other direction. Nothing here touches a socket; the session
(session.py) moves the bytes.

A bundle has no length of its own (seed, "Semantics for WireBundle
Transfer": a mask, the tags, the sequence info, the tuples), but each tuple
and each field is "transferred as a serialized byte array" with its length
first. So the reader walks a bundle's top level one step at a time (the
mask, a tag, a count, a SourceInfo, a whole tuple found by its length and
then parsed), keeps how far it got between pieces and drops the bytes read,
and remembers how many bytes its next step needs at least before trying
again: a big bundle arriving in pieces is not re-read per piece, each byte
is examined once (review 118). A reader told to ``defer`` hands a bundle
with tuples out as :class:`Undecoded`, its tuples' bytes parsed when its
caller likes (a server: off its loop thread). Every length and count
is checked against ``max_frame`` as it is read, so an oversize length is
refused at once, not after a megabyte has been buffered, and a bundle that
grows past ``max_frame`` unfinished is refused too. Any fault is
:class:`~cosnotify.protocols.eventheap.wire.EventHeapWireError` with its
offset; any other exception out of this module is a bug.

Values keep what the wire says: a value's mode byte as it came (the seed's
"All values greater than 2 are considered virtual, but individual clients may
use different values in this range"), and a platform type's serialized value
as its bytes ("compliant implementations must be able to detect fields
containing such data and move them around with the tuple undisturbed").
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from cosnotify.protocols.eventheap.wire import (
    Cursor,
    EventHeapWireError,
    NeedData,
    decode_utf,
    encode_utf,
    write_boolean,
    write_double,
    write_float,
    write_int,
    write_long,
    write_utf,
)

__all__ = ["ACTUAL", "FORMAL", "FUNDAMENTAL_TYPES", "PROTOCOL_VERSION", "VIRTUAL",
           "BundleReader", "EventHeapWireError", "Field", "SequenceInfo", "SourceInfo",
           "Tuple", "Value", "WireBundle", "encode_bundle", "encode_version",
           "is_platform_type"]

#: The wire protocol version this module speaks (seed: "EHWPv1" for this version).
PROTOCOL_VERSION: Final = "EHWPv1"

#: Value modes (seed, "Semantics for Value Transfer"): ACTUAL=0, FORMAL=1, VIRTUAL>=2.
ACTUAL: Final = 0
FORMAL: Final = 1
VIRTUAL: Final = 2

#: "These are the standard data types that all implementations will be expected to
#: understand" (seed, "Serializing Field to a Byte Array").
FUNDAMENTAL_TYPES: Final = ("boolean", "int", "long", "float", "double", "string")

#: The mask's bits (seed, "Semantics for WireBundle Transfer").
DESTINATION_BIT: Final = 1
RETURN_BIT: Final = 2
SEQUENCE_BIT: Final = 4
TUPLES_BIT: Final = 8


def is_platform_type(ftype: str) -> bool:
    """"[other platform qualifier]. {fully qualified class name}" (``EHJava.x.Y``)."""
    qualifier, dot, name = ftype.partition(".")
    return bool(dot and qualifier and name)


@attrs.frozen
class Value:
    """A post or template value: ``mode`` (the byte as sent) and, for an ACTUAL value,
    ``value`` -- None for NULL, a bool/int/float/str for a fundamental type, bytes for a
    platform type."""

    mode: int
    value: Any = None

    @property
    def is_actual(self) -> bool:
        return self.mode == ACTUAL

    @property
    def is_formal(self) -> bool:
        return self.mode == FORMAL

    @property
    def is_virtual(self) -> bool:
        return self.mode >= VIRTUAL


@attrs.frozen
class Field:
    """One field (seed, "Semantics for Field Transfer"): name, type, post and template."""

    name: str
    type: str
    post: Value
    template: Value


@attrs.frozen
class Tuple:
    """A tuple (seed, "Semantics for Tuple Transfer"): its serial number (0: "never been
    on an Event Heap server") and its fields."""

    serial: int
    fields: tuple[Field, ...] = ()

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


@attrs.frozen
class SourceInfo:
    """The newest event seen from one source (seed, "Semantics for SourceInfo Transfer")."""

    source: str
    session_id: int
    sequence_num: int


@attrs.frozen
class SequenceInfo:
    """The sources seen for one EventType (seed, "Semantics for SequenceInfo Transfer")."""

    event_type: str
    sources: tuple[SourceInfo, ...] = ()


@attrs.frozen
class WireBundle:
    """A wire bundle; None is the seed's null for each part (its mask bit clear)."""

    destination_tag: str | None = None
    return_tag: str | None = None
    sequence_info: tuple[SequenceInfo, ...] | None = None
    tuples: tuple[Tuple, ...] | None = None


# -- encoding ------------------------------------------------------------------------------
def encode_version(version: str = PROTOCOL_VERSION) -> bytes:
    """The handshake: the version as a UTF-8 String."""
    return encode_utf(version)


def _write_value(out: bytearray, ftype: str, value: Value) -> None:
    if not 0 <= value.mode <= 0x7F:
        raise EventHeapWireError(f"a value mode is a byte 0..127, not {value.mode!r}",
                                 kind="unencodable")
    out.append(value.mode)
    if value.mode != ACTUAL:
        return
    write_boolean(out, value.value is None)  # "'true' if the value to come is NULL"
    v = value.value
    if v is None:
        return
    try:
        if ftype == "boolean":
            write_boolean(out, bool(v))
        elif ftype == "int":
            write_int(out, v)
        elif ftype == "long":
            write_long(out, v)
        elif ftype == "float":
            write_float(out, v)
        elif ftype == "double":
            write_double(out, v)
        elif ftype == "string":
            write_utf(out, v)
        else:
            raw = bytes(v)
            write_int(out, len(raw))
            out += raw
    except (TypeError, ValueError) as exc:
        if isinstance(exc, EventHeapWireError):
            raise
        raise EventHeapWireError(f"{v!r:.60} is not a {ftype} value",
                                 kind="unencodable") from None


def encode_field(field: Field) -> bytes:
    """A field's serialized byte array (seed, "Serializing Field to a Byte Array")."""
    if field.type not in FUNDAMENTAL_TYPES and not is_platform_type(field.type):
        raise EventHeapWireError(f"{field.type!r} is not a field type", kind="unencodable")
    out = bytearray()
    write_utf(out, field.type)
    _write_value(out, field.type, field.post)
    _write_value(out, field.type, field.template)
    return bytes(out)


def encode_tuple(tup: Tuple) -> bytes:
    """A tuple's serialized byte array (seed, "Serializing Tuple to a Byte Array")."""
    out = bytearray()
    write_int(out, tup.serial)
    write_int(out, len(tup.fields))
    for f in tup.fields:
        write_utf(out, f.name)
        raw = encode_field(f)
        write_int(out, len(raw))
        out += raw
    return bytes(out)


def encode_bundle(bundle: WireBundle) -> bytes:
    """A wire bundle's bytes (seed, "Semantics for WireBundle Transfer")."""
    out = bytearray(1)
    mask = 0
    if bundle.destination_tag is not None:
        mask |= DESTINATION_BIT
        write_utf(out, bundle.destination_tag)
    if bundle.return_tag is not None:
        mask |= RETURN_BIT
        write_utf(out, bundle.return_tag)
    if bundle.sequence_info is not None:
        mask |= SEQUENCE_BIT
        write_int(out, len(bundle.sequence_info))
        for info in bundle.sequence_info:
            write_utf(out, info.event_type)
            write_int(out, len(info.sources))
            for src in info.sources:
                write_utf(out, src.source)
                write_int(out, src.session_id)
                write_int(out, src.sequence_num)
    if bundle.tuples is not None:
        mask |= TUPLES_BIT
        write_int(out, len(bundle.tuples))
        for tup in bundle.tuples:
            raw = encode_tuple(tup)
            write_int(out, len(raw))
            out += raw
    out[0] = mask
    return bytes(out)


def encode_bundle_of(bundle: WireBundle, tuples: list[bytes]) -> bytes:
    """``bundle`` (its tuples None) with ``tuples``, each already a tuple's serialized
    byte array (:func:`encode_tuple`), as its Tuple objects: a reply assembled from
    tuples encoded one at a time."""
    out = bytearray(encode_bundle(attrs.evolve(bundle, tuples=None)))
    out[0] |= TUPLES_BIT
    write_int(out, len(tuples))
    for raw in tuples:
        write_int(out, len(raw))
        out += raw
    return bytes(out)


# -- decoding ------------------------------------------------------------------------------
_WHAT: Final = {
    # (which, ftype) -> the text errors name the value by, made once, not per value read.
    (which, ftype): f"the {which} {ftype} value"
    for which in ("post", "template") for ftype in FUNDAMENTAL_TYPES}


def _read_value(c: Cursor, ftype: str, which: str, limit: int) -> Value:
    at = c.pos
    mode = c.read_byte("a value's mode")
    if mode > 0x7F:
        raise c.fail(f"the {which} value's mode byte {mode:02X} is none of ACTUAL=0, "
                     "FORMAL=1, VIRTUAL>=2 (a Java byte is at most 127)", at)
    if mode != ACTUAL:
        return Value(mode)
    if c.read_boolean("a value's NULL flag"):
        return Value(ACTUAL, None)
    what = _WHAT.get((which, ftype)) or f"the {which} value"
    if ftype == "string":
        return Value(ACTUAL, c.read_utf(what))
    if ftype == "int":
        return Value(ACTUAL, c.read_int(what))
    if ftype == "boolean":
        return Value(ACTUAL, c.read_boolean(what))
    if ftype == "long":
        return Value(ACTUAL, c.read_long(what))
    if ftype == "double":
        return Value(ACTUAL, c.read_double(what))
    if ftype == "float":
        return Value(ACTUAL, c.read_float(what))
    size = c.read_length(f"the length of {what}", limit)
    start = c.take(size, what)
    return Value(ACTUAL, bytes(c.data[start:start + size]))


def _read_field(c: Cursor, name: str, limit: int) -> Field:
    """A field's byte array; an error names the field."""
    try:
        at = c.pos
        ftype = c.read_utf("the field type")
        if ftype not in FUNDAMENTAL_TYPES and not is_platform_type(ftype):
            raise c.fail(f"the type {ftype!r:.60}: neither one of "
                         f"{', '.join(FUNDAMENTAL_TYPES)} nor a platform type "
                         "\"<qualifier>.<class>\"", at)
        post = _read_value(c, ftype, "post", limit)
        template = _read_value(c, ftype, "template", limit)
        if c.pos != c.end:
            raise c.fail(f"{c.end - c.pos} bytes after its values")
    except EventHeapWireError as exc:
        raise EventHeapWireError(f"field {name!r:.60}: {exc.detail}", exc.offset,
                                 exc.kind) from None
    return Field(name, ftype, post, template)


def decode_field(data: bytes | memoryview, name: str = "") -> Field:
    """A field from its whole serialized byte array (the name is sent before it)."""
    return _read_field(Cursor(data, complete=True), name, len(data))


def decode_tuple(data: bytes | memoryview, base: int = 0) -> Tuple:
    """A tuple from its whole serialized byte array."""
    c = Cursor(data, complete=True, base=base)
    limit = len(data)
    serial = c.read_int("the tuple serial number")
    count = c.read_count("the number of fields", 2 + 4, limit)
    fields: list[Field] = []
    names: set[str] = set()
    for _ in range(count):
        at = c.pos
        name = c.read_utf("a field name")
        if name in names:
            raise c.fail(f"the field {name!r:.60} twice in one tuple (a tuple's fields are "
                         "keyed by name: seed, \"Semantics for Field Transfer\")", at)
        names.add(name)
        size = c.read_length("the length of a field", c.end - c.pos)
        start = c.take(size, "a field")
        fields.append(_read_field(Cursor(data, start, start + size, True, base), name, size))
    if c.pos != c.end:
        raise c.fail(f"{c.end - c.pos} bytes after the tuple's last field")
    return Tuple(serial, tuple(fields))


@attrs.frozen
class Undecoded:
    """A whole bundle whose tuples are not parsed yet (``BundleReader(defer=True)``):
    ``bundle`` without its tuples, and each tuple's serialized byte array with its offset
    in the bundle. :meth:`decode` parses them (where the caller likes: a server does it
    off its loop thread); EventHeapWireError as the reader would have raised it."""

    bundle: WireBundle
    raw: tuple[tuple[bytes, int], ...]

    @property
    def size(self) -> int:
        """The tuples' bytes."""
        return sum(len(data) for data, _ in self.raw)

    def decode(self) -> WireBundle:
        return attrs.evolve(self.bundle, tuples=tuple(decode_tuple(data, base)
                                                      for data, base in self.raw))


# The steps of a bundle's top level (BundleReader._walk).
_MASK, _DESTINATION, _RETURN, _INFOS, _TUPLES, _DONE = range(6)


class _Walk:
    """How far one bundle's top level has been read: each step (the mask, a tag, a count,
    a SourceInfo, a whole tuple) is read whole or not at all, so a bundle arriving in
    pieces resumes at its first unread step, and no byte is read twice."""

    __slots__ = ("destination", "event_type", "infos", "infos_left", "mask", "raw",
                 "return_tag", "sources", "sources_left", "step", "tuples", "tuples_left")

    def __init__(self) -> None:
        self.step = _MASK
        self.mask = 0
        self.destination: str | None = None
        self.return_tag: str | None = None
        self.infos: list[SequenceInfo] | None = None
        self.infos_left = 0
        #: The SequenceInfo being read: its EventType, and its sources (None: count unread).
        self.event_type: str | None = None
        self.sources: list[SourceInfo] | None = None
        self.sources_left = 0
        self.tuples: list[Tuple] | None = None
        self.tuples_left = 0
        #: The tuples' byte arrays and offsets, not parsed yet (BundleReader.defer).
        self.raw: list[tuple[bytes, int]] = []


class BundleReader:
    """One direction of a connection, sans IO (module docstring).

    ``next_event()`` returns the peer's version (a ``str``) first, then
    :class:`WireBundle` values, or None when more bytes are needed. A bundle's bytes are
    dropped from the buffer as its steps are read (``_Walk``): each byte is examined
    once however many pieces the bundle comes in.
    """

    def __init__(self, max_frame: int = 1 << 20, handshake: bool = True,
                 defer: bool = False) -> None:
        self.max_frame = max_frame
        #: Hand out a bundle with tuples as :class:`Undecoded` (its tuples parsed later).
        self.defer = defer
        self._buffer = bytearray()
        #: A copy of ``_buffer`` parsed from (made once per ``feed``, not per event, so
        #: many small bundles in one read are not each a copy of the rest), and how many
        #: of its bytes are consumed (dropped from ``_buffer`` at the next ``feed``).
        self._data: bytes | None = None
        self._offset = 0
        #: Bytes of the bundle being read that were read already (and dropped).
        self._base = 0
        #: Bytes of the bundle (or handshake), from its start, needed at least.
        self._need = 0
        self._handshake = handshake
        self._walk_state = _Walk()
        #: Bundles decoded so far.
        self.bundles = 0
        #: Bytes copied to be parsed so far: bounded by what came, not by how many pieces
        #: it came in.
        self.examined = 0

    def feed(self, data: bytes) -> None:
        if self._data is not None:
            del self._buffer[:self._offset]
            self._data, self._offset = None, 0
        self._buffer += data

    @property
    def pending(self) -> int:
        """Bytes received that are not yet part of an event handed out."""
        return self._base + len(self._buffer) - self._offset

    def next_event(self) -> str | WireBundle | Undecoded | None:
        """The next whole event, or None; EventHeapWireError for bytes that are not one."""
        if self.pending < max(self._need, 1):
            return None
        data = self._data
        if data is None:
            data = self._data = bytes(self._buffer)
            self.examined += len(data)
        start = self._offset
        # Positions are in ``data``; ``base`` makes them offsets in the bundle.
        c = Cursor(memoryview(data), start, base=self._base - start)
        result: str | WireBundle | Undecoded
        try:
            if self._handshake:
                result = c.read_utf("the protocol version")
                self._handshake = False
            else:
                result = self._walk(c, self._walk_state)
        except NeedData as exc:
            self._need = c.base + exc.need
            if self._need > self.max_frame or c.base + len(data) > self.max_frame:
                raise EventHeapWireError(f"a bundle of more than {self.max_frame} bytes "
                                         "(max_frame)", 0, "too_large") from None
            if not self._handshake:  # up to the last whole step's end (_walk)
                self._base, self._offset = c.base + c.pos, c.pos
            return None
        self._offset = c.pos
        self._base = self._need = 0
        if not isinstance(result, str):
            self._walk_state = _Walk()
            self.bundles += 1
        return result

    def _walk(self, c: Cursor, w: _Walk) -> WireBundle | Undecoded:
        """Read ``w``'s bundle on from its next step. Each step reads into locals and
        only then changes ``w``; on NeedData ``c.pos`` is put back to the step's start."""
        limit = self.max_frame
        view = c.data
        while w.step != _DONE:
            at = c.pos
            try:
                if w.step == _MASK:
                    mask = c.read_byte("the mask")
                    if mask & ~0x0F:
                        raise c.fail(f"the mask {mask:02X} sets bits the seed does not "
                                     "define (1, 2, 4 and 8 only)", at)
                    w.mask, w.step = mask, _DESTINATION
                elif w.step == _DESTINATION:
                    if w.mask & DESTINATION_BIT:
                        w.destination = c.read_utf("the destination tag")
                    w.step = _RETURN
                elif w.step == _RETURN:
                    if w.mask & RETURN_BIT:
                        w.return_tag = c.read_utf("the return tag")
                    w.step = _INFOS
                elif w.step == _INFOS:
                    self._info_step(c, w)
                elif w.tuples is None:  # _TUPLES
                    if w.mask & TUPLES_BIT:
                        w.tuples_left = c.read_count("the number of tuples", 4, limit)
                        w.tuples = []
                    else:
                        w.step = _DONE
                elif w.tuples_left:
                    size = c.read_length("the length of a serialized tuple", limit)
                    start = c.take(size, "a serialized tuple")
                    if self.defer:
                        w.raw.append((bytes(view[start:start + size]), c.base + start))
                    else:
                        w.tuples.append(decode_tuple(view[start:start + size],
                                                     c.base + start))
                    w.tuples_left -= 1
                else:
                    w.step = _DONE
            except NeedData:
                c.pos = at
                raise
            if c.base + c.pos > limit:
                raise EventHeapWireError(f"a bundle of {c.base + c.pos} bytes, more than "
                                         f"{limit} (max_frame)", 0, "too_large")
        bundle = WireBundle(w.destination, w.return_tag,
                            None if w.infos is None else tuple(w.infos),
                            None if w.tuples is None else tuple(w.tuples))
        return Undecoded(bundle, tuple(w.raw)) if w.raw else bundle

    def _info_step(self, c: Cursor, w: _Walk) -> None:
        """One step of the SequenceInfo part: a count, an EventType, a SourceInfo, or the
        end of one SequenceInfo or of them all."""
        limit = self.max_frame
        if not w.mask & SEQUENCE_BIT:
            w.step = _TUPLES
        elif w.infos is None:
            w.infos_left = c.read_count("the number of SequenceInfo objects", 2 + 4, limit)
            w.infos = []
        elif w.event_type is None:
            if not w.infos_left:
                w.step = _TUPLES
            else:
                w.event_type = c.read_utf("a SequenceInfo EventType")
        elif w.sources is None:
            w.sources_left = c.read_count("the number of SourceInfo objects", 2 + 8, limit)
            w.sources = []
        elif w.sources_left:
            w.sources.append(SourceInfo(c.read_utf("a SourceInfo source"),
                                        c.read_int("a SourceInfo session ID"),
                                        c.read_int("a SourceInfo sequence number")))
            w.sources_left -= 1
        else:
            w.infos.append(SequenceInfo(w.event_type, tuple(w.sources)))
            w.infos_left -= 1
            w.event_type, w.sources = None, None


def decode_bundle(data: bytes, max_frame: int = 1 << 20) -> WireBundle:
    """One whole bundle, nothing after it (for tests and tools)."""
    reader = BundleReader(max_frame, handshake=False)
    reader.feed(data)
    found = reader.next_event()
    if isinstance(found, Undecoded):
        found = found.decode()
    if not isinstance(found, WireBundle):
        raise EventHeapWireError("the bytes end inside the bundle", len(data))
    if reader.pending:
        raise EventHeapWireError(f"{reader.pending} bytes after the bundle", len(data) -
                                 reader.pending)
    return found


__all__ += ["Undecoded", "decode_bundle", "decode_field", "decode_tuple", "decode_utf", "encode_bundle_of",
            "encode_field", "encode_tuple"]
