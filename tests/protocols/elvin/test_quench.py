"""Elvin 4 quench (seed §5.3.3, §7.4.21 - §7.4.27), fed by the ELVIN4 filters' quench data.

Every subscription on the channel that tests an attribute -- an Elvin
client's, or a CORBA consumer's ELVIN4 filter -- reaches quenchers naming
that attribute as a SubAddNotify whose term is ``require(name)``
(func_require_tc 64 over name_tc 1, §8.2.3.4), and as a SubDelNotify when
the last one goes (docs/protocols.md, "Elvin 4", "Quench").
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.eventtypes import ATTRIBUTE_DOMAIN
from cosnotify.protocols.elvin import quench as quench_module
from cosnotify.protocols.elvin.packets import QnchAddRqst
from cosnotify.protocols.elvin.quench import Quenches
from tests.channel.conftest import StructuredPushConsumer
from tests.protocols.elvin.client import Client, frame, qnch_add, qnch_del, qnch_mod, sub_del

Make = Callable[[], Client]


def connected(make: Make) -> Client:
    c = make()
    c.connect()
    return c


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


def quench(c: Client, names: list[str], insecure: bool = True) -> int:
    reply = c.request(qnch_add, names, insecure)
    assert reply["type"] == "QnchRply", reply
    return int(reply["id"])


def attribute(name: str) -> Any:
    """The subscription type an ELVIN4 constraint testing ``name`` reports."""
    return N.EventType(ATTRIBUTE_DOMAIN, name)


def require(name: str) -> tuple[int, list[Any]]:
    return (64, [(1, name)])


class TestQuench:
    """What a quencher hears as subscriptions come and go."""

    def test_an_elvin_subscription_is_reported_and_withdrawn(self, client: Make) -> None:
        """SubAddNotify when a subscription tests a quenched name; SubDelNotify when it
        goes; the term id is the same in both."""
        quencher = connected(client)
        qid = quench(quencher, ["host", "load"])
        sub = connected(client)
        sid = sub.subscribe('host == "a"')
        added = quencher.expect("SubAddNotify")
        assert (added["secure"], added["insecure"], added["ast"]) == ([], [qid],
                                                                     require("host"))
        sub.request(sub_del, sid)
        removed = quencher.expect("SubDelNotify")
        assert (removed["quenches"], removed["term"]) == ([qid], added["term"])

    def test_a_corba_elvin4_filter_is_reported_at_registration(self, client: Make,
                                                              channel: Any) -> None:
        """A subscription already there when the quench is added is reported at once,
        here a CORBA consumer's ELVIN4 filter."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        flt = channel._get_default_filter_factory().create_filter("ELVIN4")
        flt.add_constraints([F.ConstraintExp([], "load > 0.5")])
        proxy.add_filter(flt)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        settle(channel)
        quencher = connected(client)
        qid = quench(quencher, ["load", "other"])
        added = quencher.expect("SubAddNotify")
        assert (added["insecure"], added["ast"]) == ([qid], require("load"))

    def test_names_nobody_tests_are_not_reported(self, client: Make, channel: Any) -> None:
        """A subscription testing other names sends the quencher nothing."""
        quencher = connected(client)
        quench(quencher, ["host"])
        connected(client).subscribe("load > 1")
        settle(channel)
        quencher.send(frame("TestConn"))
        quencher.expect("ConfConn")

    def test_a_secure_quench_hears_no_keyless_subscription(self, client: Make,
                                                           channel: Any) -> None:
        """§7.4.25: an insecure quench id needs deliver_insecure set; the channel's
        subscriptions carry no keys, so a quench without it hears nothing."""
        quencher = connected(client)
        quench(quencher, ["host"], insecure=False)
        connected(client).subscribe("require(host)")
        settle(channel)
        quencher.send(frame("TestConn"))
        quencher.expect("ConfConn")

    def test_modify_adds_a_name(self, client: Make, channel: Any) -> None:
        """QnchModRqst adding a name someone tests reports it."""
        connected(client).subscribe("require(load)")
        settle(channel)
        quencher = connected(client)
        qid = quench(quencher, ["host"])
        reply = quencher.request(qnch_mod, qid, ["load"], [])
        assert (reply["type"], reply["id"]) == ("QnchRply", qid)
        assert quencher.expect("SubAddNotify")["ast"] == require("load")

    def test_delete(self, client: Make, channel: Any) -> None:
        """After QnchDelRqst nothing more is reported."""
        quencher = connected(client)
        qid = quench(quencher, ["host"])
        assert quencher.request(qnch_del, qid)["type"] == "QnchRply"
        connected(client).subscribe("require(host)")
        settle(channel)
        quencher.send(frame("TestConn"))
        quencher.expect("ConfConn")


