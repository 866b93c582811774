"""FilterFactory (§3.2.3) and the grammar registry."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyFilter as F

import cosnotify
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.filter import Filter
from cosnotify.filter.mapping import MappingFilter
from cosnotify.filter.registry import (
    CompileContext,
    CompiledConstraint,
    GrammarRegistry,
    default_registry,
)
from tests.filter.events import structured


def event_name_grammar(text: str, context: CompileContext) -> CompiledConstraint:
    """A toy grammar: the constraint is an event name; '!' is a syntax error."""
    if "!" in text:
        raise ValueError(f"'!' is not allowed at offset {text.index('!')}")
    return CompiledConstraint(
        structured=lambda ev: ev.header.fixed_header.event_name == text,
        any=lambda ev: False,
        typed=lambda ev: False)


class TestFactory:
    """create_filter and create_mapping_filter."""

    @pytest.mark.parametrize("name", ["EXTENDED_TCL", "TCL", "ETCL"])
    def test_known_grammars(self, name: str) -> None:
        """The default grammar and its aliases create working filters."""
        factory = FilterFactory()
        f = factory.create_filter(name)
        assert isinstance(f, Filter)
        f.add_constraints([F.ConstraintExp([], "$type_name == 'CommunicationsAlarm'")])
        assert f.match_structured(structured()) is True
        m = factory.create_mapping_filter(name, CORBA.Any(CORBA.TC_short, 0))
        assert isinstance(m, MappingFilter)

    @pytest.mark.parametrize("name", ["extended_tcl", "Tcl", "", "XPATH", " TCL"])
    def test_unknown_grammars(self, name: str) -> None:
        """Other names, including other spellings, raise InvalidGrammar."""
        factory = FilterFactory()
        with pytest.raises(F.InvalidGrammar):
            factory.create_filter(name)
        with pytest.raises(F.InvalidGrammar):
            factory.create_mapping_filter(name, CORBA.Any(CORBA.TC_short, 0))

    def test_lists_its_grammars(self) -> None:
        """The factory lists every name create_filter accepts: the spec's grammar, its
        aliases and the seeds' grammars (issue 19), and each listed name works."""
        factory = FilterFactory()
        names = factory._get_grammars()
        assert names == sorted(names)
        assert {"EXTENDED_TCL", "TCL", "ETCL", "ELVIN4", "EVENTHEAP", "OES_SUBTREE"} <= set(names)
        for name in names:
            canonical = "EXTENDED_TCL" if name in ("TCL", "ETCL") else name
            assert factory.create_filter(name)._get_constraint_grammar() == canonical

    def test_lists_what_its_registry_holds(self) -> None:
        """A factory over its own registry lists that registry's names, no others."""
        registry = GrammarRegistry()
        registry.register("EVENT_NAME", event_name_grammar, aliases=("EN",))
        assert FilterFactory(registry)._get_grammars() == ["EN", "EVENT_NAME"]

    def test_channel_uses_this_factory(self) -> None:
        """The channel's default filter factory creates these filters."""
        channels = cosnotify.EventChannelFactory()
        try:
            channel, _ = channels.create_channel([], [])
            f = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
            assert isinstance(f, Filter)
        finally:
            channels.close()


class TestRegistry:
    """Other grammars plug in through register_grammar."""

    def test_custom_grammar(self) -> None:
        """A registered grammar is usable by name and its aliases; its ValueError
        becomes InvalidConstraint with the grammar's message."""
        registry = GrammarRegistry()
        registry.register("EVENT_NAME", event_name_grammar, aliases=("EN",))
        factory = FilterFactory(registry=registry)
        f = factory.create_filter("EN")
        f.add_constraints([F.ConstraintExp([], "lost_packet")])
        assert f.match_structured(structured(event_name="lost_packet")) is True
        assert f.match_structured(structured(event_name="other")) is False
        with pytest.raises(F.InvalidConstraint) as info:
            f.add_constraints([F.ConstraintExp([], "x!")])
        assert "offset 1" in str(info.value)
        with pytest.raises(F.InvalidGrammar):
            factory.create_filter("EXTENDED_TCL")

    def test_names_are_unique(self) -> None:
        """Registering a taken name fails unless replace is asked for."""
        registry = GrammarRegistry()
        registry.register("G", event_name_grammar)
        with pytest.raises(ValueError, match="already registered"):
            registry.register("H", event_name_grammar, aliases=("G",))
        assert registry.lookup("H") is None
        replaced = registry.register("G", event_name_grammar, replace=True)
        assert registry.lookup("G") is replaced
        assert registry.names() == ["G"]

    def test_default_registry(self) -> None:
        """EXTENDED_TCL, TCL and ETCL are registered by default."""
        assert {"EXTENDED_TCL", "TCL", "ETCL"} <= set(default_registry().names())

    def test_compiler_exceptions_never_half_add(self) -> None:
        """A compile function that fails unexpectedly still yields InvalidConstraint."""
        def broken(text: str, context: CompileContext) -> Any:
            raise RuntimeError("boom")
        registry = GrammarRegistry()
        registry.register("BROKEN", broken)
        f = FilterFactory(registry=registry).create_filter("BROKEN")
        with pytest.raises(F.InvalidConstraint):
            f.add_constraints([F.ConstraintExp([], "anything")])
        assert f.get_all_constraints() == []
