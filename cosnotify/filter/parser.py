"""Parser for EXTENDED_TCL, the default filter constraint grammar (Notification §2.4).

Strategy: a PLY yacc class with one ``p_`` function per production. The
expression layer is one ambiguous nonterminal ``expr`` whose binary
operators are ordered by the ``precedence`` table, which encodes the Trading
B.2 stratification (``bool_or`` ... ``term``): loosest ``or``, then ``and``,
the comparisons (non-associative: they do not chain), ``in``
(non-associative), ``~`` (non-associative), ``+ -``, ``* /``. The prefix
forms take a ``<factor>`` exactly as the BNF says (``not <factor>``,
``- <Number>``, ``exist``, ``default``), so their binding is structural and
needs no table entry. ``in`` is parsed as ``expr IN expr`` so that the table
decides where its right operand ends; the action then insists the operand is
an identifier or a ``$`` component, the only forms Trading B.2 and §2.4.8
allow, which also rejects ``a in x + 1`` as the BNF does.

Actions only build AST nodes (``cosnotify.filter.ast``) and reject the few
things a context-free rule cannot say: an implicit member that is not last,
an ``in`` operand of the wrong form, a tree deeper than ``ast.MAX_DEPTH``.
``p_error`` raises ``ConstraintSyntaxError``; nothing is printed and there is
no error recovery.

The tables are built once, by ``_default_parser`` (cached), with
``debug=False, write_tables=False`` and a ``RaisingLogger``. PLY 3.11 reports
shift/reduce and reduce/reduce conflicts only when ``debug`` is true, so
``build_parser(debug=True)`` exists for the test that asserts the grammar has
no conflicts; it sends the grammar listing to a null log, never to a file.
PLY's LR driver keeps per-parse state on the parser object, so parses are
serialised with a lock; constraints are parsed when they are added, not per
event, so this costs nothing that matters.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final, TypeVar

from cosnotify.filter import ast
from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.lexer import ConstraintLexer, TokenStream, digits_value, shorten
from cosnotify.filter.plytools import SerialParser, build_tables

__all__ = ["ConstraintParser", "build_parser", "parse_constraint"]

_IMPLICIT: Final = {item.value: item for item in ast.Implicit}
_COMPARISONS: Final = {"EQ": ast.BinaryOperator.EQ, "NE": ast.BinaryOperator.NE,
                       "LT": ast.BinaryOperator.LT, "LE": ast.BinaryOperator.LE,
                       "GT": ast.BinaryOperator.GT, "GE": ast.BinaryOperator.GE}
_NON_CHAINING: Final = {**{name: "comparisons" for name in _COMPARISONS},
                        "IN": "'in' expressions", "TWIDDLE": "'~' expressions"}
_DOLLAR_KEYWORD: Final = re.compile(
    r"\$({})(?![A-Za-z0-9_])".format("|".join(ConstraintLexer.reserved)))
_PUNCTUATION: Final = {"DOLLAR": "$", "DOT": ".", "LPAREN": "(", "RPAREN": ")",
                       "LBRACKET": "[", "RBRACKET": "]", "PLUS": "+", "MINUS": "-",
                       "TIMES": "*", "DIVIDE": "/", "TWIDDLE": "~", "EQ": "==", "NE": "!=",
                       "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


class ConstraintParser:
    """PLY grammar for EXTENDED_TCL: Trading B.2 plus the §2.4.8 extensions."""

    tokens = ConstraintLexer.tokens
    start = "constraint"

    # Loosest first. Trading B.2: <bool_or>, <bool_and>, <bool_compare>,
    # <expr_in>, <expr_twiddle>, <expr>, <term>; see docs/filters.md.
    precedence: tuple[tuple[str, ...], ...] = (
        ("left", "OR"),
        ("left", "AND"),
        ("nonassoc", "EQ", "NE", "LT", "LE", "GT", "GE"),
        ("nonassoc", "IN"),
        ("nonassoc", "TWIDDLE"),
        ("left", "PLUS", "MINUS"),
        ("left", "TIMES", "DIVIDE"),
    )

    def __init__(self) -> None:
        self.lr: Any = None  # the yacc.LRParser, set by build_parser (for p_error)
        self._text = ""  # the constraint being parsed (set under _Parser.lock)

    # -- constraint --------------------------------------------------------------

    def p_constraint_empty(self, p: Any) -> None:
        "constraint :"
        # An empty constraint matches every event (Trading B.2 <constraint>).
        p[0] = ast.BooleanLiteral(True)

    def p_constraint_expr(self, p: Any) -> None:
        "constraint : expr"
        p[0] = _node(p[1])

    # -- boolean and binary operators -------------------------------------------------

    def p_expr_or(self, p: Any) -> None:
        "expr : expr OR expr"
        p[0] = _extend_chain(p, ast.Or)

    def p_expr_and(self, p: Any) -> None:
        "expr : expr AND expr"
        p[0] = _extend_chain(p, ast.And)

    def p_expr_eq(self, p: Any) -> None:
        "expr : expr EQ expr"
        p[0] = _binary(p, ast.BinaryOperator.EQ)

    def p_expr_ne(self, p: Any) -> None:
        "expr : expr NE expr"
        p[0] = _binary(p, ast.BinaryOperator.NE)

    def p_expr_lt(self, p: Any) -> None:
        "expr : expr LT expr"
        p[0] = _binary(p, ast.BinaryOperator.LT)

    def p_expr_le(self, p: Any) -> None:
        "expr : expr LE expr"
        p[0] = _binary(p, ast.BinaryOperator.LE)

    def p_expr_gt(self, p: Any) -> None:
        "expr : expr GT expr"
        p[0] = _binary(p, ast.BinaryOperator.GT)

    def p_expr_ge(self, p: Any) -> None:
        "expr : expr GE expr"
        p[0] = _binary(p, ast.BinaryOperator.GE)

    def p_expr_in(self, p: Any) -> None:
        "expr : expr IN expr"
        # Trading B.2: <expr_twiddle> in <Ident>; §2.4.8: ... in $ <Component>.
        collection = _node(p[3])
        position = p.lexpos(3)
        if (not isinstance(collection, (ast.Identifier, ast.Component))
                or p.lexer.text[position] == "("):
            raise ConstraintSyntaxError(
                "the right operand of 'in' must be an identifier or a $ component "
                "naming a sequence (Trading B.2 <expr_in>, §2.4.8)", p.lexer.text, position)
        p[0] = _deep_check(p, 2, ast.In(_node(p[1]), collection))

    def p_expr_twiddle(self, p: Any) -> None:
        "expr : expr TWIDDLE expr"
        p[0] = _binary(p, ast.BinaryOperator.TWIDDLE)

    def p_expr_add(self, p: Any) -> None:
        "expr : expr PLUS expr"
        p[0] = _binary(p, ast.BinaryOperator.ADD)

    def p_expr_sub(self, p: Any) -> None:
        "expr : expr MINUS expr"
        p[0] = _binary(p, ast.BinaryOperator.SUB)

    def p_expr_mul(self, p: Any) -> None:
        "expr : expr TIMES expr"
        p[0] = _binary(p, ast.BinaryOperator.MUL)

    def p_expr_div(self, p: Any) -> None:
        "expr : expr DIVIDE expr"
        p[0] = _binary(p, ast.BinaryOperator.DIV)

    def p_expr_not(self, p: Any) -> None:
        "expr : NOT factor"
        # Trading B.2 <factor_not>: 'not' applies to a <factor>, so 'not not x'
        # needs parentheses.
        p[0] = _deep_check(p, 1, ast.Not(p[2]))

    def p_expr_factor(self, p: Any) -> None:
        "expr : factor"
        p[0] = p[1]

    # -- factors (Trading B.2 <factor>, extended by §2.4.8) ------------------------------

    def p_factor_group(self, p: Any) -> None:
        "factor : LPAREN expr RPAREN"
        p[0] = _node(p[2])

    def p_factor_number(self, p: Any) -> None:
        "factor : number"
        p[0] = p[1]

    def p_factor_plus_number(self, p: Any) -> None:
        "factor : PLUS number"
        # §2.4.1: a leading plus sign is explicitly permitted.
        p[0] = p[2]

    def p_factor_minus_number(self, p: Any) -> None:
        "factor : MINUS number"
        p[0] = type(p[2])(-p[2].value)

    def p_factor_string(self, p: Any) -> None:
        "factor : STRING"
        p[0] = ast.StringLiteral(p[1])

    def p_factor_true(self, p: Any) -> None:
        "factor : TRUE"
        p[0] = ast.BooleanLiteral(True)

    def p_factor_false(self, p: Any) -> None:
        "factor : FALSE"
        p[0] = ast.BooleanLiteral(False)

    def p_factor_identifier(self, p: Any) -> None:
        "factor : ident"
        p[0] = ast.Identifier(*p[1])

    def p_factor_exist_identifier(self, p: Any) -> None:
        "factor : EXIST ident"
        p[0] = ast.Exist(ast.Identifier(*p[2]))

    def p_factor_exist_component(self, p: Any) -> None:
        "factor : EXIST component"
        p[0] = ast.Exist(p[2])

    def p_factor_default(self, p: Any) -> None:
        "factor : DEFAULT component"
        p[0] = ast.Default(p[2])

    def p_factor_component(self, p: Any) -> None:
        "factor : component"
        p[0] = p[1]

    def p_number_integer(self, p: Any) -> None:
        "number : INTEGER"
        p[0] = ast.IntegerLiteral(p[1])

    def p_number_float(self, p: Any) -> None:
        "number : FLOAT"
        p[0] = ast.FloatLiteral(p[1])

    def p_number_dot_digits(self, p: Any) -> None:
        "number : DOT_DIGITS"
        p[0] = ast.FloatLiteral(float("." + p[1]))

    def p_ident_plain(self, p: Any) -> None:
        "ident : IDENT"
        p[0] = (p[1], False)

    def p_ident_escaped(self, p: Any) -> None:
        "ident : ESCAPED_IDENT"
        # (name, escaped): a bare '\curtime' is '$\curtime', not the reserved
        # variable (§2.4.2; docs/filters.md decisions 1 and 16).
        p[0] = (p[1], True)

    # -- components (§2.4.8 <Component>) -------------------------------------------

    def p_component_event(self, p: Any) -> None:
        "component : DOLLAR path"
        p[0] = ast.Component(None, False, p[2])

    def p_component_variable(self, p: Any) -> None:
        "component : DOLLAR IDENT path"
        # <Ident> <CompExt>: a run-time variable (§2.4.5).
        p[0] = ast.Component(p[2], False, p[3])

    def p_component_escaped_variable(self, p: Any) -> None:
        "component : DOLLAR ESCAPED_IDENT path"
        # '$\curtime': a reserved variable name, escaped (§2.4.2).
        p[0] = ast.Component(p[2], True, p[3])

    def p_component_backslash_dollar(self, p: Any) -> None:
        "component : ESCAPED_VARIABLE path"
        # '\$curtime', the spelling of the §2.4.2 example.
        p[0] = ast.Component(p[1], True, p[2])

    def p_path_empty(self, p: Any) -> None:
        "path :"
        # A list, extended in place: linear in the number of steps. The
        # Component node converts it to a tuple.
        p[0] = []

    def p_path_step(self, p: Any) -> None:
        "path : path step"
        steps = p[1]
        if steps and isinstance(steps[-1], ast.ImplicitMember):
            raise ConstraintSyntaxError(
                f"{steps[-1].kind.value} must be the last part of a component (§2.4.8 "
                "<CompDot>)", p.lexer.text, p.lexpos(2))
        steps.append(p[2])
        p[0] = steps

    def p_step_member(self, p: Any) -> None:
        "step : DOT IDENT"
        implicit = _IMPLICIT.get(p[2])
        p[0] = ast.ImplicitMember(implicit) if implicit else ast.Member(p[2])

    def p_step_escaped_member(self, p: Any) -> None:
        "step : DOT ESCAPED_IDENT"
        # '.\_d' is a member named _d, not the discriminator.
        p[0] = ast.Member(p[2])

    def p_step_position(self, p: Any) -> None:
        "step : DOT INTEGER"
        p[0] = ast.Position(p[2])

    def p_step_dot_digits(self, p: Any) -> None:
        "step : DOT_DIGITS"
        p[0] = ast.Position(_unsigned(p, 1, p[1]))

    def p_step_union_arm(self, p: Any) -> None:
        "step : DOT LPAREN union_label RPAREN"
        p[0] = ast.UnionArm(p[3])

    def p_step_union_enum_label(self, p: Any) -> None:
        "step : DOT LPAREN ident RPAREN"
        # omniNotify's extension: an enumerator of the discriminator's enum as the
        # case label (docs/filters.md, "omniNotify extension"). A bare identifier,
        # so it cannot be confused with the <String> label .('x').
        p[0] = ast.UnionEnumLabel(p[3][0])

    def p_step_index(self, p: Any) -> None:
        "step : LBRACKET INTEGER RBRACKET"
        p[0] = ast.Index(p[2])

    def p_step_assoc(self, p: Any) -> None:
        "step : LPAREN ident RPAREN"
        p[0] = ast.Assoc(p[2][0])

    def p_union_label_default(self, p: Any) -> None:
        "union_label :"
        p[0] = None

    def p_union_label_integer(self, p: Any) -> None:
        "union_label : INTEGER"
        p[0] = p[1]

    def p_union_label_plus(self, p: Any) -> None:
        "union_label : PLUS INTEGER"
        p[0] = p[2]

    def p_union_label_minus(self, p: Any) -> None:
        "union_label : MINUS INTEGER"
        p[0] = -p[2]

    def p_union_label_string(self, p: Any) -> None:
        "union_label : STRING"
        p[0] = p[1]

    # -- errors -------------------------------------------------------------------------

    def p_error(self, tok: Any) -> None:
        stack = self.lr.symstack if self.lr is not None else []
        previous = stack[-1].type if stack else None
        text = self._text
        position = len(text) if tok is None else tok.lexpos
        if tok is None:
            message, hint = "unexpected end of constraint", None
        else:
            message = f"unexpected {_describe(tok, text)}"
            hint = _hint(tok.type, previous, stack[-2].type if len(stack) > 1 else None)
        if hint is None and (glued := _DOLLAR_KEYWORD.search(text, 0, position + 1)):
            hint = (f"'{glued.group()}' reads as '$' then the keyword '{glued.group(1)}'; "
                    f"a run-time variable that spells a keyword is escaped: "
                    f"$\\{glued.group(1)} (§2.4.1)")
        raise ConstraintSyntaxError(f"{message}: {hint}" if hint else message, text, position)


def _describe(tok: Any, text: str) -> str:
    # Shortened (a string token may be the whole constraint), and with lone
    # surrogates escaped so the message always encodes as UTF-8.
    source = shorten(text[tok.lexpos:getattr(tok, "end", tok.lexpos + 1)], 40)
    source = source.encode("utf-8", "backslashreplace").decode("utf-8")
    if tok.type in ConstraintLexer.reserved.values():
        return f"keyword {source!r}"
    if tok.type in ("IDENT", "ESCAPED_IDENT"):
        return f"identifier {source!r}"
    if tok.type in ("INTEGER", "FLOAT", "DOT_DIGITS"):
        return f"number {source}"
    if tok.type == "STRING":
        return f"string {source}"
    if tok.type == "ESCAPED_VARIABLE":
        return f"component {source}"
    return f"{_PUNCTUATION.get(tok.type, tok.type)!r}"


def _hint(token: str, previous: str | None, before_previous: str | None) -> str | None:
    """A suggestion for the commonest mistakes, from the token and the parse stack."""
    if token in _NON_CHAINING and previous == "expr" and before_previous in _NON_CHAINING:
        return (f"{_NON_CHAINING[before_previous]} do not chain; combine them with 'and' "
                "or use parentheses")
    if previous in ("IDENT", "ESCAPED_IDENT") and token in (
            "DOT", "DOT_DIGITS", "LBRACKET", "LPAREN"):
        return "a component path starts with '$', as in $.name.member or $name(key)"
    if previous == "DOLLAR" and token in ("INTEGER", "FLOAT"):
        return "positional notation needs a dot, as in $.1 (§2.4.6)"
    if previous == "LPAREN" and before_previous == "DOT":
        if token in ConstraintLexer.reserved.values() and token not in ("TRUE", "FALSE"):
            return ("an enumerator name that spells a keyword is escaped, as in .(\\and) "
                    "(§2.4.1)")
        return ("a union label is empty, an integer or a string (§2.4.8 <UnionVal>), "
                "or an enumerator name (omniNotify); for a name-value list drop the dot: "
                "$.list(name)")
    if previous in ("MINUS", "PLUS") and token not in ("INTEGER", "FLOAT", "DOT_DIGITS"):
        return "a sign applies only to a number (Trading B.2 <factor>); write -1 * (...)"
    if previous == "NOT" and token == "NOT":
        return "'not' applies to a factor; write not (not ...)"
    return None


class _Chain:
    """An ``or``/``and`` chain while it is being parsed.

    ``a or b or c`` reduces left to right; building a new n-ary node at each
    step would copy (and validate) the operands so far every time, quadratic
    in the chain length. The chain collects operands in a list instead and
    becomes one node when another production uses it (``_node``).
    """

    __slots__ = ("depth", "kind", "node", "operands")

    def __init__(self, kind: type[ast.Or | ast.And], first: ast.Expression) -> None:
        self.kind = kind
        self.operands: list[ast.Expression] = []
        self.depth = 0  # of the deepest operand
        self.node: ast.Or | ast.And | None = None
        self.add(first)

    def add(self, operand: ast.Expression) -> None:
        if isinstance(operand, self.kind):
            self.operands.extend(operand.operands)
        else:
            self.operands.append(operand)
        self.depth = max(self.depth, operand.depth)

    def finish(self) -> ast.Or | ast.And:
        if self.node is None:
            self.node = self.kind(self.operands)
        return self.node


def _node(value: Any) -> ast.Expression:
    """The AST node for a parsed ``expr`` (a finished chain, or the node itself)."""
    if type(value) is _Chain:
        return value.finish()
    node: ast.Expression = value
    return node


def _extend_chain(p: Any, kind: type[ast.Or | ast.And]) -> _Chain:
    """``p[1] <kind> p[3]``: extend the chain ``p[1]`` is, or start one (linear time)."""
    left = p[1]
    if type(left) is not _Chain or left.kind is not kind or left.node is not None:
        left = _Chain(kind, _node(left))
    left.add(_node(p[3]))
    if left.depth + 1 > ast.MAX_DEPTH:
        raise ConstraintSyntaxError(
            f"constraint nests more than {ast.MAX_DEPTH} levels deep", p.lexer.text,
            p.lexpos(2))
    return left


def _binary(p: Any, operator: ast.BinaryOperator) -> ast.BinaryOp:
    return _deep_check(p, 2, ast.BinaryOp(operator, _node(p[1]), _node(p[3])))


_N = TypeVar("_N", bound=ast.Node)


def _deep_check(p: Any, index: int, node: _N) -> _N:
    """``node``, unless it makes the tree deeper than ``ast.MAX_DEPTH``."""
    if node.depth > ast.MAX_DEPTH:
        raise ConstraintSyntaxError(
            f"constraint nests more than {ast.MAX_DEPTH} levels deep", p.lexer.text,
            p.lexpos(index))
    return node


def _unsigned(p: Any, index: int, digits: str) -> int:
    value = digits_value(digits)
    if value is None:
        raise ConstraintSyntaxError(f"position {shorten(digits)} does not fit in 64 bits",
                                    p.lexer.text, p.lexpos(index))
    return value


def build_parser(*, debug: bool = False, errorlog: Any = None) -> ConstraintParser:
    """Build the PLY tables for a fresh ``ConstraintParser``.

    With ``debug=True`` PLY also reports conflicts to ``errorlog`` (the grammar
    listing goes to a null log). ``errorlog`` defaults to ``RaisingLogger``.
    """
    made: ConstraintParser = build_tables(ConstraintParser(), "constraint", debug=debug,
                                          errorlog=errorlog)
    return made


@functools.lru_cache(maxsize=1)
def _default_parser() -> SerialParser:
    return SerialParser(build_parser(), TokenStream)


def parse_constraint(text: str) -> ast.Expression:
    """Parse one EXTENDED_TCL constraint into an AST.

    The empty (or all-whitespace) constraint parses to ``BooleanLiteral(True)``.
    Raises ConstraintSyntaxError, with position, line, column and a caret
    excerpt, for any text that is not a valid constraint or is longer than
    ``ast.MAX_LENGTH`` characters.
    """
    if not isinstance(text, str):
        raise TypeError(f"constraint must be str, not {type(text).__name__}")
    if len(text) > ast.MAX_LENGTH:
        raise ConstraintSyntaxError(
            f"constraint is {len(text)} characters long; the limit is {ast.MAX_LENGTH}",
            text, ast.MAX_LENGTH)
    result = _default_parser().parse(text)
    assert isinstance(result, ast.EXPRESSION_TYPES)
    return result
