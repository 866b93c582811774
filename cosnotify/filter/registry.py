"""The constraint-grammar registry (Notification §3.2.1.1, §3.2.3).

Strategy: filter objects are grammar-agnostic. A grammar is a name plus a
*compile function* that turns one constraint string into a
:class:`CompiledConstraint` (a match function per event form) or raises
``ValueError`` (or a subclass, such as ``ConstraintSyntaxError``) whose
``str()`` explains what is wrong; the filter turns that into
``CosNotifyFilter::InvalidConstraint``. The factory looks grammar names up
here and raises ``InvalidGrammar`` for unknown ones, so other grammars (an
Elvin subscription language, Event Heap templates) plug in with one
:func:`register_grammar` call.

A grammar may also give a *combine function* that compiles several
constraints into one match function (of one event form) that is TRUE when any
of them is. Filters use it for the constraints that apply to one event type
once those have been matched ``CompileContext.combine_after`` times, so a
grammar can share work between constraints (EXTENDED_TCL looks each
component up once per event) without recompiling on every change.

Names are case-sensitive, as in TAO (``strcmp``) and JacORB (``equals``).
``EXTENDED_TCL`` (§2.4) is registered on import, with the aliases ``TCL`` and
``ETCL`` that TAO accepts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import attrs

from cosnotify.filter.compiler import compile_form, system_clock
from cosnotify.filter.decompose import access_of
from cosnotify.filter.parser import parse_constraint
from cosnotify.filter.paths import Form

__all__ = [
    "CombineFunction",
    "CompileContext",
    "CompileFunction",
    "CompiledConstraint",
    "DecomposeFunction",
    "Grammar",
    "GrammarRegistry",
    "TestedFunction",
    "any_of",
    "default_registry",
    "lookup_grammar",
    "register_grammar",
]

Matcher: TypeAlias = Callable[[Any], bool]

log = logging.getLogger(__name__)


@attrs.frozen
class CompiledConstraint:
    """One constraint, compiled: a function per event form, each returning a bool.

    ``structured`` takes a ``CosNotification::StructuredEvent``; ``any`` takes
    the ``CORBA.Any`` of an unstructured event (never one holding a
    StructuredEvent: the filter routes those to ``structured``, §2.1.4);
    ``typed`` takes the ``CosNotification::PropertySeq`` of a typed event
    (§2.7). None of them may raise for any event. ``source`` is the grammar's
    own (for EXTENDED_TCL, the AST), for its combine function.
    """

    structured: Matcher
    any: Matcher
    typed: Matcher
    source: Any = attrs.field(default=None, eq=False)


@attrs.frozen
class CompileContext:
    """What a compile function may use besides the text.

    ``clock`` returns the current time as a ``TimeBase::TimeT`` (100 ns units
    since 1582-10-15); EXTENDED_TCL's ``$curtime`` reads it (§2.4.2).
    ``combine_after`` is how many matches of one event type a filter serves
    constraint by constraint before it has the grammar combine them (0: at once).
    """

    clock: Callable[[], int] = system_clock
    combine_after: int = 64


CompileFunction: TypeAlias = Callable[[str, CompileContext], CompiledConstraint]
#: A compiled constraint -> its index access (``cosnotify.routing.terms``), or None
#: when it cannot be indexed; ValueError when it is too big to index.
DecomposeFunction: TypeAlias = Callable[[CompiledConstraint], Any]
#: (constraints, form, context) -> one matcher of that form ("structured", "any"
#: or "typed") that is TRUE when any of the constraints is.
CombineFunction: TypeAlias = Callable[[Sequence[CompiledConstraint], str, CompileContext],
                                      Matcher]
#: A compiled constraint -> the names of the attributes it tests, which filters
#: report to suppliers as ``("%ATTRIBUTE", name)`` subscription types (a quench).
TestedFunction: TypeAlias = Callable[[CompiledConstraint], Iterable[str]]


@attrs.frozen
class Grammar:
    """A registered grammar: its canonical name, compile and optional combine functions."""

    name: str
    compile: CompileFunction
    combine: CombineFunction | None = None
    decompose: DecomposeFunction | None = None
    tested: TestedFunction | None = None


class GrammarRegistry:
    """Grammar names (and aliases) to compile functions; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._grammars: dict[str, Grammar] = {}

    def register(self, name: str, compile_fn: CompileFunction,
                 aliases: Iterable[str] = (), *, combine: CombineFunction | None = None,
                 decompose: DecomposeFunction | None = None,
                 tested: TestedFunction | None = None,
                 replace: bool = False) -> Grammar:
        """Register ``compile_fn`` (and ``combine``, ``decompose``, ``tested``) under
        ``name`` and ``aliases``.

        Raises ValueError when a name is taken and ``replace`` is false.
        """
        grammar = Grammar(name, compile_fn, combine, decompose, tested)
        names = [name, *aliases]
        with self._lock:
            taken = [n for n in names if n in self._grammars]
            if taken and not replace:
                raise ValueError(f"grammar name(s) already registered: {', '.join(taken)}")
            for n in names:
                self._grammars[n] = grammar
        return grammar

    def lookup(self, name: str) -> Grammar | None:
        """The grammar registered as ``name`` (exact, case-sensitive), or None."""
        return self._grammars.get(name) if isinstance(name, str) else None

    def names(self) -> list[str]:
        """Every registered name and alias."""
        with self._lock:
            return sorted(self._grammars)


