"""The seeds' grammars over IIOP: an omniORBpy client makes and uses each one (issue 19).

Runs against a server in this process and a ``cosnotify serve`` child
(``factory`` is parametrized in tests/server/conftest.py). The client finds
the grammars through ``CosNotifyGrammars::GrammarFilterFactory`` (the
channel's default filter factory), makes a filter of each, attaches it to a
structured pull proxy and pulls what passes. The C++ client's half is in
tests/interop/notify/test_cxx_clients.py.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyFilter as F
import CosNotifyGrammars as G

from tests.channel.conftest import WAIT
from tests.server.conftest import reference
from tests.server.test_remote import push_entry

NODES = [r"\Asia", r"\Asia\India", r"\Asia\India\Calcutta", r"\Europe\France"]

#: grammar -> (constraint text, the n of the events that pass)
CASES = {
    "EXTENDED_TCL": ("$n >= 5 and $n < 8", [5, 6, 7]),
    "ELVIN4": ('n >= 5 && n < 8 && begins-with(node, "\\\\Asia")', [5, 6]),
    "EVENTHEAP": ("EventType = \"Counter\", n: int = 6, node: string = ?", [6]),
    "OES_SUBTREE": (r"\Asia\India depth *", [1, 2, 5, 6, 9]),
}


def event(n: int) -> Any:
    node = NODES[n % len(NODES)]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Test", "Counter"), f"e{n}"), []),
        [N.Property("n", CORBA.Any(CORBA.TC_long, n)),
         N.Property("node", CORBA.Any(CORBA.TC_string, node))],
        CORBA.Any(CORBA.TC_long, n))


def pull_all(proxy: Any) -> list[int]:
    got = []
    while True:
        received, has = proxy.try_pull_structured_event()
        if not has:
            return got
        got.append(received.remainder_of_body.value())


class TestGrammarsRemotely:
    """Each grammar made and used by a remote omniORBpy client."""

    def test_the_factory_lists_its_grammars(self, channel: Any) -> None:
        """The default filter factory is a GrammarFilterFactory and lists every grammar."""
        factory = channel._get_default_filter_factory()
        assert factory._is_a("IDL:omg.org/CosNotifyFilter/FilterFactory:1.0")
        listing = factory._narrow(G.GrammarFilterFactory)
        assert listing is not None
        names = listing._get_grammars()
        assert set(CASES) | {"TCL", "ETCL"} <= set(names)
        assert names == sorted(names)

    @pytest.mark.parametrize("grammar", sorted(CASES))
    def test_each_grammar_filters_a_proxy(self, channel: Any, grammar: str) -> None:
        """A filter of this grammar, made and filled over IIOP, passes exactly its events;
        the filter reports the grammar it was made with."""
        text, expected = CASES[grammar]
        flt = channel._get_default_filter_factory().create_filter(grammar)
        assert flt._get_constraint_grammar() == grammar
        flt.add_constraints([F.ConstraintExp([], text)])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPullSupplier)
        proxy.connect_structured_pull_consumer(None)
        proxy.add_filter(flt)
        entry = push_entry(channel)
        for n in range(10):
            entry.push_structured_event(event(n))
        assert pull_all(proxy) == expected
        assert flt.match_structured(event(expected[0])) is True

    def test_a_template_sent_as_a_value(self, channel: Any) -> None:
        """A client holding an Event Heap template as a CosNotifyGrammars::Template sends
        it to the factory, gets its EVENTHEAP text and filters with it."""
        factory = channel._get_default_filter_factory()._narrow(G.GrammarFilterFactory)
        template = [
            G.TemplateField("EventType", "string", G.ACTUAL, CORBA.Any(CORBA.TC_string, "Counter")),
            G.TemplateField("n", "int", G.ACTUAL, CORBA.Any(CORBA.TC_long, 6)),
            G.TemplateField("node", "string", G.FORMAL, CORBA.Any(CORBA.TC_null, None)),
            G.TemplateField("note", "string", G.VIRTUAL, CORBA.Any(CORBA.TC_null, None))]
        text = factory.template_text(template)
        flt = factory.create_filter("EVENTHEAP")
        flt.add_constraints([F.ConstraintExp([], text)])
        assert [n for n in range(10) if flt.match_structured(event(n))] == [6]

    def test_a_bad_template_is_invalid_template(self, channel: Any) -> None:
        """A template whose actual value has the wrong kind raises InvalidTemplate with
        the reason, over the wire."""
        factory = channel._get_default_filter_factory()._narrow(G.GrammarFilterFactory)
        with pytest.raises(G.InvalidTemplate) as caught:
            factory.template_text([G.TemplateField("n", "int", G.ACTUAL,
                                                   CORBA.Any(CORBA.TC_string, "six"))])
        assert "n" in caught.value.reason

    @pytest.mark.parametrize(("grammar", "text"), [
        ("ELVIN4", "n >"), ("EVENTHEAP", "n: int ="), ("OES_SUBTREE", r"\Asia\\India")])
    def test_bad_text_is_invalid_constraint_over_the_wire(self, channel: Any, grammar: str,
                                                          text: str) -> None:
        """A malformed constraint of each grammar comes back as InvalidConstraint carrying
        the expression, and the filter keeps no constraint."""
        flt = channel._get_default_filter_factory().create_filter(grammar)
        with pytest.raises(F.InvalidConstraint) as caught:
            flt.add_constraints([F.ConstraintExp([], text)])
        assert caught.value.constr.constraint_expr == text
        assert flt.get_all_constraints() == []


class QuenchingSupplier(CosNotifyComm__POA.StructuredPushSupplier):  # type: ignore[misc]
    """A supplier servant in this process: keeps the subscription types it is told."""

    def __init__(self) -> None:
        self.current: set[tuple[str, str]] = set()
        self.cond = threading.Condition()

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        with self.cond:
            self.current -= {(t.domain_name, t.type_name) for t in removed}
            self.current |= {(t.domain_name, t.type_name) for t in added}
            self.cond.notify_all()

    def disconnect_structured_push_supplier(self) -> None:
        pass

    def wait_for(self, want: set[tuple[str, str]]) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.current == want, WAIT)


class TestQuenchAcrossProcesses:
    """Quench (docs/grammars/elvin4.md) with an ELVIN4 filter that lives in another process."""

    def test_a_remote_filters_attributes_are_all_reported(self, omniorb: Any, server: Any,
                                                          served: Any) -> None:
        """A `cosnotify serve` channel holding an ELVIN4 filter made by another server tells
        its suppliers every attribute the filter tests: those of the constraints it had when
        added, and those added later."""
        factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
        channel, _ = factory.create_channel([], [])
        supplier = QuenchingSupplier()
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry._narrow(CA.StructuredProxyPushConsumer).connect_structured_push_supplier(
            reference(omniorb, supplier))
        elsewhere = omniorb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
        other, _ = elsewhere.create_channel([], [])
        flt = other._get_default_filter_factory().create_filter("ELVIN4")
        flt.add_constraints([F.ConstraintExp([], 'host == "x"')])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy._narrow(CA.StructuredProxyPullSupplier).connect_structured_pull_consumer(None)
        proxy.add_filter(flt)
        assert supplier.wait_for({("*", "%ALL"), ("%ATTRIBUTE", "host")}), supplier.current
        flt.add_constraints([F.ConstraintExp([], 'host == "y" && load > 1')])
        assert supplier.wait_for({("*", "%ALL"), ("%ATTRIBUTE", "host"),
                                  ("%ATTRIBUTE", "load")}), supplier.current
