"""tcl_filter: EXTENDED_TCL over DataFrames decides exactly as Filter.match_structured.

Every check evaluates many constraints over many events in one Spark job
(one boolean column per constraint) and compares each cell with the
reference filter, so the whole file costs a handful of jobs.
"""

from __future__ import annotations

import functools
import json
import math
import pathlib
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from omniORB import CORBA, tcInternal

import CosNotifyFilter as NF

from cosnotify.corba import descriptors as D
from cosnotify.filter import FilterFactory
from spark_bridge import event_schema, event_to_row
from spark_bridge.convert import ConversionError
from spark_bridge.tcl import tcl_filter, tcl_matches, translate
from tests.filter.events import structured
from tests.strategies import filter_expressions, filter_structured_events, struct_tc

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

VECTORS = pathlib.Path(__file__).parents[1] / "filter" / "vectors" / "spec_examples.json"

COLOR = D.enum_tc("IDL:test/tcl/Color:1.0", "Color", ["RED", "GREEN", "BLUE"])
SHAPE = D.enum_tc("IDL:test/tcl/Shape:1.0", "Shape", ["HOUSE", "CAR"])
LONG_ALIAS = tcInternal.createAliasTC("IDL:test/tcl/Count:1.0", "Count", CORBA.TC_long)
ALIAS_OF_ALIAS = tcInternal.createAliasTC("IDL:test/tcl/Count2:1.0", "Count2", LONG_ALIAS)
COLOR_ALIAS = tcInternal.createAliasTC("IDL:test/tcl/Paint:1.0", "Paint", COLOR)
POINT = struct_tc("IDL:test/tcl/Point:1.0", "Point", [("x", CORBA.TC_long),
                                                     ("y", CORBA.TC_long)])
STRINGS = tcInternal.createSequenceTC(0, CORBA.TC_string)
LONGS = tcInternal.createSequenceTC(0, CORBA.TC_long)
CHARS = tcInternal.createSequenceTC(0, CORBA.TC_char)
DOUBLES = tcInternal.createSequenceTC(0, CORBA.TC_double)
#: §2.4.6's union K: "case 0: case 2: string K; ... default: short N;".
UNION_K = tcInternal.createUnionTC("IDL:test/tcl/K:1.0", "K", CORBA.TC_short, [
    CORBA.UnionMember("K", CORBA.Any(CORBA.TC_short, 0), CORBA.TC_string, None),
    CORBA.UnionMember("K", CORBA.Any(CORBA.TC_short, 2), CORBA.TC_string, None),
    CORBA.UnionMember("M", CORBA.Any(CORBA.TC_short, 5), CORBA.TC_long, None),
    CORBA.UnionMember("N", CORBA.Any(CORBA.TC_octet, 0), CORBA.TC_short, None)])


def a(typecode: Any, value: Any) -> Any:
    return CORBA.Any(typecode, value)


def ev(**fields: Any) -> Any:
    """A Telecom/CommunicationsAlarm event whose filterable data is ``fields`` (Anys)."""
    return structured(filterable=[(k, v) for k, v in fields.items()])


#: Values of every kind the translation must get right, under the same few names.
VALUES = [
    a(CORBA.TC_long, 5), a(CORBA.TC_long, -7), a(CORBA.TC_short, 0), a(CORBA.TC_octet, 65),
    a(CORBA.TC_ulonglong, 2**64 - 1), a(CORBA.TC_longlong, -(2**63)), a(CORBA.TC_ushort, 4),
    a(CORBA.TC_ulong, 2**32 - 1), a(CORBA.TC_longlong, 2**53 + 1),
    a(CORBA.TC_double, 5.0), a(CORBA.TC_double, 2.5), a(CORBA.TC_double, math.nan),
    a(CORBA.TC_double, -0.0), a(CORBA.TC_double, math.inf), a(CORBA.TC_float, 0.1),
    a(CORBA.TC_double, 1e300),  # was a long double: omniORBpy has none
    a(CORBA.TC_char, "A"), a(CORBA.TC_char, "5"), a(CORBA.TC_wchar, "é"),
    a(CORBA.TC_string, "abc"), a(CORBA.TC_string, ""), a(CORBA.TC_string, "A"),
    a(CORBA.TC_wstring, "wide ☃"), a(tcInternal.createStringTC(8), "bounded"),
    a(CORBA.TC_boolean, True), a(CORBA.TC_boolean, False),
    a(COLOR, COLOR._d[3][1]), a(SHAPE, SHAPE._d[3][0]), a(COLOR_ALIAS, COLOR._d[3][2]),
    a(LONG_ALIAS, 5), a(ALIAS_OF_ALIAS, 33),
    a(tcInternal.createFixedTC(8, 2), CORBA.fixed("5.00")),
    a(tcInternal.createFixedTC(5, 0), CORBA.fixed(-7)),
    a(CORBA.TC_any, a(CORBA.TC_long, 5)),
    a(POINT, POINT._d[1](1, 2)),
    a(STRINGS, ["abc", "x", "A"]), a(LONGS, [1, 5, 2**31 - 1]), a(LONGS, []),
    a(CHARS, "abc"), a(CHARS, "ab"), a(DOUBLES, [5.0, 2.5]),  # omniORB's char sequence: str
    a(CORBA.TC_null, None),
]


