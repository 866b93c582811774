"""Source generation for compiled CDR marshallers (used by :mod:`cosnotify.orb.cdr_compile`).

Strategy: :class:`Source` writes the body of one Python function for one
TypeCode, as text. It tracks what is statically known about the alignment of
the position (``pos`` when decoding, ``len(buf)`` when encoding: "pos is
phase modulo align_to", CORBA 3.0 15.3.1.1 alignment being relative to
buffer index 0, which the streams keep 8-aligned), so that runs of
primitives become one ``struct.Struct`` call with the padding baked into its
format, and padding whose size is known at compile time costs nothing at
run time. Strings, nested structs, sequences and arrays are written inline
(up to a small depth); unions, Anys, TypeCodes, object references, fixed,
long double and wide characters become calls to functions of their own,
obtained from the compiler, which also hands out the trampolines that make
recursive TypeCodes safe.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from itertools import count
from typing import TYPE_CHECKING, Any

from cosnotify.orb import cdr_core as C
from cosnotify.orb import typecode as T
from cosnotify.orb.cdr_core import CDRError, Codec, EncodeMismatch, Minor
from cosnotify.orb.exceptions import COMPLETED_NO, MARSHAL, OMGVMCID
from cosnotify.orb.values import StructBase

if TYPE_CHECKING:
    from cosnotify.orb.cdr_compile import Compiler

__all__ = ["BULK_KINDS", "RUN_KINDS", "SIZES", "Source", "min_size"]

RUN_KINDS = {T.K_SHORT: "h", T.K_USHORT: "H", T.K_LONG: "i", T.K_ULONG: "I", T.K_LONGLONG: "q",
              T.K_ULONGLONG: "Q", T.K_FLOAT: "f", T.K_DOUBLE: "d", T.K_OCTET: "B",
              T.K_BOOLEAN: "B", T.K_CHAR: "B", T.K_ENUM: "I"}
SIZES = {"h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8, "B": 1}
BULK_KINDS = {T.K_SHORT, T.K_USHORT, T.K_LONG, T.K_ULONG, T.K_LONGLONG, T.K_ULONGLONG,
               T.K_FLOAT, T.K_DOUBLE}
_INLINE_DEPTH = 4


def min_size(tc: T.TypeCode, codec: Codec, seen: frozenset[int] = frozenset()) -> int:
    """A lower bound on the octets any value of ``tc`` occupies (no padding counted)."""
    tc = T.resolve(tc)
    k = tc._k
    if k in RUN_KINDS:
        return SIZES[RUN_KINDS[k]]
    if k == T.K_ALIAS:
        return min_size(tc.content_type(), codec, seen)
    if id(tc) in seen:
        return 0
    inner = seen | {id(tc)}
    if k in (T.K_STRUCT, T.K_EXCEPT):
        members: tuple[T.TypeCode, ...] = tc._types  # type: ignore[attr-defined]
        return sum(min_size(t, codec, inner) for t in members)
    if k == T.K_UNION:
        return min_size(tc.discriminator_type(), codec, inner)
    if k == T.K_ARRAY:
        return tc.length() * min_size(tc.content_type(), codec, inner)
    if k == T.K_WCHAR:
        return 1 if codec.giop >= (1, 2) else 2
    if k == T.K_FIXED:
        return C.fixed_size(tc.fixed_digits())
    return {T.K_LONGDOUBLE: 16, T.K_OBJREF: 8, T.K_ABSTRACT_INTERFACE: 9}.get(
        k, 0 if k in (T.K_NULL, T.K_VOID) else 4)


def _python_class(tc: Any) -> type:
    try:
        cls: type = tc.python_class()
    except (TypeError, ValueError) as exc:
        raise CDRError(Minor.INVALID_TYPECODE, f"no Python class for {tc!r}: {exc}") from None
    return cls


def plain_name(name: str) -> bool:
    """True if ``name`` can be written into generated source as an attribute name.

    Only ASCII identifiers: Python folds other identifiers to NFKC when it
    parses them, so ``v.\ufb01eld`` would assign ``v.field``.
    """
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


def _attribute(var: str, index: int, name: str, safe: str, const: Callable[[Any], str]) -> str:
    """An expression for member ``index`` of a struct value.

    ``name`` comes from the TypeCode (possibly from the wire); when it is not
    the attribute a dynamic class would use (``safe``), the member is found
    by position instead (``_member``), never by an arbitrary attribute name.
    """
    if name == safe and plain_name(name):
        return f"{var}.{name}"
    return f"_member({var}, {int(index)}, {const(name)})"


class Source:
    """The source of one generated function, with alignment and run bookkeeping."""

    def __init__(self, compiler: Compiler, top: T.TypeCode) -> None:
        self.compiler = compiler
        self.codec = compiler.codec
        self.little = compiler.codec.little_endian
        self.lines: list[str] = []
        self.ns: dict[str, Any] = dict(compiler.base)
        self.ids = count()
        self.align_to, self.phase = 1, 0  # buffer position == phase (mod align_to)
        self.run: list[tuple[int, str, T.TypeCode]] = []
        self.chain: set[int] = {id(top)}

    # -- bookkeeping -----------------------------------------------------------------------
    def const(self, value: Any) -> str:
        name = f"K{next(self.ids)}"
        self.ns[name] = value
        return name

    def tmp(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self.ids)}"

    def line(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def unknown(self) -> None:
        self.align_to, self.phase = 1, 0

    def align(self, indent: int, n: int) -> None:
        if n == 1:
            return
        if self.align_to >= n:
            pad = -self.phase % n
            if pad:
                self.line(indent, f"buf += {self.const(bytes(pad))}" if self.compiler.encode
                          else f"pos += {pad}")
                self.phase = (self.phase + pad) % self.align_to
        else:
            self.line(indent, f"buf += PAD{n}[len(buf) & {n - 1}]" if self.compiler.encode
                      else f"pos += -pos & {n - 1}")
            self.align_to, self.phase = n, 0

    def advance(self, size: int) -> None:
        self.phase = (self.phase + size) % self.align_to

    def can_inline(self, tc: T.TypeCode) -> bool:
        return (id(tc) not in self.compiler.building and id(tc) not in self.chain
                and len(self.chain) < _INLINE_DEPTH)

    def call(self, tc: T.TypeCode) -> str:
        return self.const(self.compiler.get(tc))

    def flush(self, indent: int) -> None:
        """Emit the pending run of primitives as few struct calls as alignment allows."""
        items, self.run = self.run, []
        i = 0
        while i < len(items):
            fmt, names, total = "", [], 0
            first = SIZES[RUN_KINDS[items[i][0]]]
            if first > self.align_to:
                self.align(indent, first)
            while i < len(items):
                letter = RUN_KINDS[items[i][0]]
                size = SIZES[letter]
                if size > self.align_to:
                    break
                pad = -self.phase % size
                fmt += "x" * pad + letter
                total += pad + size
                self.phase = (self.phase + pad + size) % self.align_to
                names.append(items[i][1])
                i += 1
            packer = C.packer(self.little, fmt)
            if self.compiler.encode:
                self.line(indent, f"buf += {self.const(packer.pack)}({', '.join(names)})")
            else:
                unpack = self.const(packer.unpack_from)
                if len(names) == 1:
                    self.line(indent, f"{names[0]} = {unpack}(data, pos)[0]")
                else:
                    self.line(indent, f"{', '.join(names)} = {unpack}(data, pos)")
                self.line(indent, f"pos += {total}")
                for kind, name, tc in items[i - len(names):i]:
                    self._after_read(indent, kind, name, tc)

    def _after_read(self, indent: int, kind: int, name: str, tc: T.TypeCode) -> None:
        if kind == T.K_BOOLEAN:
            self.line(indent, f"if {name} > 1: raise _E({Minor.INVALID_BOOLEAN}, "
                              f"'boolean octet %d' % {name}, pos)")
            self.line(indent, f"{name} = {name} == 1")
        elif kind == T.K_CHAR:
            if self.codec.char_encoding == "utf-8":
                self.line(indent, f"if {name} > 127: raise _E({Minor.INVALID_CHAR_DATA}, "
                                  f"'char octet %d is not one UTF-8 character' % {name}, pos)")
            self.line(indent, f"{name} = CHARS[{name}]")
        elif kind == T.K_ENUM:
            items = tc.enum_items()  # type: ignore[attr-defined]
            what = self.const(f"enum ordinal %d of {tc.id()}")  # never spliced into source
            self.line(indent, f"if {name} >= {len(items)}: raise _E({Minor.INVALID_ENUM}, "
                              f"{what} % {name}, pos)")
            self.line(indent, f"{name} = {self.const(items)}[{name}]")

    # -- decoding --------------------------------------------------------------------------
    def dec(self, tc: T.TypeCode, var: str, ind: int, top: bool = False) -> None:
        tc = T.resolve(tc)
        k = tc._k
        if k == T.K_ALIAS:
            self.dec(tc.content_type(), var, ind, top)
            return
        if k in RUN_KINDS:
            self.run.append((k, var, tc))
            return
        self.flush(ind)
        if k in (T.K_NULL, T.K_VOID):
            self.line(ind, f"{var} = None")
        elif k == T.K_STRING:
            self.dec_string(tc, var, ind)
        elif k in (T.K_STRUCT, T.K_EXCEPT) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            members = [self.tmp("m") for _ in tc._types]  # type: ignore[attr-defined]
            for member_tc, member in zip(tc._types, members):  # type: ignore[attr-defined]
                self.dec(member_tc, member, ind)
            self.flush(ind)
            self.construct(tc, var, members, ind)
            self.chain.discard(id(tc))
        elif k in (T.K_SEQUENCE, T.K_ARRAY) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            self.dec_sequence(tc, var, ind)
            self.chain.discard(id(tc))
        elif top and k not in (T.K_ANY, T.K_TYPECODE):
            self.dec_special(tc, k, var, ind)
        else:
            self.line(ind, f"{var}, pos = {self.call(tc)}(data, pos, st)")
            self.unknown()

    def construct(self, tc: T.TypeCode, var: str, members: list[str], ind: int) -> None:
        """Build a struct value; dynamic classes skip their generic ``__init__``."""
        cls = _python_class(tc)
        slots = tuple(getattr(cls, "__slots__", ()))
        if (getattr(cls, "__init__", None) is StructBase.__init__ and len(slots) == len(members)
                and all(plain_name(a) for a in slots)):
            self.line(ind, f"{var} = _new({self.const(cls)})")
            for attr, member in zip(slots, members):
                self.line(ind, f"{var}.{attr} = {member}")
        else:
            self.line(ind, f"{var} = {self.const(cls)}({', '.join(members)})")

    def dec_string(self, tc: T.TypeCode, var: str, ind: int) -> None:
        self.align(ind, 4)
        self.line(ind, "n = UL(data, pos)[0]")
        self.line(ind, "pos += 4")
        self.line(ind, "e = pos + n")
        self.line(ind, "if not n or data[e - 1:e] != Z: raise _strerr(data, pos, n)")
        self.line(ind, f"{var} = data[pos:e - 1].decode({self.codec.char_encoding!r})")
        # NUL only ends a string (15.3.2.7); one inside could never be sent on.
        self.line(ind, f"if NUL in {var}: raise _E({Minor.INVALID_CHAR_DATA}, "
                       "'string contains NUL', pos)")
        self.line(ind, "pos = e")
        bound = int(tc.length())
        if bound:
            self.line(ind, f"if len({var}) > {bound}: raise _E({Minor.STRING_TOO_LONG}, "
                           f"'string longer than its bound {bound}', pos)")
        self.unknown()

    def dec_sequence(self, tc: T.TypeCode, var: str, ind: int) -> None:
        content = T.resolve(tc.content_type())
        ck = content.unalias()._k
        bound = int(tc.length())
        size = int(min_size(content, self.codec))
        if tc._k == T.K_SEQUENCE:
            self.align(ind, 4)
            self.line(ind, "n = UL(data, pos)[0]")
            self.line(ind, "pos += 4")
            if bound:
                self.line(ind, f"if n > {bound}: raise _E({Minor.SEQUENCE_TOO_LONG}, "
                               f"'sequence of %d elements, bound {bound}' % n, pos)")
            number = "n"
        else:
            number = str(bound)
        if size:
            self.line(ind, f"_chk({number}, len(data) - pos, {size}, pos)")
        else:
            self.line(ind, f"_chk0({number}, st, pos)")
        self.unknown()
        if ck == T.K_OCTET:
            raw = f"data[pos:pos + {number}]"
            self.line(ind, f"{var} = {raw}" if tc._k == T.K_SEQUENCE else f"{var} = list({raw})")
            self.line(ind, f"pos += {number}")
        elif ck in BULK_KINDS:
            letter = RUN_KINDS[ck]
            if SIZES[letter] == 8:
                self.line(ind, f"if {number}: pos += -pos & 7")
            fmt = ("<" if self.little else ">") + "%d" + letter
            self.line(ind, f"{var} = list(_unpack_from({fmt!r} % {number}, data, pos))")
            self.line(ind, f"pos += {number} * {SIZES[letter]}")
        elif ck == T.K_CHAR:
            encoding = "ascii" if self.codec.char_encoding == "utf-8" else "latin-1"
            self.line(ind, f"{var} = list(data[pos:pos + {number}].decode({encoding!r}))")
            self.line(ind, f"pos += {number}")
        elif ck == T.K_BOOLEAN:
            raw = self.tmp("r")
            self.line(ind, f"{raw} = data[pos:pos + {number}]")
            self.line(ind, f"if {raw}.translate(None, b'\\x00\\x01'): raise _E("
                           f"{Minor.INVALID_BOOLEAN}, 'boolean octet not 0 or 1', pos)")
            self.line(ind, f"{var} = [b == 1 for b in {raw}]")
            self.line(ind, f"pos += {number}")
        else:
            append, item = self.tmp("ap"), self.tmp("x")
            self.line(ind, f"{var} = []")
            self.line(ind, f"{append} = {var}.append")
            self.line(ind, f"for _ in range({number}):")
            self.dec(content, item, ind + 1)
            self.flush(ind + 1)
            self.line(ind + 1, f"{append}({item})")
            self.unknown()

    def dec_special(self, tc: T.TypeCode, k: int, var: str, ind: int) -> None:
        if k == T.K_UNION:
            assert isinstance(tc, T.UnionTC)
            disc = self.tmp("d")
            self.dec(tc.discriminator_type(), disc, ind)
            self.flush(ind)
            index = self.tmp("i")
            labels, default = self.const(dict(tc._index)), int(tc._default)
            self.line(ind, f"{index} = {labels}.get({disc}, {default})")
            self.line(ind, f"if {index} < 0: {var} = None")
            self.line(ind, "else:")
            members = tuple(self.compiler.get(t) for t in tc._types)
            self.line(ind + 1, f"{var}, pos = {self.const(members)}[{index}](data, pos, st)")
            self.line(ind, f"{var} = {self.const(_python_class(tc))}({disc}, {var})")
        elif k == T.K_WSTRING:
            self.line(ind, f"{var}, pos = dec_wstring(data, pos, st)")
            if tc.length():
                self.line(ind, f"if len({var}) > {int(tc.length())}: raise _E("
                               f"{Minor.WSTRING_TOO_LONG}, 'wstring longer than its bound', pos)")
        elif k == T.K_WCHAR:
            self.line(ind, f"{var}, pos = dec_wchar(data, pos, st)")
        elif k == T.K_LONGDOUBLE:
            self.line(ind, "pos += -pos & 7")
            self.line(ind, f"{var} = _unpack_ld(data, pos, LITTLE)")
            self.line(ind, "pos += 16")
        elif k == T.K_FIXED:
            digits, scale = int(tc.fixed_digits()), int(tc.fixed_scale())
            size = C.fixed_size(digits)
            self.line(ind, f"r = data[pos:pos + {size}]")
            self.line(ind, f"if len(r) != {size}: raise _E({Minor.PASS_END}, 'fixed runs past the end', pos)")
            self.line(ind, f"{var} = _from_bcd(r, {digits}, {scale}, pos)")
            self.line(ind, f"pos += {size}")
        elif k in (T.K_OBJREF, T.K_ABSTRACT_INTERFACE):
            from cosnotify.orb import ior

            self.ns["_read_ior"] = ior.read_ior_at
            codec = self.const(self.codec)
            if k == T.K_ABSTRACT_INTERFACE:
                self.line(ind, "if data[pos] != 1: raise _E("
                               f"{Minor.INVALID_DISCRIMINATOR}, 'abstract interface holds a value', pos)")
                self.line(ind, "pos += 1")
            self.line(ind, f"{var}, pos = _read_ior(data, pos, {codec})")
            self.line(ind, f"{var} = st.objref_factory({var}, {self.const(tc.id())})")
        elif k == T.K_PRINCIPAL:
            self.dec(T.sequence_tc(0, T.TC_octet), var, ind)
        else:
            raise CDRError(Minor.INVALID_TYPECODE_KIND, f"cannot unmarshal values of {tc!r}")

    # -- encoding --------------------------------------------------------------------------
    def enc(self, tc: T.TypeCode, expr: str, ind: int, top: bool = False) -> None:
        tc = T.resolve(tc)
        k = tc._k
        if k == T.K_ALIAS:
            self.enc(tc.content_type(), expr, ind, top)
            return
        if k in RUN_KINDS:
            self.enc_run_item(tc, k, expr, ind)
            return
        self.flush(ind)
        if k in (T.K_NULL, T.K_VOID):
            return
        if k == T.K_STRING:
            self.enc_string(tc, expr, ind)
        elif k in (T.K_STRUCT, T.K_EXCEPT) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            value = self.tmp()
            self.line(ind, f"{value} = {expr}")
            fields = zip(tc._attrs, tc._safe, tc._types)  # type: ignore[attr-defined]
            for index, (attr, safe, member_tc) in enumerate(fields):
                self.enc(member_tc, _attribute(value, index, attr, safe, self.const), ind)
            self.chain.discard(id(tc))
        elif k in (T.K_SEQUENCE, T.K_ARRAY) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            self.enc_sequence(tc, expr, ind)
            self.chain.discard(id(tc))
        elif top and k not in (T.K_ANY, T.K_TYPECODE):
            self.enc_special(tc, k, expr, ind)
        else:
            self.line(ind, f"{self.call(tc)}(buf, {expr}, st)")
            self.unknown()

    def enc_run_item(self, tc: T.TypeCode, k: int, expr: str, ind: int) -> None:
        if k == T.K_BOOLEAN:
            expr = f"(1 if {expr} else 0)"
        elif k == T.K_CHAR:
            value = self.tmp()
            limit = 127 if self.codec.char_encoding == "utf-8" else 255
            self.line(ind, f"{value} = ord({expr})")
            self.line(ind, f"if {value} > {limit}: raise _DC('char %r is not in the "
                           f"transmission code set' % chr({value}))")
            expr = value
        elif k == T.K_ENUM:
            value = self.tmp()
            count = len(tc.enum_items())  # type: ignore[attr-defined]
            self.line(ind, f"{value} = {expr}")
            rid = self.const(tc.id())  # never spliced into source
            self.line(ind, f"if {value}._parent_id != {rid} or not 0 <= {value}._v < {count}: "
                           f"raise _V('not an item of enum ' + {rid})")
            expr = f"{value}._v"
        self.run.append((k, expr, tc))

    def enc_string(self, tc: T.TypeCode, expr: str, ind: int) -> None:
        bound = int(tc.length())
        if bound:
            value = self.tmp()
            self.line(ind, f"{value} = {expr}")
            self.line(ind, f"if len({value}) > {bound}: raise _V('string longer than its bound {bound}')")
            expr = value
        self.line(ind, f"b = {expr}.encode({self.codec.char_encoding!r})")
        self.line(ind, "if Z in b: raise _V('strings cannot contain NUL')")
        self.align(ind, 4)
        self.line(ind, "buf += PUL(len(b) + 1)")
        self.line(ind, "buf += b")
        self.line(ind, "buf.append(0)")
        self.unknown()

    def enc_sequence(self, tc: T.TypeCode, expr: str, ind: int) -> None:
        content = T.resolve(tc.content_type())
        ck = content.unalias()._k
        bound = int(tc.length())
        value = self.tmp()
        self.line(ind, f"{value} = {expr}")
        if ck == T.K_CHAR:
            self.line(ind, f"s = {value} if type({value}) is str else ''.join({value})")
            self.line(ind, f"if len(s) != len({value}): raise _V('char items must be 1-character strings')")
        self.line(ind, f"n = len({value})")
        if tc._k == T.K_SEQUENCE:
            if bound:
                self.line(ind, f"if n > {bound}: raise _V('sequence longer than its bound {bound}')")
            self.align(ind, 4)
            self.line(ind, "buf += PUL(n)")
        else:
            self.line(ind, f"if n != {bound}: raise _V('array needs exactly {bound} elements')")
        self.unknown()
        if ck == T.K_OCTET:
            self.line(ind, f"buf += {value} if type({value}) is bytes else bytes({value})")
        elif ck in BULK_KINDS:
            letter = RUN_KINDS[ck]
            if SIZES[letter] == 8:
                self.line(ind, "if n: buf += PAD8[len(buf) & 7]")
            fmt = ("<" if self.little else ">") + "%d" + letter
            self.line(ind, f"buf += _pack({fmt!r} % n, *{value})")
        elif ck == T.K_CHAR:
            encoding = "ascii" if self.codec.char_encoding == "utf-8" else "latin-1"
            self.line(ind, f"buf += s.encode({encoding!r})")
        elif ck == T.K_BOOLEAN:
            self.line(ind, f"buf += bytes([1 if b else 0 for b in {value}])")
        else:
            item = self.tmp("x")
            self.line(ind, f"for {item} in {value}:")
            self.enc(content, item, ind + 1)
            self.flush(ind + 1)
            self.lines.append("    " * (ind + 1) + "pass")
        self.unknown()

    def enc_special(self, tc: T.TypeCode, k: int, expr: str, ind: int) -> None:
        if k == T.K_UNION:
            assert isinstance(tc, T.UnionTC)
            disc = self.tmp("d")
            self.line(ind, f"{disc} = {expr}._d")
            self.enc(tc.discriminator_type(), disc, ind)
            self.flush(ind)
            index = self.tmp("i")
            labels, default = self.const(dict(tc._index)), int(tc._default)
            self.line(ind, f"{index} = {labels}.get({disc}, {default})")
            members = tuple(self.compiler.get(t) for t in tc._types)
            self.line(ind, f"if {index} >= 0: {self.const(members)}[{index}](buf, {expr}._v, st)")
        elif k == T.K_WSTRING:
            if tc.length():
                self.line(ind, f"if len({expr}) > {int(tc.length())}: "
                               "raise _V('wstring longer than its bound')")
            self.line(ind, f"enc_wstring(buf, {expr}, st)")
        elif k == T.K_WCHAR:
            self.line(ind, f"enc_wchar(buf, {expr}, st)")
        elif k == T.K_LONGDOUBLE:
            self.line(ind, "buf += PAD8[len(buf) & 7]")
            self.line(ind, f"buf += _pack_ld({expr}, LITTLE)")
        elif k == T.K_FIXED:
            digits, scale = int(tc.fixed_digits()), int(tc.fixed_scale())
            self.line(ind, f"buf += _to_bcd({expr}, {digits}, {scale})")
        elif k in (T.K_OBJREF, T.K_ABSTRACT_INTERFACE):
            from cosnotify.orb import ior

            self.ns["_ior_bytes"] = ior.ior_bytes
            if k == T.K_ABSTRACT_INTERFACE:
                self.line(ind, "buf.append(1)")
            self.line(ind, "buf += PAD4[len(buf) & 3]")
            self.line(ind, f"buf += _ior_bytes(st.objref_encoder({expr}), {self.const(self.codec)})")
        elif k == T.K_PRINCIPAL:
            self.enc(T.sequence_tc(0, T.TC_octet), expr, ind)
        elif k == T.K_LOCAL_INTERFACE:
            raise MARSHAL(OMGVMCID | 4, COMPLETED_NO, "local interfaces cannot be marshalled")
        else:
            raise EncodeMismatch(f"cannot marshal values of {tc!r}")
