"""QoS checking and validate_qos (sections 2.5.5, 2.5.6; Tables 2-5 and 2-6)."""

from __future__ import annotations

from typing import Any

import omniORB
import pytest
from omniORB import CORBA

import CosNotification as N
import TimeBase

from cosnotify.qos.negotiation import (
    Capabilities,
    Target,
    additional_qos,
    check_admin,
    check_qos,
)
from cosnotify.qos.properties import QOS_PROPERTIES, Level

PERSISTENT_OK = Capabilities(persistent=True, persistent_events=True)
NO_PERSISTENCE = Capabilities()


def prop(name: str, value: Any, tc: Any = CORBA.TC_short) -> Any:
    return N.Property(name, CORBA.Any(tc, value))


def timet(value: int) -> Any:
    return CORBA.Any(TimeBase._tc_TimeT, value)


def codes(errors: list[Any]) -> dict[str, Any]:
    return {e.name: e.code for e in errors}


def ranges(result: list[Any]) -> dict[str, tuple[Any, Any]]:
    return {r.name: (r.range.low_val.value(), r.range.high_val.value()) for r in result}


class TestErrorCodes:
    def test_unknown_name_is_bad_property(self) -> None:
        """Table 2-6: an unrecognised name is BAD_PROPERTY."""
        _, errors = check_qos([prop("NoSuchThing", 1)], Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert codes(errors) == {"NoSuchThing": N.BAD_PROPERTY}

    def test_wrong_any_type_is_bad_type(self) -> None:
        """Table 2-6: Priority given as a long (it is a short) is BAD_TYPE."""
        _, errors = check_qos([prop("Priority", 1, CORBA.TC_long)], Target(Level.CHANNEL), {},
                              NO_PERSISTENCE)
        assert codes(errors) == {"Priority": N.BAD_TYPE}

    def test_out_of_range_is_bad_value_with_range(self) -> None:
        """Section 2.5.5: MaximumBatchSize 0 is BAD_VALUE, and the legal range is given."""
        _, errors = check_qos([prop("MaximumBatchSize", 0, CORBA.TC_long)],
                              Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert codes(errors) == {"MaximumBatchSize": N.BAD_VALUE}
        assert errors[0].available_range.low_val.value() == 1

    def test_priority_bounds(self) -> None:
        """Priority must lie in -32767..32767 (section 2.5.5.2)."""
        _, errors = check_qos([prop("Priority", -32768)], Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert codes(errors) == {"Priority": N.BAD_VALUE}

    @pytest.mark.parametrize("name,level", [
        ("EventReliability", Level.CONSUMER_ADMIN),       # channel and message only
        ("EventReliability", Level.PROXY_SUPPLIER),
        ("StartTime", Level.CHANNEL),                      # message only
        ("MaximumBatchSize", Level.PROXY_SUPPLIER),        # sequence proxies only
        ("MaxEventsPerConsumer", Level.SUPPLIER_ADMIN),    # footnote 1
        ("DiscardPolicy", Level.PROXY_CONSUMER),           # footnote 1
        ("OrderPolicy", Level.MESSAGE),
    ])
    def test_level_not_in_table_2_5_is_unsupported_property(self, name: str, level: Any) -> None:
        """Table 2-5 and its footnotes: a property outside its levels is UNSUPPORTED_PROPERTY."""
        definition = QOS_PROPERTIES[name]
        value = {"StartTime": TimeBase.UtcT(0, 0, 0, 0)}.get(name, definition.default or 1)
        tc = {"StartTime": TimeBase._tc_UtcT, "MaximumBatchSize": CORBA.TC_long,
              "MaxEventsPerConsumer": CORBA.TC_long}.get(name, CORBA.TC_short)
        _, errors = check_qos([prop(name, value, tc)], Target(level), {}, NO_PERSISTENCE)
        assert codes(errors) == {name: N.UNSUPPORTED_PROPERTY}

    def test_persistent_without_store_is_unsupported_value(self) -> None:
        """Persistent reliability is refused honestly until the store exists."""
        _, errors = check_qos([prop("ConnectionReliability", N.Persistent)],
                              Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert codes(errors) == {"ConnectionReliability": N.UNSUPPORTED_VALUE}
        low, high = (errors[0].available_range.low_val.value(),
                     errors[0].available_range.high_val.value())
        assert (low, high) == (N.BestEffort, N.BestEffort)

    def test_every_error_is_reported_together(self) -> None:
        """One UnsupportedQoS lists every bad property of the request."""
        request = [prop("Bogus", 1), prop("Priority", 1, CORBA.TC_string),
                   prop("MaximumBatchSize", 0, CORBA.TC_long), prop("OrderPolicy", 1)]
        changes, errors = check_qos(request, Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert codes(errors) == {"Bogus": N.BAD_PROPERTY, "Priority": N.BAD_TYPE,
                                 "MaximumBatchSize": N.BAD_VALUE}
        assert changes == {"OrderPolicy": 1}


class TestContextRules:
    def test_persistent_child_under_best_effort_parent(self) -> None:
        """ConnectionReliability may not be Persistent under a BestEffort parent (2.5.5.1)."""
        target = Target(Level.CONSUMER_ADMIN, parent={"ConnectionReliability": N.BestEffort})
        _, errors = check_qos([prop("ConnectionReliability", N.Persistent)], target, {},
                              PERSISTENT_OK)
        assert codes(errors) == {"ConnectionReliability": N.UNAVAILABLE_VALUE}

    def test_reliability_frozen_once_children_exist(self) -> None:
        """Changing reliability after children exist is UNAVAILABLE_VALUE (2.5.5.1)."""
        target = Target(Level.CHANNEL, has_children=True)
        current = {"ConnectionReliability": N.BestEffort}
        _, errors = check_qos([prop("ConnectionReliability", N.Persistent)], target, current,
                              PERSISTENT_OK)
        assert codes(errors) == {"ConnectionReliability": N.UNAVAILABLE_VALUE}
        _, errors = check_qos([prop("ConnectionReliability", N.BestEffort)], target, current,
                              PERSISTENT_OK)
        assert errors == []  # restating the current value is no change

    def test_persistent_events_over_best_effort_connections(self) -> None:
        """EventReliability=Persistent with ConnectionReliability=BestEffort is refused."""
        _, errors = check_qos([prop("EventReliability", N.Persistent)], Target(Level.CHANNEL),
                              {"ConnectionReliability": N.BestEffort}, PERSISTENT_OK)
        assert codes(errors) == {"EventReliability": N.UNAVAILABLE_VALUE}
        _, errors = check_qos([prop("EventReliability", N.Persistent),
                               prop("ConnectionReliability", N.Persistent)],
                              Target(Level.CHANNEL), {}, PERSISTENT_OK)
        assert errors == []


class TestValidateExamples:
    def test_example_1_event_qos(self) -> None:
        """Section 2.5.6.8 example 1: Timeout=50 offers StopTime over all time, and
        StopTime offers Timeout; Persistent events are refused."""
        target = Target(Level.MESSAGE)
        offered = ranges(additional_qos([N.Property("Timeout", timet(50))], target, {},
                                        NO_PERSISTENCE))
        assert "StopTime" in offered
        low, high = offered["StopTime"]
        assert low.time == 0 and high.time == 2**64 - 1
        offered = ranges(additional_qos(
            [N.Property("StopTime", CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(1, 0, 0, 0)))],
            target, {}, NO_PERSISTENCE))
        assert offered["Timeout"][0] == 0
        _, errors = check_qos([prop("EventReliability", N.Persistent)], target, {},
                              NO_PERSISTENCE)
        assert codes(errors) == {"EventReliability": N.UNSUPPORTED_VALUE}

    def test_example_2_interdependent_properties(self) -> None:
        """Section 2.5.6.8 example 2, with Persistent supported: reliabilities are offered
        only as far as they are independent."""
        target = Target(Level.CHANNEL)
        current = {"ConnectionReliability": N.Persistent, "EventReliability": N.Persistent,
                   "Timeout": 100 * 10_000_000}
        offered = ranges(additional_qos([N.Property("Timeout", timet(50))], target, current,
                                        PERSISTENT_OK))
        assert offered["EventReliability"] == (N.BestEffort, N.BestEffort)
        assert "ConnectionReliability" not in offered
        offered = ranges(additional_qos([prop("EventReliability", N.BestEffort)], target,
                                        current, PERSISTENT_OK))
        assert offered["ConnectionReliability"] == (N.BestEffort, N.BestEffort)
        assert offered["Timeout"][0] == 0
        assert "EventReliability" not in offered


def through_cdr(value: Any) -> Any:
    """``value`` (an Any) as it arrives from the wire: marshalled and unmarshalled by omniORB."""
    return omniORB.cdrUnmarshal(CORBA.TC_any, omniORB.cdrMarshal(CORBA.TC_any, value))


class TestWireValues:
    def test_anys_from_the_wire_are_judged_like_local_ones(self, omniorb: Any) -> None:
        """Property Anys that came through CDR (TimeT alias, UtcT struct, short) are checked
        by their TypeCodes' descriptors with the same results."""
        request = [N.Property("Timeout", through_cdr(timet(50))),
                   N.Property("Priority", through_cdr(CORBA.Any(CORBA.TC_short, 4))),
                   N.Property("StopTime", through_cdr(CORBA.Any(TimeBase._tc_UtcT,
                                                                TimeBase.UtcT(9, 0, 0, 0))))]
        changes, errors = check_qos(request, Target(Level.MESSAGE), {}, NO_PERSISTENCE)
        assert errors == []
        assert changes["Timeout"] == 50 and changes["Priority"] == 4
        assert changes["StopTime"].time == 9

    def test_an_alias_of_the_right_type_is_accepted(self, omniorb: Any) -> None:
        """Aliases are unwound: a typedef of short is a short (BAD_TYPE is for other kinds)."""
        alias = omniorb.create_alias_tc("IDL:cosnotify.test/Level:1.0", "Level", CORBA.TC_short)
        changes, errors = check_qos([N.Property("Priority", through_cdr(CORBA.Any(alias, 3)))],
                                    Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert errors == [] and changes == {"Priority": 3}
        _, errors = check_qos([N.Property("Priority", through_cdr(CORBA.Any(CORBA.TC_ushort, 3)))],
                              Target(Level.CHANNEL), {}, NO_PERSISTENCE)
        assert codes(errors) == {"Priority": N.BAD_TYPE}


class TestAdminErrors:
    """Table 2-6 in UnsupportedAdmin (review 115)."""

    @pytest.mark.parametrize("name, tc", [("RetainAge", TimeBase._tc_TimeT),
                                          ("RetainCount", CORBA.TC_long),
                                          ("RetainBytes", CORBA.TC_ulonglong)])
    def test_retention_without_a_store_gives_the_range(self, channel: Any, name: str,
                                                       tc: Any) -> None:
        """UNAVAILABLE_VALUE: "A range of values which *would* be supported is
        returned": without a store, 0 (no history) of the property's own type."""
        with pytest.raises(N.UnsupportedAdmin) as info:
            channel.set_admin([N.Property(name, CORBA.Any(tc, 5))])
        (error,) = info.value.admin_err
        assert (error.name, error.code) == (name, N.UNAVAILABLE_VALUE)
        low, high = error.available_range.low_val, error.available_range.high_val
        assert low.typecode().equivalent(tc) and high.typecode().equivalent(tc)
        assert (low.value(), high.value()) == (0, 0)

    @pytest.mark.parametrize("name", ["TransactionEvents", "TransactionEventSequences",
                                      "TransactionTimeout"])
    def test_transaction_admin_properties_are_understood(self, factory: Any,
                                                         name: str) -> None:
        """Section 2.1.5 defines them; section 2.5.2: implementations "are expected to
        understand all properties defined in this specification", so not BAD_PROPERTY
        ("The implementation knows nothing about it") but UNSUPPORTED_PROPERTY: they
        affect only transaction clients, which need an OTS (docs/qos.md)."""
        for value in (CORBA.Any(CORBA.TC_ulong, 0), CORBA.Any(CORBA.TC_ulong, 5),
                      CORBA.Any(CORBA.TC_string, "x")):
            changes, errors = check_admin([N.Property(name, value)])
            assert changes == {} and codes(errors) == {name: N.UNSUPPORTED_PROPERTY}
        with pytest.raises(N.UnsupportedAdmin) as info:
            factory.create_channel([], [N.Property(name, CORBA.Any(CORBA.TC_ulong, 5))])
        assert codes(info.value.admin_err) == {name: N.UNSUPPORTED_PROPERTY}
        _, errors = check_admin([N.Property("TransactionNoSuch", CORBA.Any(CORBA.TC_ulong, 5))])
        assert codes(errors) == {"TransactionNoSuch": N.BAD_PROPERTY}
