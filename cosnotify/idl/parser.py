"""LALR parser for OMG IDL 2.x (CORBA 2.6 section 3.4), built with PLY.

Strategy: a PLY class-based grammar with one ``p_`` method per production
(alternatives share a method only when their action is the same pass-through)
and an explicit precedence table for the binary constant-expression operators.
Actions only build `cosnotify.idl.ast` nodes; name resolution, constant
evaluation and every semantic check live in `cosnotify.idl.analyzer`.

The parser tables are built once, by `_shared_parser`, with
``debug=False, write_tables=False`` and an error log that raises if the
grammar has conflicts. Syntax errors raise `IDLError` at the offending token,
naming what was found and what the grammar expected there.

Grammar notes: valuetypes, ``abstract``/``local`` interfaces and
``ValueBase`` are not part of this grammar (their keywords are still
reserved, so they fail with a clear "unexpected keyword" error). As in the
IDL grammar, ``>>`` is one token: write ``sequence<sequence<long> >``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import ply.yacc

from cosnotify.idl import ast
from cosnotify.idl.errors import IDLError, Location
from cosnotify.idl.lexer import IDLLexer, describe_token
from cosnotify.idl.parser_rules import TypeRules, loc_of


class _TokenFeed:
    """The ``lexer`` PLY pulls tokens from: a prepared token list."""

    def __init__(self, tokens: Sequence[Any]) -> None:
        self._tokens = tokens
        self._pos = 0

    def token(self) -> Any:
        if self._pos >= len(self._tokens):
            return None
        tok = self._tokens[self._pos]
        self._pos += 1
        return tok


class GrammarError(Exception):
    """The grammar itself is broken (a bug in this module, not bad IDL)."""


class _GrammarLog:
    """PLY error log: keeps warnings, raises on errors and on any conflict."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.messages: list[str] = []

    def _record(self, msg: str, *args: object) -> None:
        text = msg % args if args else msg
        self.messages.append(text)
        if self.strict and "conflict" in text:
            raise GrammarError(text)

    def debug(self, msg: str, *args: object) -> None:
        pass

    info = debug

    def warning(self, msg: str, *args: object) -> None:
        self._record(msg, *args)

    def error(self, msg: str, *args: object) -> None:
        self._record(msg, *args)
        raise GrammarError(msg % args if args else msg)

    critical = error


