"""Resolving ``$`` components and run-time variables against an event (§2.4.2-2.4.6).

Strategy: a component compiles, once, into a *locator*: a function from the
event to a ``(value, TypeCode)`` pair, or None when the component cannot be
resolved. Locators never raise, so ``exist`` is just "is not None" (§2.4.2)
and a failed lookup can fall through to the next §2.4.5 translation without
exception handling on the hot path. A locator is a root (the event, or a
run-time variable) followed by *steps*, each a closure over one AST step.

Every step first passes over unnamed ``any`` layers and typedefs (§2.4.2: the
run-time engine "quietly" passes over unnamed layers), then applies one rule:

- ``.name`` / ``.3``: a struct member by name or position (§2.4.6); ``.name``
  on a union is its member of that name when that member is active;
- ``.(label)`` / ``.()``: the union member the label (or ``default:``)
  selects, resolvable only while that member is the active one (§2.4.6; see
  docs/filters.md decision 25);
- ``[n]``: an element of a sequence or array;
- ``(name)``: the value paired with ``name`` in a sequence of name-value
  structs (§2.4.4), the first such pair winning;
- ``._length``, ``._d``, ``._type_id``, ``._repos_id`` (§2.4.2).

Events come in three forms. A structured event's TypeCode is static, so
leading struct-member steps become one ``operator.attrgetter``; an Any event
is a ``(value, TypeCode)`` pair; a typed event is a PropertySeq (§2.7).
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias

from cosnotify.filter import ast
from cosnotify.filter._idl import CosNotification, TimeBase
from cosnotify.filter.runtime import Fail, strip, unalias
from cosnotify.orb.typecode import (
    INTEGER_RANGES,
    K_ANY,
    K_ARRAY,
    K_BOOLEAN,
    K_CHAR,
    K_DOUBLE,
    K_ENUM,
    K_FIXED,
    K_FLOAT,
    K_LONG,
    K_LONGDOUBLE,
    K_LONGLONG,
    K_OCTET,
    K_PRINCIPAL,
    K_SEQUENCE,
    K_SHORT,
    K_STRING,
    K_TYPECODE,
    K_ULONG,
    K_ULONGLONG,
    K_USHORT,
    K_WCHAR,
    K_WSTRING,
    BadKind,
    EnumTC,
    SequenceTC,
    StructTC,
    TC_any,
    TC_string,
    TC_ulong,
    TypeCode,
    UnionTC,
)

__all__ = [
    "CURTIME",
    "PROPERTY_SEQ_TC",
    "SE_TC",
    "STRUCTURED_HEADER",
    "UTC_TC",
    "Clock",
    "Form",
    "Locator",
    "Pair",
    "component_locator",
    "is_default_active",
    "static_path",
]

Pair: TypeAlias = tuple[Any, TypeCode]
Locator: TypeAlias = Callable[[Any], "Pair | None"]
Step: TypeAlias = Callable[[Any, TypeCode], "Pair | None"]
Clock: TypeAlias = Callable[[], int]

SE_TC: Final[TypeCode] = CosNotification._tc_StructuredEvent
PROPERTY_SEQ_TC: Final[TypeCode] = CosNotification._tc_PropertySeq
UTC_TC: Final[TypeCode] = TimeBase._tc_UtcT
_UtcT: Final[Any] = TimeBase.UtcT
_STRING_KINDS: Final = frozenset({K_STRING, K_WSTRING})
_SEQUENCE_KINDS: Final = frozenset({K_SEQUENCE, K_ARRAY})

#: §2.4.5: these run-time variables name fields of the fixed header.
STRUCTURED_HEADER: Final = {
    "domain_name": ("header", "fixed_header", "event_type", "domain_name"),
    "type_name": ("header", "fixed_header", "event_type", "type_name"),
    "event_name": ("header", "fixed_header", "event_name"),
}
#: §2.4.5: the reserved run-time variable (escaped as ``$\\curtime``).
CURTIME: Final = "curtime"

#: ``_type_id`` of the unnamed basic types: their IDL spelling (§2.4.7 example 'short').
_BASIC_NAMES: Final = {
    K_SHORT: "short", K_LONG: "long", K_USHORT: "unsigned short", K_ULONG: "unsigned long",
    K_FLOAT: "float", K_DOUBLE: "double", K_BOOLEAN: "boolean", K_CHAR: "char",
    K_OCTET: "octet", K_ANY: "any", K_TYPECODE: "TypeCode", K_PRINCIPAL: "Principal",
    K_STRING: "string", K_LONGLONG: "long long", K_ULONGLONG: "unsigned long long",
    K_LONGDOUBLE: "long double", K_WCHAR: "wchar", K_WSTRING: "wstring", K_FIXED: "fixed",
}


class Form(enum.Enum):
    """The three shapes an event reaches a filter in (§2.3)."""

    STRUCTURED = "structured"   # a CosNotification::StructuredEvent
    ANY = "any"                 # a (value, TypeCode) pair, outer Any layers removed
    TYPED = "typed"             # a CosNotification::PropertySeq (§2.7)


# -- steps ------------------------------------------------------------------------------------


def _member(name: str) -> Step:
    def step(value: Any, tc: TypeCode) -> Pair | None:
        base = tc
        if type(base) is not StructTC:
            found = strip(value, tc)
            if found is None:
                return None
            value, _, base = found
            if type(base) is UnionTC:
                active = base.select(value._d)
                if active is not None and base._names[active] == name:
                    return value._v, base._types[active]
                return None
            if type(base) is not StructTC:
                return None
        names = base._names
        if name in names:
            i = names.index(name)
            return getattr(value, base._attrs[i]), base._types[i]
        return None
    return step


def _position(index: int) -> Step:
    def step(value: Any, tc: TypeCode) -> Pair | None:
        base = tc
        if type(base) is not StructTC:
            found = strip(value, tc)
            if found is None:
                return None
            value, _, base = found
            if type(base) is not StructTC:
                return None
        if index < len(base._types):
            return getattr(value, base._attrs[index]), base._types[index]
        return None
    return step


_NO_LABEL: Final = object()


def _label_value(label: int | str, disc: TypeCode) -> Any:
    """The discriminator value a ``<UnionVal>`` label stands for (§2.4.6, decision 8)."""
    base = unalias(disc)
    k = base._k
    if k in INTEGER_RANGES:
        return label if type(label) is int else _NO_LABEL
    if k == K_BOOLEAN:
        return bool(label) if label in (0, 1) and type(label) is int else _NO_LABEL
    if k in (K_CHAR, K_WCHAR):
        if isinstance(label, str):
            return label if len(label) == 1 else _NO_LABEL
        return chr(label) if 0 <= label < 0x110000 else _NO_LABEL
    if k == K_ENUM and type(base) is EnumTC and type(label) is int:
        items = base.enum_items()
        return items[label] if 0 <= label < len(items) else _NO_LABEL
    return _NO_LABEL


def _same_member(base: UnionTC, a: int, b: int) -> bool:
    """Do union entries ``a`` and ``b`` (labels of one member repeat) name one member?"""
    if a == b:
        return True
    name = base._names[a]
    return bool(name) and name == base._names[b]


def _union_arm(label: int | str | None) -> Step:
    def step(value: Any, tc: TypeCode) -> Pair | None:
        found = strip(value, tc)
        if found is None:
            return None
        value, _, base = found
        if type(base) is not UnionTC:
            return None
        if label is None:
            target: int | None = base._default if base._default >= 0 else None
        else:
            disc_value = _label_value(label, base._disc)
            target = None if disc_value is _NO_LABEL else base.select(disc_value)
        active = base.select(value._d)
        if target is None or active is None or not _same_member(base, active, target):
            return None
        return value._v, base._types[active]
    return step


def _index(index: int) -> Step:
    def step(value: Any, tc: TypeCode) -> Pair | None:
        base = tc
        if type(base) is not SequenceTC:
            found = strip(value, tc)
            if found is None:
                return None
            value, _, base = found
            if type(base) is not SequenceTC:
                return None
        if index < len(value):
            return value[index], base._content
        return None
    return step


def _nv_struct(base: TypeCode) -> StructTC | None:
    """The element struct of a name-value list: ``{string name; <T> value; ...}`` (§2.4.4)."""
    if type(base) is not SequenceTC:
        return None
    element = unalias(base._content)
    if (type(element) is StructTC and len(element._types) >= 2
            and unalias(element._types[0])._k in _STRING_KINDS):
        return element
    return None


def _assoc(name: str) -> Step:
    def step(value: Any, tc: TypeCode) -> Pair | None:
        found = strip(value, tc)
        if found is None:
            return None
        value, _, base = found
        element = _nv_struct(base)
        if element is None:
            return None
        key, val = element._attrs[0], element._attrs[1]
        for pair in value:
            if getattr(pair, key) == name:
                return getattr(pair, val), element._types[1]
        return None
    return step


def _length(value: Any, tc: TypeCode) -> Pair | None:
    found = strip(value, tc)
    if found is None or found[2]._k not in _SEQUENCE_KINDS:
        return None
    return len(found[0]), TC_ulong


def _discriminator(value: Any, tc: TypeCode) -> Pair | None:
    found = strip(value, tc)
    if found is None or type(found[2]) is not UnionTC:
        return None
    return found[0]._d, found[2]._disc


def _type_id(value: Any, tc: TypeCode) -> Pair | None:
    found = strip(value, tc)
    if found is None:
        return None
    declared = found[1]
    try:
        name = declared.name()
    except BadKind:
        name = _BASIC_NAMES.get(declared._k, "")
    return (name, TC_string) if name else None


def _repos_id(value: Any, tc: TypeCode) -> Pair | None:
    found = strip(value, tc)
    if found is None:
        return None
    try:
        repo_id = found[1].id()
    except BadKind:
        return None
    return (repo_id, TC_string) if repo_id else None


_IMPLICIT: Final[dict[ast.Implicit, Step]] = {
    ast.Implicit.LENGTH: _length,
    ast.Implicit.DISCRIMINATOR: _discriminator,
    ast.Implicit.TYPE_ID: _type_id,
    ast.Implicit.REPOSITORY_ID: _repos_id,
}


def make_step(step: ast.Step) -> Step:
    """The closure for one component step."""
    if isinstance(step, ast.Member):
        return _member(step.name)
    if isinstance(step, ast.Position):
        return _position(step.index)
    if isinstance(step, ast.UnionArm):
        return _union_arm(step.label)
    if isinstance(step, ast.Index):
        return _index(step.index)
    if isinstance(step, ast.Assoc):
        return _assoc(step.name)
    return _IMPLICIT[step.kind]


# -- static paths (structured events) ----------------------------------------------------------


def static_path(tc: TypeCode, steps: Sequence[ast.Step]) -> tuple[tuple[str, ...], TypeCode, int]:
    """Leading struct-member steps that need no run-time checks from static ``tc``.

    Returns the Python attribute names, the TypeCode reached and how many
    steps they cover. Stops at anything whose shape depends on the value
    (an ``any``, a union, a sequence, an implicit member).
    """
    attrs_: list[str] = []
    count = 0
    for step in steps:
        base = unalias(tc)
        if type(base) is not StructTC:
            break
        if isinstance(step, ast.Member) and step.name in base._names:
            i = base._names.index(step.name)
        elif isinstance(step, ast.Position) and step.index < len(base._types):
            i = step.index
        else:
            break
        attrs_.append(base._attrs[i])
        tc = base._types[i]
        count += 1
    return tuple(attrs_), tc, count


def _static_root(tc: TypeCode, steps: Sequence[ast.Step],
                 value: Callable[[Any], Any]) -> tuple[Locator, int]:
    """A root locator for a value of static TypeCode ``tc`` that also covers the
    leading struct-member steps; returns it and the number of steps covered."""
    names, reached, count = static_path(tc, steps)
    if not names:
        return (lambda ev: (value(ev), tc)), 0
    getter = operator.attrgetter(".".join(names))
    if value is _identity:
        return (lambda ev: (getter(ev), reached)), count
    return (lambda ev: (getter(value(ev)), reached)), count


def _identity(ev: Any) -> Any:
    return ev


def _chain(root: Locator, steps: Sequence[Step]) -> Locator:
    """``root`` followed by ``steps``; any failure (or exception) resolves to None."""
    chain = tuple(steps)
    if root is _identity and len(chain) == 1:
        only = chain[0]

        def locate_one(ev: Any) -> Pair | None:
            try:
                return only(*ev)
            except Exception:  # noqa: BLE001 - a malformed value is "cannot be resolved"
                return None
        return locate_one

    def locate(ev: Any) -> Pair | None:
        try:
            found = root(ev)
            for step in chain:
                if found is None:
                    return None
                found = step(*found)
            return found
        except Exception:  # noqa: BLE001 - a malformed value is "cannot be resolved"
            return None
    return locate


def _first(candidates: Sequence[Locator]) -> Locator:
    """The first candidate translation that resolves (§2.4.5)."""
    options = tuple(candidates)

    def locate(ev: Any) -> Pair | None:
        for candidate in options:
            found = candidate(ev)
            if found is not None:
                return found
        return None
    return locate


# -- run-time variables (§2.4.5) --------------------------------------------------------------


def _structured_properties(name: str) -> Locator:
    """``$name`` in a structured event after the fixed-header names: the first
    property of that name in the variable header, then in the filterable data,
    then the StructuredEvent member ``name`` (§2.4.5)."""
    se = unalias(SE_TC)
    assert type(se) is StructTC
    member = None
    if name in se._names:
        i = se._names.index(name)
        member = (se._attrs[i], se._types[i])

    def locate(ev: Any) -> Pair | None:
        for prop in ev.header.variable_header:
            if prop.name == name:
                return prop.value, TC_any
        for prop in ev.filterable_data:
            if prop.name == name:
                return prop.value, TC_any
        if member is not None:
            return getattr(ev, member[0]), member[1]
        return None
    return locate


def _variable_root(name: str, escaped: bool, form: Form, clock: Clock) -> Locator:
    """The root locator of ``$name``, by the translation order of §2.4.5."""
    if name == CURTIME and not escaped:
        return lambda ev: (_UtcT(clock(), 0, 0, 0), UTC_TC)
    if form is Form.STRUCTURED:
        if name in STRUCTURED_HEADER:
            getter = operator.attrgetter(".".join(STRUCTURED_HEADER[name]))
            return lambda ev: (getter(ev), TC_string)
        return _structured_properties(name)
    if form is Form.TYPED:
        root: Locator = lambda ev: (ev, PROPERTY_SEQ_TC)
        candidates = []
        if name in ("domain_name", "type_name"):
            # §2.7: the first pair is "event_type" holding (interface, operation).
            candidates.append(_chain(root, [_assoc("event_type"), _member(name)]))
        candidates.append(_chain(root, [_assoc(name)]))
        return _first(candidates)
    candidates = []
    if name in STRUCTURED_HEADER:
        candidates.append(_chain(_identity, [_member(m) for m in STRUCTURED_HEADER[name]]))
    candidates.append(_chain(_identity, [_member("header"), _member("variable_header"),
                                         _assoc(name)]))
    candidates.append(_chain(_identity, [_member("filterable_data"), _assoc(name)]))
    # Last: $(name) when the event is one unnamed name-value list, else $.name.
    candidates.append(_chain(_identity, [_assoc(name)]))
    candidates.append(_chain(_identity, [_member(name)]))
    return _any_variable(name, _first(candidates))


def _any_variable(name: str, general: Locator) -> Locator:
    """``$name`` for an Any event: a fast path for the common case of a struct with
    neither a ``header`` nor a ``filterable_data`` member, where every §2.4.5
    translation but ``$.name`` fails; anything else goes through ``general``."""
    def locate(ev: Any) -> Pair | None:
        try:
            value, tc = ev
            base = tc
            if type(base) is not StructTC:
                found = strip(value, tc)
                if found is None:
                    return None
                value, _, base = found
            if type(base) is StructTC:
                names = base._names
                if "header" not in names and "filterable_data" not in names:
                    if name in names:
                        i = names.index(name)
                        return getattr(value, base._attrs[i]), base._types[i]
                    return None
        except Exception:  # noqa: BLE001 - a malformed value is "cannot be resolved"
            return None
        return general(ev)
    return locate


def component_locator(component: ast.Component, form: Form, clock: Clock) -> Locator:
    """The locator of a ``$`` component (or, with no steps, a bare identifier)."""
    steps: Sequence[ast.Step] = component.steps
    if component.variable is None:
        if form is Form.STRUCTURED:
            root, covered = _static_root(SE_TC, steps, _identity)
        elif form is Form.TYPED:
            root, covered = (lambda ev: (ev, PROPERTY_SEQ_TC)), 0
        else:
            root, covered = _identity, 0
    elif component.variable == CURTIME and not component.escaped:
        root, covered = _static_root(UTC_TC, steps,
                                     lambda ev: _UtcT(clock(), 0, 0, 0))
    else:
        root, covered = _variable_root(component.variable, component.escaped, form, clock), 0
    return _chain(root, [make_step(step) for step in steps[covered:]])


def is_default_active(found: Pair | None) -> bool:
    """``default $.u`` (§2.4.2-2.4.3): the union's ``default:`` member is active.

    An operand that is not a union is an error; a union without a default
    member gives FALSE.
    """
    if found is None:
        raise Fail
    located = strip(*found)
    if located is None:
        raise Fail
    value, _, base = located
    if type(base) is not UnionTC:
        raise Fail
    if base._default < 0:
        return False
    active = base.select(value._d)
    return active is not None and _same_member(base, active, base._default)
