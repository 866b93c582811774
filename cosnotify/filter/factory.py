"""``CosNotifyFilter::FilterFactory`` (Notification §3.2.3).

Strategy: the factory only looks the grammar name up in a
:class:`~cosnotify.filter.registry.GrammarRegistry` and builds a grammar-agnostic
:class:`~cosnotify.filter.filter.Filter` or
:class:`~cosnotify.filter.mapping.MappingFilter` around it. An unknown name
(compared case-sensitively, as TAO and JacORB do) raises ``InvalidGrammar``.
The clock that ``$curtime`` reads can be injected for deterministic tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import CosNotifyFilter

from cosnotify.filter.compiler import system_clock
from cosnotify.filter.filter import Filter
from cosnotify.filter.mapping import MappingFilter
from cosnotify.filter.registry import CompileContext, Grammar, GrammarRegistry, default_registry

__all__ = ["FilterFactory"]


class FilterFactory:
    """Creates filters for every grammar in ``registry`` (default: the process registry).

    ``clock`` returns now as a ``TimeBase::TimeT`` (100 ns units since
    1582-10-15); it backs ``$curtime`` in every filter this factory creates.
    ``combine_after``: see :class:`~cosnotify.filter.registry.CompileContext`.
    """

    def __init__(self, registry: GrammarRegistry | None = None,
                 clock: Callable[[], int] = system_clock, *, combine_after: int = 64,
                 persistence: Any = None) -> None:
        self._registry = registry or default_registry()
        self._context = CompileContext(clock, combine_after)
        #: The topology hooks of a factory with a store (channel/topology.py): every
        #: filter made here then gets a path ``flt/N`` and is saved on each change.
        self._persistence = persistence
        self._by_path: dict[str, Filter | MappingFilter] = {}

    def _grammar(self, constraint_grammar: str) -> Grammar:
        grammar = self._registry.lookup(constraint_grammar)
        if grammar is None:
            raise CosNotifyFilter.InvalidGrammar()
        return grammar

    def _get_grammars(self) -> list[str]:
        """Every grammar name ``create_filter`` accepts, aliases included, sorted.

        The IDL attribute ``grammars`` of ``CosNotifyGrammars::GrammarFilterFactory``
        (idl/CosNotifyGrammars.idl), the interface ``cosnotify serve``'s filter
        factories support beside ``CosNotifyFilter::FilterFactory``.
        """
        return self._registry.names()

    def template_text(self, tmpl: Any) -> str:
        """The EVENTHEAP text of a ``CosNotifyGrammars::Template`` value, for a client
        in another process that holds a template as a value (``GrammarFilterFactory``
        in idl/CosNotifyGrammars.idl; docs/grammars/eventheap.md, "Any form").

        Raises ``CosNotifyGrammars::InvalidTemplate`` with the reason when the
        template has no valid text form.
        """
        from cosnotify.filter.eventheap.corba import grammars_module, render_template

        try:
            return render_template(tmpl)
        except (ValueError, TypeError, AttributeError) as exc:
            raise grammars_module().InvalidTemplate(str(exc)) from None

    def create_filter(self, constraint_grammar: str) -> Filter:
        """A new forwarding filter (§3.2.3.1); ``InvalidGrammar`` for unknown names.

        Its ``constraint_grammar`` is the grammar's own name, not the alias it was
        asked for (§3.2.1.1: "EXTENDED_TCL" for the default grammar; decision 42).
        """
        grammar = self._grammar(constraint_grammar)
        made = Filter(grammar.name, grammar, self._context)
        self._made(made)
        return made

    def create_mapping_filter(self, constraint_grammar: str, default_value: Any) -> MappingFilter:
        """A new mapping filter whose value type is ``default_value``'s (§3.2.3.2)."""
        grammar = self._grammar(constraint_grammar)
        made = MappingFilter(grammar.name, grammar, default_value, self._context)
        self._made(made)
        return made

    # -- persistence (docs/persistence.md) ---------------------------------------------------
    def _made(self, made: Filter | MappingFilter) -> None:
        persistence = self._persistence
        if persistence is None or getattr(persistence, "_restoring", False):
            return
        self.adopt(made, f"flt/{persistence.next_id('filters')}")
        persistence.save_filter(made)

    def adopt(self, made: Filter | MappingFilter, path: str) -> None:
        """Give ``made`` its store path and have every change of it saved."""
        made.store_path = path
        self._by_path[path] = made
        if self._persistence is not None:
            made.listener = self._saved

    def _saved(self, made: Filter | MappingFilter) -> None:
        self._persistence.save_filter(made)
        if made._is_destroyed:
            self._by_path.pop(getattr(made, "store_path", ""), None)

    def by_path(self, path: str) -> Filter | MappingFilter | None:
        """The live filter with store path ``path`` (the server's object ids use it)."""
        return self._by_path.get(path)
