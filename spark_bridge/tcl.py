"""EXTENDED_TCL constraints over DataFrames of events, with the channel's exact semantics.

Strategy: the constraint is parsed by ``cosnotify.filter`` and its AST is
translated into Spark column expressions over ``event_schema()``. Where the
translation could differ from ``Filter.match_structured`` it does not
guess: it defers to a Python UDF that rebuilds the StructuredEvent from the
row (``row_to_event``) and runs our own compiled filter. Deferring happens
at two levels:

- *Statically*, for the whole constraint, when it uses what is not
  translated (``$curtime``, ``default``, union, position, index, implicit
  member steps, paths into a property's value, integer arithmetic that could
  outgrow 38 digits): ``Translation.mode == "udf"``.
- *Per row*, when a value's run-time type is one the SQL does not cover
  (``fixed``, an ``any`` inside the property's Any, aliases nested deeper
  than four, a ``sequence<char>`` held as a string ...). Every operand's
  run-time class includes ``u`` ("undecided") for these, it propagates like
  a value, and the rows whose result is ``u`` go to the UDF:
  ``mode == "sql+udf"``. Spark still runs the UDF over every row (it cannot
  run it conditionally), but with a NULL argument for rows SQL decided.

Each subexpression is a struct ``<c, i, f, s, b, eo, el>``: its class ``c``
(``i`` integer, exact as ``decimal(38,0)``; ``f`` double; ``s`` string, chars
included; ``b`` boolean; ``e`` enum, with ordinal ``eo`` and labels ``el``;
``L`` a bare identifier that resolved to nothing, §2.4.7; ``x`` an error;
``u`` undecided) and its value in the field of that class. The rules of
``cosnotify.filter.runtime`` are written out as CASE expressions over the
classes (docs/filters.md decisions 23-30): an error anywhere that is
evaluated makes the constraint FALSE, ``and``/``or`` short-circuit left to
right, chars and one-character strings are numbers, ints and doubles compare
as doubles, NaN compares unequal to everything. Each subexpression is
projected as a column of its own before the filter, so parents refer to it
by name and the plan grows linearly with the constraint (``tcl_column``, one
Column, let-binds them in lambdas instead: ``tclsql._let``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cosnotify.filter import ast, parse_constraint
from cosnotify.filter.paths import CURTIME, SE_TC, STRUCTURED_HEADER, static_path
from spark_bridge.tclsql import (
    _ALL,
    _DEC,
    _DIV_LIMIT,
    _ERROR,
    _FIELDS,
    _FIXED_COLUMNS,
    _FLOAT_KINDS,
    _FU,
    _FX,
    _INT_KINDS,
    _INT_LIMIT,
    _OP,
    _PROPERTIES,
    _SE_MEMBERS,
    _SQL_OP,
    _STRING_KINDS,
    _X,
    Parts,
    Sql,
    _and,
    _as_component,
    _as_double,
    _as_int,
    _assoc_lookup,
    _base_type,
    _case,
    _cmp,
    _errors_first,
    _flag,
    _float_cmp,
    _Found,
    _in_list,
    _int_or_u,
    _is,
    _is_any,
    _is_simple,
    _kind_of,
    _let,
    _levels,
    _literal,
    _not,
    _null,
    _numeric_bound,
    _numeric_ok,
    _numeric_possible,
    _or,
    _q,
    _Unsupported,
    _Val,
)
from spark_bridge.tcludf import _EVENT, _register, _udf_call

_JUNCTION_CHUNK = 32  # operands of and/or per nested CASE (Spark parses ~450)

_ids = itertools.count(1)


@attrs.frozen
class Translation:
    """How a constraint runs in Spark.

    ``mode`` is ``"sql"`` (column expressions decide every row), ``"sql+udf"``
    (they decide the rows whose run-time types they cover; the UDF the rest)
    or ``"udf"`` (our evaluator decides every row; ``reason`` says why).
    ``bindings`` are the ``(name, SQL)`` projections ``column`` refers to.
    """

    constraint: str
    mode: str
    reason: str | None
    bindings: tuple[tuple[str, Sql], ...] = attrs.field(repr=False)
    column: Column = attrs.field(repr=False)


class _Translator:
    """Builds the projections and the final predicate for one constraint."""

    def __init__(self, inline: bool) -> None:
        self.inline = inline
        self.prefix = f"__tcl{next(_ids)}_"
        self.bindings: list[tuple[str, Sql]] = []
        self._cells: dict[tuple[str, tuple[str, ...]], _Found] = {}
        self._cell_names: dict[tuple[str, tuple[str, ...]], Sql] = {}
        self._names = itertools.count()
        self._bound: dict[Sql, Sql] = {}

    def bind(self, sql: Sql) -> Sql:
        """``sql`` as a projected column of its own (when inlining, a let-bound value:
        see ``_let``); the same expression is projected once, however often it is bound."""
        bound = self._bound.get(sql)
        if bound is None:
            name = f"{self.prefix}{next(self._names)}"
            self.bindings.append((name, sql))
            bound = self._bound[sql] = f"`{name}`"
        return bound

    def number_parts(self, val: _Val) -> tuple[Sql, Sql, Sql]:
        """(is numeric, as integer, as double) of ``val``, projected once per value."""
        ok, as_int, as_double = _numeric_ok(val), _as_int(val), _as_double(val)
        if val.kinds <= {"i", "f", "s", "b"} and len(val.kinds) == 1 and not val.flag \
                and all(_is_simple(sql) for _, sql in val.values):
            return ok, as_int, as_double  # a literal or a plain column: small already
        return self.bind(ok), self.bind(as_int), self.bind(as_double)

    def save(self) -> tuple[int, dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
        return len(self.bindings), dict(self._bound), dict(self._cells), dict(self._cell_names)

    def restore(self, saved: tuple[int, dict[Any, Any], dict[Any, Any], dict[Any, Any]]) -> None:
        count, self._bound, self._cells, self._cell_names = saved
        del self.bindings[count:]

    def flag(self, sql: Sql, kinds: frozenset[str] | set[str]) -> _Val:
        if sql in ("'T'", "'F'"):
            return _literal("b", "TRUE" if sql == "'T'" else "FALSE")
        return _Val(self.bind(sql), frozenset(kinds), flag=True)

    def emit(self, cases: Sequence[tuple[Sql, Parts]], otherwise: Parts,
             kinds: frozenset[str] | set[str], bound: int = 0, label: str | None = None) -> _Val:
        """A value chosen by ``cases``: its class, and each field from the branches that
        set it (a field read only under a class that its branch sets needs no CASE)."""
        branches = [*cases, ("TRUE", otherwise)]
        values = []
        for name, sql_type in _FIELDS.items():
            if name == "c":
                continue
            setting = [(cond, parts[name]) for cond, parts in branches if name in parts]
            if not setting:
                continue
            if len({sql for _, sql in setting}) == 1:
                sql = setting[0][1]
            else:
                sql = _case(setting, _null(sql_type))
            values.append((name, sql if _is_simple(sql) else self.bind(sql)))
        cls = _case([(cond, parts["c"]) for cond, parts in cases], otherwise["c"])
        return _Val(cls if _is_simple(cls) else self.bind(cls), frozenset(kinds), tuple(values),
                    bound, label)

    # -- expressions -------------------------------------------------------------------------
    def expr(self, node: ast.Expression) -> _Val:
        if isinstance(node, ast.IntegerLiteral):
            return _literal("i", f"CAST('{node.value}' AS {_DEC})", abs(node.value))
        if isinstance(node, ast.FloatLiteral):
            return _literal("f", f"CAST('{node.value!r}' AS DOUBLE)")
        if isinstance(node, ast.StringLiteral):
            return _literal("s", _q(node.value))
        if isinstance(node, ast.BooleanLiteral):
            return _literal("b", "TRUE" if node.value else "FALSE")
        if isinstance(node, (ast.Identifier, ast.Component)):
            return self.component(_as_component(node), label=False)
        if isinstance(node, ast.Or):
            return self.junction([self.expr(op) for op in node.operands], stop_on=True)
        if isinstance(node, ast.And):
            return self.junction([self.expr(op) for op in node.operands], stop_on=False)
        if isinstance(node, ast.Not):
            return self.negate(self.expr(node.operand))
        if isinstance(node, ast.Exist):
            return self.exist(_as_component(node.operand))
        if isinstance(node, ast.Default):
            raise _Unsupported("'default' (union members) is evaluated by the UDF")
        if isinstance(node, ast.In):
            return self.contains(self.operand(node.element), node.collection)
        assert isinstance(node, ast.BinaryOp)
        if node.operator in _SQL_OP:
            return self.compare(node.operator, self.operand(node.left), self.operand(node.right))
        left, right = self.expr(node.left), self.expr(node.right)
        if node.operator is _OP.TWIDDLE:
            return self.twiddle(left, right)
        return self.arithmetic(node.operator, left, right)

    def operand(self, node: ast.Expression) -> _Val:
        """A comparison or ``in`` operand: a bare identifier may be an enum label (§2.4.7)."""
        if isinstance(node, ast.Identifier):
            return self.component(_as_component(node), label=True)
        return self.expr(node)

    # -- booleans ----------------------------------------------------------------------------
    def junction(self, operands: list[_Val], stop_on: bool) -> _Val:
        """``or`` (``stop_on=True``) / ``and``: left to right, stopping at the first
        operand equal to ``stop_on``; an error or a non-boolean ends everything.

        Each operand nests one CASE, and Spark's parser gives up at a few hundred
        (FAILED_TO_PARSE_TOO_COMPLEX), so long chains are grouped, each group's
        flag bound: ``a or b or c or d`` is ``(a or b) or (c or d)``, the short
        circuit and the first error included. Groups of groups keep the depth
        logarithmic even once the optimizer substitutes each bound flag into its
        one use (a chain of groups made a CASE 1,000 deep, and a StackOverflowError
        serializing the plan)."""
        while len(operands) > _JUNCTION_CHUNK:
            operands = [self._junction(operands[i:i + _JUNCTION_CHUNK], stop_on)
                        for i in range(0, len(operands), _JUNCTION_CHUNK)]
        return self._junction(operands, stop_on)

    def _junction(self, operands: list[_Val], stop_on: bool) -> _Val:
        result = self.as_bool(operands[-1]).as_flag()
        for val in reversed(operands[:-1]):
            cases = _errors_first(val)
            cases.append((_not(_is(val, "b")), _FX))
            hit = val.field("b") if stop_on else _not(val.field("b"))
            cases.append((hit, "'T'" if stop_on else "'F'"))
            result = _case(cases, result)
        kinds = {"b"} | {k for v in operands for k in ("x", "u") if v.may(k)}
        if any(not v.only("b", "u") for v in operands):
            kinds.add("x")
        return self.flag(result, kinds)

    def as_bool(self, val: _Val) -> _Val:
        """A value where a boolean is required: anything else is an error (§2.4.3)."""
        if val.only("b", "x", "u"):
            return val
        cases = [(_is(val, "b"), _flag(val.field("b"))), (_is(val, "u"), _FU)]
        return self.flag(_case(cases, _FX), (val.kinds & {"b", "u"}) | {"x"})

    def negate(self, val: _Val) -> _Val:
        cases = _errors_first(val)
        cases.append((_is(val, "b"), _flag(_not(val.field("b")))))
        return self.flag(_case(cases, _FX), (val.kinds & {"u"}) | {"b", "x"})

    # -- comparisons, ~ and arithmetic -------------------------------------------------------
    def compare(self, op: ast.BinaryOperator, a: _Val, b: _Val) -> _Val:
        cases = _errors_first(a, b)
        for kind in ("s", "b", "i"):
            cases.append((_and(_is(a, kind), _is(b, kind)),
                          _flag(_cmp(op, a.field(kind), b.field(kind)))))
        cases.append((_and(_is(a, "f"), _is(b, "f")),
                      _flag(_float_cmp(op, a.field("f"), b.field("f")))))
        # Enums (§2.4.3, §2.4.6-2.4.7): with the same enum type, a bare label or an ordinal.
        if a.may("e") and b.may("e"):
            same = _flag(_cmp(op, a.field("eo"), b.field("eo")))
            same_enum = f"CASE WHEN {a.field('el')} = {b.field('el')} THEN {same} ELSE {_FX} END"
            cases.append((_and(_is(a, "e"), _is(b, "e")), same_enum))
        for enum, other, flip in ((a, b, False), (b, a, True)):
            if not enum.may("e"):
                continue
            ordinal = enum.field("eo")
            if other.may("L") and other.label is not None:
                index = f"(array_position({enum.field('el')}, {_q(other.label)}) - 1)"
                pair = (index, ordinal) if flip else (ordinal, index)
                labelled = _flag(_cmp(op, *pair))
                cases.append((_and(_is(enum, "e"), _is(other, "L")),
                              f"CASE WHEN {index} >= 0 THEN {labelled} ELSE {_FX} END"))
            if other.may("i"):
                ordinal = f"CAST({ordinal} AS {_DEC})"
                pair = (other.field("i"), ordinal) if flip else (ordinal, other.field("i"))
                cases.append((_and(_is(enum, "e"), _is(other, "i")), _flag(_cmp(op, *pair))))
        cases.append((_or(_is_any(a, "e", "L"), _is_any(b, "e", "L")), _FX))
        # Everything else compares as numbers (a double operand makes both double).
        if _numeric_possible(a) and _numeric_possible(b):
            a_ok, a_int, a_double = self.number_parts(a)
            b_ok, b_int, b_double = self.number_parts(b)
            number = _case([(_not(_and(a_ok, b_ok)), _FX),
                            (_or(_is(a, "f"), _is(b, "f")),
                             _flag(_float_cmp(op, a_double, b_double)))],
                           _flag(_cmp(op, a_int, b_int)))
        else:
            number = _FX
        return self.flag(_case(cases, number),
                         {"b", "x"} | ({"u"} if a.may("u") or b.may("u") else set()))

    def twiddle(self, a: _Val, b: _Val) -> _Val:
        """``a ~ b``: string ``a`` occurs in string ``b`` (§2.4.1); anything else is an error."""
        cases = _errors_first(a, b)
        cases.append((_and(_is(a, "s"), _is(b, "s")),
                      _flag(f"contains({b.field('s')}, {a.field('s')})")))
        return self.flag(_case(cases, _FX),
                         {"b", "x"} | ({"u"} if a.may("u") or b.may("u") else set()))

    def arithmetic(self, op: ast.BinaryOperator, a: _Val, b: _Val) -> _Val:
        cases: list[tuple[Sql, Parts]] = _errors_first(a, b, flag=False)
        kinds = {"x"} | ({"u"} if a.may("u") or b.may("u") else set())
        if not (_numeric_possible(a) and _numeric_possible(b)):
            return self.emit(cases, _X, kinds)
        a_ok, xi, xf = self.number_parts(a)
        b_ok, yi, yf = self.number_parts(b)
        cases.append((_not(_and(a_ok, b_ok)), _X))
        ba, bb = _numeric_bound(a), _numeric_bound(b)
        bound = {_OP.ADD: ba + bb, _OP.SUB: ba + bb, _OP.MUL: ba * bb, _OP.DIV: ba}[op]
        may_int = a.may("i", "b", "s") and b.may("i", "b", "s")
        if may_int and (bound >= _INT_LIMIT or (op is _OP.DIV and ba >= _DIV_LIMIT)):
            raise _Unsupported("integer arithmetic that may exceed 38 digits")
        either_float = _or(_is(a, "f"), _is(b, "f"))
        if op is _OP.DIV:
            cases.append((_and(either_float, f"({yf} = 0)"), _X))
            cases.append((either_float, {"c": "'f'", "f": f"try_divide({xf}, {yf})"}))
            cases.append((f"({yi} = 0)", _X))
            # C division (truncation toward zero): (x - x % y) / y is exact.
            integer = _int_or_u(f"CAST(try_divide(try_subtract({xi}, try_mod({xi}, {yi})), "
                                f"{yi}) AS {_DEC})")
        else:
            symbol = {_OP.ADD: "+", _OP.SUB: "-", _OP.MUL: "*"}[op]
            function = {_OP.ADD: "try_add", _OP.SUB: "try_subtract", _OP.MUL: "try_multiply"}[op]
            cases.append((either_float, {"c": "'f'", "f": f"({xf} {symbol} {yf})"}))
            integer = _int_or_u(f"{function}({xi}, {yi})")
        if a.may("f") or b.may("f"):
            kinds.add("f")
        if may_int:
            kinds.add("i")
        return self.emit(cases, integer if may_int else _X, kinds, bound)

    # -- components --------------------------------------------------------------------------
    def component(self, component: ast.Component, label: bool) -> _Val:
        name, steps = component.variable, component.steps
        if name is not None and name == CURTIME and not component.escaped:
            raise _Unsupported("$curtime is evaluated by the UDF")
        if name is not None:
            if name in STRUCTURED_HEADER:
                if steps:
                    raise _Unsupported(f"steps after ${name}")
                return _literal("s", f"`{name}`")
            if steps:
                raise _Unsupported(f"paths into the value of ${name}")
            found = self.property_cell(name, _PROPERTIES)
            if name in _SE_MEMBERS:
                # A property of that name first, then the StructuredEvent member (§2.4.5).
                member = self.cell_operand("`remainder_of_body`") \
                    if name == "remainder_of_body" else _ERROR
                return self.emit([(found.is_cell, found.val.parts())], member.parts(),
                                 found.val.kinds | member.kinds, found.val.bound)
            if label:
                return self.emit([(found.is_cell, found.val.parts())], {"c": "'L'"},
                                 found.val.kinds | {"L"}, found.val.bound, name)
            return self.emit([(found.is_cell, found.val.parts())], _X,
                             found.val.kinds | {"x"}, found.val.bound)
        names, _, covered = static_path(SE_TC, steps)
        rest = steps[covered:]
        if not rest:
            if names in _FIXED_COLUMNS:
                return _literal("s", f"`{_FIXED_COLUMNS[names]}`")
            if names == ("remainder_of_body",):
                return self.cell_operand("`remainder_of_body`")
            return _ERROR  # the event, its header, or a sequence
        lookup = _assoc_lookup(names, rest)
        if lookup is None:
            raise _Unsupported(f"the path {component.to_text()}")
        found = self.property_cell(*lookup)
        return self.emit([(found.is_cell, found.val.parts())], _X,
                         found.val.kinds | {"x"}, found.val.bound)

    def exist(self, component: ast.Component) -> _Val:
        name, steps = component.variable, component.steps
        if name is not None:
            if name == CURTIME and not component.escaped:
                raise _Unsupported("$curtime is evaluated by the UDF")
            if steps:
                raise _Unsupported(f"exist with steps after ${name}")
            if name in STRUCTURED_HEADER or name in _SE_MEMBERS:
                return _literal("b", "TRUE")
            return self.flag(_flag(self.cell(name, _PROPERTIES) + " IS NOT NULL"), {"b"})
        names, _, covered = static_path(SE_TC, steps)
        rest = steps[covered:]
        if not rest:
            return _literal("b", "TRUE")
        lookup = _assoc_lookup(names, rest)
        if lookup is None:
            raise _Unsupported(f"exist {component.to_text()}")
        return self.flag(_flag(self.cell(*lookup) + " IS NOT NULL"), {"b"})

    def contains(self, element: _Val, collection: ast.Identifier | ast.Component) -> _Val:
        """``element in $seq`` (§2.4.3) for strings and integers in sequences of them."""
        component = _as_component(collection)
        name = component.variable
        lookup: tuple[str, tuple[str, ...]] | None = None
        if name is None:
            names, _, covered = static_path(SE_TC, component.steps)
            lookup = _assoc_lookup(names, component.steps[covered:])
        elif not component.steps and name not in STRUCTURED_HEADER and \
                name not in _SE_MEMBERS and (name != CURTIME or component.escaped):
            lookup = (name, _PROPERTIES)
        if lookup is None:
            raise _Unsupported(f"'in' {component.to_text()}")
        cell = self.cell(*lookup)
        base = self.bind(_base_type(f"{cell}.type"))
        kind = self.bind(_kind_of(base))
        content = self.bind(_kind_of(_base_type(f"get_json_object({base}, '$.of')")))
        value = f"{cell}.value"
        strings = f"try_variant_get({value}, '$', 'array<string>')"
        numbers = f"try_variant_get({value}, '$', 'array<{_DEC.lower()}>')"
        has_string = _flag(f"array_contains({strings}, {element.field('s')})")
        has_number = _flag(f"exists({numbers}, __n -> __n = {element.field('i')})")
        cases = _errors_first(element)
        cases += [(f"{cell} IS NULL", _FX),
                  (f"({kind} IS NULL OR {kind} IN ('any', 'fixed', 'alias'))", _FU),
                  (f"({kind} NOT IN ('sequence', 'array'))", _FX),
                  (_and(_is(element, "s"), f"({content} IN {_in_list(_STRING_KINDS)})"),
                   f"CASE WHEN {strings} IS NULL THEN {_FU} ELSE {has_string} END"),
                  (_and(_is(element, "i"), f"({content} IN {_in_list(_INT_KINDS)})"),
                   f"CASE WHEN {numbers} IS NULL THEN {_FU} ELSE {has_number} END")]
        return self.flag(_case(cases, _FU), {"b", "x", "u"})

    # -- properties and Any cells ------------------------------------------------------------
    def cell(self, name: str, columns: tuple[str, ...]) -> Sql:
        """The first property ``name`` in ``columns`` (in order), as a bound cell or NULL."""
        key = (name, columns)
        cell = self._cell_names.get(key)
        if cell is None:
            found = [f"get(filter(`{column}`, __p -> __p.name = {_q(name)}), 0)"
                     for column in columns]
            cell = self.bind(f"coalesce({', '.join(found)})" if len(found) > 1 else found[0])
            self._cell_names[key] = cell
        return cell

    def property_cell(self, name: str, columns: tuple[str, ...]) -> _Found:
        """The property's operand, looked up once per constraint however often it occurs."""
        key = (name, columns)
        found = self._cells.get(key)
        if found is None:
            cell = self.cell(name, columns)
            found = _Found(f"({cell} IS NOT NULL)", self.cell_operand(cell))
            self._cells[key] = found
        return found

    def cell_operand(self, cell: Sql) -> _Val:
        """The operand held by an Any cell ``struct<type, value>`` (runtime.any_operand)."""
        base = self.bind(_base_type(f"{cell}.type"))
        kind = self.bind(_kind_of(base))
        value = f"{cell}.value"

        def extract(kinds: Sequence[str], sql_type: str) -> Sql:
            return self.bind(f"CASE WHEN {kind} IN {_in_list(kinds)} THEN "
                             f"try_variant_get({value}, '$', '{sql_type}') END")

        i = extract(_INT_KINDS, _DEC.lower())
        f = extract(_FLOAT_KINDS, "double")
        s = extract(_STRING_KINDS, "string")
        b = extract(("boolean",), "boolean")
        el = self.bind(f"CASE WHEN {kind} = 'enum' THEN "
                       f"from_json(get_json_object({base}, '$.members'), 'array<string>') END")
        eo = self.bind(f"(array_position({el}, try_variant_get({value}, '$', 'string')) - 1)")
        cls = self.bind(
            f"CASE WHEN {kind} IN {_in_list(_INT_KINDS)} THEN IF({i} IS NULL, 'u', 'i') "
            f"WHEN {kind} IN {_in_list(_FLOAT_KINDS)} THEN IF({f} IS NULL, 'u', 'f') "
            f"WHEN {kind} IN {_in_list(_STRING_KINDS)} THEN IF({s} IS NULL, 'u', 's') "
            f"WHEN {kind} = 'boolean' THEN IF({b} IS NULL, 'u', 'b') "
            f"WHEN {kind} = 'enum' THEN IF({eo} IS NULL OR {eo} < 0, 'u', 'e') "
            f"WHEN {kind} IS NULL OR {kind} IN ('fixed', 'any', 'alias') THEN 'u' "
            "ELSE 'x' END")
        return _Val(cls, _ALL, (("i", i), ("f", f), ("s", s), ("b", b), ("eo", eo), ("el", el)),
                    2 ** 64 - 1)