class TestTermIds:
    """The term ids of SubAddNotify and SubDelNotify (§7.4.25, §7.4.27)."""

    def test_names_that_come_and_go_leave_nothing_behind(self, client: Make, channel: Any,
                                                         front_end: Any) -> None:
        """§7.4.27: a SubDelNotify names "the removal of a subscription predicate
        component" by the term id its SubAddNotify gave; the router keeps nothing per
        name once the names go (review 130: a table of them only grew)."""
        router = front_end.router

        def held() -> dict[str, int]:
            return {key: len(value) for key, value in vars(router).items()
                    if isinstance(value, (dict, set, list))}
        quencher = connected(client)
        sub = connected(client)
        before = held()
        seen: dict[str, int] = {}
        for cycle in range(3):
            names = [f"n{cycle}_{i}" for i in range(5)]
            qid = quench(quencher, names)
            sid = sub.subscribe(" || ".join(f"require({n})" for n in names))
            added = [quencher.expect("SubAddNotify") for _ in names]
            sub.request(sub_del, sid)
            removed = [quencher.expect("SubDelNotify") for _ in names]
            terms = {a["ast"][1][0][1]: a["term"] for a in added}
            assert {r["term"] for r in removed} == set(terms.values())
            assert 0 not in terms.values() and len(set(terms.values())) == len(names)
            assert quencher.request(qnch_del, qid)["type"] == "QnchRply"
            seen.update(terms)
        settle(channel)
        assert held() == before
        # the same name, the same id, while the front end lives
        assert all(router.term_id(name) == term for name, term in seen.items())
        for name in (f"x{i}" for i in range(1000)):
            assert 0 < router.term_id(name) < 1 << 64
        assert held() == before


class TestNamesFollowedOnlyWithAQuench:
    """Quenches.active: the channel's tested names, kept per session (review 130)."""

    def test_a_session_without_a_quench_keeps_no_names(self, client: Make, channel: Any,
                                                       front_end: Any) -> None:
        """§5.3.3: quench tells "producers" which attributes subscriptions test, so a
        session keeps the channel's tested names only while it holds a quench: read at
        its first QnchAddRqst, forgotten with its last QnchDelRqst."""
        idle = [connected(client) for _ in range(3)]
        quencher = connected(client)
        names = [f"a{i}" for i in range(50)]
        connected(client).subscribe(" || ".join(f"require({n})" for n in names))
        settle(channel)

        def session(c: Client) -> Any:
            [found] = [s for s in front_end.router.sessions
                       if s.connection.peer == c.sock.getsockname()]
            return found
        assert [session(c).quenches.active for c in idle + [quencher]] == [None] * 4
        qid = quench(quencher, ["a7", "zz"])
        assert quencher.expect("SubAddNotify")["ast"] == require("a7")
        assert session(quencher).quenches.active == set(names)
        connected(client).subscribe("require(zz)")
        assert quencher.expect("SubAddNotify")["ast"] == require("zz")
        assert session(quencher).quenches.active == {*names, "zz"}
        assert quencher.request(qnch_del, qid)["type"] == "QnchRply"
        assert session(quencher).quenches.active is None
        assert [session(c).quenches.active for c in idle] == [None] * 3

    def test_changes_heard_while_reading_apply_on_top(self) -> None:
        """§7.4.25/§7.4.27: SubAddNotify and SubDelNotify follow the channel's changes;
        one relayed while the first quench reads the names is applied after the read."""
        quenches = Quenches(SimpleNamespace(), lambda data, droppable: True)  # type: ignore
        quenches.attributes_changed([attribute("early")], [])      # no quench: not kept
        assert quenches.active is None

        class Proxy:
            def obtain_subscription_types(self, mode: Any) -> list[Any]:
                assert mode == CA.ALL_NOW_UPDATES_ON
                quenches.attributes_changed([attribute("x")], [attribute("y")])
                return [attribute("y"), attribute("z"), N.EventType("Ops", "Alarm")]
        quenches.track(Proxy())
        assert quenches.active == {"x", "z"}


