"""Code generation for IDL data types: TypeCodes, constants, and type classes.

Strategy: split out of `cosnotify.idl.codegen`, which owns packages, imports
and interfaces. Each declaration is written in two parts, following
docs/design/generated-code.md:

* its *definition* (the class statement, enum items, constant value) runs in
  the namespace that will hold it: the module, an interface class body, or,
  for a struct/union/enum declared inline in a member, the enclosing struct's
  class body;
* its *descriptors* (``_tc_`` TypeCode, type registration, a union's label
  tables) run at the nearest module or interface level, after any enclosing
  struct is complete. That is because a Python class body cannot see the
  names of the class body around it, while descriptors refer to other types.

A reference to a struct or union whose TypeCode is still being built (a
recursive member, or a forward-declared type) becomes
``tc.recursive_tc(repo_id)``; the runtime binds it when the enclosing
``struct_tc``/``union_tc`` is built.
"""

from __future__ import annotations

import decimal
import keyword
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cosnotify.idl import model
from cosnotify.idl.errors import IDLError

if TYPE_CHECKING:
    from cosnotify.idl.codegen import PackageWriter

_PRIMITIVE_TC = {
    "short": "TC_short", "long": "TC_long", "long long": "TC_longlong",
    "unsigned short": "TC_ushort", "unsigned long": "TC_ulong",
    "unsigned long long": "TC_ulonglong", "float": "TC_float", "double": "TC_double",
    "long double": "TC_longdouble", "boolean": "TC_boolean", "char": "TC_char",
    "wchar": "TC_wchar", "octet": "TC_octet", "any": "TC_any", "Object": "TC_Object",
    "TypeCode": "TC_TypeCode", "void": "TC_void",
}  # fmt: skip

Level = tuple[str, ...]


def py(name: str) -> str:
    """The Python name of an IDL identifier (mapping 1.2 section 1.2: keywords get ``_``)."""
    if keyword.iskeyword(name) or name in ("None", "True", "False"):
        return "_" + name
    return name


def indented(lines: list[str], prefix: str = "    ") -> list[str]:
    """``lines`` (which may hold embedded newlines) indented by ``prefix``."""
    return [prefix + line if line else "" for chunk in lines for line in chunk.split("\n")]


def q(text: str) -> str:
    """A Python string literal for ``text``, double-quoted when that is possible."""
    literal = repr(text)
    if literal.startswith("'") and '"' not in text:
        literal = '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal


def tuple_expr(items: list[str], indent: str = "", used: int = 0) -> str:
    """A Python tuple display: ``()``, ``(a,)``, or one item per line when long.

    ``indent`` is the indentation of the line the display starts on, and
    ``used`` how many characters precede the display on that line.
    """
    if not items:
        return "()"
    flat = f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if len(indent) + used + len(flat) <= 97 and "\n" not in flat:
        return flat
    inner = indent + "    "
    return "(\n" + "".join(f"{inner}{item},\n" for item in items) + indent + ")"


def call_expr(
    head: str, args: Sequence[str | list[str]], indent: str = "", margin: int = 0
) -> str:
    """``head(args)``: on one line if that fits in 99 columns, else one argument per line.

    A list argument is a tuple display. ``margin`` is extra indentation the
    caller adds to every line.
    """
    inner = indent + "    "
    rendered = [tuple_expr(a, inner) if isinstance(a, list) else a for a in args]
    flat = f"{head}({', '.join(rendered)})"
    if "\n" not in flat and len(indent) + margin + len(flat) <= 98:
        return flat
    return f"{head}(\n" + "".join(f"{inner}{r},\n" for r in rendered) + indent + ")"


# -- TypeCode and value expressions ---------------------------------------------------


def tc_expr(w: PackageWriter, t: model.Type, level: Level) -> str:
    """The expression for the TypeCode of ``t``, evaluated at ``level``."""
    if isinstance(t, model.Primitive):
        return f"CORBA.{_PRIMITIVE_TC[t.name]}"
    if isinstance(t, model.StringT):
        if t.bound == 0:
            return "CORBA.TC_wstring" if t.wide else "CORBA.TC_string"
        return f"tc.{'wstring' if t.wide else 'string'}_tc({t.bound})"
    if isinstance(t, model.SequenceT):
        return f"tc.sequence_tc({t.bound}, {tc_expr(w, t.element, level)})"
    if isinstance(t, model.ArrayT):
        expr = tc_expr(w, t.element, level)
        for size in reversed(t.sizes):
            expr = f"tc.array_tc({size}, {expr})"
        return expr
    if isinstance(t, model.FixedT):
        return f"tc.fixed_tc({t.digits}, {t.scale})"
    decl = t.decl
    if isinstance(decl, model.Native):
        raise IDLError.at(decl.loc, f"{decl.describe()} has no TypeCode and cannot be used here")
    if isinstance(decl, (model.Struct, model.Union_)) and not w.gen.is_complete(decl):
        return f"tc.recursive_tc({q(decl.repo_id)})"
    return w.ref(decl, "_tc_" + decl.name, level)