# -- entry points ------------------------------------------------------------------------------

def _session() -> Any:
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("tcl_filter needs an active SparkSession")
    return spark


@functools.lru_cache(maxsize=256)
def _parse(constraint: str) -> ast.Expression:
    return parse_constraint(constraint)


def translate(constraint: str, *, inline: bool = False) -> Translation:
    """Translate ``constraint``; ``bindings`` must be projected before ``column`` is used
    (none with ``inline=True``: they are let-bound inside ``column``)."""
    return _translate(constraint, _Translator(inline))


def _translate(constraint: str, translator: _Translator) -> Translation:
    tree = _parse(constraint)
    _register(_session())
    saved = translator.save()
    try:
        top = translator.as_bool(translator.expr(tree))
    except _Unsupported as exc:
        translator.restore(saved)  # what it projected is unused: the UDF decides
        return Translation(constraint, "udf", str(exc), (), F.expr(_udf_call(constraint)))
    bindings = tuple(translator.bindings)
    if translator.inline:
        return _inlined(constraint, top, bindings, translator.prefix)
    if top.kinds == {"b"}:  # decided without looking at the row
        return Translation(constraint, "sql", None, bindings, F.expr(top.field("b")))
    cases = [(_is(top, "b"), top.field("b"))]
    mode = "sql"
    if top.may("u"):
        is_u = _is(top, "u")
        cases.append((is_u, _udf_call(constraint, f"CASE WHEN {is_u} THEN {_EVENT} END")))
        mode = "sql+udf"
    return Translation(constraint, mode, None, bindings, F.expr(_case(cases, "FALSE")))


