"""Resolving ``$`` components and run-time variables against an event (§2.4.2-2.4.6).

Strategy: a component compiles, once, into a *locator*: a function from the
event to a ``(value, descriptor)`` pair, or None when the component cannot be
resolved. Locators never raise, so ``exist`` is just "is not None" (§2.4.2)
and a failed lookup can fall through to the next §2.4.5 translation without
exception handling on the hot path. A locator is a root (the event, or a
run-time variable) followed by *steps*, each a closure over one AST step
(:mod:`cosnotify.filter.steps`, which says what each step resolves).

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
from cosnotify.filter.runtime import strip
from cosnotify.filter.steps import (
    STRING,
    Pair,
    Step,
    assoc,
    field,
    is_default_active,
    is_struct,
    make_step,
    member,
    member_index,
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

Locator: TypeAlias = Callable[[Any], "Pair | None"]
Clock: TypeAlias = Callable[[], int]

#: The descriptors of the types a filter knows statically (names kept from
#: the TypeCode days: spark_bridge imports ``SE_TC`` and ``static_path``).
SE_TC: Final[Descriptor] = CosNotification._tc_StructuredEvent._d
PROPERTY_SEQ_TC: Final[Descriptor] = CosNotification._tc_PropertySeq._d
UTC_TC: Final[Descriptor] = TimeBase._tc_UtcT._d
_UtcT: Final[Any] = TimeBase.UtcT

#: §2.4.5: these run-time variables name fields of the fixed header.
STRUCTURED_HEADER: Final = {
    "domain_name": ("header", "fixed_header", "event_type", "domain_name"),
    "type_name": ("header", "fixed_header", "event_type", "type_name"),
    "event_name": ("header", "fixed_header", "event_name"),
}
#: §2.4.5: the reserved run-time variable (escaped as ``$\\curtime``).
CURTIME: Final = "curtime"


class Form(enum.Enum):
    """The three shapes an event reaches a filter in (§2.3)."""

    STRUCTURED = "structured"   # a CosNotification::StructuredEvent
    ANY = "any"                 # a (value, descriptor) pair, outer Any layers removed
    TYPED = "typed"             # a CosNotification::PropertySeq (§2.7)


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
        if not is_struct(base):
            break
        if isinstance(step, ast.Member):
            i = member_index(base, D.attribute(step.name), step.name)
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
    fallback = None
    i = member_index(se, D.attribute(name), name)
    if i >= 0:
        fallback = (se[i], se[i + 1])

    def locate(ev: Any) -> Pair | None:
        for prop in ev.header.variable_header:
            if prop.name == name:
                return prop.value, D.ANY
        for prop in ev.filterable_data:
            if prop.name == name:
                return prop.value, D.ANY
        if fallback is not None:
            return getattr(ev, fallback[0]), fallback[1]
        return None
    return locate


def _variable_root(name: str, escaped: bool, form: Form, clock: Clock) -> Locator:
    """The root locator of ``$name``, by the translation order of §2.4.5."""
    if name == CURTIME and not escaped:
        return lambda ev: (_UtcT(clock(), 0, 0, 0), UTC_TC)
    if form is Form.STRUCTURED:
        if name in STRUCTURED_HEADER:
            getter = operator.attrgetter(".".join(STRUCTURED_HEADER[name]))
            return lambda ev: (getter(ev), STRING)
        return _structured_properties(name)
    if form is Form.TYPED:
        root: Locator = lambda ev: (ev, PROPERTY_SEQ_TC)
        candidates = []
        if name in ("domain_name", "type_name"):
            # §2.7: the first pair is "event_type" holding (interface, operation).
            candidates.append(_chain(root, [assoc("event_type"), member(name)]))
        candidates.append(_chain(root, [assoc(name)]))
        return _first(candidates)
    candidates = []
    if name in STRUCTURED_HEADER:
        candidates.append(_chain(_identity, [member(m) for m in STRUCTURED_HEADER[name]]))
    candidates.append(_chain(_identity, [member("header"), member("variable_header"),
                                         assoc(name)]))
    candidates.append(_chain(_identity, [member("filterable_data"), assoc(name)]))
    # Last: $(name) when the event is one unnamed name-value list, else $.name.
    candidates.append(_chain(_identity, [assoc(name)]))
    candidates.append(_chain(_identity, [member(name)]))
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
                if not is_struct(d):
                    return general(ev)
            seen, i, attr_name = last[0]
            if seen is not d:
                names = d[4::2]
                if "header" in names or "filterable_data" in names:
                    i = -2
                else:
                    i = member_index(d, attr, name)
                attr_name = d[i] if i >= 0 else ""
                last[0] = (d, i, attr_name)
            if i >= 0:
                if attr_name:
                    return getattr(value, attr_name), d[i + 1]
                return field(value, d, i), d[i + 1]
            if i == -1:
                return None
        except Exception:  # noqa: BLE001 - a malformed value is "cannot be resolved"
            return None
        return general(ev)
    return locate


def component_locator(component: ast.Component, form: Form, clock: Clock,
                      exist: bool = False) -> Locator:
    """The locator of a ``$`` component (or, with no steps, a bare identifier); with
    ``exist``, for the operand of ``exist``: a union label then resolves only while
    the discriminator is that label (§2.4.6, ``steps.make_step``)."""
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
    return _chain(root, [make_step(step, exist) for step in steps[covered:]])
