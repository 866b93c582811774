"""The type mapping: wire fields <-> StructuredEvent properties, tuples -> templates
(docs/protocols.md, "Event Heap", "Type mapping")."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.eventheap.model import FieldMode
from cosnotify.protocols.eventheap.codec import ACTUAL, FORMAL, VIRTUAL, Field, Tuple, Value
from cosnotify.protocols.eventheap.mapping import (
    DOMAIN,
    MappingError,
    event_of,
    template_of,
    tuple_of,
)


def _tuple(*fields: Field) -> Tuple:
    et = Value(ACTUAL, "T")
    return Tuple(0, (Field("EventType", "string", et, et), *fields))


def _prop(event: Any, name: str) -> Any:
    for p in list(event.filterable_data) + list(event.header.variable_header):
        if p.name == name:
            return p.value
    raise KeyError(name)


class TestPut:
    @pytest.mark.parametrize(("ftype", "value", "kind"), [
        ("boolean", True, CORBA.tk_boolean), ("int", -5, CORBA.tk_long),
        ("long", 2**40, CORBA.tk_longlong), ("float", 1.5, CORBA.tk_float),
        ("double", 0.25, CORBA.tk_double), ("string", "abc", CORBA.tk_string),
        ("string", "\u20ac", CORBA.tk_wstring)])
    def test_fundamental_types(self, ftype: str, value: Any, kind: Any) -> None:
        """Each fundamental type's post value becomes a property of its CORBA kind, and
        comes back as the same type and value."""
        event = event_of(_tuple(Field("x", ftype, Value(ACTUAL, value), Value(FORMAL))))
        assert event.header.fixed_header.event_type.domain_name == DOMAIN
        assert _prop(event, "x").typecode().kind() == kind
        back = tuple_of(event).field("x")
        assert back is not None and (back.type, back.post.value) == (ftype, value)

    def test_time_to_live_is_timeout(self) -> None:
        """Table 1 TimeToLive (ms) is the Timeout QoS in 100 ns units, and comes back."""
        event = event_of(_tuple(Field("TimeToLive", "int", Value(ACTUAL, 5000), Value(FORMAL))))
        assert _prop(event, "Timeout").value() == 5000 * 10_000
        ttl = tuple_of(event).field("TimeToLive")
        assert ttl is not None and ttl.post.value == 5000 and ttl.template.is_formal

    def test_platform_type_round_trip(self) -> None:
        """A platform value travels as octets under an alias naming its type, undisturbed."""
        field = Field("p", "EHJava.a.B", Value(ACTUAL, b"\x01\x02"), Value(VIRTUAL))
        back = tuple_of(event_of(_tuple(field))).field("p")
        assert back is not None and (back.type, back.post.value) == ("EHJava.a.B", b"\x01\x02")

    def test_formal_and_virtual_posts_left_out(self) -> None:
        """A formal Target and any virtual post value are not properties."""
        event = event_of(_tuple(Field("Target", "string", Value(FORMAL), Value(FORMAL)),
                                Field("v", "int", Value(VIRTUAL), Value(FORMAL))))
        assert list(event.filterable_data) == []

    @pytest.mark.parametrize("bad", [
        Tuple(0, ()),
        _tuple(Field("x", "int", Value(FORMAL), Value(FORMAL))),
        _tuple(Field("TimeToLive", "int", Value(ACTUAL, 0), Value(FORMAL))),
        # review 66: 2**62 ms is a Timeout past TimeBase::TimeT (2**64 - 1 in 100 ns)
        _tuple(Field("TimeToLive", "long", Value(ACTUAL, 2**62), Value(FORMAL))),
        _tuple(Field("s", "string", Value(ACTUAL, "a\0b"), Value(FORMAL))),
        _tuple(Field("\u20ac", "int", Value(ACTUAL, 1), Value(FORMAL))),
    ], ids=["no EventType", "formal post", "TimeToLive 0", "TimeToLive past TimeT",
            "NUL in string", "name not Latin-1"])
    def test_refused(self, bad: Tuple) -> None:
        """Events the space cannot keep as they are are MappingError InvalidEvent."""
        with pytest.raises(MappingError) as info:
            event_of(bad)
        assert info.value.kind == "InvalidEvent"


class TestReturn:
    def test_unsigned_long_is_java_int(self) -> None:
        """An unsigned long keeps its bits: 4294967295 is the Java int -1."""
        event = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("d", "T"), ""), []),
            [N.Property("u", CORBA.Any(CORBA.TC_ulong, 4294967295)),
             N.Property("s", CORBA.Any(CORBA.TC_short, 7)),
             N.Property("skip", CORBA.Any(CORBA.TC_char, "c")),
             N.Property("u", CORBA.Any(CORBA.TC_long, 1))],
            CORBA.Any(CORBA.TC_null, None))
        tup = tuple_of(event, 9)
        assert tup.serial == 9
        u, s = tup.field("u"), tup.field("s")
        assert u is not None and (u.type, u.post.value) == ("int", -1)
        assert s is not None and (s.type, s.post.value) == ("int", 7)
        assert tup.field("skip") is None  # a char has no Event Heap type

    def test_reserved_template_values(self) -> None:
        """Returned events get Tables 1-3's fixed template values."""
        event = event_of(_tuple(Field("Source", "string", Value(ACTUAL, "me"), Value(FORMAL)),
                                Field("SessionID", "int", Value(ACTUAL, 3), Value(VIRTUAL))))
        tup = tuple_of(event)
        source, session = tup.field("Source"), tup.field("SessionID")
        assert source is not None and source.template.is_formal
        assert session is not None and session.template.is_virtual


class TestTemplates:
    def test_template_values_are_used(self) -> None:
        """"Tuples passed ... as template events ... have the template values ... active":
        virtual fields and a formal Source are left out."""
        tmpl = template_of(_tuple(
            Field("a", "int", Value(ACTUAL, 1), Value(FORMAL)),
            Field("b", "string", Value(VIRTUAL), Value(ACTUAL, "x")),
            Field("c", "double", Value(FORMAL), Value(3)),
            Field("Source", "string", Value(VIRTUAL), Value(FORMAL))))
        modes = {f.name: (f.mode, f.value) for f in tmpl.fields}
        assert modes == {"EventType": (FieldMode.ACTUAL, "T"), "a": (FieldMode.FORMAL, None),
                         "b": (FieldMode.ACTUAL, "x")}
