"""cosnotify.corba.marshal: finding what omniORBpy 4.3.3 cannot marshal (docs/orb.md)."""

from __future__ import annotations

from typing import Any

import omniORB
import pytest
from hypothesis import given
from omniORB import CORBA, tcInternal

import CosNotification as N

from cosnotify.corba.marshal import (
    any_holds_big_ulonglong,
    holds_big_ulonglong,
    structured_holds_big_ulonglong,
)
from tests.channel.conftest import structured
from tests.corba.peer_cdr import received_ulonglongs
from tests.strategies import recursive_struct_tc, struct_tc, typed_values, union_tc

ULL_SEQ = tcInternal.createSequenceTC(0, CORBA.TC_ulonglong)
ULL_ARRAY = tcInternal.createArrayTC(2, CORBA.TC_ulonglong)
ULL_ALIAS = tcInternal.createAliasTC("IDL:test/marshal/Big:1.0", "Big", CORBA.TC_ulonglong)
HOLDER = struct_tc("IDL:test/marshal/Holder:1.0", "Holder", [("s", CORBA.TC_string),
                                                              ("values", ULL_SEQ)])
SCALAR = struct_tc("IDL:test/marshal/Scalar:1.0", "Scalar", [("v", CORBA.TC_ulonglong)])
CHOICE = union_tc("IDL:test/marshal/Choice:1.0", "Choice", CORBA.TC_long,
                  [(1, "values", ULL_SEQ), (2, "text", CORBA.TC_string)])
NODE = recursive_struct_tc("IDL:test/marshal/Node:1.0", "Node")


def holder(values: list[int]) -> Any:
    return HOLDER._d[1]("x", values)


def cases() -> list[tuple[str, Any, Any, bool]]:
    """(name, TypeCode, value, whether it holds such a value)."""
    node = NODE._d[1]
    return [
        ("sequence", ULL_SEQ, [1, 2**63], True),
        ("sequence below 2**63", ULL_SEQ, [0, 2**63 - 1], False),
        ("empty sequence", ULL_SEQ, [], False),
        ("array", ULL_ARRAY, [1, 2**64 - 1], True),
        ("scalar", CORBA.TC_ulonglong, 2**64 - 1, False),
        ("sequence of an alias", tcInternal.createSequenceTC(0, ULL_ALIAS), [2**64 - 1], False),
        ("struct members in a sequence", tcInternal.createSequenceTC(0, SCALAR),
         [SCALAR._d[1](2**64 - 1)], False),
        ("alias of the sequence", tcInternal.createAliasTC("IDL:test/marshal/S:1.0", "S",
                                                           ULL_SEQ), [2**63], True),
        ("in a struct", HOLDER, holder([2**63]), True),
        ("sequence of structs", tcInternal.createSequenceTC(0, HOLDER),
         [holder([1]), holder([2**63])], True),
        ("union member chosen", CHOICE, CHOICE._d[1](1, [2**63]), True),
        ("union member not chosen", CHOICE, CHOICE._d[1](2, "text"), False),
        ("nested Any", CORBA.TC_any, CORBA.Any(CORBA.TC_any, CORBA.Any(ULL_SEQ, [2**63])),
         True),
        ("sequence of sequences", tcInternal.createSequenceTC(0, ULL_SEQ), [[1], [2**63]],
         True),
        ("recursive type", NODE, node(1, [node(2, [])]), False),
    ]


class TestFinds:
    @pytest.mark.parametrize("name, typecode, value, holds", cases(),
                             ids=[case[0] for case in cases()])
    def test_what_omniorbpy_cannot_marshal(self, omniorb: Any, name: str, typecode: Any,
                                           value: Any, holds: bool) -> None:
        """Found exactly where omniORBpy fails: each case puts the element last, where
        the error is not hidden (an Any marshalled after it would hide it)."""
        assert holds_big_ulonglong(typecode._d, value) is holds
        assert any_holds_big_ulonglong(CORBA.Any(typecode, value)) is holds
        try:
            data = omniORB.cdrMarshal(CORBA.TC_any, CORBA.Any(typecode, value))
        except SystemError:
            assert holds
        else:
            assert not holds
            assert repr(omniORB.cdrUnmarshal(CORBA.TC_any, data).value()) == repr(value)

    def test_structured_events(self, omniorb: Any) -> None:
        """Every Any of a StructuredEvent is looked at: header, filterable data, body."""
        assert not structured_holds_big_ulonglong(structured(fields={"n": 1}))
        in_fields = structured(fields={"big": received_ulonglongs()})
        in_header = structured(header=[N.Property("big", received_ulonglongs())])
        in_body = structured()
        in_body.remainder_of_body = received_ulonglongs()
        for event in (in_fields, in_header, in_body):
            assert structured_holds_big_ulonglong(event)

    @given(typed_values)
    def test_values_the_strategy_makes_are_clean(self, pair: tuple[Any, Any]) -> None:
        """The generated values (ulonglong elements below 2**63) are never flagged."""
        assert not holds_big_ulonglong(pair[0]._d, pair[1])
