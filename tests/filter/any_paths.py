"""The Any-path cases of the EXTENDED_TCL suite: one data set, evaluated twice.

Strategy: every case that evaluates ``$...`` paths on an Any event (struct
members and positions, unions with and without a default member, sequences
and arrays, name-value lists, ``_length``/``_d``/``_type_id``/``_repos_id``,
``exist``/``default``, enums, fixed, nested Anys) is a :class:`Check`: an
event name, a constraint and the result the spec requires. ``cases()`` builds
the events from data/FilterExamples.idl. tests/filter/test_any_paths.py runs
every check twice:

- in process, on Anys built from stubs the test process compiled (the
  ``idl`` fixture): descriptors with ``tv__indirect``, generated classes;
- on the same Anys after an omniORBpy client process (tests/corba/wire_client.py)
  pushed them over IIOP to a child process that never compiled the IDL
  (tests/filter/wire_evaluator.py): TypeCodes with the 4.3.3 wheel's
  ``0xffffffff`` indirections, ``UnknownStruct``/``UnknownUnion`` values and
  ``EnumItem`` s labelled from the wire.

The module is loaded by file path in both client and evaluator, so it imports
nothing but the standard library at the top; ``cases`` receives ``CORBA`` and
the generated modules. ``source`` names the spec text (or docs/filters.md
decision) each check comes from.
"""

from __future__ import annotations

from typing import Any, NamedTuple

#: The generated modules ``cases`` needs (tests/corba/wire_client.py imports them).
MODULES = ["FilterExamples", "TelecomNotification"]
IDL = "data/FilterExamples.idl"  # relative to this file
MAX_ULL = 2**64 - 1
#: The events whose TypeCodes repeat or recurse (the wheel marks those 0xffffffff).
WIRE_INDIRECT_EVENTS = ("bag", "segment", "drawing_dot", "drawing_line", "node", "expr")


class Check(NamedTuple):
    """``constraint`` on event ``event`` (a name ``cases`` returns) gives ``expected``."""

    event: str
    constraint: str
    expected: bool
    source: str

    @property
    def id(self) -> str:
        return f"{self.event}: {' '.join(self.constraint.split())}"


CHECKS: list[Check] = []


def _check(source: str, constraint: str, true: tuple[str, ...] | list[str] = (),
           false: tuple[str, ...] | list[str] = ()) -> None:
    CHECKS.extend(Check(e, constraint, True, source) for e in true)
    CHECKS.extend(Check(e, constraint, False, source) for e in false)


# -- the events ---------------------------------------------------------------------------


