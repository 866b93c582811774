"""Semantic analysis of discriminated unions (CORBA 2.6 section 3.11.2.2).

Strategy: split out of `cosnotify.idl.analyzer`. The discriminator must be an
integer, char, wchar, boolean or enum type (directly or through typedefs).
Each case label is evaluated as a constant of that type, so out-of-range
values and enumerators of another enum are rejected by `consteval`; then
duplicate labels, several ``default:`` labels, repeated member names, and a
``default:`` when the labels already cover every value are errors.

`default_value` picks the discriminator value the generated code uses for
the default member (or, without one, for "no member"): the first enumerator,
boolean, character or non-negative integer that no label uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cosnotify.idl import ast, consteval, model
from cosnotify.idl.errors import IDLError

if TYPE_CHECKING:
    from cosnotify.idl.analyzer import Analyzer

_SWITCH_PRIMITIVES = (*model.INTEGER_RANGES, "char", "wchar", "boolean")


def define_union(an: Analyzer, node: ast.Union_) -> model.Union_:
    """Declare and check ``union Name switch (T) { ... }``."""
    un = an._open_forward(model.Union_, node.name, node.loc, node.index)
    an._enter(un)
    un.switch_type = _switch_type(an, node)
    labels_seen: dict[object, ast.Expr] = {}
    default_loc = None
    for case in node.cases:
        labels: list[model.LabelValue | model.DefaultLabel] = []
        for label in case.labels:
            if isinstance(label, ast.Default):
                if default_loc is not None:
                    raise IDLError.at(label.loc, f"union '{node.name}' has more than one default")
                default_loc = label.loc
                labels.append(model.DEFAULT)
                continue
            value = an.evaluator.evaluate(label, un.switch_type)
            assert not isinstance(value, float)
            key = _label_key(value)
            if key in labels_seen:
                raise IDLError.at(
                    label.loc, f"duplicate case label {_show(value)} (first at"
                    f" {labels_seen[key].loc})",
                )  # fmt: skip
            labels_seen[key] = label
            labels.append(value)  # type: ignore[arg-type]
        base = an.type_of(case.type)
        member_type = an._declarator_type(base, case.declarator)
        decl = case.declarator
        an.declare(model.MemberName(decl.name, decl.loc, an.scope), None, listed=False)
        un.cases.append(model.UnionCase(labels, decl.name, member_type, decl.loc))
    used = [v for case in un.cases for v in case.labels if not isinstance(v, model.DefaultLabel)]
    un.default_value = _unused_value(un.switch_type, used)
    if default_loc is not None and un.default_value is None:
        raise IDLError.at(
            default_loc, f"union '{node.name}' has a default case but its labels already cover"
            " every discriminator value",
        )  # fmt: skip
    un.defined = True
    an._leave(node.end_index)
    return un


def _switch_type(an: Analyzer, node: ast.Union_) -> model.Type:
    t = an.type_of(node.switch_type)
    real = model.unalias(t)
    if isinstance(real, model.Primitive) and real.name in _SWITCH_PRIMITIVES:
        return t
    if isinstance(real, model.Named) and isinstance(real.decl, model.Enum):
        return t
    raise IDLError.at(
        node.switch_type.loc, f"{consteval.type_name(t)} cannot be a union discriminator type"
        " (use an integer, char, boolean or enum type)",
    )  # fmt: skip


def _label_key(value: model.ConstValue) -> object:
    # bool is an int subclass: keep True and 1 apart (they never mix in one union).
    return (type(value).__name__, value) if not isinstance(value, model.Enumerator) else value


def _show(value: model.ConstValue) -> str:
    if isinstance(value, model.Enumerator):
        return value.name
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return repr(value)


def _unused_value(
    switch: model.Type, used: list[model.LabelValue]
) -> model.LabelValue | None:
    real = model.unalias(switch)
    if isinstance(real, model.Named):
        assert isinstance(real.decl, model.Enum)
        return next((e for e in real.decl.items if e not in used), None)
    assert isinstance(real, model.Primitive)
    if real.name == "boolean":
        return next((b for b in (False, True) if b not in used), None)
    if real.name in ("char", "wchar"):
        limit = 0x100 if real.name == "char" else 0x10000
        taken = set(used)
        return next((chr(c) for c in range(limit) if chr(c) not in taken), None)
    high = model.INTEGER_RANGES[real.name][1]
    taken = set(used)
    value = 0
    while value in taken:
        value += 1
    return value if value <= high else None