class IDLParser(TypeRules):
    """The IDL grammar; call `parse` on the instance from `_shared_parser`."""

    tokens = IDLLexer.tokens
    start = "specification"
    precedence = (
        ("left", "PIPE"),
        ("left", "CARET"),
        ("left", "AMP"),
        ("left", "LSHIFT", "RSHIFT"),
        ("left", "PLUS", "MINUS"),
        ("left", "STAR", "SLASH", "PERCENT"),
    )

    def __init__(self, strict: bool = True) -> None:
        self.log = _GrammarLog(strict)
        self._yacc = ply.yacc.yacc(
            module=self, debug=False, write_tables=False, errorlog=self.log
        )
        self._eof = Location("<string>", 1, 1)
        self._lock = threading.Lock()

    def parse(self, tokens: Sequence[Any], eof: Location) -> ast.Specification:
        """Parse a preprocessed token stream; ``eof`` locates the end of input."""
        with self._lock:
            self._eof = eof
            result: ast.Specification = self._yacc.parse(lexer=_TokenFeed(tokens))
            return result

    # -- errors -----------------------------------------------------------------

    def p_error(self, tok: Any) -> None:
        state = self._yacc.statestack[-1] if self._yacc.statestack else 0
        expected = sorted(
            {describe_token(t) for t in self._yacc.action[state] if t != "$end"}
        )
        found = "end of input" if tok is None else describe_token(tok.type, tok.value)
        if tok is not None and tok.type in ("VALUETYPE", "ABSTRACT", "LOCAL", "CUSTOM"):
            found += " (valuetypes and abstract/local interfaces are not supported)"
        if tok is not None and tok.type == "VALUEBASE":
            found += " (ValueBase is not supported)"
        if 0 < len(expected) <= 8:
            wanted = expected[0] if len(expected) == 1 else (
                ", ".join(expected[:-1]) + " or " + expected[-1]
            )
            message = f"syntax error: expected {wanted}, found {found}"
        else:
            message = f"syntax error: unexpected {found}"
        raise IDLError.at(self._eof if tok is None else tok.loc, message)

    # -- specification and modules -------------------------------------------------

    def p_specification(self, p: Any) -> None:
        "specification : definitions"
        p[0] = ast.Specification(tuple(p[1]))

    def p_definitions_more(self, p: Any) -> None:
        "definitions : definitions definition"
        p[0] = p[1] + [p[2]]

    def p_definitions_empty(self, p: Any) -> None:
        "definitions :"
        p[0] = []

    def p_definitions_nonempty(self, p: Any) -> None:
        "definitions1 : definitions definition"
        p[0] = p[1] + [p[2]]

    def p_definition(self, p: Any) -> None:
        """definition : type_dcl SEMI
                      | const_dcl SEMI
                      | except_dcl SEMI
                      | interface SEMI
                      | module SEMI"""
        p[0] = p[1]

    def p_module(self, p: Any) -> None:
        "module : MODULE identifier LBRACE definitions1 RBRACE"
        name, tok = p[2]
        p[0] = ast.Module(
            name, tuple(p[4]), self._tok(p, 1).loc, tok.index, self._tok(p, 5).index
        )

    def p_identifier(self, p: Any) -> None:
        "identifier : IDENTIFIER"
        p[0] = (p[1], self._tok(p, 1))

    # -- interfaces ---------------------------------------------------------------

    def p_interface(self, p: Any) -> None:
        """interface : interface_dcl
                     | forward_dcl"""
        p[0] = p[1]

    def p_interface_dcl(self, p: Any) -> None:
        "interface_dcl : INTERFACE identifier inheritance LBRACE exports RBRACE"
        name, tok = p[2]
        p[0] = ast.Interface(
            name, tuple(p[3]), tuple(p[5]), self._tok(p, 1).loc, tok.index,
            self._tok(p, 6).index,
        )  # fmt: skip

    def p_forward_dcl(self, p: Any) -> None:
        "forward_dcl : INTERFACE identifier"
        name, tok = p[2]
        p[0] = ast.ForwardInterface(name, self._tok(p, 1).loc, tok.index)

    def p_inheritance(self, p: Any) -> None:
        "inheritance : COLON scoped_names"
        p[0] = p[2]

    def p_inheritance_none(self, p: Any) -> None:
        "inheritance :"
        p[0] = []

    def p_scoped_names_one(self, p: Any) -> None:
        "scoped_names : scoped_name"
        p[0] = [p[1]]

    def p_scoped_names_more(self, p: Any) -> None:
        "scoped_names : scoped_names COMMA scoped_name"
        p[0] = p[1] + [p[3]]

    def p_exports_more(self, p: Any) -> None:
        "exports : exports export"
        p[0] = p[1] + [p[2]]

    def p_exports_empty(self, p: Any) -> None:
        "exports :"
        p[0] = []

    def p_export(self, p: Any) -> None:
        """export : type_dcl SEMI
                  | const_dcl SEMI
                  | except_dcl SEMI
                  | attr_dcl SEMI
                  | op_dcl SEMI"""
        p[0] = p[1]

    # -- constants -----------------------------------------------------------------

    def p_const_dcl(self, p: Any) -> None:
        "const_dcl : CONST const_type identifier EQUALS const_exp"
        name, tok = p[3]
        p[0] = ast.Const(p[2], name, p[5], self._tok(p, 1).loc, tok.index)

    # -- type declarations ---------------------------------------------------------

    def p_type_dcl_typedef(self, p: Any) -> None:
        "type_dcl : TYPEDEF type_spec declarators"
        p[0] = ast.Typedef(p[2], tuple(p[3]), self._tok(p, 1).loc)

    def p_type_dcl_constr(self, p: Any) -> None:
        """type_dcl : struct_type
                    | union_type
                    | enum_type"""
        p[0] = p[1]

    def p_type_dcl_native(self, p: Any) -> None:
        "type_dcl : NATIVE identifier"
        name, tok = p[2]
        p[0] = ast.Native(name, self._tok(p, 1).loc, tok.index)

    def p_type_dcl_forward(self, p: Any) -> None:
        """type_dcl : STRUCT identifier
                    | UNION identifier"""
        name, tok = p[2]
        p[0] = ast.ForwardStruct(p[1], name, self._tok(p, 1).loc, tok.index)

    # -- struct, union, enum, exception -------------------------------------------------

    def p_struct_type(self, p: Any) -> None:
        "struct_type : STRUCT identifier LBRACE members1 RBRACE"
        name, tok = p[2]
        p[0] = ast.Struct(name, tuple(p[4]), self._tok(p, 1).loc, tok.index, self._tok(p, 5).index)

    def p_members_more(self, p: Any) -> None:
        "members : members member"
        p[0] = p[1] + [p[2]]

    def p_members_empty(self, p: Any) -> None:
        "members :"
        p[0] = []

    def p_members1(self, p: Any) -> None:
        "members1 : members member"
        p[0] = p[1] + [p[2]]

    def p_member(self, p: Any) -> None:
        "member : type_spec declarators SEMI"
        p[0] = ast.Member(p[1], tuple(p[2]), loc_of(p[1]))

    def p_union_type(self, p: Any) -> None:
        "union_type : UNION identifier SWITCH LPAREN switch_type_spec RPAREN LBRACE cases RBRACE"
        name, tok = p[2]
        p[0] = ast.Union_(
            name, p[5], tuple(p[8]), self._tok(p, 1).loc, tok.index, self._tok(p, 9).index
        )

    def p_switch_type_spec(self, p: Any) -> None:
        """switch_type_spec : integer_type
                            | char_type
                            | boolean_type
                            | octet_type
                            | enum_type
                            | scoped_name"""
        p[0] = p[1]

    def p_cases_one(self, p: Any) -> None:
        "cases : case"
        p[0] = [p[1]]

    def p_cases_more(self, p: Any) -> None:
        "cases : cases case"
        p[0] = p[1] + [p[2]]

    def p_case(self, p: Any) -> None:
        "case : case_labels type_spec declarator SEMI"
        p[0] = ast.Case(tuple(p[1]), p[2], p[3], loc_of(p[1][0]))

    def p_case_labels_one(self, p: Any) -> None:
        "case_labels : case_label"
        p[0] = [p[1]]

    def p_case_labels_more(self, p: Any) -> None:
        "case_labels : case_labels case_label"
        p[0] = p[1] + [p[2]]

    def p_case_label(self, p: Any) -> None:
        "case_label : CASE const_exp COLON"
        p[0] = p[2]

    def p_case_label_default(self, p: Any) -> None:
        "case_label : DEFAULT COLON"
        p[0] = ast.Default(self._tok(p, 1).loc)

    def p_enum_type(self, p: Any) -> None:
        "enum_type : ENUM identifier LBRACE enumerators RBRACE"
        name, tok = p[2]
        p[0] = ast.Enum(name, tuple(p[4]), self._tok(p, 1).loc, tok.index)

    def p_enumerators_one(self, p: Any) -> None:
        "enumerators : identifier"
        name, tok = p[1]
        p[0] = [ast.Enumerator(name, tok.loc, tok.index)]

    def p_enumerators_more(self, p: Any) -> None:
        "enumerators : enumerators COMMA identifier"
        name, tok = p[3]
        p[0] = p[1] + [ast.Enumerator(name, tok.loc, tok.index)]

    def p_except_dcl(self, p: Any) -> None:
        "except_dcl : EXCEPTION identifier LBRACE members RBRACE"
        name, tok = p[2]
        p[0] = ast.Exception_(
            name, tuple(p[4]), self._tok(p, 1).loc, tok.index, self._tok(p, 5).index
        )

    # -- operations and attributes ---------------------------------------------------

    def p_attr_dcl(self, p: Any) -> None:
        "attr_dcl : ATTRIBUTE param_type_spec simple_declarators"
        p[0] = ast.Attribute(False, p[2], tuple(p[3]), self._tok(p, 1).loc)

    def p_attr_dcl_readonly(self, p: Any) -> None:
        "attr_dcl : READONLY ATTRIBUTE param_type_spec simple_declarators"
        p[0] = ast.Attribute(True, p[3], tuple(p[4]), self._tok(p, 1).loc)

    def p_op_dcl(self, p: Any) -> None:
        "op_dcl : op_attribute op_type_spec identifier parameter_dcls raises_expr context_expr"
        name, tok = p[3]
        oneway, loc = p[1]
        if loc is None:
            loc = tok.loc if p[2] is None else loc_of(p[2])
        p[0] = ast.Operation(
            oneway, p[2], name, tuple(p[4]), tuple(p[5]), tuple(p[6]), loc, tok.index
        )

    def p_op_attribute_oneway(self, p: Any) -> None:
        "op_attribute : ONEWAY"
        p[0] = (True, self._tok(p, 1).loc)

    def p_op_attribute_none(self, p: Any) -> None:
        "op_attribute :"
        p[0] = (False, None)

    def p_op_type_spec(self, p: Any) -> None:
        "op_type_spec : param_type_spec"
        p[0] = p[1]

    def p_op_type_spec_void(self, p: Any) -> None:
        "op_type_spec : VOID"
        p[0] = None

    def p_parameter_dcls(self, p: Any) -> None:
        "parameter_dcls : LPAREN param_dcls RPAREN"
        p[0] = p[2]

    def p_parameter_dcls_empty(self, p: Any) -> None:
        "parameter_dcls : LPAREN RPAREN"
        p[0] = []

    def p_param_dcls_one(self, p: Any) -> None:
        "param_dcls : param_dcl"
        p[0] = [p[1]]

    def p_param_dcls_more(self, p: Any) -> None:
        "param_dcls : param_dcls COMMA param_dcl"
        p[0] = p[1] + [p[3]]

    def p_param_dcl(self, p: Any) -> None:
        """param_dcl : IN param_type_spec identifier
                     | OUT param_type_spec identifier
                     | INOUT param_type_spec identifier"""
        name, tok = p[3]
        p[0] = ast.Param(p[1], p[2], name, tok.loc)

    def p_param_type_spec(self, p: Any) -> None:
        """param_type_spec : base_type_spec
                           | string_type
                           | scoped_name"""
        p[0] = p[1]

    def p_raises_expr(self, p: Any) -> None:
        "raises_expr : RAISES LPAREN scoped_names RPAREN"
        p[0] = p[3]

    def p_raises_expr_none(self, p: Any) -> None:
        "raises_expr :"
        p[0] = []

    def p_context_expr(self, p: Any) -> None:
        "context_expr : CONTEXT LPAREN context_strings RPAREN"
        p[0] = p[3]

    def p_context_expr_none(self, p: Any) -> None:
        "context_expr :"
        p[0] = []

    def p_context_strings_one(self, p: Any) -> None:
        "context_strings : STRING_LITERAL"
        p[0] = [p[1]]

    def p_context_strings_more(self, p: Any) -> None:
        "context_strings : context_strings COMMA STRING_LITERAL"
        p[0] = p[1] + [p[3]]


@functools.cache
def _shared_parser() -> IDLParser:
    """The parser, with its tables built once per process."""
    return IDLParser(strict=True)


def parse_tokens(tokens: Sequence[Any], eof: Location) -> ast.Specification:
    """Parse a preprocessed token stream into an `ast.Specification`."""
    return _shared_parser().parse(tokens, eof)


def grammar_report() -> list[str]:
    """Build the grammar afresh and return PLY's warnings (for the conflict test)."""
    return IDLParser(strict=False).log.messages