def cases(CORBA: Any, modules: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every event the checks name, as ``(name, CORBA.Any)``."""
    import omniORB.tcInternal as tci

    import CosNotification as N

    fe, tn = modules["FilterExamples"], modules["TelecomNotification"]
    events: dict[str, Any] = {}

    def of(cls: Any, *args: Any) -> Any:
        return CORBA.Any(CORBA.TypeCode(cls), cls(*args))

    def adhoc(repo_id: str, name: str, members: list[tuple[str, Any]]) -> Any:
        """A struct TypeCode no IDL declares (omniORB makes an UnknownStruct class)."""
        return tci.createStructTC(repo_id, name,
                                  [CORBA.StructMember(n, t, None) for n, t in members])

    def adhoc_value(tc: Any, *args: Any) -> Any:
        return CORBA.Any(tc, tc._d[1](*args))

    def structured(domain: str = "Telecom", type_name: str = "CommunicationsAlarm",
                   variable: Any = (), filterable: Any = ()) -> Any:
        header = N.EventHeader(N.FixedEventHeader(N.EventType(domain, type_name), ""),
                               [N.Property(n, v) for n, v in variable])
        se = N.StructuredEvent(header, [N.Property(n, v) for n, v in filterable],
                               CORBA.Any(CORBA.TC_null, None))
        return CORBA.Any(N._tc_StructuredEvent, se)

    long_ = lambda n: CORBA.Any(CORBA.TC_long, n)

    # §2.4.3 conversions: every numeric kind in one struct.
    numbers = {"s": -7, "us": 7, "l": 7, "ul": 7, "ll": -(2**62), "ull": MAX_ULL, "f": 1.5,
               "d": 2.5, "b": True, "ch": "A", "o": 255, "str": "text"}
    events["numbers"] = of(fe.Numbers, *numbers.values())
    events["numbers_ll_min"] = of(fe.Numbers, *{**numbers, "ll": -(2**63)}.values())
    events["fixed_1_25"] = CORBA.Any(tci.createFixedTC(5, 2), CORBA.fixed("1.25"))
    events["price"] = of(fe.Price, CORBA.fixed("12345678901234567.89"), CORBA.fixed("0.0125"))
    events["fixed_31"] = CORBA.Any(tci.createFixedTC(31, 0), CORBA.fixed("9" * 31))
    events["fixed_31_2"] = CORBA.Any(tci.createFixedTC(31, 2),
                                     CORBA.fixed("12345678901234567890123456789.01"))
    events["long_1"] = long_(1)
    events["long_50"], events["long_49"] = long_(50), long_(49)
    events["null"] = CORBA.Any(CORBA.TC_null, None)
    events["char_x"] = CORBA.Any(CORBA.TC_char, "x")
    events["char_y"] = CORBA.Any(CORBA.TC_char, "y")
    events["nested_anys"] = CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_any, long_(5)))

    # Enums, sequences, arrays (Asset appears twice in Bag).
    for asset in ("HOUSE", "CAR", "BOAT"):
        events[f"holding_{asset}"] = of(fe.Holding, getattr(fe, asset), 1)
    events["bag_assets"] = of(fe.Bag, [fe.HOUSE, fe.BOAT], [], [], [1, 2, 3], "", b"", "",
                              fe.CAR)
    events["bag"] = of(fe.Bag, [], [CORBA.Any(CORBA.TC_string, "xy"),
                                    CORBA.Any(CORBA.TC_short, 5)],
                       [1, 2, 3], [4, 5, 6], "abc", b"\x01\xff", "ab", fe.HOUSE)
    events["p_Q"] = CORBA.Any(fe._tc_P, fe.Q)
    events["p_R"] = CORBA.Any(fe._tc_P, fe.R)

    # Unions.
    for d, v in ((1, 2.5), (0, "text"), (9, 1), (1, 1.0), (50, 1), (0, "s"), (7, 2), (7, 3),
                 (0, "2"), (1, 2.0)):
        events[f"defaulted_{d}_{v}"] = of(fe.Defaulted, d, v)
    events["bychar_a_5"] = of(fe.ByChar, "a", 5)
    events["byenum_S_x"] = of(fe.ByEnum, fe.S, "x")
    events["nodefault_T_5"] = of(fe.NoDefault, True, 5)
    events["nodefault_T_1"] = of(fe.NoDefault, True, 1)
    events["nodefault_F_n"] = of(fe.NoDefault, False, "n")
    for c in (2, 3, 4):
        events[f"x_{c}"] = of(fe.X, 1, "b", c)
    x = lambda c: fe.X(1, "b", c)
    for d, v in ((5, 53), (5, 54), (3, x(127)), (3, x(128)), (5, 1), (2, "putty"), (2, "hoob"),
                 (0, "putty"), (0, "silly putty"), (0, "clay"), (7, 999), (7, 998), (5, 999),
                 (0, "a"), (2, "a"), (3, x(2)), (9, 1)):
        label = f"x{v.C}" if isinstance(v, fe.X) else str(v).replace(" ", "_")
        events[f"k_{d}_{label}"] = of(fe.K, d, v)

    # §2.4.1-2.4.3 examples.
    for one, two in ((2, 2), (7, 3), (1, 2), (0, 9), (1, 5)):
        events[f"ratio_{one}_{two}"] = of(fe.Ratio, one, two)
    for cnt in (3, 4):
        events[f"memA_{cnt}"] = of(fe.MemAEvent, of(fe.ValCnt, 1, cnt))
    for n in (7, 8):
        events[f"memB_{n}"] = of(fe.MemBEvent, CORBA.Any(CORBA.TC_any, long_(n)))
    for start in (0, 1):
        events[f"meth_{start}"] = of(fe.MethEvent, fe.MethArgs(
            "k", CORBA.Any(fe._tc_TenLongs, list(range(start, start + 10)))))
    events["event1"] = of(fe.Event1, "Hawaii", 5.0)
    events["event2"] = of(fe.Event2, "H", 5.0)
    events["event3"] = of(fe.Event3, 5, 5.0)
    events["event4"] = of(fe.Event4, 5, 5.0)
    events["event2_H0"] = of(fe.Event2, "H", 0.0)
    events["event2_low"] = of(fe.Event2, "\x1f", 0.0)

    # §2.4.5 translations for Any events.
    mirror = adhoc("IDL:test/Mirror:1.0", "Mirror",
                   [("header", N._tc_EventHeader), ("n", CORBA.TC_long)])
    for type_name in ("CommunicationsAlarm", "Other"):
        header = N.EventHeader(N.FixedEventHeader(N.EventType("D", type_name), ""), [])
        events[f"mirror_{type_name}"] = adhoc_value(mirror, header, 1)
    layout = adhoc("IDL:test/M:1.0", "M", [("header", N._tc_EventHeader),
                                           ("filterable_data", N._tc_PropertySeq),
                                           ("z", CORBA.TC_long)])
    events["layout"] = adhoc_value(
        layout, N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "E"),
                              [N.Property("p", long_(1))]),
        [N.Property("q", long_(2))], 3)
    events["nv_list"] = CORBA.Any(N._tc_PropertySeq, [N.Property("a", long_(1))])
    prio = adhoc("IDL:test/Prio:1.0", "Prio", [("priority", CORBA.TC_short)])
    events["prio_1"], events["prio_5"] = adhoc_value(prio, 1), adhoc_value(prio, 5)
    events["se_priority_1"] = structured(variable=[("priority", long_(1))])
    events["se_plain"] = structured()

    # §2.4.6 positional notation.
    def student(gpa: int = 90, midterm: int = 70, final: int = 80, attendance: int = 12,
                name: str = "Chico", results: tuple[int, ...] | None = None) -> Any:
        tests = [] if results is not None else [fe.Score("midterm", long_(midterm)),
                                                fe.Score("final", long_(final))]
        days = [20] * 12
        days[3] = attendance
        test = [fe.TestResult(f"t{i}", s) for i, s in enumerate(results or ())]
        return of(fe.Student, name, tests, days, gpa, test)
    events["student"] = student()
    events["student_gpa70"] = student(gpa=70)
    events["student_mid90"] = student(midterm=90)
    events["student_att5"] = student(attendance=5)
    events["student_n"] = of(fe.Student, "n", [], [0] * 12, 1, [])
    for scores in ((90, 80, 85), (80, 80, 80), (70, 80, 85), (90, 90), (90, 90, 90, 90)):
        events["harpo_" + "_".join(map(str, scores))] = student(3, name="Harpo",
                                                                 results=scores)

    # §2.4.7 examples.
    def movie(*stars: str, kind: str = "MOVIE", title: str = "Duck Soup") -> Any:
        return of(fe.Movie, kind, title, list(stars))
    events["movie_4"] = movie("groucho", "chico", "harpo", "zeppo")
    events["movie_3"] = movie("gummo", "harpo", "chico")
    events["movie_2"] = movie("groucho", "chico", "margaret")
    events["show"] = movie("groucho", "chico", "harpo", kind="SHOW", title="x")
    events["movie_empty"] = movie(title="")
    for mem, cpu, size in ((5_500_000, 0.0, 0), (0, 400.0, 0), (0, 0.0, 2**63),
                           (1000, 1.0, 1000)):
        events[f"process_{mem}_{int(cpu)}_{size}"] = of(fe.Process, mem, cpu, size)
    # "default $_.d and $.defvalue == 2" and "$_.in == HOUSE": `_` is a run-time
    # variable (decision 20); IDL has no member named `_`, so it is a property.
    inner = adhoc("IDL:test/Inner:1.0", "Inner", [("d", fe._tc_Defaulted)])
    outer = adhoc("IDL:test/Outer:1.0", "Outer", [("filterable_data", N._tc_PropertySeq),
                                                  ("defvalue", CORBA.TC_long)])
    for d, v in ((7, 2), (0, 2), (7, 3)):
        held = adhoc_value(inner, fe.Defaulted(d, 0 if d else "0"))
        events[f"outer_{d}_{v}"] = adhoc_value(outer, [N.Property("_", held)], v)
    wrapper = adhoc("IDL:test/Wrapper:1.0", "Wrapper", [("filterable_data", N._tc_PropertySeq)])
    for asset in ("HOUSE", "CAR", "BOAT"):
        held = of(fe.Holding, getattr(fe, asset), 1)
        events[f"wrapped_{asset}"] = adhoc_value(wrapper, [N.Property("_", held)])

    def violation(user: Any) -> Any:
        return structured(filterable=[("violation", CORBA.Any(
            N._tc_PropertySeq, [N.Property("serviceUser", user)]))])
    events["violation_user"] = violation(of(tn.ServiceUserType, "ann", 1))
    events["violation_string"] = violation(CORBA.Any(CORBA.TC_string, "ann"))
    events["violation_x"] = violation(of(fe.X, 1, "b", 2))

    # Repeated and recursive types: the wire run's reason to exist.
    events["segment"] = of(fe.Segment, fe.Point(1, 2), fe.Point(3, 4))
    tree = fe.Node("root", 1, [fe.Node("a", 2, []), fe.Node("b", 3, [fe.Node("c", 4, [])])])
    events["node"] = CORBA.Any(CORBA.TypeCode(fe.Node), tree)
    events["drawing_dot"] = of(fe.Drawing, fe.Shape(dot=fe.Point(1, 2)), fe.Shape(9, tree),
                               fe.Point(0, 0))
    events["drawing_line"] = of(fe.Drawing, fe.Shape(line=fe.Segment(fe.Point(1, 2),
                                                                     fe.Point(3, 4))),
                                fe.Shape(dot=fe.Point(5, 6)), fe.Point(7, 8))
    events["expr"] = of(fe.Expr, False, [fe.Expr(True, 1), fe.Expr(False, [fe.Expr(True, 2)])])
    return list(events.items())


# -- the checks -----------------------------------------------------------------------------

_CONV = "§2.4.3 arithmetic conversions"
for _text in [
    "$.l / 2 == 3", "$.s / 2 == -3", "-7 / 2 == -3 and 7 / -2 == -3 and -8 / 2 == -4",
    "$.d / 2 == 1.25", "$.f / 2 == 0.75", "$.l * 1.0 / 2 == 3.5", "$.us - $.l - 1 == -1",
    "$.ul - 8 == -1", "$.o * 2 == 510", "$.ch + 0 == 65", "$.b + $.b == 2", "TRUE + FALSE == 1",
    "$.ll - 1 == -4611686018427387905", "$.ll * 4 == -18446744073709551615 - 1",
    "$.ull - 1 == 18446744073709551614", "$.ull / 2 == 9223372036854775807",
    "$.f + $.d == 4.0", "'H' + 1 > 32", "'H' + 1 == 73", "+5 - -5 == 10",
]:
    _check(_CONV, _text, true=["numbers"])
for _text in ["$.str + 1 > 0", "$.str * 2 == 2", "$.l / 0 == 1", "$.d / 0.0 > 1",
              "$.d / $.zero > 1", "not ($.l / 0 == 1)", "$.l + 'ab' > 0"]:
    _check(_CONV + ": errors and zero denominators are FALSE", _text, false=["numbers"])
_NUMERIC = ("s", "us", "l", "ul", "ll", "ull", "f", "d", "b", "ch", "o")
for _left in _NUMERIC:
    for _right in _NUMERIC:
        _text = f"($.{_left} - $.{_left} + 7) / ($.{_right} - $.{_right} + 2)"
        _floating = _left in ("f", "d") or _right in ("f", "d")
        _check(_CONV + ": division table", f"{_text} == {3.5 if _floating else 3}",
               true=["numbers"])
        _check(_CONV + ": division table", f"{_text} == {3 if _floating else 3.5}",
               false=["numbers"])
_check(_CONV + ": a double converts the integer", "$.ull == 18446744073709551616.0",
       true=["numbers"])
_FIXED = "§2.4.3, decision 24: fixed is numeric and exact"
_check(_FIXED, "$ * 2 == 2.5 and $ + 1 > 2 and $ / 5 == 0.25", true=["fixed_1_25"])
_check(_FIXED, "$ == 1.5", false=["fixed_1_25"])
_check(_FIXED, "$.amount * 100 == 1234567890123456789 and "
               "$.amount * 100 != 1234567890123456788", true=["price"])
_check(_FIXED, "$.amount > 12345678901234567 and $.rate < 0.02 and $.rate * 10000 == 125",
       true=["price"])
_check(_FIXED, "$.amount._type_id == 'Money' and $.rate._type_id == 'fixed'",
       true=["price"])
_check(_FIXED, "$.amount / 0 > 1", false=["price"])
# CORBA fixed has up to 31 digits: Python's default decimal context (28) rounded them.
_check(_FIXED, "$ + 0 == $ and $ - 1 < $ and $ * 1 == $ and $ / 1 == $",
       true=["fixed_31", "fixed_31_2"])
_check(_FIXED, "$ * $ - ($ + 1) * ($ - 1) == 1 and $ * $ / $ == $ and $ - $ == 0",
       true=["fixed_31"])
_check(_FIXED, "$ / 2 * 2 == $ and $ * 100 - 1234567890123456789 * 1000000000000 == 12345678901",
       true=["fixed_31_2"])

_EXACT = "decision 24: integers are exact (64 bits)"
_check(_EXACT, f"$.ull == {MAX_ULL}", true=["numbers"])
_check(_EXACT, f"$.ull != {MAX_ULL - 1}", true=["numbers"])
_check(_EXACT, f"$.ull == {MAX_ULL - 1}", false=["numbers"])
_check(_EXACT, f"$.ull > {MAX_ULL - 1}", true=["numbers"])
_check(_EXACT, "$.ll == -9223372036854775808", true=["numbers_ll_min"])
_check(_EXACT, "$.ll == -9223372036854775807", false=["numbers_ll_min"])

_CMP = "§2.4.3 comparisons"
for _text in ["'abc' < 'abd'", "'B' < 'a'", "'' < 'a'", "'abc' == 'abc'", "'abc' != 'ab'",
              "FALSE < TRUE", "TRUE >= FALSE", "TRUE == 1", "FALSE == 0", "1 < 1.5",
              "TRUE < 'a'", "$.ch == 'A'", "$.ch == 65", "'A' < 66", "$.b == TRUE", "$.b"]:
    _check(_CMP, _text, true=["numbers"])
for _text in ["'abc' < 5", "'abc' == TRUE", "$.str == 1", "TRUE < 'ab'", "$.l", "5", "'x'",
              "$.l and TRUE", "not $.l", "$.l or TRUE", "$.missing == 1", "$.missing != 1"]:
    _check(_CMP + ": invalid comparisons and non-booleans are FALSE", _text, false=["numbers"])
_check("§2.4.1 ~ (A is contained in B)", "'ell' ~ 'hello' and 'ex' ~ $.str and '' ~ 'x'",
       true=["numbers"])
for _text in ["'hello' ~ 'ell'", "5 ~ 'x5'", "$.str ~ 5"]:
    _check("§2.4.3 ~ takes strings", _text, false=["numbers"])

for _text, _expected in [
    ("FALSE and $.missing == 1", False), ("TRUE or $.missing == 1", True),
    ("$.missing == 1 or TRUE", False), ("TRUE and $.missing == 1", False),
    ("FALSE or $.missing == 1 or TRUE", False), ("FALSE and 1 / 0 == 1", False),
    ("TRUE or 1 / 0 == 1", True), ("not (FALSE and $.missing == 1)", True),
    ("exist $.missing or TRUE", True),
]:
    _check("§2.4.3 short circuit, decision 23", _text,
           **{"true" if _expected else "false": ["long_1"]})

_ENUM = "§2.4.6-2.4.7, decision 28: enums"
for _text, _expected in [
    ("$.in == HOUSE", False), ("$.in == CAR", True), ("$.in != HOUSE", True),
    ("$.in > HOUSE", True), ("$.in < BOAT", True), ("HOUSE < $.in", True),
    ("$.in == 1", True), ("$.in == $.0", True), ("$.in == $.in", True),
    ("$.in == 'CAR'", False), ("$.in != 'CAR'", False), ("$.in == PLANE", False),
    ("$.in != PLANE", False), ("$.in + 1 == 2", False), ("$.in == value", True),
    ("$.in ~ 'CAR'", False),
]:
    _check(_ENUM, _text, **{"true" if _expected else "false": ["holding_CAR"]})
_check(_ENUM, "HOUSE in $.assets and not (CAR in $.assets)", true=["bag_assets"])
_check(_ENUM, "$.one in $.assets", false=["bag_assets"])
_check(_ENUM, "PLANE in $.assets", false=["bag_assets"])
_check(_ENUM + " (Asset twice in Bag)", "$.one == CAR and $.one > $.assets[0] and "
                                        "$.assets[1] == BOAT", true=["bag_assets"])

_IN = "§2.4.2-2.4.3, decision 29: in"
for _text, _expected in [
    ("2 in $.longs", True), ("9 in $.longs", False), ("5 in $.arr", True),
    ("2.0 in $.longs", True), ("TRUE in $.longs", True), ("255 in $.bytes", True),
    ("2 in $.bytes", False), ("'a' in $.chars", True), ("'ab' in $.chars", False),
    ("97 in $.chars", True), ("'xy' in $.anys", True), ("5 in $.anys", False),
    ("'x' in $.longs", False), ("'b' in $.str", False), ("1 in $.missing", False),
    ("2 in $.longs and $.longs._length == 3 and $.arr._length == 3", True),
]:
    _check(_IN, _text, **{"true" if _expected else "false": ["bag"]})

_IMPLICIT = "§2.4.2-2.4.3, decision 33: implicit members"
_check(_IMPLICIT, "$.longs._length == 3 and $.bytes._length == 2", true=["bag"])
_check(_IMPLICIT, "exist $.str._length", false=["bag"])
_check(_IMPLICIT, "exist $.longs._length and not exist $._length", true=["bag"])
_check(_IMPLICIT, "$._type_id == 'Student' and $.tests._type_id == 'Scores' and "
                  "$.gpa._type_id == 'long' and $.name._type_id == 'string'",
       true=["student_n"])
_check(_IMPLICIT, "$._repos_id == 'IDL:FilterExamples/Student:1.0' and "
                  "$.tests._repos_id == 'IDL:FilterExamples/Scores:1.0'", true=["student_n"])
_check(_IMPLICIT, "exist $.gpa._repos_id", false=["student_n"])
_check(_IMPLICIT, "$.us._type_id == 'unsigned short' and "
                  "$.ull._type_id == 'unsigned long long' and $.ch._type_id == 'char'",
       true=["numbers"])
_check(_IMPLICIT, "$._d == 1 and $.f == 2.5", true=["defaulted_1_2.5"])
_check(_IMPLICIT, "exist $.f._d", false=["defaulted_1_2.5"])

_UNION = "§2.4.6, decisions 31-32: unions"
_check(_UNION, "$.s == 'text' and not exist $.f and not exist $.defvalue",
       true=["defaulted_0_text"])
_check(_UNION, "$.('a') == 5 and not exist $.('b')", true=["bychar_a_5"])
_check(_UNION, "$.(97) == 5", true=["bychar_a_5"])
_check(_UNION, "$.(2) == 'x' and $.sv == 'x'", true=["byenum_S_x"])
_check(_UNION, "$._d == S and $._d == 2", true=["byenum_S_x"])
_check(_UNION, "$.(1) == 5 and $._d == TRUE", true=["nodefault_T_5"])
_check(_UNION, "$.(0) == 'n'", true=["nodefault_F_n"])
_check(_UNION, "default $ and default $._d", true=["defaulted_9_1"])
_check(_UNION, "default $", false=["defaulted_1_1.0"])
_check(_UNION, "not default $", true=["nodefault_T_1"])
_check(_UNION, "default $.x or TRUE", false=["x_2"])
_check(_UNION, "exist $.() or TRUE", true=["nodefault_T_1"])

_LAYERS = "§2.4.2, decision 35: unnamed Any layers"
_check(_LAYERS, "$ == 5 and $._type_id == 'long'", true=["nested_anys"])
_check(_LAYERS, "$ == 6", false=["nested_anys"])
_check("§2.1.4: an Any holding a StructuredEvent is filtered as one",
       "$priority == 1 and $type_name == 'CommunicationsAlarm'", true=["se_priority_1"])

_VARS = "§2.4.5, decision 34: run-time variables in Any events"
_check(_VARS, "$domain_name == 'D' and $type_name == 'T' and $event_name == 'E' and "
              "$p == 1 and $q == 2 and $z == 3", true=["layout"])
_check(_VARS, "exist $w", false=["layout"])
_check(_VARS, "$a == 1 and $(a) == 1 and a == 1", true=["nv_list"])
_check(_VARS, "exist $b", false=["nv_list"])
_check("§2.4.5: $priority", "$priority < 2", true=["prio_1"], false=["prio_5"])

# §2.4.1-2.4.7: the spec's own examples.
_check("§2.4.1", "2.5 * ($.one / $.two) > 1", true=["ratio_2_2", "ratio_7_3"],
       false=["ratio_1_2", "ratio_0_9"])
_check("§2.4.1", "2.5 * (1.0 * $.one / $.two) > 1", true=["ratio_1_2"], false=["ratio_1_5"])
_check("§2.4.2 Event.memA.Any.struct", "$.memA.cnt == 3", true=["memA_3"], false=["memA_4"])
_check("§2.4.2 Event.memB.Any.Any.int", "$.memB == 7", true=["memB_7"], false=["memB_8"])
_check("§2.4.2 Event.char", "$ == 'x'", true=["char_x"], false=["char_y"])
_check("§2.4.2 Event.methA", "$.methA.types[3] == 3", true=["meth_0"], false=["meth_1"])
_check("§2.4.2 one constraint for both event kinds",
       "$.header.fixed_header.event_type.type_name == 'CommunicationsAlarm'",
       true=["mirror_CommunicationsAlarm"], false=["mirror_Other"])
_check("§2.4.2 exist any._d", "(exist $._d and $._d == 50) or $ == 50",
       true=["defaulted_50_1", "long_50"], false=["defaulted_0_s", "long_49"])
_EVENTS4 = ["event1", "event2", "event3", "event4"]
_check("§2.4.3 example", "($.a + 1 > 32) or ($.b == 5) or ($.c > 3)",
       true=["event2", "event4"], false=["event1", "event3"])
_check("§2.4.3 example rewritten", "($.a + 1 > 32) or (exist $.b and $.b == 5) or ($.c > 3)",
       true=_EVENTS4[1:], false=["event1"])
_check("§2.4.3 char arithmetic", "$.a + 1 > 32", true=["event2_H0"], false=["event2_low"])
_check("§2.4.3 char arithmetic", "'H' + 1 > 32", true=["null"])
for _text in ["$.gpa < 80 or $.tests(midterm) > $.tests(final) or\n$.monthly_attendance[3] < 10",
              "$.3 < 80 or $.1(midterm) > $.1(final) or $.2[3] < 10"]:
    _check("§2.4.6 named and positional (the $1 misprint as $.1)", _text,
           true=["student_gpa70", "student_mid90", "student_att5"], false=["student"])
_check("§2.4.6 struct X positions", "$.0 == 1 and $.1 == 'b' and $.2 == 3", true=["x_3"],
       false=["x_4"])
_check("§2.4.6 struct X names", "$.A == 1 and $.B == 'b' and $.C == 3", true=["x_3"],
       false=["x_4"])
_check("§2.4.6 enum P positions", "$ == 0", true=["p_Q"], false=["p_R"])
_check("§2.4.6 enum P labels", "$ == Q", true=["p_Q"], false=["p_R"])
for _text in ("$.M < 54", "$.(5) < 54"):
    _check("§2.4.6 union K", _text, true=["k_5_53"], false=["k_5_54", "k_3_x127"])
for _text in ("$.L.C < 128", "$.(3).2 < 128"):
    _check("§2.4.6 union K", _text, true=["k_3_x127"], false=["k_3_x128", "k_5_1"])
for _text in ("$._d == 2 and $.(0) != 'hoob'", "$._d == 2 and $.(2) != 'hoob'"):
    _check("§2.4.6 label chosen independent of the discriminator", _text, true=["k_2_putty"],
           false=["k_2_hoob", "k_0_putty"])
_check("§2.4.6 putty", "'putty' ~ $.(2)", true=["k_0_silly_putty"], false=["k_0_clay", "k_5_1"])
_check("§2.4.6 putty (unquoted: a property name)", "putty ~ $.(2)", false=["k_0_silly_putty"])
for _text in ("$.N == 999", "$.() == 999"):
    _check("§2.4.6 the default member", _text, true=["k_7_999"], false=["k_7_998", "k_5_999"])
for _text in ("exist $.str", "exist $.(0) or exist $.(2)"):
    _check("§2.4.6 exist on unions", _text, true=["k_0_a", "k_2_a"],
           false=["k_3_x2", "k_9_1"])
# §2.4.6: "exist $. (0)" is TRUE "if and only if the discriminator is set to 0" and "is
# equivalent to $. _d == 0", though $.(0) reads member K while _d is 2 (review 114).
_check("§2.4.6 exist $.(0) is $._d == 0", "exist $.(0)", true=["k_0_a"],
       false=["k_2_a", "k_3_x2", "k_9_1"])
_check("§2.4.6 exist $.(0) is $._d == 0", "exist $.(2) and $.(0) == 'a' and not exist $.(0)",
       true=["k_2_a"], false=["k_0_a"])
_check("§2.4.6 exist $.(0) is $._d == 0", "(exist $.(0)) == ($._d == 0)",
       true=["k_0_a", "k_2_a", "k_3_x2", "k_9_1", "k_7_999"])
_check("§2.4.6 exist $.(L) on the default member is $._d == L",
       "exist $.(7) and exist $.() and not exist $.(99) and $.(99) == 999", true=["k_7_999"])
_check("§2.4.6 exist $.(L) on the default member is $._d == L", "exist $.(99)",
       false=["k_7_999", "k_5_1"])
_check("§2.4.6 exist on unions", "exist $.(5)", true=["k_5_1"], false=["k_0_a"])
_check("§2.4.6 exist on unions", "$._d == 5", true=["k_5_1"], false=["k_0_a"])
_check("§2.4.7 Marx Brothers", "$type_name == 'MOVIE' and\n"
       "(('groucho' in $.starlist) + ('chico' in $.starlist) +\n"
       "('harpo' in $.starlist) + ('zeppo' in $.starlist) +\n"
       "('gummo' in $.starlist)) > 2", true=["movie_4", "movie_3"], false=["movie_2", "show"])
_check("§2.4.7 students", "$.test._length == 3 and\n"
       "($.test[0].score + $.test[1].score + $.test[2].score) / 3\n>= 80",
       true=["harpo_90_80_85", "harpo_80_80_80"],
       false=["harpo_70_80_85", "harpo_90_90", "harpo_90_90_90_90"])
_check("§2.4.7 processes", "$.memsize / 5.5 + $.cputime * 1275.0 + $.filesize * 1.25\n"
       "> 500000.0", true=["process_5500000_0_0", "process_0_400_0",
                           "process_0_0_9223372036854775808"], false=["process_1000_1_1000"])
_check("§2.4.7 default union discriminator", "default $._d and $.defvalue == 2",
       true=["defaulted_7_2"], false=["defaulted_7_3", "defaulted_0_2", "defaulted_1_2.0"])
_check("§2.4.7 default $_.d as printed (decision 20: variable _)",
       "default $_.d and $.defvalue == 2", true=["outer_7_2"],
       false=["outer_0_2", "outer_7_3", "defaulted_7_2"])
_check("§2.4.7 $._repos_id", "$._repos_id == 'IDL:omg.org/CosNotification/StructuredEvent:1.0'",
       true=["se_plain"], false=["movie_empty"])
_check("§2.4.7 $violation(serviceUser)._repos_id",
       "$violation(serviceUser)._repos_id ==\n'IDL:TelecomNotification/ServiceUserType:1.0'",
       true=["violation_user"], false=["violation_string", "violation_x"])
_check("§2.4.7 enum labels", "$.in == HOUSE or $.in == CAR",
       true=["holding_HOUSE", "holding_CAR"], false=["holding_BOAT"])
_check("§2.4.7 $_.in as printed (decision 20: variable _)", "$_.in == HOUSE or $_.in == CAR",
       true=["wrapped_HOUSE", "wrapped_CAR"], false=["wrapped_BOAT", "holding_HOUSE"])

# Repeated and recursive types (the 0xffffffff indirections of TypeCodes from the wire).
_REPEAT = "a type that appears twice (an indirection)"
_check(_REPEAT, "$.a.x == 1 and $.b.y == 4 and $.1.0 == 3", true=["segment"])
_check(_REPEAT, "$.b._type_id == 'Point' and $.b._repos_id == 'IDL:FilterExamples/Point:1.0'",
       true=["segment"])
_check(_REPEAT, "exist $.b.z or $.b.2 == 0", false=["segment"])
_check(_REPEAT, "$.first.dot.y == 2 and $.first.(1).x == 1 and $.origin.x == 0",
       true=["drawing_dot"])
_check(_REPEAT, "$.second._type_id == 'Shape' and "
                "$.second._repos_id == 'IDL:FilterExamples/Shape:1.0'", true=["drawing_dot"])
_check(_REPEAT, "$.first.line.b.x == 3 and $.first.(2).1.1 == 4 and $.second.(1).y == 6 "
                "and $.second.dot.x + $.origin.y == 13", true=["drawing_line"])
_check(_REPEAT, "exist $.second.line or exist $.first.dot", false=["drawing_line"])
_DEFAULT = "a union with a default member (holding a recursive type)"
_check(_DEFAULT, "default $.second and not default $.first and $.second._d == 9",
       true=["drawing_dot"])
_check(_DEFAULT, "default $.second", false=["drawing_line"])
_check(_DEFAULT, "$.second.tree.name == 'root' and $.second.().kids._length == 2",
       true=["drawing_dot"])
_check(_DEFAULT, "$.second.().kids[1].kids[0].name == 'c' and $.second.(3).name == 'root' "
                 "and exist $.second.(9) and not exist $.second.(3)", true=["drawing_dot"])
_check(_DEFAULT, "exist $.second.() or exist $.second.tree", false=["drawing_line"])
_check(_DEFAULT, "exist $.first.() or $.second.tree.kids[0].name == 'b'",
       false=["drawing_dot"])
_RECURSIVE = "a recursive type"
_check(_RECURSIVE, "$.kids[1].kids[0].name == 'c' and $.kids[1].kids[0].weight == 4",
       true=["node"])
_check(_RECURSIVE, "$.kids._length == 2 and $.kids[0].kids._length == 0 and "
                   "$.2[1].2[0].0 == 'c'", true=["node"])
_check(_RECURSIVE, "$.kids[1].kids[0]._repos_id == 'IDL:FilterExamples/Node:1.0' and "
                   "$.kids[1].kids._type_id == 'Nodes'", true=["node"])
_check(_RECURSIVE, "exist $.kids[2] or exist $.kids[1].kids[0].kids[0]", false=["node"])
_check(_RECURSIVE, "$.weight + $.kids[0].weight + $.kids[1].weight + "
                   "$.kids[1].kids[0].weight == 10", true=["node"])
_check(_RECURSIVE + " through a union", "$.args[1].args[0].num == 2 and $.(0)[0].(1) == 1",
       true=["expr"])
_check(_RECURSIVE + " through a union", "$._d == FALSE and $.args[0]._d == TRUE and "
                                        "$.args._length == 2 and not default $.args[0]",
       true=["expr"])
_check(_RECURSIVE + " through a union", "exist $.num or exist $.args[0].args",
       false=["expr"])
_check(_RECURSIVE + " through a union", "$.args[1].args[0]._type_id == 'Expr' and "
                                        "$.args._type_id == 'Exprs'", true=["expr"])

_ids = [check.id for check in CHECKS]
assert len(set(_ids)) == len(_ids), "every check is one event and one constraint"
