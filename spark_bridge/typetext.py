"""TypeCodes as text: the ``type`` column beside every value in Spark.

Strategy: a basic kind is written as its bare IDL-ish name (``long``,
``ulonglong``, ``string``, ``TypeCode``...), so ``type = 'long'`` works in
SQL; every other TypeCode is a compact JSON object whose nested TypeCodes are
again names or objects::

    {"kind":"struct","id":"IDL:x/S:1.0","name":"S","members":[["a","long"],...]}

Everything CORBA 2.6 section 10.7.1 lets one observe through ``equal()`` is
kept: repository ids, names, member names, union labels and default index,
bounds, fixed digits and scale, aliases. A recursive reference (section
10.7.3) is written as ``{"kind":"recursive","id":...}`` when the struct or
union it names is being written around it, and read back with
``create_recursive_tc``, which the enclosing struct or union binds.

Both directions are cached, since an event stream repeats a handful of
TypeCodes: text by TypeCode identity, TypeCodes by text.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from cosnotify.orb import typecode as T
from cosnotify.orb.values import EnumItem

__all__ = ["SIMPLE_NAMES", "TypeTextError", "decode_typecode", "encode_typecode"]

#: The basic kinds, written as bare names.
SIMPLE_NAMES: dict[int, str] = {
    T.K_NULL: "null", T.K_VOID: "void", T.K_SHORT: "short", T.K_LONG: "long",
    T.K_USHORT: "ushort", T.K_ULONG: "ulong", T.K_FLOAT: "float", T.K_DOUBLE: "double",
    T.K_BOOLEAN: "boolean", T.K_CHAR: "char", T.K_OCTET: "octet", T.K_ANY: "any",
    T.K_TYPECODE: "TypeCode", T.K_PRINCIPAL: "Principal", T.K_LONGLONG: "longlong",
    T.K_ULONGLONG: "ulonglong", T.K_LONGDOUBLE: "longdouble", T.K_WCHAR: "wchar",
}
_SIMPLE_BY_NAME: dict[str, T.TypeCode] = {name: T._SIMPLE[k] for k, name in SIMPLE_NAMES.items()}
_SIMPLE_BY_NAME["string"] = T.TC_string
_SIMPLE_BY_NAME["wstring"] = T.TC_wstring

_REF_KINDS = {T.K_OBJREF: "objref", T.K_ABSTRACT_INTERFACE: "abstract_interface",
              T.K_LOCAL_INTERFACE: "local_interface"}
_REF_BUILDERS = {"objref": T.objref_tc, "abstract_interface": T.abstract_interface_tc,
                 "local_interface": T.local_interface_tc}
_CACHE_LIMIT = 4096

_encoded: dict[int, tuple[T.TypeCode, str]] = {}
_decoded: dict[str, T.TypeCode] = {}
_lock = threading.Lock()


class TypeTextError(ValueError):
    """A ``type`` text that does not describe a TypeCode."""

    def __init__(self, text: str, detail: str) -> None:
        shown = text if len(text) <= 80 else text[:77] + "..."
        super().__init__(f"bad TypeCode text {shown!r}: {detail}")
        self.text = text
        self.detail = detail


# -- TypeCode -> text ------------------------------------------------------------------------

def encode_typecode(tc: T.TypeCode) -> str:
    """The text of ``tc`` (cached by identity)."""
    hit = _encoded.get(id(tc))
    if hit is not None and hit[0] is tc:
        return hit[1]
    tree = _tree(tc, [])
    text = tree if isinstance(tree, str) else json.dumps(tree, separators=(",", ":"),
                                                         ensure_ascii=False)
    with _lock:
        if len(_encoded) >= _CACHE_LIMIT:
            _encoded.clear()
        _encoded[id(tc)] = (tc, text)  # the entry keeps tc alive, so its id stays unique
    return text


def _tree(tc: T.TypeCode, stack: list[T.TypeCode]) -> Any:
    tc = T.resolve(tc)
    k = tc._k
    name = SIMPLE_NAMES.get(k)
    if name is not None:
        return name
    if isinstance(tc, T.StringTC):
        base = "string" if k == T.K_STRING else "wstring"
        return {"kind": base, "bound": tc._bound} if tc._bound else base
    if isinstance(tc, (T.StructTC, T.UnionTC)):
        if any(tc is s for s in stack):
            return {"kind": "recursive", "id": tc._id}
        stack.append(tc)
        try:
            if isinstance(tc, T.StructTC):
                return {"kind": "struct" if k == T.K_STRUCT else "exception", "id": tc._id,
                        "name": tc._name,
                        "members": [[n, _tree(t, stack)] for n, t in zip(tc._names, tc._types)]}
            disc = _tree(tc._disc, stack)
            return {"kind": "union", "id": tc._id, "name": tc._name, "discriminator": disc,
                    "default": tc._default,
                    "members": [[_label(label), n, _tree(t, stack)]
                                for label, n, t in zip(tc._labels, tc._names, tc._types)]}
        finally:
            stack.pop()
    if isinstance(tc, T.EnumTC):
        return {"kind": "enum", "id": tc._id, "name": tc._name, "members": list(tc._names)}
    if isinstance(tc, T.SequenceTC):
        if k == T.K_ARRAY:
            return {"kind": "array", "length": tc._bound, "of": _tree(tc._content, stack)}
        return {"kind": "sequence", "bound": tc._bound, "of": _tree(tc._content, stack)}
    if isinstance(tc, T.AliasTC):
        return {"kind": "alias", "id": tc._id, "name": tc._name, "of": _tree(tc._content, stack)}
    if isinstance(tc, T.FixedTC):
        return {"kind": "fixed", "digits": tc._digits, "scale": tc._scale}
    if isinstance(tc, T.ObjrefTC):
        return {"kind": _REF_KINDS[k], "id": tc._id, "name": tc._name}
    raise TypeTextError(repr(tc), f"TypeCode kind {T._KIND_NAMES[k]} has no text form")


def _label(label: Any) -> Any:
    """A union label as JSON: null for default, the name of an enum item, else as is."""
    if label is T.DEFAULT_LABEL:
        return None
    if isinstance(label, EnumItem):
        return label._n
    return label


# -- text -> TypeCode ------------------------------------------------------------------------

def decode_typecode(text: str) -> T.TypeCode:
    """The TypeCode ``text`` describes (cached by text)."""
    tc = _decoded.get(text)
    if tc is not None:
        return tc
    simple = _SIMPLE_BY_NAME.get(text)
    if simple is not None:
        return simple
    try:
        tree = json.loads(text)
    except ValueError as exc:
        raise TypeTextError(text, "neither a basic kind name nor JSON") from exc
    try:
        built: T.TypeCode = _build(tree)
    except TypeTextError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise TypeTextError(text, f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # the TypeCode builders raise BAD_PARAM / BAD_TYPECODE
        raise TypeTextError(text, str(exc) or type(exc).__name__) from exc
    with _lock:
        if len(_decoded) >= _CACHE_LIMIT:
            _decoded.clear()
        _decoded[text] = built
    return built


def _build(tree: Any) -> Any:  # the orb.typecode builders are typed Any
    if isinstance(tree, str):
        simple = _SIMPLE_BY_NAME.get(tree)
        if simple is None:
            raise TypeTextError(tree, "unknown basic kind")
        return simple
    kind = tree["kind"]
    if kind in ("string", "wstring"):
        return (T.string_tc if kind == "string" else T.wstring_tc)(int(tree["bound"]))
    if kind in ("struct", "exception"):
        members = [(str(n), _build(t)) for n, t in tree["members"]]
        if len(members) > 1 and not any(n for n, _ in members):  # compact (10.7.1)
            return _compact(T.StructTC(T.K_STRUCT if kind == "struct" else T.K_EXCEPT,
                                       str(tree["id"]), str(tree["name"]),
                                       tuple(n for n, _ in members), tuple(t for _, t in members)))
        build = T.struct_tc if kind == "struct" else T.exception_tc
        return build(str(tree["id"]), str(tree["name"]), members)
    if kind == "union":
        disc = _build(tree["discriminator"])
        entries = [(_unlabel(disc, label), str(n), _build(t)) for label, n, t in tree["members"]]
        union = T.union_tc(str(tree["id"]), str(tree["name"]), disc, entries, int(tree["default"]))
        return union
    if kind == "enum":
        return T.enum_tc(str(tree["id"]), str(tree["name"]), [str(m) for m in tree["members"]])
    if kind == "sequence":
        return T.sequence_tc(int(tree["bound"]), _build(tree["of"]))
    if kind == "array":
        return T.array_tc(int(tree["length"]), _build(tree["of"]))
    if kind == "alias":
        return T.alias_tc(str(tree["id"]), str(tree["name"]), _build(tree["of"]))
    if kind == "fixed":
        return T.fixed_tc(int(tree["digits"]), int(tree["scale"]))
    if kind == "recursive":
        return T.recursive_tc(str(tree["id"]))
    if kind in _REF_BUILDERS:
        return _REF_BUILDERS[kind](str(tree["id"]), str(tree["name"]))
    raise TypeTextError(json.dumps(tree), f"unknown kind {kind!r}")


def _compact(tc: T.StructTC) -> T.TypeCode:
    """A struct without member names (get_compact_typecode), which struct_tc refuses."""
    T._bind_recursion(tc, tc._id, tc._types)
    return tc


def _unlabel(disc: T.TypeCode, label: Any) -> Any:
    if label is None:
        return T.DEFAULT_LABEL
    base = T.resolve(disc).unalias()
    if base._k == T.K_ENUM:
        for item in base.enum_items():  # type: ignore[attr-defined]
            if item._n == label:
                return item
        raise TypeTextError(str(label), f"not a member of enum {base.id()}")
    if base._k == T.K_BOOLEAN:
        return bool(label)
    return label