def value_expr(w: PackageWriter, value: object, level: Level) -> str:
    """A Python literal (or reference, for enumerators) for a constant or label value."""
    if isinstance(value, model.Enumerator):
        return w.ref(value, py(value.name), level)
    if isinstance(value, decimal.Decimal):
        w.needs_decimal = True
        return f"decimal.Decimal({q(str(value))})"
    if isinstance(value, str):
        return q(value)
    if isinstance(value, (bool, int, float)):
        return repr(value)
    raise AssertionError(f"unexpected constant value {value!r}")


# -- declarations ------------------------------------------------------------------


def definition(w: PackageWriter, decl: model.Decl, level: Level, out: list[str]) -> None:
    """Write the part of ``decl`` that runs in its own namespace (see module docstring).

    ``out`` receives the lines, unindented; the caller indents them.
    """
    if isinstance(decl, model.Struct):
        _class_head(out, decl, "values.StructBase")
        names = [py(m.name) for m in decl.members]
        out.append(f"    __slots__ = {tuple_expr([q(n) for n in names], '    ')}")
        _nested_definitions(w, decl, level, out)
        out.append("")
        out.append(f"    def __init__({_params(names)}) -> None:")
        out.extend(f"        self.{n} = {n}" for n in names)
    elif isinstance(decl, model.Exception_):
        _class_head(out, decl, "CORBA.UserException")
        _nested_definitions(w, decl, level, out)
        names = [py(m.name) for m in decl.members]
        out.append("")
        out.append(f"    def __init__({_params(names)}) -> None:")
        out.append(f"        CORBA.UserException.__init__({', '.join(['self', *names])})")
        out.extend(f"        self.{n} = {n}" for n in names)
    elif isinstance(decl, model.Union_):
        _class_head(out, decl, "values.Union")
        _nested_definitions(w, decl, level, out)
        if _union_tables_inline(decl, level):
            out.extend(indented(_union_tables(w, decl, level, "")))
    elif isinstance(decl, model.Enum):
        out.append(f"# enum {decl.name}")
        for item in decl.items:
            out.append(f"{py(item.name)} = values.EnumItem({q(item.name)}, {item.value})")
        items: list[str | list[str]] = [q(decl.repo_id), [py(i.name) for i in decl.items]]
        out.append(call_expr(f"{py(decl.name)} = values.Enum", items, margin=4 * len(level)))
    elif isinstance(decl, model.Alias):
        out.append(f"# typedef {decl.name}")
        out.append(f"class {py(decl.name)}({_alias_base(w, decl, level)}):")
        out.append(f"    _NP_RepositoryId = {q(decl.repo_id)}")
    elif isinstance(decl, model.Const):
        out.append(f"{py(decl.name)} = {value_expr(w, decl.value, level)}")
    elif isinstance(decl, model.Native):
        out.append(f"# native {decl.name}: no Python definition")


