"""Regressions of tcl found by reviews 109 and 128: each test names the input that went wrong.

Like ``test_tcl.py``, each check compares Spark's answer with the channel's
own filter (``Filter.match_structured``) and costs one Spark job.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from omniORB import CORBA, tcInternal

from spark_bridge import event_schema, event_to_row
from spark_bridge.convert import row_to_event
from spark_bridge.tcl import tcl_column, tcl_filter, tcl_match, tcl_matches, translate
from tests.spark.test_tcl import (
    COLOR,
    LONG_ALIAS,
    LONGS,
    a,
    assert_same,
    convertible,
    corpus,
    ev,
    reference,
)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


class TestTclColumn:
    @pytest.mark.parametrize("constraint", [
        "$n == 5", "$n + 1 > 0", "$n + 1 + 1 + 1 + 1 > 0", "$n > 5 and $s == 'abc'",
    ])
    def test_sql_stays_linear(self, spark: Any, constraint: str) -> None:
        """tcl_column's SQL is small: its subexpressions are let-bound, not substituted
        into every use ($n == 5 was 709,725 characters, four `+ 1` 506 MB). The bound
        leaves room for the session's name counter (``__tcl240_...`` after many
        translations: 21,035 characters for the last case in a full run)."""
        assert len(str(tcl_column(constraint))) < 100_000

    def test_it_agrees_with_tcl_filter(self, spark: Any) -> None:
        """tcl_column decides every row as tcl_filter does, in each mode (sql, sql+udf, udf)."""
        constraints = ["$n == 5", "$n + 1 + 1 + 1 + 1 > 6", "$n > 5 and $s == 'abc'",
                       "$n == GREEN or $n == 'A'", "'abc' in $n", "$domain_name == 'Telecom'",
                       "$curtime.time > 0 and $n == 5", "TRUE"]
        assert {translate(c).mode for c in constraints} == {"sql", "sql+udf", "udf"}
        events, rows = convertible(corpus())
        df = spark.createDataFrame(rows, event_schema()).coalesce(1)
        names = [f"c{i}" for i in range(len(constraints))]
        got = df.select(*[tcl_column(c).alias(n) for n, c in zip(names, constraints)]).collect()
        filtered = tcl_matches(df, dict(zip(names, constraints))).select(*names).collect()
        assert [list(r) for r in got] == [list(r) for r in filtered]
        expected = [[reference(c, e) for c in constraints] for e in events]
        assert [list(r) for r in got] == expected


class TestLongJunctions:
    def test_a_thousand_terms(self, spark: Any) -> None:
        """`$n == 0 or ... or $n == 999` picks the right rows: one nested CASE per term
        failed to parse (FAILED_TO_PARSE_TOO_COMPLEX, from ~450 terms); `and` is grouped
        the same way."""
        events = [ev(n=a(CORBA.TC_long, i)) for i in (5, 250, 999, 1400)]
        events.append(ev(n=a(CORBA.TC_string, "x")))  # an error at the first term
        disjunction = " or ".join(f"$n == {i}" for i in range(1000))
        conjunction = " and ".join(f"$n != {i}" for i in range(0, 1000, 10))
        assert_same(spark, [disjunction, conjunction], events)


def respaced(row: tuple[Any, ...], text: str | None = None) -> tuple[Any, ...]:
    """``row`` with its first filterable property's type text re-spaced (or ``text``)."""
    fields = list(row)
    name, type_text, value = fields[4][0]
    spaced = text if text is not None else json.dumps(json.loads(type_text))
    fields[4] = [(name, spaced, value)] + list(fields[4][1:])
    return tuple(fields)