_DEFAULT = GrammarRegistry()


def default_registry() -> GrammarRegistry:
    """The process-wide registry :class:`~cosnotify.filter.factory.FilterFactory` uses."""
    return _DEFAULT


def register_grammar(name: str, compile_fn: CompileFunction, aliases: Iterable[str] = (),
                     *, combine: CombineFunction | None = None,
                     decompose: DecomposeFunction | None = None,
                     tested: TestedFunction | None = None,
                     replace: bool = False) -> Grammar:
    """Register a grammar in the default registry (see :meth:`GrammarRegistry.register`)."""
    return _DEFAULT.register(name, compile_fn, aliases, combine=combine, decompose=decompose,
                             tested=tested, replace=replace)


def lookup_grammar(name: str) -> Grammar | None:
    """The grammar of the default registry registered as ``name``, or None."""
    return _DEFAULT.lookup(name)


def compile_extended_tcl(text: str, context: CompileContext) -> CompiledConstraint:
    """EXTENDED_TCL (§2.4): parse once, generate Python for each event form.

    The structured form is compiled at once (it also proves the constraint
    compiles); the Any and typed forms when first used, since most filters
    only ever see one form and compiling costs more than parsing.
    """
    tree = parse_constraint(text)
    try:
        structured = compile_form([tree], Form.STRUCTURED, context.clock)
    except RecursionError:
        # The compiler recurses once per tree level (at most ast.MAX_DEPTH); only a
        # caller already deep in the stack, or a lowered recursion limit, gets here.
        raise ValueError(f"constraint nests too deeply ({tree.depth} levels) to compile "
                         "within Python's recursion limit here") from None
    compiled = CompiledConstraint(structured, structured, structured, tree)
    for form in (Form.ANY, Form.TYPED):
        object.__setattr__(compiled, form.value, _on_first_use(compiled, form, context.clock))
    return compiled


def _on_first_use(compiled: CompiledConstraint, form: Form, clock: Any) -> Matcher:
    """A matcher that compiles ``form`` of ``compiled`` when first called and then
    stands in its place (callers that kept this function still reach it)."""
    name = form.value

    def first(event: Any) -> bool:
        real = getattr(compiled, name)
        if real is first:
            try:
                real = compile_form([compiled.source], form, clock)
            except Exception:
                log.exception("compiling the %s form of %r failed", name, compiled.source)
                real = _false
            object.__setattr__(compiled, name, real)
        return bool(real(event))
    return first


def _false(event: Any) -> bool:
    return False


def combine_extended_tcl(constraints: Sequence[CompiledConstraint], form: str,
                         context: CompileContext) -> Matcher:
    """One function of ``form`` for several EXTENDED_TCL constraints, ORed in order."""
    return compile_form([c.source for c in constraints], Form(form), context.clock)


def any_of(matchers: tuple[Matcher, ...]) -> Matcher:
    """A matcher that is TRUE when one of ``matchers`` is, tried in order."""
    def match(event: Any) -> bool:
        for matcher in matchers:
            if matcher(event):
                return True
        return False
    return match


register_grammar("EXTENDED_TCL", compile_extended_tcl, aliases=("TCL", "ETCL"),
                 combine=combine_extended_tcl, decompose=access_of)