def descriptors(w: PackageWriter, decl: model.Decl, level: Level, out: list[str]) -> None:
    """Write the TypeCode/registration part of ``decl``, evaluated at ``level``.

    ``store`` is how the declaration's namespace is reached from ``level``:
    empty when it is ``level`` itself, else ``Outer.Inner.``.
    """
    store = w.store_prefix(decl, level)
    cls = f"{store}{py(decl.name)}"
    tc_name = f"{store}_tc_{decl.name}"
    if isinstance(decl, (model.Struct, model.Exception_, model.Union_)):
        for inner in decl.contents:
            descriptors(w, inner, level, out)
    w.gen.point = w.gen.done_seq.get(decl, w.gen.point)
    margin = 4 * len(level)
    if isinstance(decl, (model.Struct, model.Exception_)):
        members = [
            f"({q(m.name)}, {tc_expr(w, m.type, level)})" for m in decl.members
        ]
        builder = "struct_tc" if isinstance(decl, model.Struct) else "exception_tc"
        args: list[str | list[str]] = [f"{cls}._NP_RepositoryId", q(decl.name), members]
        out.append(call_expr(f"{tc_name} = tc.{builder}", args, margin=margin))
        out.append(f"registry.register_type({cls}._NP_RepositoryId, {cls})")
    elif isinstance(decl, model.Union_):
        if not _union_tables_inline(decl, level):
            out.extend(_union_tables(w, decl, level, f"{cls}."))
        members, default_index = [], -1
        for case in decl.cases:
            member_tc = tc_expr(w, case.type, level)
            for label in case.labels:
                if isinstance(label, model.DefaultLabel):
                    default_index = len(members)
                    label_text = "tc.DEFAULT_LABEL"
                else:
                    label_text = value_expr(w, label, level)
                members.append(f"({label_text}, {q(case.name)}, {member_tc})")
        disc = tc_expr(w, decl.switch_type, level)
        args = [f"{cls}._NP_RepositoryId", q(decl.name), disc, members, str(default_index)]
        out.append(call_expr(f"{tc_name} = tc.union_tc", args, margin=margin))
        out.append(f"registry.register_type({cls}._NP_RepositoryId, {cls})")
    elif isinstance(decl, model.Enum):
        args = [q(decl.repo_id), q(decl.name), [q(i.name) for i in decl.items]]
        out.append(call_expr(f"{tc_name} = tc.enum_tc", args, margin=margin))
        out.append(f"registry.register_type({tc_name}.id(), {cls})")
    elif isinstance(decl, model.Alias):
        original = tc_expr(w, decl.type, level)
        args = [f"{cls}._NP_RepositoryId", q(decl.name), original]
        out.append(call_expr(f"{tc_name} = tc.alias_tc", args, margin=margin))


def _params(names: list[str]) -> str:
    """A typed parameter list for a generated ``__init__`` (``_typing`` cannot be an IDL
    name: a leading underscore is an IDL escape and is stripped)."""
    return ", ".join(["self", *(f"{n}: _typing.Any" for n in names)])


def _class_head(out: list[str], decl: model.Decl, base: str) -> None:
    out.append(f"# {decl.kind} {decl.name}")
    out.append(f"class {py(decl.name)}({base}):")
    out.append(f"    _NP_RepositoryId = {q(decl.repo_id)}")


def _nested_definitions(w: PackageWriter, decl: model.Scope, level: Level, out: list[str]) -> None:
    """Types declared inline in members: their definitions go in this class body."""
    for inner in decl.contents:
        lines: list[str] = []
        definition(w, inner, level, lines)
        out.append("")
        out.extend(indented(lines))


def _union_tables_inline(decl: model.Union_, level: Level) -> bool:
    """Label tables can sit in the class body only for a module-level union."""
    return not level and isinstance(decl.parent, model.Module)


def _union_tables(w: PackageWriter, decl: model.Union_, level: Level, store: str) -> list[str]:
    m_to_d: list[str] = []
    d_to_m: list[str] = []
    default_member = None
    for case in decl.cases:
        labels = [v for v in case.labels if not isinstance(v, model.DefaultLabel)]
        if len(labels) != len(case.labels):
            default_member = case.name
        if labels:
            m_to_d.append(f"{q(py(case.name))}: {value_expr(w, labels[0], level)}")
        d_to_m.extend(f"{value_expr(w, v, level)}: {q(py(case.name))}" for v in labels)
    default_d = "None" if decl.default_value is None else value_expr(w, decl.default_value, level)
    return [
        f"{store}_m_to_d = {{{', '.join(m_to_d)}}}",
        f"{store}_d_to_m = {{{', '.join(d_to_m)}}}",
        f"{store}_def_m = {q(py(default_member))}" if default_member else f"{store}_def_m = None",
        f"{store}_def_d = {default_d}",
    ]


def _alias_base(w: PackageWriter, decl: model.Alias, level: Level) -> str:
    """A typedef of a struct or union subclasses it (as omniORBpy does); others are Alias."""
    t = decl.type
    if isinstance(t, model.Named) and isinstance(t.decl, (model.Struct, model.Union_, model.Alias)):
        target = t.decl
        if isinstance(target, model.Alias):
            inner = model.unalias(t)
            is_class = isinstance(inner, model.Named) and isinstance(
                inner.decl, (model.Struct, model.Union_)
            )
            if not is_class:
                return "values.Alias"
        return w.ref(target, py(target.name), level)
    return "values.Alias"
