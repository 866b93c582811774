"""Compiling Event Heap templates into match functions, one per event form.

Strategy: the seed's "Tuple Matching" rule: an event matches when every
non-virtual template field is present in it and matches; a formal template
value matches any value of the field's type, an actual one an equivalent
value (a Notification event never carries formal post values, so the seed's
"comparison field's post value is formal" case cannot arise). Each template
is turned into the Python source of one straight-line function (one block
per active field, the field's name and value bound as constants of the
function's namespace, never spliced into the source), compiled once; a
5-field template then matches millions of events a second (docs/grammars/
eventheap.md). A fast path recognises the common property TypeCodes by
identity (omniORB keeps one TypeCode object per basic kind); anything else
(aliases such as TimeBase::TimeT, nested Anys, TypeCodes from the wire) goes
through :func:`cosnotify.filter.runtime.strip`, never ``CORBA.TypeCode``
methods. The body runs in one ``try``: a malformed event is FALSE, never an
exception.

Where fields are read (the rules of docs/grammars/eventheap.md):

- structured: ``EventType`` is ``header.fixed_header.event_type.type_name``,
  ``TimeToLive`` the ``Timeout`` property of the variable header, every other
  field the first property of its name in ``filterable_data``, else in
  ``header.variable_header``;
- typed (a PropertySeq, Notification §2.7): ``EventType`` is the
  ``type_name`` of the ``event_type`` pair, ``TimeToLive`` the ``Timeout``
  pair, every other field the first pair of its name;
- any (unstructured): when the Any holds a sequence of Property (a
  ``CosNotification::PropertySeq``), as typed; otherwise the event has no
  fields, so only templates without active fields match it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from omniORB import CORBA, tcInternal

from cosnotify.corba import descriptors as D
from cosnotify.filter.eventheap.model import (
    KINDS,
    TIMEOUT,
    FieldMode,
    Place,
    Template,
    TemplateField,
    java_equal,
    java_integer,
    to_float32,
)
from cosnotify.filter.runtime import strip

__all__ = ["Matcher", "compile_template", "kind_and_value", "properties_of_any"]

Matcher = Callable[[Any], bool]

_CorbaAny: Final = CORBA.Any


def _basic(kinds: frozenset[int]) -> frozenset[Any]:
    """The TypeCode objects omniORB keeps for the basic ``kinds``."""
    return frozenset(tc for key, tc in tcInternal.basicTypeCodes.items()
                     if (key if type(key) is int else key[0]) in kinds)


#: Event Heap type -> the TypeCode objects of its basic kinds (the fast path).
_FAST: Final[dict[str, frozenset[Any]]] = {ftype: _basic(kinds) for ftype, kinds in KINDS.items()}
#: The same without the unsigned kinds, whose Java value may differ from the Python one.
_FAST_SIGNED: Final[dict[str, frozenset[Any]]] = {
    ftype: _basic(KINDS[ftype] - {D.ULONG, D.ULONGLONG}) for ftype in ("int", "long")}
_INTEGER_KINDS: Final = KINDS["int"] | KINDS["long"]
_NULL_KINDS: Final = frozenset({D.NULL, D.VOID})


def kind_and_value(value: Any) -> tuple[int, Any] | None:
    """The unaliased kind and the value held by the Any ``value`` (inner Anys passed
    over), or None when ``value`` is not an Any or holds an empty Any slot."""
    if type(value) is not _CorbaAny:
        return None
    found = strip(value._v, value._t._d)
    if found is None:
        return None
    inner, _, base = found
    return (base if type(base) is int else base[0]), inner


def properties_of_any(event: Any) -> Any:
    """The PropertySeq an unstructured event's Any holds, or None."""
    try:
        found = strip(event._v, event._t._d)
    except Exception:  # noqa: BLE001 - not an Any we can read: no properties
        return None
    if found is None:
        return None
    inner, _, base = found
    if type(base) is tuple and base[0] == D.SEQUENCE and isinstance(inner, (list, tuple)):
        return inner
    return None


def _typed_type_name(seq: Any) -> Any:
    """The ``type_name`` of a typed event's ``event_type`` pair (§2.7), or None."""
    for p in seq:
        if p.name == "event_type":
            found = kind_and_value(p.value)
            name = getattr(found[1], "type_name", None) if found is not None else None
            return name if type(name) is str else None
    return None


# -- value checks (the slow path, and the only path for unusual TypeCodes) ------------------


def _formal_check(ftype: str) -> Matcher:
    kinds = KINDS[ftype]

    def check(value: Any) -> bool:
        found = kind_and_value(value)
        return found is not None and found[0] in kinds
    return check


def _actual_check(ftype: str, literal: Any) -> Matcher:
    """Equivalence (docs/grammars/eventheap.md): exact for integers (an unsigned
    value read as the IDL-to-Java mapping does, :func:`java_integer`), strings and
    booleans; Java's ``equals`` for float and double (NaN equals NaN, -0.0 not 0.0)."""
    kinds = KINDS[ftype]

    def check(value: Any) -> bool:
        found = kind_and_value(value)
        if found is None or found[0] not in kinds:
            return False
        if ftype == "float":
            return _float_equal(found[1], literal)
        if ftype == "double":
            return java_equal(float(found[1]), literal)
        return bool(java_integer(found[0], found[1]) == literal)
    return check


