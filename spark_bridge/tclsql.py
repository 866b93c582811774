"""The Spark SQL building blocks of ``tcl``: SQL text, run-time value classes, numbers.

Strategy: ``tcl`` translates an EXTENDED_TCL AST into Spark SQL text; this
module holds what that translation is made of and nothing that walks the
tree. A translated subexpression is a :class:`_Val`: its run-time class
(``c``) and the fields that hold its value (see ``tcl``'s docstring for the
classes). The helpers fold constant conditions as they build the text, so a
constraint whose types are known statically yields a small plan. Everything
here is private to ``spark_bridge.tcl``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from cosnotify.filter import ast
from cosnotify.filter.paths import STRUCTURED_HEADER

_INT_KINDS = ("short", "long", "longlong", "ushort", "ulong", "ulonglong", "octet")
_FLOAT_KINDS = ("float", "double", "longdouble")  # longdouble: rows from before omniORBpy
_STRING_KINDS = ("char", "wchar", "string", "wstring")
_SE_MEMBERS = ("header", "filterable_data", "remainder_of_body")
_PROPERTIES = ("variable_header", "filterable_data")  # $name: the header first (§2.4.5)
_FIXED_COLUMNS = {names: column for column, names in STRUCTURED_HEADER.items()}
_EVENT_COLUMNS = ("domain_name", "type_name", "event_name", "variable_header",
                  "filterable_data", "remainder_of_body")
_ALIAS_DEPTH = 4
_INT_LIMIT = 10 ** 38  # decimal(38,0)
_DIV_LIMIT = 10 ** 31  # a decimal(38,0) / decimal(38,0) quotient keeps 32 integer digits
_DEC = "DECIMAL(38,0)"
_FIELDS = {"c": "STRING", "i": _DEC, "f": "DOUBLE", "s": "STRING", "b": "BOOLEAN",
           "eo": "BIGINT", "el": "ARRAY<STRING>"}
_ALL = frozenset("ifsbexu")  # what a property value may turn out to be
# No quote, backslash or backtick, and no "$": Spark substitutes ``${name}`` (a SQL
# conf, ``env:``, ``system:`` ...) in SQL text before parsing it, literals included
# (spark.sql.variable.substitute), so a "$" goes hex-encoded like any other risky text.
_SAFE = re.compile(r"[A-Za-z0-9 _.,:;!?#%&()*+/<=>@^|{}\[\]-]*\Z")

Sql = str  # a Spark SQL expression, as text
_BOUND_NAME = re.compile(r"`(__tcl\d+_\d+)`")  # a projected (bound) subexpression


class _Unsupported(Exception):
    """The constraint uses something the translation leaves to the UDF."""



# -- SQL text ------------------------------------------------------------------------------

def _q(text: str) -> Sql:
    """A SQL string literal for any text (hex-encoded unless plainly safe).

    Text that is not UTF-8 (a lone surrogate, which a TCL string literal may
    hold) has no Spark string: the constraint is left to the UDF."""
    if _SAFE.match(text):
        return f"'{text}'"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Unsupported("text with a lone surrogate (no Spark SQL string holds it) "
                           "is evaluated by the UDF") from exc
    return f"CAST(X'{data.hex()}' AS STRING)"


def _null(sql_type: str) -> Sql:
    return f"CAST(NULL AS {sql_type})"


def _and(*conds: Sql) -> Sql:
    if "FALSE" in conds:
        return "FALSE"
    kept = [c for c in conds if c != "TRUE"]
    return "TRUE" if not kept else kept[0] if len(kept) == 1 else "(" + " AND ".join(kept) + ")"


def _or(*conds: Sql) -> Sql:
    if "TRUE" in conds:
        return "TRUE"
    kept = [c for c in conds if c != "FALSE"]
    return "FALSE" if not kept else kept[0] if len(kept) == 1 else "(" + " OR ".join(kept) + ")"


def _not(cond: Sql) -> Sql:
    return {"TRUE": "FALSE", "FALSE": "TRUE"}.get(cond, f"(NOT {cond})")


def _case(cases: Sequence[tuple[Sql, Sql]], otherwise: Sql) -> Sql:
    """CASE WHEN ... with statically FALSE branches dropped and a TRUE one ending it."""
    kept = []
    for cond, value in cases:
        if cond == "FALSE":
            continue
        if cond == "TRUE":
            otherwise = value
            break
        kept.append(f"WHEN {cond} THEN {value}")
    if not kept:
        return otherwise
    return f"CASE {' '.join(kept)} ELSE {otherwise} END"


Parts = dict[str, Sql]  # a value's class "c" and fields, as SQL


def _flag(cond: Sql) -> Sql:
    """A boolean as a flag value."""
    return {"TRUE": "'T'", "FALSE": "'F'"}.get(cond, f"IF({cond}, 'T', 'F')")


_FX = "'x'"
_FU = "'u'"
_X: Parts = {"c": "'x'"}
_U: Parts = {"c": "'u'"}


@attrs.frozen
class _Val:
    """A translated subexpression and the classes it may turn out to have at run time.

    ``cls`` is its class as SQL and ``values`` its fields (each a projected
    column, a literal or an expression over them). A *flag* (the result of a
    comparison, ``and``/``or``/``not``, ``in``, ``exist`` or ``~``) is one
    string column instead: ``'T'``, ``'F'``, ``'x'`` or ``'u'``.
    """

    cls: Sql
    kinds: frozenset[str]
    values: tuple[tuple[str, Sql], ...] = ()
    bound: int = 0  # largest magnitude of its integer value, if it may have one
    label: str | None = None  # the identifier's name, if it may be a bare label
    flag: bool = False

    def c(self) -> Sql:
        if self.flag:
            return f"CASE WHEN {self.cls} IN ('T', 'F') THEN 'b' ELSE {self.cls} END"
        return self.cls

    def field(self, name: str) -> Sql:
        if self.flag:
            return f"({self.cls} = 'T')" if name == "b" else _null(_FIELDS[name])
        return dict(self.values).get(name, _null(_FIELDS[name]))

    def parts(self) -> Parts:
        if self.flag:
            return {"c": self.c(), "b": self.field("b")}
        return {"c": self.cls, **dict(self.values)}

    def as_flag(self) -> Sql:
        """This value as a flag; only for values that are b, x or u."""
        if self.flag:
            return self.cls
        if self.kinds == {"b"}:
            return _flag(self.field("b"))
        return _case([(_is(self, "b"), _flag(self.field("b")))], self.cls)

    def may(self, *kinds: str) -> bool:
        return any(k in self.kinds for k in kinds)

    def only(self, *kinds: str) -> bool:
        return self.kinds <= frozenset(kinds)


def _literal(kind: str, value: Sql, bound: int = 0) -> _Val:
    return _Val(f"'{kind}'", frozenset(kind), ((kind, value),), bound)


_ERROR = _Val("'x'", frozenset("x"))


def _is(val: _Val, kind: str) -> Sql:
    if kind not in val.kinds:
        return "FALSE"
    if val.kinds == {kind}:
        return "TRUE"
    if val.flag:
        return f"({val.cls} IN ('T', 'F'))" if kind == "b" else f"({val.cls} = '{kind}')"
    return f"({val.cls} = '{kind}')"


def _is_any(val: _Val, *kinds: str) -> Sql:
    return _or(*[_is(val, k) for k in kinds])


def _errors_first(*vals: _Val, flag: bool = True) -> list[tuple[Sql, Any]]:
    """Operands evaluate left to right: the first error or undecided one decides
    (as flags, or with ``flag=False`` as parts)."""
    cases: list[tuple[Sql, Any]] = []
    for val in vals:
        cases.append((_is(val, "x"), _FX if flag else _X))
        cases.append((_is(val, "u"), _FU if flag else _U))
    return cases


# -- numbers (§2.4.3: booleans and one-character strings are numeric) ----------------------

def _numeric_ok(val: _Val) -> Sql:
    return _or(_is_any(val, "i", "f", "b"),
               _and(_is(val, "s"), f"(char_length({val.field('s')}) = 1)"))


def _as_int(val: _Val) -> Sql:
    """The integer value of an int, boolean or one-character string."""
    return _case([(_is(val, "i"), val.field("i")),
                  (_is(val, "b"), f"CAST(CAST({val.field('b')} AS INT) AS {_DEC})"),
                  (_is(val, "s"), f"CAST(ascii({val.field('s')}) AS {_DEC})")],
                 _null(_DEC))


def _as_double(val: _Val) -> Sql:
    return _case([(_is(val, "f"), val.field("f"))], f"CAST({_as_int(val)} AS DOUBLE)")


def _numeric_bound(val: _Val) -> int:
    bound = val.bound if val.may("i") else 0
    if val.may("b"):
        bound = max(bound, 1)
    if val.may("s"):
        bound = max(bound, 0x10FFFF)
    return bound


def _numeric_possible(val: _Val) -> bool:
    return val.may("i", "f", "b", "s")


def _int_or_u(value: Sql) -> Parts:
    """An integer result; NULL (an overflow the bounds rule out) defers to the UDF."""
    return {"c": f"IF({value} IS NULL, 'u', 'i')", "i": value}


# -- comparisons -------------------------------------------------------------------------------

_OP = ast.BinaryOperator
_SQL_OP = {_OP.EQ: "=", _OP.NE: "!=", _OP.LT: "<", _OP.LE: "<=", _OP.GT: ">", _OP.GE: ">="}


def _cmp(op: ast.BinaryOperator, x: Sql, y: Sql) -> Sql:
    return f"({x} {_SQL_OP[op]} {y})"


def _float_cmp(op: ast.BinaryOperator, x: Sql, y: Sql) -> Sql:
    """Python's float comparison: NaN is unequal, unordered (Spark's NaN = NaN is true)."""
    nan = f"(isnan({x}) OR isnan({y}))"
    if op is _OP.NE:
        return f"({nan} OR {_cmp(op, x, y)})"
    return f"(NOT {nan} AND {_cmp(op, x, y)})"


_JSON_START = _q(r"^\s*\{")
# typetext's bare names, and longdouble (rows from before omniORBpy, read as a float).
_BASIC_NAMES = ("short", "long", "longlong", "ushort", "ulong", "ulonglong", "float", "double",
                "longdouble", "boolean", "char", "wchar", "octet", "any", "TypeCode",
                "Principal", "null", "void", "string", "wstring")


def _kind_of(text: Sql) -> Sql:
    """The kind of a TypeCode text (typetext.py): a basic kind's bare name, or the
    ``kind`` member of its JSON, wherever it stands and however the JSON is spaced.
    Any other text (a quoted name, which JSON also reads) is NULL: undecided, so
    the UDF decides it as ``decode_typecode`` reads it."""
    return (f"CASE WHEN {text} IN {_in_list(_BASIC_NAMES)} THEN {text} "
            f"WHEN regexp_like({text}, {_JSON_START}) THEN get_json_object({text}, '$.kind') "
            "END")


def _base_type(text: Sql) -> Sql:
    """``text`` without up to ``_ALIAS_DEPTH`` typedefs (``{"kind":"alias",...,"of":T}``)."""
    return (f"aggregate(sequence(1, {_ALIAS_DEPTH}), {text}, (__t, __k) -> "
            f"CASE WHEN {_kind_of('__t')} = 'alias' THEN get_json_object(__t, '$.of') "
            f"ELSE __t END)")


def _assoc_lookup(names: tuple[str, ...], rest: Sequence[ast.Step]
                  ) -> tuple[str, tuple[str, ...]] | None:
    """``$.filterable_data(n)`` / ``$.header.variable_header(n)``: (name, (column,))."""
    if len(rest) != 1 or not isinstance(rest[0], ast.Assoc):
        return None
    if names == ("filterable_data",):
        return rest[0].name, ("filterable_data",)
    if names == ("header", "variable_header"):
        return rest[0].name, ("variable_header",)
    return None


def _as_component(node: ast.Identifier | ast.Component) -> ast.Component:
    """A bare identifier resolves exactly like ``$ident`` (docs/filters.md decision 1)."""
    if isinstance(node, ast.Identifier):
        return ast.Component(node.name, node.escaped, ())
    return node


@attrs.frozen
class _Found:
    is_cell: Sql
    val: _Val


def _in_list(names: Sequence[str]) -> Sql:
    return "(" + ", ".join(f"'{n}'" for n in names) + ")"


def _is_simple(sql: Sql) -> bool:
    """A column reference or a literal: used as is rather than projected."""
    return bool(_SIMPLE_SQL.match(sql))


_SIMPLE_SQL = re.compile(r"`[^`]+`\Z|'[a-zA-Z]'\Z|CAST\('[^']*' AS [A-Z0-9(),]+\)\Z|TRUE\Z|FALSE\Z")


# -- bindings ---------------------------------------------------------------------------------

def _let(bindings: Sequence[tuple[str, Sql]], body: Sql, prefix: str) -> Sql:
    """``body`` with ``bindings`` let-bound, so each is written once and the text stays
    linear in the constraint (substituted, each use would repeat its whole subtree):
    a level of bindings (``_levels``) is one
    ``transform(array(named_struct(name, sql, ...)), v -> ...)[0]``, whose lambda
    variable ``v`` holds the level's values for the levels after it and ``body``."""
    groups = _levels(bindings)
    holder = {name: f"`{prefix}L{depth}`" for depth, group in enumerate(groups)
              for name, _ in group}

    def resolve(sql: Sql) -> Sql:
        return _BOUND_NAME.sub(lambda m: f"{holder[m[1]]}.`{m[1]}`" if m[1] in holder
                               else m[0], sql)

    sql = resolve(body)
    for depth in reversed(range(len(groups))):
        fields = ", ".join(f"'{name}', {resolve(value)}" for name, value in groups[depth])
        sql = f"transform(array(named_struct({fields})), `{prefix}L{depth}` -> {sql})[0]"
    return sql


def _levels(bindings: Sequence[tuple[str, Sql]]) -> list[list[tuple[str, Sql]]]:
    """``bindings`` grouped so each group only uses earlier groups."""
    level: dict[str, int] = {}
    groups: list[list[tuple[str, Sql]]] = []
    for name, sql in bindings:
        if name in level:
            continue  # shared with an earlier translation
        used = [level[n] for n in _BOUND_NAME.findall(sql) if n in level]
        depth = 1 + max(used, default=-1)
        level[name] = depth
        if depth == len(groups):
            groups.append([])
        groups[depth].append((name, sql))
    return groups
