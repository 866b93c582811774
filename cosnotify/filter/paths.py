"""Resolving ``$`` components and run-time variables against an event (§2.4.2-2.4.6).

Strategy: a component compiles, once, into a *locator*: a function from the
event to a ``(value, descriptor)`` pair, or None when the component cannot be
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
- ``.(e5)`` (omniNotify's extension): the same, the label given by the name of
  an enumerator of the union's enum discriminator (docs/filters.md,
  "omniNotify extension");
- ``[n]``: an element of a sequence or array;
- ``(name)``: the value paired with ``name`` in a sequence of name-value
  structs (§2.4.4), the first such pair winning;
- ``._length``, ``._d``, ``._type_id``, ``._repos_id`` (§2.4.2).

Types are omniORB descriptors (``any._t._d``), walked with
:mod:`cosnotify.corba.descriptors`: a pair is ``(value, descriptor)``. Both
indirection markers are followed (``tv__indirect`` from stubs, the wheel's
``0xffffffff`` on TypeCodes from the wire), and values of types this process
has no stubs for (``UnknownStruct``, ``UnknownUnion``, ``EnumItem``) are read
by attribute like generated ones; an IDL member named like a Python keyword
is omniORB's attribute ``_name``. No ``CORBA.TypeCode`` method is ever called.

Events come in three forms. A structured event's descriptor is static, so
leading struct-member steps become one ``operator.attrgetter``; an Any event
is a ``(value, descriptor)`` pair; a typed event is a PropertySeq (§2.7).
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias

import CosNotification
import TimeBase

from cosnotify.corba import descriptors as D
from cosnotify.corba.descriptors import Descriptor
from cosnotify.filter import ast
from cosnotify.filter.runtime import INTEGER_KINDS, Fail, strip

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

Pair: TypeAlias = tuple[Any, Descriptor]
Locator: TypeAlias = Callable[[Any], "Pair | None"]
Step: TypeAlias = Callable[[Any, Descriptor], "Pair | None"]
Clock: TypeAlias = Callable[[], int]

#: The descriptors of the types a filter knows statically (names kept from
#: the TypeCode days: spark_bridge imports ``SE_TC`` and ``static_path``).
SE_TC: Final[Descriptor] = CosNotification._tc_StructuredEvent._d
PROPERTY_SEQ_TC: Final[Descriptor] = CosNotification._tc_PropertySeq._d
UTC_TC: Final[Descriptor] = TimeBase._tc_UtcT._d
_UtcT: Final[Any] = TimeBase.UtcT
_STRING: Final[Descriptor] = (D.STRING, 0)
_STRING_KINDS: Final = frozenset({D.STRING, D.WSTRING})
_STRUCTS: Final = frozenset({D.STRUCT, D.EXCEPT})
_SEQUENCES: Final = frozenset({D.SEQUENCE, D.ARRAY})

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
    D.SHORT: "short", D.LONG: "long", D.USHORT: "unsigned short", D.ULONG: "unsigned long",
    D.FLOAT: "float", D.DOUBLE: "double", D.BOOLEAN: "boolean", D.CHAR: "char",
    D.OCTET: "octet", D.ANY: "any", D.TYPECODE: "TypeCode", D.PRINCIPAL: "Principal",
    D.STRING: "string", D.LONGLONG: "long long", D.ULONGLONG: "unsigned long long",
    D.LONGDOUBLE: "long double", D.WCHAR: "wchar", D.WSTRING: "wstring", D.FIXED: "fixed",
}


class Form(enum.Enum):
    """The three shapes an event reaches a filter in (§2.3)."""

    STRUCTURED = "structured"   # a CosNotification::StructuredEvent
    ANY = "any"                 # a (value, descriptor) pair, outer Any layers removed
    TYPED = "typed"             # a CosNotification::PropertySeq (§2.7)


# -- descriptors ------------------------------------------------------------------------------


def _is_struct(d: Descriptor) -> bool:
    return type(d) is tuple and d[0] in _STRUCTS


def _member_index(d: Descriptor, attr: str, name: str) -> int:
    """The index in struct descriptor ``d`` of the member named ``name`` (its Python
    attribute ``attr``), or -1. Names sit at even positions from 4 and nothing
    at an odd one is a string, so ``tuple.index`` finds only names."""
    try:
        return d.index(attr, 4)  # type: ignore[no-any-return]
    except ValueError:
        pass
    if attr != name:  # a descriptor built in process with the IDL spelling
        try:
            return d.index(name, 4)  # type: ignore[no-any-return]
        except ValueError:
            pass
    return -1


def _field(value: Any, d: Descriptor, i: int) -> Any:
    """Member ``i`` (a descriptor index) of struct ``value``; a TypeCode without
    member names (CORBA does not require them) leaves only ``_values``."""
    attr = d[i]
    if attr:
        return getattr(value, attr)
    return value._values[(i - 4) // 2]


def _struct_or_union(value: Any, d: Descriptor) -> tuple[Any, Descriptor] | None:
    found = strip(value, d)
    if found is None:
        return None
    base = found[2]
    if type(base) is not tuple:
        return None
    return found[0], base


def _same_member(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Do union entries ``a`` and ``b`` (labels of one member repeat) name one member?"""
    if a is b:
        return True
    name = a[1]
    if name:
        return bool(name == b[1])
    return bool(a[0] == b[0]) and not b[1]