def corpus() -> list[Any]:
    """Events pairing the values above under the names the constraints use."""
    events = [structured(), structured("Transport", "RoadImpassable", "lost_packet")]
    for i, value in enumerate(VALUES):
        other = VALUES[(i * 7 + 3) % len(VALUES)]
        events.append(ev(n=value, m=other))
        events.append(ev(m=value, s=VALUES[(i * 5 + 1) % len(VALUES)], flag=VALUES[24 + i % 2]))
    events.append(structured(variable={"n": 1, "priority": 3}, filterable={"n": 99}))
    events.append(structured(event_name="lost_packet", variable={"priority": 1},
                             filterable={"severity": 3}))
    events.append(structured(filterable={"severity": 4}, body=a(CORBA.TC_string, "body text")))
    events.append(structured(filterable={"in": a(SHAPE, SHAPE._d[3][1])}))
    events.append(structured(body=a(CORBA.TC_long, 42)))
    events.append(structured(filterable={"curtime": 7}))  # '\\curtime' is this property
    for disc, member in ((2, "putty"), (0, "putty"), (7, 99)):
        events.append(structured(body=CORBA.Any(UNION_K, UNION_K._d[1](disc, member))))
    return events


#: Constraints aimed at each rule of docs/filters.md the translation implements.
TARGETED = [
    "", "TRUE", "FALSE", "5", "$n", "$flag", "not $flag", "$flag and TRUE", "$flag or $nope",
    "$n == 5", "$n != 5", "$n < 5", "$n <= 5", "$n > 5", "$n >= 5", "$n == 5.0", "$n > 2.4",
    "$n == 'A'", "$n == 65", "$n < 'B'", "$n == TRUE", "$n == 1", "$n == $m", "$n < $m",
    "$n != $n", "$n == $n", "$m == 18446744073709551615", "$m == 18446744073709551614",
    "$n == -9223372036854775808", "$n + 1 > 32", "$n + 1 == 6", "$n - 10 < 0", "$n * 2 == 10",
    "$n / 2 == 2", "$n / 2 == -3", "$n / 0 == 1", "$n / 0.0 == 1", "$n / 2.0 == 2.5",
    "$n * 1.0 / 2 > 1", "'H' + 1 > 32", "'Hawaii' + 1 > 0", "$n + $m > 0", "$n - $m < 1",
    "$n * $m > 0", "TRUE + 1 == 2", "$flag + 1 == 2",
    "$n ~ 'xabcx'", "'b' ~ $n", "$s ~ $n", "'' ~ $n", "$n ~ 5",
    "$n == GREEN", "$n == RED or $n == BLUE", "$n < BLUE", "GREEN == $n", "$n == HOUSE",
    "$n == 1 and $m == GREEN", "$n == $s", "$n == PURPLE", "$n == 'GREEN'", "$n > 0",
    "'abc' in $n", "'x' in $m", "5 in $n", "2147483647 in $n", "'a' in $n", "97 in $n",
    "5.0 in $n", "HOUSE in $n", "'abc' in $nope", "'abc' in $s",
    "exist $n", "exist $nope", "exist n", "exist $domain_name", "exist $.filterable_data(n)",
    "exist $.header.variable_header(priority)", "exist $.filterable_data", "exist $",
    "exist $header", "exist $remainder_of_body",
    "$domain_name == 'Telecom'", "$type_name ~ 'Alarm'", "$event_name == ''",
    "$.header.fixed_header.event_name == 'lost_packet'",
    "$.filterable_data(n) == 5", "$.header.variable_header(priority) < 2", "$priority < 2",
    "$remainder_of_body == 'body text'", "$.remainder_of_body == 42", "$remainder_of_body > 40",
    "$header == 1", "$ == 1", "$.header == 1", "$filterable_data == 1",
    "$nope == 1 or TRUE", "TRUE or $nope == 1", "FALSE and $nope == 1", "$nope == 1 and FALSE",
    "not ($nope == 1)", "not $n", "$n and TRUE", "$n == 5 or $m == 5", "$n == 5 and $m == 5",
    "($n == 5 or $m == 5) and not ($s == 'abc')", "$n == 5 or $m == 5 or $s == 'abc'",
    "\\in == HOUSE", "$\\in == CAR", "\\in == CAR or \\in == HOUSE",
    "$n == 1.0e+300 * 10.0", "$n * 1.0e+300 > 1.0e+300", "$n / 3 * 3 == $n",
    "severity != 4", "$curtime.time > 0", "$n._type_id == 'long'", "$m.x == 1",
    "\\curtime == 7", "exist \\curtime", "$\\curtime == 7 and \\curtime > 6",
    "exist $.remainder_of_body.(0)", "exist $.remainder_of_body.(2)",
    "$.remainder_of_body.(0) == 'putty'", "exist $.remainder_of_body.(99)",
    "exist $.remainder_of_body.(7)", "exist $.remainder_of_body.()",
]


