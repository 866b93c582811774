"""Index terms: what must hold of an event for a constraint to be TRUE.

Strategy: a grammar that wants its constraints indexed gives, per constraint,
an *access*: a tuple of :class:`Term`, at least one of which holds for every
event the constraint is TRUE for (a *necessary* condition, never a
sufficient one: an event that satisfies a term is only a *candidate*, and
the constraint itself decides). An empty access means the constraint is
never TRUE; no access at all (None) means it cannot be decomposed, and it is
a candidate for every event of its types.

A term names a *component* (an object the grammar knows how to read from an
event: for EXTENDED_TCL, an AST ``Component``) and *keys*: the literal it is
compared with, normalised by :func:`keys_of` so that two values the
grammar's ``==`` calls equal share a key. EXTENDED_TCL compares numbers of
mixed kinds as doubles, booleans as 0/1 and one-character strings as
characters (§2.4.3), so a number's key is ``("n", float)``, and a character
has both ``("s", c)`` and ``("n", ord(c))``. Keys are a superset relation,
never exact: equal values share a key, unequal ones may too.
"""

from __future__ import annotations

import enum
import math
from decimal import Decimal
from typing import Any, Final, TypeAlias

import attrs

__all__ = ["MAX_KEYS", "Access", "Key", "Kind", "Term", "keys_of", "number_key"]

#: A normalised literal: ``("s", text)`` or ``("n", float)``.
Key: TypeAlias = tuple[str, Any]

#: Index keys one constraint may add (its terms' keys together); a constraint
#: that needs more is refused with InvalidConstraint (docs/routing.md, "Limits").
MAX_KEYS: Final = 1024


class Kind(enum.Enum):
    """How a term's component relates to its keys."""

    EQ = "eq"        #: the component's value has one of the keys
    IN = "in"        #: the component is a sequence with an element that has one
    LOWER = "lower"  #: the component's value is >= the key (for ``>`` and ``>=``)
    UPPER = "upper"  #: the component's value is <= the key (for ``<`` and ``<=``)
    #: the component's value is a number between the two keys, both numbers
    #: (``$x >= a and $x < b``): keys are (lower, upper)
    BETWEEN = "between"


@attrs.frozen
class Term:
    """One necessary condition: ``component`` relates to one of ``keys`` as ``kind`` says.

    ``exact`` is set when the term is the whole constraint as well, and sufficient
    too: the constraint is ``component OP literal`` and nothing else, OP one of
    ``==``, ``<``, ``<=``, ``>``, ``>=`` (oriented with the component on the left).
    Then ``(OP, literal)``: the index may compare the value it read with the literal
    instead of evaluating the constraint, where that comparison is the grammar's
    (``cosnotify.routing.index``: numbers within a double's exact integers, and
    strings for ``==``).
    """

    kind: Kind
    component: Any  # hashable; the grammar's own (EXTENDED_TCL: ast.Component)
    keys: tuple[Key, ...]
    exact: tuple[str, Any] | None = None


#: A constraint's access: one of these terms holds for every event it is TRUE
#: for; () for a constraint that is never TRUE.
Access: TypeAlias = tuple[Term, ...]


def number_key(value: Any) -> Key | None:
    """The key of a number (int, float, Decimal, bool), or None for NaN."""
    try:
        number = float(value)
    except ValueError:
        return None  # a signalling Decimal NaN
    except OverflowError:
        # Beyond a double: TCL's conversion fails too, except between two
        # integers, which then compare exactly.
        return ("n", value)
    if math.isnan(number):
        return None  # NaN equals nothing
    return ("n", number)


def keys_of(value: Any) -> tuple[Key, ...]:
    """The keys of an operand (an event's value or a literal): () for what no
    literal can equal. An enum's key is its ordinal (``runtime.EnumVal``)."""
    kind = type(value)
    if kind is str:
        if len(value) == 1:
            return (("s", value), ("n", float(ord(value))))
        return (("s", value),)
    if kind is int or kind is float or kind is bool or kind is Decimal:
        key = number_key(value)
        return () if key is None else (key,)
    ordinal = getattr(value, "ordinal", None)
    if type(ordinal) is int:
        return (("n", float(ordinal)),)
    return ()