def _inlined(constraint: str, top: _Val, bindings: Sequence[tuple[str, Sql]],
             prefix: str) -> Translation:
    """The Translation of ``tcl_column``: one Column, its bindings let-bound inside it."""
    if top.kinds == {"b"}:
        return Translation(constraint, "sql", None, (), F.expr(_let(bindings, top.field("b"),
                                                                    prefix)))
    flag = _let(bindings, top.as_flag(), prefix)  # 'T', 'F', 'x' or 'u'
    matched = f"coalesce({flag} = 'T', FALSE)"
    if not top.may("u"):
        return Translation(constraint, "sql", None, (), F.expr(matched))
    # The UDF is called outside the lambdas, on the rows whose flag is 'u' (NULL elsewhere).
    column = _udf_call(constraint, f"CASE WHEN {flag} = 'u' THEN {_EVENT} END", matched)
    return Translation(constraint, "sql+udf", None, (), F.expr(column))


def _project(df: DataFrame, translations: Sequence[Translation]) -> DataFrame:
    for group in _levels([b for t in translations for b in t.bindings]):
        df = df.selectExpr("*", *[f"{sql} AS `{name}`" for name, sql in group])
    return df


def _drop(df: DataFrame, translations: Sequence[Translation]) -> DataFrame:
    return df.drop(*dict.fromkeys(name for t in translations for name, _ in t.bindings))