def _float_equal(value: Any, literal: float) -> bool:
    """A CORBA float against a float literal, both as IEEE singles: an Any built in
    process holds whatever Python float it was given, one from the wire a single."""
    try:
        return java_equal(to_float32(float(value)), literal)
    except (OverflowError, TypeError, ValueError):
        return False


def _null_check(value: Any) -> bool:
    found = kind_and_value(value)
    return found is not None and found[0] in _NULL_KINDS


def _timeout_check(value: Any) -> bool:
    """A formal TimeToLive against ``Timeout`` (TimeBase::TimeT): any integer kind.

    TimeToLive's template value is always formal (Table 1: "Post value only",
    checked by the parser), so no millisecond value is ever compared.
    """
    found = kind_and_value(value)
    return found is not None and found[0] in _INTEGER_KINDS


# -- code generation ------------------------------------------------------------------------

_FORMS: Final = ("structured", "typed", "any")


def _lookup(i: int, sources: tuple[str, ...], indent: str) -> list[str]:
    """Lines binding ``v`` to the first property named ``N{i}`` in ``sources``,
    or returning FALSE when there is none."""
    lines: list[str] = []
    pad = indent
    for source in sources:
        lines += [f"{pad}for p in {source}:",
                  f"{pad}    if p.name == N{i}:",
                  f"{pad}        v = p.value",
                  f"{pad}        break",
                  f"{pad}else:"]
        pad += "    "
    lines.append(f"{pad}return False")
    return lines


def _field_lines(i: int, field: TemplateField, form: str, ns: dict[str, Any]) -> list[str]:
    """The source of one active field's test (FALSE on a mismatch), filling ``ns``."""
    ind = "        "
    ns[f"N{i}"] = field.name
    if field.place is Place.TYPE_NAME:
        if field.mode is FieldMode.FORMAL:
            return [] if form == "structured" else [f"{ind}if TN(ev) is None: return False"]
        ns[f"C{i}"] = field.value
        getter = "ev.header.fixed_header.event_type.type_name" if form == "structured" \
            else "TN(ev)"
        return [f"{ind}if {getter} != C{i}: return False"] if field.value is not None \
            else [f"{ind}return False"]
    sources: tuple[str, ...]
    if field.place is Place.TIMEOUT:
        ns[f"N{i}"] = TIMEOUT
        sources = ("vh",) if form == "structured" else ("ev",)
    else:
        sources = ("fd", "vh") if form == "structured" else ("ev",)
    lines = _lookup(i, sources, ind)
    if field.mode is FieldMode.ACTUAL and field.value is None:
        ns[f"S{i}"] = _null_check
        return [*lines, f"{ind}if not S{i}(v): return False"]
    if field.place is Place.TIMEOUT:
        ns[f"S{i}"] = _timeout_check
        return [*lines, f"{ind}if not S{i}(v): return False"]
    ns[f"T{i}"] = _FAST[field.type]
    if field.mode is FieldMode.FORMAL:
        ns[f"S{i}"] = _formal_check(field.type)
        return [*lines, f"{ind}if v._t not in T{i} and not S{i}(v): return False"]
    ns[f"C{i}"] = field.value
    ns[f"S{i}"] = _actual_check(field.type, field.value)
    literal = field.value
    if field.type in ("int", "long") and literal < 0:
        # An unsigned value wraps to a negative Java value: the slow path reads it so.
        ns[f"T{i}"] = _FAST_SIGNED[field.type]
    if field.type == "float":
        test = f"not EQF(v._v, C{i})"
    elif type(literal) is float and (math.isnan(literal) or literal == 0.0):
        test = f"not EQ(v._v, C{i})"
    else:
        test = f"v._v != C{i}"
    return [*lines,
            f"{ind}if v._t in T{i}:",
            f"{ind}    if {test}: return False",
            f"{ind}elif not S{i}(v): return False"]


def _compile_form(template: Template, form: str) -> Matcher:
    active = template.active
    if not active:
        return _true
    ns: dict[str, Any] = {"EQ": java_equal, "EQF": _float_equal, "TN": _typed_type_name,
                          "PA": properties_of_any}
    lines = ["def match(ev):", "    try:"]
    if form == "structured":
        lines += ["        h = ev.header", "        fd = ev.filterable_data",
                  "        vh = h.variable_header"]
    elif form == "any":
        lines += ["        ev = PA(ev)", "        if ev is None: return False"]
    for i, field in enumerate(active):
        lines += _field_lines(i, field, form, ns)
    lines += ["        return True", "    except Exception:", "        return False"]
    code = compile("\n".join(lines) + "\n", f"<eventheap {form}>", "exec")
    exec(code, ns)  # noqa: S102 - our own generated source, no user text in it
    match: Matcher = ns["match"]
    return match


def _true(event: Any) -> bool:
    return True


def compile_template(template: Template) -> tuple[Matcher, Matcher, Matcher]:
    """The structured, any and typed match functions of ``template``."""
    structured, typed, any_ = (_compile_form(template, form) for form in _FORMS)
    return structured, any_, typed