# -- steps ------------------------------------------------------------------------------------


def _member(name: str) -> Step:
    attr = D.attribute(name)

    def step(value: Any, d: Descriptor) -> Pair | None:
        if type(d) is not tuple or d[0] != D.STRUCT:
            found = _struct_or_union(value, d)
            if found is None:
                return None
            value, d = found
            k = d[0]
            if k == D.UNION:
                active = D.union_select(d, value._d)
                if active is not None and (active[1] == attr or active[1] == name):
                    return value._v, active[2]
                return None
            if k not in _STRUCTS:
                return None
        try:
            i = d.index(attr, 4)  # names sit at even positions from 4 (see _member_index)
        except ValueError:
            i = _member_index(d, attr, name)
            if i < 0:
                return None
            return _field(value, d, i), d[i + 1]
        return getattr(value, attr), d[i + 1]
    return step


def _position(index: int) -> Step:
    at = 4 + 2 * index

    def step(value: Any, d: Descriptor) -> Pair | None:
        if type(d) is not tuple or d[0] != D.STRUCT:
            found = _struct_or_union(value, d)
            if found is None:
                return None
            value, d = found
            if d[0] not in _STRUCTS:
                return None
        if at + 1 < len(d):
            return _field(value, d, at), d[at + 1]
        return None
    return step


_NO_LABEL: Final = object()


def _label_value(label: int | str, disc: Descriptor) -> Any:
    """The discriminator value a ``<UnionVal>`` label stands for (§2.4.6, decision 8)."""
    base = D.unalias(disc)
    if type(base) is int:
        if base in INTEGER_KINDS:
            return label if type(label) is int else _NO_LABEL
        if base == D.BOOLEAN:
            return bool(label) if type(label) is int and label in (0, 1) else _NO_LABEL
        if base in (D.CHAR, D.WCHAR):
            if isinstance(label, str):
                return label if len(label) == 1 else _NO_LABEL
            return chr(label) if 0 <= label < 0x110000 else _NO_LABEL
        return _NO_LABEL
    if base[0] == D.ENUM and type(label) is int:
        items = base[3]
        return items[label] if 0 <= label < len(items) else _NO_LABEL
    return _NO_LABEL


def _union_member(target_of: Callable[[Descriptor], Any]) -> Step:
    """A step to the union member ``target_of(union descriptor)`` names (None: no
    member), resolvable only while that member is the active one (decision 31)."""
    def step(value: Any, d: Descriptor) -> Pair | None:
        found = _struct_or_union(value, d)
        if found is None:
            return None
        value, base = found
        if base[0] != D.UNION:
            return None
        target = target_of(base)
        active = D.union_select(base, value._d)
        if target is None or active is None or not _same_member(active, target):
            return None
        return value._v, active[2]
    return step


def _union_arm(label: int | str | None) -> Step:
    def target_of(base: Descriptor) -> Any:
        if label is None:
            return base[7]  # the default member, None without one
        disc_value = _label_value(label, base[4])
        return None if disc_value is _NO_LABEL else D.union_select(base, disc_value)
    return _union_member(target_of)


def _enumerator(disc: Descriptor, name: str) -> Any:
    """The enumerator named ``name`` of discriminator ``disc``, or ``_NO_LABEL`` when
    ``disc`` is no enum or has no such enumerator."""
    base = D.unalias(disc)
    if type(base) is not tuple or base[0] != D.ENUM:
        return _NO_LABEL
    for item in base[3]:
        if item._n == name:
            return item
    return _NO_LABEL


def _union_enum_label(name: str) -> Step:
    """``.(name)``: ``.(n)`` for the ordinal ``n`` of enumerator ``name`` (omniNotify).

    Which enumerator a name stands for is remembered for the last discriminator
    descriptor seen: events of one stub type share it.
    """
    last: list[tuple[Any, Any]] = [(None, _NO_LABEL)]  # replaced whole (atomic)

    def target_of(base: Descriptor) -> Any:
        disc = base[4]
        seen, label = last[0]
        if seen is not disc:
            label = _enumerator(disc, name)
            last[0] = (disc, label)
        return None if label is _NO_LABEL else D.union_select(base, label)
    return _union_member(target_of)


def _index(index: int) -> Step:
    def step(value: Any, d: Descriptor) -> Pair | None:
        if type(d) is not tuple or d[0] not in _SEQUENCES:
            found = strip(value, d)
            if found is None:
                return None
            value, _, d = found
            if type(d) is not tuple or d[0] not in _SEQUENCES:
                return None
        if index < len(value):
            return value[index], d[1]
        return None
    return step