def tcl_matches(df: DataFrame, constraints: Mapping[str, str]) -> DataFrame:
    """``df`` with a boolean column per ``{name: constraint}``: does each row's event
    satisfy it? Several constraints share one set of projections. A column of ``df``
    with one of those names is replaced (the new ones come last).

    The columns come out of a generator (``inline`` of a one-element array), which
    the optimizer cannot push a filter through: a filter on them pushed down
    through the projections would substitute every projected subexpression into
    every use, and the plan would explode.
    """
    translator = _Translator(inline=False)  # shared: common lookups are projected once
    translations = [_translate(text, translator) for text in constraints.values()]
    fenced = {name: f"__tcl_fence{next(_ids)}" for name in constraints}
    out = _project(df, translations)
    out = out.select("*", *[t.column.alias(fenced[name])
                            for name, t in zip(constraints, translations)])
    out = _drop(out, translations)
    out = out.drop(*constraints)  # a column of one of those names is replaced (drop's resolver)
    out = out.select("*", F.inline(F.array(F.struct(*[F.col(f).alias(n)
                                                     for n, f in fenced.items()]))))
    return out.drop(*fenced.values())


def tcl_match(df: DataFrame, constraint: str, name: str = "matched") -> DataFrame:
    """``df`` with a boolean column ``name``: does each row's event satisfy ``constraint``?
    A column already named ``name`` is replaced (the new one comes last)."""
    return tcl_matches(df, {name: constraint})


def tcl_filter(df: DataFrame, constraint: str) -> DataFrame:
    """The rows of ``df`` (of ``event_schema()``) whose events satisfy ``constraint``,
    exactly as ``Filter.match_structured`` decides (EXTENDED_TCL, docs/filters.md)."""
    name = f"__tcl_match{next(_ids)}"
    return tcl_match(df, constraint, name).where(F.col(name)).drop(name)


def tcl_column(constraint: str) -> Column:
    """The predicate as one Column, for use anywhere. Its subexpressions are let-bound
    inside it (``_let``), so it stays linear in the constraint, but a lambda is not
    compiled to code: ``tcl_filter``'s projections run faster."""
    return translate(constraint, inline=True).column
