"""The ELVIN4 constraint grammar: Elvin 4 subscription expressions (issue 19).

Strategy: ``FilterFactory.create_filter("ELVIN4")`` gets filters whose
constraint texts are subscription expressions of the Elvin 4 client protocol
§6 (seeds/elvin-client-protocol-4.0.txt). Text is lexed and parsed by PLY
(``lexer``, ``parser``) into a frozen tree (``ast``), checked for the
compile-time errors of §6.3 (``check``), and compiled to Python functions
(``compiler``, using ``values`` for the CORBA -> Elvin type mapping,
``evaluate`` for the operators and ``regex`` for ``regex``/``wildcard``).
Every rejection is a :class:`SubscriptionError` (a ValueError) carrying the
§6.3 error name and offset; the filter reports it as ``InvalidConstraint``.
docs/grammars/elvin4.md documents the language and every decision.

:func:`tested_attributes` gives the attribute names an expression tests,
the data an Elvin router sends quenchers (§5.3.3, §7.4.25).
"""

from __future__ import annotations

from cosnotify.filter.ast import MAX_LENGTH
from cosnotify.filter.elvin4.check import check
from cosnotify.filter.elvin4.compiler import ElvinProgram, generate
from cosnotify.filter.elvin4.errors import SubscriptionError
from cosnotify.filter.elvin4.parser import parse
from cosnotify.filter.registry import CompileContext, CompiledConstraint, register_grammar

__all__ = ["GRAMMAR", "MAX_LENGTH", "SubscriptionError", "compile_elvin4", "compile_program",
           "tested_attributes"]

#: The grammar name FilterFactory.create_filter takes.
GRAMMAR = "ELVIN4"


def compile_program(text: str, *, strict: bool = False) -> ElvinProgram:
    """Parse, check and compile one subscription expression; SubscriptionError if invalid.

    ``strict=True`` (for tests) gives matchers that let an exception through
    instead of treating the operand as bottom (``compiler``).

    Texts longer than ``MAX_LENGTH`` (EXTENDED_TCL's limit) are QOS_LIMIT
    (§6.3: "a router implementation MAY reject a subscription expression that
    exceeds its internal limits ... SHOULD be reported using the QOS_LIMIT
    error code"; the option is Subscription.Max-Length, §7.5).
    """
    if not isinstance(text, str):
        raise TypeError(f"constraint must be str, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise SubscriptionError("QOS_LIMIT", f"expression is {len(text)} characters long; "
                                f"the limit (Subscription.Max-Length) is {MAX_LENGTH}",
                                text, MAX_LENGTH)
    tree = parse(text)
    check(tree, text)
    return generate(text, tree, strict=strict)


def compile_elvin4(text: str, context: CompileContext) -> CompiledConstraint:
    """The registry's compile function for ELVIN4 (``context`` is unused: no clock)."""
    program = compile_program(text)
    return CompiledConstraint(program.structured, program.any, program.typed, program)


def tested_attributes(compiled: CompiledConstraint) -> frozenset[str]:
    """The attribute names an ELVIN4 constraint tests: what a quench reports (§5.3.3,
    §7.4.25: subscriptions "referring to any of the registered names").

    Raises TypeError for a constraint another grammar compiled.
    """
    program = compiled.source
    if not isinstance(program, ElvinProgram):
        raise TypeError(f"not an ELVIN4 constraint: {compiled!r}")
    return program.names


register_grammar(GRAMMAR, compile_elvin4, tested=tested_attributes)