class TestReportsAfterTheReply:
    """Review 143: the channel's changes between a QnchAddRqst or QnchModRqst and its
    report (sent after the QnchRply) must not leave the quencher with a stale view."""

    @staticmethod
    def quenches(sent: list[Any]) -> Quenches:
        router = SimpleNamespace(new_id=iter(range(1, 100)).__next__, term_id=lambda name: 7)
        found = Quenches(router, lambda data, droppable: sent.append(data))  # type: ignore
        found.track(SimpleNamespace(obtain_subscription_types=lambda mode: [attribute("x")]))
        return found

    def test_a_name_gone_before_the_report_is_not_reported(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """§7.4.25/§7.4.27: SubAddNotify says a term is now tested, SubDelNotify that it
        is no longer. x goes between the add and its report: the quencher hears nothing
        of x (it was a SubDelNotify, then a SubAddNotify of a name nothing tests)."""
        monkeypatch.setattr(quench_module, "encode_packet", lambda packet: packet)
        sent: list[Any] = []
        quenches = self.quenches(sent)
        _, report = quenches.add(QnchAddRqst(1, ("x",), True, ()))
        quenches.attributes_changed([], [attribute("x")])
        report()
        assert sent == []

    def test_a_name_come_before_the_report_is_reported_once(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A name tested between the add and the report is told once, by the report."""
        monkeypatch.setattr(quench_module, "encode_packet", lambda packet: packet)
        sent: list[Any] = []
        quenches = self.quenches(sent)
        _, report = quenches.add(QnchAddRqst(1, ("x", "y"), True, ()))
        quenches.attributes_changed([attribute("y")], [])
        assert sent == []
        report()
        assert sorted(type(p).__name__ for p in sent) == ["SubAddNotify", "SubAddNotify"]
        quenches.attributes_changed([], [attribute("y")])          # reported: told now
        assert type(sent[-1]).__name__ == "SubDelNotify"


class TestQuenchErrors:
    """The quench Nack codes of §7.4.2."""

    def test_empty_quench(self, client: Make) -> None:
        """EMPTY_QUENCH (2201) for no names."""
        assert connected(client).request(qnch_add, [])["error"] == 2201

    def test_no_such_quench(self, client: Make) -> None:
        """NO_SUCH_QUENCH (1003) with the id, for modify and delete."""
        c = connected(client)
        assert (c.request(qnch_del, 5)["error"], c.request(qnch_mod, 5, ["a"])["args"]) == (
            1003, [5])

    def test_attribute_exists_and_no_such_attribute(self, client: Make) -> None:
        """ATTR_EXISTS (2202) adding a name held; NO_SUCH_ATTR (2203) removing one not."""
        c = connected(client)
        qid = quench(c, ["a"])
        exists = c.request(qnch_mod, qid, ["a"], [])
        missing = c.request(qnch_mod, qid, [], ["b"])
        assert (exists["error"], exists["args"]) == (2202, ["a"])
        assert (missing["error"], missing["args"]) == (2203, ["b"])
        assert c.request(qnch_mod, qid, [], ["a"])["error"] == 2201
