"""Filter objects and the EXTENDED_TCL constraint language (Notification §2.3-2.4, §3.2).

Strategy: text is parsed once, when a constraint is added, into a frozen AST
(``ast``) by a PLY lexer (``lexer``) and parser (``parser``); malformed text
raises ``ConstraintSyntaxError``, which the filter turns into
``CosNotifyFilter::InvalidConstraint``. The AST is then compiled once
(``compiler``, with ``paths`` for component lookup and ``runtime`` for the
operators) into Python functions, so matching an event never walks the tree.
Filter objects (``filter``, ``mapping``) are grammar-agnostic: the factory
(``factory``) finds each grammar's compiler in a registry (``registry``).
"""

from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.filter import Filter
from cosnotify.filter.mapping import MappingFilter
from cosnotify.filter.parser import parse_constraint
from cosnotify.filter.registry import (
    CompileContext,
    CompiledConstraint,
    lookup_grammar,
    register_grammar,
)

# The seeds' grammars (ELVIN4, EVENTHEAP, OES_SUBTREE) register themselves on import.
from cosnotify.filter import elvin4, eventheap, oes  # noqa: F401  isort: skip

__all__ = [
    "CompileContext",
    "CompiledConstraint",
    "ConstraintSyntaxError",
    "Filter",
    "FilterFactory",
    "MappingFilter",
    "lookup_grammar",
    "parse_constraint",
    "register_grammar",
]