def _nv_struct(base: Descriptor) -> Descriptor | None:
    """The element struct of a name-value list: ``{string name; <T> value; ...}`` (§2.4.4)."""
    if type(base) is not tuple or base[0] not in _SEQUENCES:
        return None
    element = D.unalias(base[1])
    if _is_struct(element) and len(element) >= 8:
        first = D.unalias(element[5])
        if type(first) is tuple and first[0] in _STRING_KINDS:
            return element
    return None


def _assoc(name: str) -> Step:
    def step(value: Any, d: Descriptor) -> Pair | None:
        found = strip(value, d)
        if found is None:
            return None
        value, _, base = found
        element = _nv_struct(base)
        if element is None:
            return None
        key, val = element[4], element[6]
        if key and val:
            for pair in value:
                if getattr(pair, key) == name:
                    return getattr(pair, val), element[7]
            return None
        for pair in value:  # member names not in the TypeCode
            if _field(pair, element, 4) == name:
                return _field(pair, element, 6), element[7]
        return None
    return step


def _length(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    base = found[2]
    if type(base) is not tuple or base[0] not in _SEQUENCES:
        return None
    return len(found[0]), D.ULONG


def _discriminator(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    base = found[2]
    if type(base) is not tuple or base[0] != D.UNION:
        return None
    return found[0]._d, base[4]


def _type_id(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    declared = found[1]
    name = D.name(declared)
    if name is None:
        name = _BASIC_NAMES.get(D.kind(declared), "")
    return (name, _STRING) if name else None


def _repos_id(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    repo_id = D.repo_id(found[1])
    return (repo_id, _STRING) if repo_id else None


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
    if isinstance(step, ast.UnionEnumLabel):
        return _union_enum_label(step.name)
    if isinstance(step, ast.Index):
        return _index(step.index)
    if isinstance(step, ast.Assoc):
        return _assoc(step.name)
    return _IMPLICIT[step.kind]


# -- static paths (structured events) ----------------------------------------------------------


def static_path(d: Descriptor, steps: Sequence[ast.Step]
                ) -> tuple[tuple[str, ...], Descriptor, int]:
    """Leading struct-member steps that need no run-time checks from static descriptor ``d``.

    Returns the Python attribute names, the descriptor reached and how many
    steps they cover. Stops at anything whose shape depends on the value
    (an ``any``, a union, a sequence, an implicit member).
    """
    attrs_: list[str] = []
    count = 0
    for step in steps:
        base = D.unalias(d)
        if not _is_struct(base):
            break
        if isinstance(step, ast.Member):
            i = _member_index(base, D.attribute(step.name), step.name)
        elif isinstance(step, ast.Position) and 5 + 2 * step.index < len(base):
            i = 4 + 2 * step.index
        else:
            break
        if i < 0 or not base[i]:
            break
        attrs_.append(base[i])
        d = base[i + 1]
        count += 1
    return tuple(attrs_), d, count


def _static_root(d: Descriptor, steps: Sequence[ast.Step],
                 value: Callable[[Any], Any]) -> tuple[Locator, int]:
    """A root locator for a value of static descriptor ``d`` that also covers the
    leading struct-member steps; returns it and the number of steps covered."""
    names, reached, count = static_path(d, steps)
    if not names:
        return (lambda ev: (value(ev), d)), 0
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
    se = D.unalias(SE_TC)
    member = None
    i = _member_index(se, D.attribute(name), name)
    if i >= 0:
        member = (se[i], se[i + 1])

    def locate(ev: Any) -> Pair | None:
        for prop in ev.header.variable_header:
            if prop.name == name:
                return prop.value, D.ANY
        for prop in ev.filterable_data:
            if prop.name == name:
                return prop.value, D.ANY
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
            return lambda ev: (getter(ev), _STRING)
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
    translation but ``$.name`` fails; anything else goes through ``general``.

    What a struct descriptor means for ``$name`` (its member index, or -1) is
    remembered for the last descriptor seen: events of one stub type share
    their descriptor, so the member names are scanned once, not per event.
    """
    attr = D.attribute(name)
    #: (descriptor, member index or -1 (none) or -2 (not the fast case), attribute)
    last: list[tuple[Any, int, str]] = [(None, -1, "")]  # replaced whole (atomic)

    def locate(ev: Any) -> Pair | None:
        try:
            value, d = ev
            if type(d) is not tuple or d[0] != D.STRUCT:
                found = strip(value, d)
                if found is None:
                    return None
                value, _, d = found
                if not _is_struct(d):
                    return general(ev)
            seen, i, member = last[0]
            if seen is not d:
                names = d[4::2]
                if "header" in names or "filterable_data" in names:
                    i = -2
                else:
                    i = _member_index(d, attr, name)
                member = d[i] if i >= 0 else ""
                last[0] = (d, i, member)
            if i >= 0:
                if member:
                    return getattr(value, member), d[i + 1]
                return _field(value, d, i), d[i + 1]
            if i == -1:
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
    if type(base) is not tuple or base[0] != D.UNION:
        raise Fail
    default = base[7]
    if default is None:
        return False
    active = D.union_select(base, value._d)
    return active is not None and _same_member(active, default)
