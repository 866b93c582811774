"""TypeCodes as text: the ``type`` column beside every value in Spark.

Strategy: a basic kind is written as its bare IDL-ish name (``long``,
``ulonglong``, ``string``, ``TypeCode``...), so ``type = 'long'`` works in
SQL; every other TypeCode is a compact JSON object whose nested TypeCodes are
again names or objects::

    {"kind":"struct","id":"IDL:x/S:1.0","name":"S","members":[["a","long"],...]}

Everything CORBA 2.6 section 10.7.1 lets one observe through ``equal()`` is
kept: repository ids, names, member names, union labels and default index,
bounds, fixed digits and scale, aliases. Member names are IDL names (omniORB's
``_in`` for a member named like a Python keyword is written ``in``).

Both directions work on omniORB's TypeCode *descriptors*
(``cosnotify.corba.descriptors``), never on ``TypeCode`` methods, so
TypeCodes unmarshalled from the wire (whose repeated and recursive types the
4.3.3 wheel marks with kind ``0xffffffff``) are written like in-process ones.
An indirection to a struct or union being written around it (section 10.7.3)
becomes ``{"kind":"recursive","id":...}``; any other indirection (a type the
wire repeats) is written out again, so the text never depends on how the
sender shared its types.

Reading text builds descriptors and makes TypeCodes of them directly. When
this process has stubs for a repository id (``omniORB.findType``) and they
describe the same type, their descriptor is used, so values decode into the
generated classes and enum items users compare with; otherwise structs,
unions and exceptions get omniORB's ``createUnknown*`` classes, as if the
value had arrived from a peer. ``long double``, value types and native
types have no text: omniORBpy cannot marshal long double at all.

Both directions are cached, since an event stream repeats a handful of
TypeCodes: text by descriptor identity, TypeCodes by text.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Final

import omniORB
from omniORB import tcInternal

from cosnotify.corba import descriptors as D

__all__ = [
    "SIMPLE_NAMES",
    "TypeTextError",
    "decode_descriptor",
    "decode_typecode",
    "encode_descriptor",
    "encode_typecode",
    "idl_name",
]

#: The basic kinds, written as bare names.
SIMPLE_NAMES: Final[dict[int, str]] = {
    D.NULL: "null", D.VOID: "void", D.SHORT: "short", D.LONG: "long", D.USHORT: "ushort",
    D.ULONG: "ulong", D.FLOAT: "float", D.DOUBLE: "double", D.BOOLEAN: "boolean",
    D.CHAR: "char", D.OCTET: "octet", D.ANY: "any", D.TYPECODE: "TypeCode",
    D.PRINCIPAL: "Principal", D.LONGLONG: "longlong", D.ULONGLONG: "ulonglong",
    D.WCHAR: "wchar",
}
_SIMPLE_BY_NAME: Final[dict[str, Any]] = {name: k for k, name in SIMPLE_NAMES.items()}
_SIMPLE_BY_NAME["string"] = (D.STRING, 0)
_SIMPLE_BY_NAME["wstring"] = (D.WSTRING, 0)

_REF_KINDS: Final = {D.OBJREF: "objref", D.ABSTRACT_INTERFACE: "abstract_interface",
                     D.LOCAL_INTERFACE: "local_interface"}
_REF_BY_NAME: Final = {name: k for k, name in _REF_KINDS.items()}
_NO_TEXT: Final = {D.LONGDOUBLE: "long double (omniORBpy does not support it)",
                   D.VALUE: "value type", D.VALUE_BOX: "value box", D.NATIVE: "native"}
_INTEGER_RANGES: Final = {
    D.SHORT: (-(2**15), 2**15 - 1), D.LONG: (-(2**31), 2**31 - 1),
    D.LONGLONG: (-(2**63), 2**63 - 1), D.USHORT: (0, 2**16 - 1), D.ULONG: (0, 2**32 - 1),
    D.ULONGLONG: (0, 2**64 - 1),
}
_TYPECODE_CLASSES: Final = {
    D.STRUCT: tcInternal.TypeCode_struct, D.EXCEPT: tcInternal.TypeCode_except,
    D.UNION: tcInternal.TypeCode_union, D.ENUM: tcInternal.TypeCode_enum,
    D.ALIAS: tcInternal.TypeCode_alias, D.OBJREF: tcInternal.TypeCode_objref,
    D.ABSTRACT_INTERFACE: tcInternal.TypeCode_objref,
    D.LOCAL_INTERFACE: tcInternal.TypeCode_objref,
}
_CACHE_LIMIT = 4096

_encoded: dict[int, tuple[Any, str]] = {}
_decoded: dict[str, Any] = {}
_registered: dict[str, tuple[Any, Any]] = {}  # repository id -> (stub descriptor, its tree)
_lock = threading.Lock()


class TypeTextError(ValueError):
    """A ``type`` text that does not describe a TypeCode, or a TypeCode without text."""

    def __init__(self, text: str, detail: str) -> None:
        shown = text if len(text) <= 80 else text[:77] + "..."
        super().__init__(f"bad TypeCode text {shown!r}: {detail}")
        self.text = text
        self.detail = detail


def idl_name(attribute: str) -> str:
    """The IDL name of a member whose Python attribute is ``attribute`` (``_in`` -> ``in``)."""
    if attribute[:1] == "_" and D.attribute(attribute[1:]) == attribute:
        return attribute[1:]
    return attribute


# -- TypeCode -> text ------------------------------------------------------------------------

def encode_typecode(tc: Any) -> str:
    """The text of a ``CORBA.TypeCode`` (cached by its descriptor's identity)."""
    return encode_descriptor(tc._d)


def encode_descriptor(d: D.Descriptor) -> str:
    """The text of an omniORB TypeCode descriptor (in-process or from the wire)."""
    if type(d) is int:
        name = SIMPLE_NAMES.get(d)
        if name is not None:
            return name
    hit = _encoded.get(id(d))
    if hit is not None and hit[0] is d:
        return hit[1]
    tree = _tree(d, [])
    text = tree if isinstance(tree, str) else json.dumps(tree, separators=(",", ":"),
                                                         ensure_ascii=False)
    with _lock:
        if len(_encoded) >= _CACHE_LIMIT:
            _encoded.clear()
        _encoded[id(d)] = (d, text)  # the entry keeps d alive, so its id stays unique
    return text


def _tree(d: D.Descriptor, stack: list[Any]) -> Any:
    if type(d) is int:
        name = SIMPLE_NAMES.get(d)
        if name is None:
            raise TypeTextError(repr(d), f"{_NO_TEXT.get(d, f'kind {d}')} has no text form")
        return name
    k = d[0]
    if k == D.INDIRECT or k == D.WIRE_INDIRECT:
        target = D.resolve(d)
        for outer in stack:
            if outer is target:
                return {"kind": "recursive", "id": D.repo_id(target)}
        return _tree(target, stack)
    if k == D.STRING or k == D.WSTRING:
        base = "string" if k == D.STRING else "wstring"
        return {"kind": base, "bound": d[1]} if d[1] else base
    if k == D.STRUCT or k == D.EXCEPT or k == D.UNION:
        stack.append(d)
        try:
            if k == D.UNION:
                return {"kind": "union", "id": d[2] or "", "name": d[3],
                        "discriminator": _tree(d[4], stack), "default": d[5],
                        "members": [[None if i == d[5] else _label(label), idl_name(n),
                                     _tree(m, stack)]
                                    for i, (label, n, m) in enumerate(d[6])]}
            return {"kind": "struct" if k == D.STRUCT else "exception", "id": d[2] or "",
                    "name": d[3],
                    "members": [[idl_name(n), _tree(m, stack)]
                                for n, m in zip(d[4::2], d[5::2], strict=True)]}
        finally:
            stack.pop()
    if k == D.ENUM:
        return {"kind": "enum", "id": d[1] or "", "name": d[2],
                "members": [item._n for item in d[3]]}
    if k == D.SEQUENCE:
        return {"kind": "sequence", "bound": d[2], "of": _tree(d[1], stack)}
    if k == D.ARRAY:
        return {"kind": "array", "length": d[2], "of": _tree(d[1], stack)}
    if k == D.ALIAS:
        return {"kind": "alias", "id": d[1] or "", "name": d[2], "of": _tree(d[3], stack)}
    if k == D.FIXED:
        return {"kind": "fixed", "digits": d[1], "scale": d[2]}
    if k in _REF_KINDS:
        return {"kind": _REF_KINDS[k], "id": d[1] or "", "name": d[2]}
    raise TypeTextError(repr(d)[:80], f"{_NO_TEXT.get(k, f'kind {k}')} has no text form")


def _label(label: Any) -> Any:
    """A union label as JSON: the name of an enum item, else the value as is."""
    if isinstance(label, omniORB.EnumItem):
        return label._n
    return label


# -- text -> TypeCode ------------------------------------------------------------------------

def decode_typecode(text: str) -> Any:
    """The ``CORBA.TypeCode`` ``text`` describes (cached by text)."""
    tc = _decoded.get(text)
    if tc is not None:
        return tc
    d = _SIMPLE_BY_NAME.get(text)
    if d is None:
        try:
            tree = json.loads(text)
        except ValueError as exc:
            if text == "longdouble":
                raise TypeTextError(text, _NO_TEXT[D.LONGDOUBLE]) from exc
            raise TypeTextError(text, "neither a basic kind name nor JSON") from exc
        try:
            d = _build(tree, [])
        except TypeTextError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise TypeTextError(text, f"{type(exc).__name__}: {exc}") from exc
    tc = _typecode(d)
    with _lock:
        if len(_decoded) >= _CACHE_LIMIT:
            _decoded.clear()
        _decoded[text] = tc
    return tc


def decode_descriptor(text: str) -> D.Descriptor:
    """The descriptor of :func:`decode_typecode` (the same object, cached)."""
    return decode_typecode(text)._d


def _typecode(d: D.Descriptor) -> Any:
    """A TypeCode object for ``d``; the stub's own when ``d`` is the registered descriptor.

    ``tcInternal.createTypeCode`` returns the registered TypeCode for any
    descriptor with a registered id, even one describing another shape, so
    named kinds are wrapped directly unless ``d`` is the stub's descriptor.
    """
    if type(d) is tuple and d[0] in _TYPECODE_CLASSES:
        rid = D.repo_id(d)
        if not (rid and omniORB.findType(rid) is d):
            return _TYPECODE_CLASSES[d[0]](d)
    return tcInternal.createTypeCode(d)


_Scope = list[tuple[str, list[list[Any]]]]  # (repository id, its recursion cells), innermost last


def _build(tree: Any, scope: _Scope) -> Any:
    if isinstance(tree, str):
        simple = _SIMPLE_BY_NAME.get(tree)
        if simple is None:
            detail = _NO_TEXT[D.LONGDOUBLE] if tree == "longdouble" else "unknown basic kind"
            raise TypeTextError(tree, detail)
        return simple
    kind = tree["kind"]
    if kind in ("string", "wstring"):
        return (D.STRING if kind == "string" else D.WSTRING, _natural(tree["bound"]))
    if kind in ("struct", "exception", "union"):
        rid = _text(tree["id"])
        cells: list[list[Any]] = []
        scope.append((rid, cells))
        try:
            built = (_union(tree, rid, scope) if kind == "union"
                     else _struct(tree, rid, D.STRUCT if kind == "struct" else D.EXCEPT, scope))
        finally:
            scope.pop()
        for cell in cells:
            cell[0] = built
        return _prefer_registered(rid, built, tree)
    if kind == "enum":
        rid = _text(tree["id"])
        labels = [_text(m) for m in tree["members"]]
        items = []
        for i, label in enumerate(labels):
            item = omniORB.EnumItem(label, i)
            item._parent_id = rid
            items.append(item)
        return _prefer_registered(rid, (D.ENUM, rid, _text(tree["name"]), tuple(items)), tree)
    if kind == "sequence":
        return (D.SEQUENCE, _build(tree["of"], scope), _natural(tree["bound"]))
    if kind == "array":
        length = _natural(tree["length"])
        if length == 0:
            raise TypeTextError(json.dumps(tree), "an array has at least one element")
        return (D.ARRAY, _build(tree["of"], scope), length)
    if kind == "alias":
        rid = _text(tree["id"])
        return _prefer_registered(
            rid, (D.ALIAS, rid, _text(tree["name"]), _build(tree["of"], scope)), tree)
    if kind == "fixed":
        digits, scale = _natural(tree["digits"]), _natural(tree["scale"])
        if not 1 <= digits <= 31 or scale > digits:
            raise TypeTextError(json.dumps(tree), "fixed needs 1 <= digits <= 31, scale <= digits")
        return (D.FIXED, digits, scale)
    if kind == "recursive":
        rid = _text(tree["id"])
        for outer_id, outer_cells in reversed(scope):
            if outer_id == rid:
                target: list[Any] = [None]
                outer_cells.append(target)
                return (D.INDIRECT, target)
        raise TypeTextError(json.dumps(tree), "no enclosing struct or union has this id")
    if kind in _REF_BY_NAME:
        rid = _text(tree["id"])
        return _prefer_registered(rid, (_REF_BY_NAME[kind], rid, _text(tree["name"])), tree)
    raise TypeTextError(json.dumps(tree), f"unknown kind {kind!r}")


def _struct(tree: Any, rid: str, k: int, scope: _Scope) -> tuple[Any, ...]:
    names = [D.attribute(_text(n)) if n else "" for n, _ in tree["members"]]
    types = [_build(t, scope) for _, t in tree["members"]]
    if k == D.STRUCT:
        cls = omniORB.createUnknownStruct(rid, names)
    else:
        cls = omniORB.createUnknownUserException(rid, names)
    flat: list[Any] = [k, cls, rid, _text(tree["name"])]
    for member_name, member in zip(names, types, strict=True):
        flat += [member_name, member]
    return tuple(flat)


def _union(tree: Any, rid: str, scope: _Scope) -> tuple[Any, ...]:
    disc = _build(tree["discriminator"], scope)
    base = D.unalias(disc)
    default = int(tree["default"])
    members = tree["members"]
    if not -1 <= default < len(members) or not members:
        raise TypeTextError(json.dumps(tree), "bad default index or no members")
    labels = [None if i == default else _unlabel(base, label)
              for i, (label, _, _) in enumerate(members)]
    if default >= 0:
        labels[default] = _implicit_default(base, labels)
    entries = tuple((label, D.attribute(_text(n)) if n else "", _build(t, scope))
                    for label, (_, n, t) in zip(labels, members, strict=True))
    table = {entry[0]: entry for i, entry in enumerate(entries) if i != default}
    cls = omniORB.createUnknownUnion(rid, default, entries)
    return (D.UNION, cls, rid, _text(tree["name"]), disc, default, entries,
            entries[default] if default >= 0 else None, table)


def _unlabel(base: Any, label: Any) -> Any:
    """A label from JSON as the discriminator's Python value (an enum item by name)."""
    k = base if type(base) is int else base[0]
    if k == D.ENUM:
        for item in base[3]:
            if item._n == label:
                return item
        raise TypeTextError(str(label), f"not a member of enum {base[1]}")
    if k == D.BOOLEAN and type(label) is bool:
        return label
    if k == D.CHAR or k == D.WCHAR:
        if type(label) is str and len(label) == 1:
            return label
    elif k in _INTEGER_RANGES and type(label) is int:
        lo, hi = _INTEGER_RANGES[k]
        if lo <= label <= hi:
            return label
    raise TypeTextError(json.dumps(label), "not a label of this discriminator type")


def _implicit_default(base: Any, labels: list[Any]) -> Any:
    """A discriminator value no explicit label uses: what selects the default member."""
    used = {label for label in labels if label is not None}
    k = base if type(base) is int else base[0]
    candidates: Any
    if k == D.ENUM:
        candidates = base[3]
    elif k == D.BOOLEAN:
        candidates = (False, True)
    elif k == D.CHAR or k == D.WCHAR:
        candidates = (chr(i) for i in range(0x10000))
    else:
        lo, hi = _INTEGER_RANGES[k]
        candidates = range(lo, hi + 1)
    for value in candidates:
        if value not in used:
            return value
    raise TypeTextError(repr(labels)[:80], "a default member, but every value has a label")


def _prefer_registered(rid: str, built: Any, tree: Any) -> Any:
    """The stubs' descriptor for ``rid`` if it describes ``tree``, else ``built``."""
    if not rid:
        return built
    found = _registered.get(rid)
    registered = omniORB.findType(rid)
    if registered is None:
        return built
    if found is None or found[0] is not registered:
        try:
            found = (registered, _tree(registered, []))
        except TypeTextError:
            found = (registered, None)
        with _lock:
            _registered[rid] = found
    return registered if found[1] == tree else built


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string expected, not {value!r:.40}")
    return value


def _natural(value: Any) -> int:
    if type(value) is not int or value < 0 or value > 2**32 - 1:
        raise ValueError(f"a bound or length expected, not {value!r:.40}")
    return value