@functools.cache
def _reference_filter(constraint: str) -> Any:
    flt = FilterFactory().create_filter("EXTENDED_TCL")
    flt.add_constraints([NF.ConstraintExp([], constraint)])
    return flt


def reference(constraint: str, event: Any) -> bool:
    """What the channel's own filter decides."""
    return bool(_reference_filter(constraint).match_structured(event))


def convertible(events: list[Any]) -> tuple[list[Any], list[Any]]:
    """The events that have rows, and their rows."""
    kept, rows = [], []
    for event in events:
        try:
            rows.append(event_to_row(event, arrival=0.0))
        except ConversionError:
            continue
        kept.append(event)
    return kept, rows


def evaluate(spark: Any, constraints: list[str], events: list[Any]) -> list[list[bool]]:
    """One job: a row per event, a boolean column per constraint."""
    kept, rows = convertible(events)
    df = spark.createDataFrame(rows, event_schema())
    df = df.coalesce(1)
    names = [f"c{i}" for i in range(len(constraints))]
    df = tcl_matches(df, dict(zip(names, constraints)))
    got = [[bool(row[name]) for name in names] for row in df.select(*names).collect()]
    events[:] = kept
    return got


def assert_same(spark: Any, constraints: list[str], events: list[Any]) -> None:
    events = list(events)
    got = evaluate(spark, constraints, events)
    mismatches = []
    for event, row in zip(events, got):
        for constraint, value in zip(constraints, row):
            expected = reference(constraint, event)
            if value != expected:
                mismatches.append((constraint, expected, value, event))
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:3]}"


def spec_constraints() -> list[str]:
    data = json.loads(VECTORS.read_text())
    return [v["text"] for v in data["vectors"] if v["valid"]]


class TestEquivalence:
    def test_targeted_constraints(self, spark: Any) -> None:
        """Each operator, kind mix and error rule: same result as match_structured."""
        assert_same(spark, TARGETED, corpus())

    def test_spec_examples(self, spark: Any) -> None:
        """Every valid constraint of the spec (tests/filter/vectors) on the same events."""
        assert_same(spark, spec_constraints(), corpus())

    @given(st.lists(filter_expressions, min_size=20, max_size=20),
           st.lists(filter_structured_events, min_size=20, max_size=20))
    @settings(max_examples=2, deadline=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    def test_generated(self, spark: Any, trees: list[Any], events: list[Any]) -> None:
        """Generated constraints on generated events (tests/strategies.py) agree too."""
        assert_same(spark, [t.to_text() for t in trees], events + corpus()[:10])


class TestTranslation:
    @pytest.mark.parametrize(("constraint", "mode"), [
        ("$domain_name == 'Telecom' and $type_name ~ 'Alarm'", "sql"),
        ("exist $n or $event_name == 'x'", "sql"),
        ("$n > 5 and $s == 'abc'", "sql+udf"),
        ("$curtime.time > 0", "udf"),
        ("\\curtime == 7", "sql+udf"),  # the property '$\\curtime' (decision 16)
        ("$where.rack == 1", "udf"),
        ("default $.u", "udf"),
        ("exist $.remainder_of_body.(0)", "udf"),  # §2.4.6: $._d == 0, by the filter itself
        ("$a * $b * $c > 0", "udf"),
    ])
    def test_modes(self, spark: Any, constraint: str, mode: str) -> None:
        """What runs as SQL, as SQL with a per-row UDF, or as the UDF alone."""
        assert translate(constraint).mode == mode

    def test_filter_keeps_the_columns(self, spark: Any) -> None:
        """tcl_filter returns the matching rows with exactly the original columns."""
        events = corpus()
        df = spark.createDataFrame([event_to_row(e, 0.0) for e in events], event_schema())
        out = tcl_filter(df, "$n == 5 or $n == GREEN")
        assert out.columns == df.columns
        expected = sum(reference("$n == 5 or $n == GREEN", e) for e in events)
        assert out.count() == expected > 0