class TestTypeText:
    def test_json_type_text_that_is_not_compact(self, spark: Any) -> None:
        """Type texts that decode_typecode reads but that are not compact JSON with "kind"
        first (`{"kind": "alias", ...}`, a leading space, a quoted basic name) are read
        as the UDF reads them (SQL called them errors: FALSE)."""
        rows = [respaced(event_to_row(ev(n=value), 0.0))
                for value in (a(COLOR, COLOR._d[3][1]), a(LONG_ALIAS, 5), a(LONGS, [1, 5]))]
        rows.append(respaced(event_to_row(ev(n=a(LONG_ALIAS, 5)), 0.0),
                             ' {"id":"IDL:test/tcl/Count:1.0","name":"Count","of":"long",'
                             '"kind":"alias"}'))
        rows.append(respaced(event_to_row(ev(n=a(CORBA.TC_long, 5)), 0.0), '"long"'))
        assert ", " in rows[0][4][0][1]
        constraints = ["$n == GREEN", "$n == 5", "$n == 1", "$n > 4", "5 in $n", "exist $n"]
        df = spark.createDataFrame(rows, event_schema()).coalesce(1)
        names = [f"c{i}" for i in range(len(constraints))]
        got = tcl_matches(df, dict(zip(names, constraints))).select(*names).collect()
        expected = [[reference(c, row_to_event(r)) for c in constraints] for r in rows]
        assert [list(r) for r in got] == expected


class TestMatchName:
    @pytest.mark.parametrize("name", ["priority", "Priority", "matched"])
    def test_an_existing_column_is_replaced(self, spark: Any, name: str) -> None:
        """tcl_match(df, c, name=X) with X a column of df replaces it (it failed with an
        AMBIGUOUS_REFERENCE naming an internal column)."""
        events, rows = convertible(corpus())
        df = spark.createDataFrame(rows, event_schema()).coalesce(1)
        if name == "matched":
            df = df.withColumn("matched", df.priority)
        out = tcl_match(df, "$n == 5", name=name)
        kept = [c for c in df.columns if c.lower() != name.lower()]
        assert out.columns == [*kept, name]
        assert [r[0] for r in out.select(name).collect()] == [reference("$n == 5", e)
                                                             for e in events]


class TestSurrogates:
    def test_lone_surrogate_in_a_literal(self, spark: Any) -> None:
        """`$s == '\\ud800' or $n == 5` (no UTF-8 for Spark SQL text) goes to the UDF,
        which gets the constraint exactly; it raised UnicodeEncodeError."""
        constraints = ["$s == '\ud800' or $n == 5", "$s != '\ud800' and $n == 5",
                       "'\ud800' ~ '\ud800x' and $n == 6"]
        assert {translate(c).mode for c in constraints} == {"udf"}
        events = [ev(n=a(CORBA.TC_long, 5), s=a(CORBA.TC_string, "x")),
                  ev(n=a(CORBA.TC_long, 6))]
        assert_same(spark, constraints, events)
        df = spark.createDataFrame(convertible(events)[1], event_schema())
        assert tcl_filter(df, constraints[0]).count() == 1


def aliased(typecode: Any, depth: int) -> Any:
    """``typecode`` behind ``depth`` typedefs."""
    for i in range(depth):
        typecode = tcInternal.createAliasTC(f"IDL:test/tcl/Deep{i}:1.0", f"Deep{i}", typecode)
    return typecode


class TestDeepAliases:
    def test_in_over_a_sequence_behind_five_typedefs(self, spark: Any) -> None:
        """`5 in $n`, $n a sequence<long> under five typedefs (more than SQL unwraps), goes
        to the UDF: TRUE as match_structured says (SQL called it an error: FALSE)."""
        events = [ev(n=a(aliased(LONGS, depth), [1, 5])) for depth in (4, 5, 7)]
        events += [ev(n=a(aliased(tcInternal.createSequenceTC(0, aliased(CORBA.TC_string, 5)),
                                   5), ["x", "abc"]))]
        constraints = ["5 in $n", "not (5 in $n)", "7 in $n or TRUE", "'abc' in $n"]
        assert [reference(c, events[1]) for c in constraints] == [True, False, True, False]
        assert_same(spark, constraints, events)
