"""Grammar rules for constant expressions, type specs and declarators.

Strategy: half of the IDL grammar of `cosnotify.idl.parser`, split out to
keep modules small. `TypeRules` is a mixin: PLY collects the ``p_`` methods
of the parser instance, inherited ones included, so these productions are
part of the one LALR grammar built there. As in the parser, each action only
builds `cosnotify.idl.ast` nodes.
"""

from __future__ import annotations

from typing import Any

from cosnotify.idl import ast
from cosnotify.idl.errors import Location


def loc_of(node: Any) -> Location:
    """The location of an AST node."""
    loc: Location = node.loc
    return loc


class TypeRules:
    """Productions for expressions, literals, types and declarators."""

    @staticmethod
    def _tok(p: Any, n: int) -> Any:
        return p.slice[n]

    # -- constants and expressions ---------------------------------------------------

    def p_const_type(self, p: Any) -> None:
        """const_type : integer_type
                      | char_type
                      | boolean_type
                      | floating_pt_type
                      | octet_type
                      | string_type
                      | scoped_name"""
        p[0] = p[1]

    def p_const_type_fixed(self, p: Any) -> None:
        "const_type : FIXED"
        p[0] = ast.FixedType(None, None, self._tok(p, 1).loc)

    def p_const_exp_binary(self, p: Any) -> None:
        """const_exp : const_exp PIPE const_exp
                     | const_exp CARET const_exp
                     | const_exp AMP const_exp
                     | const_exp LSHIFT const_exp
                     | const_exp RSHIFT const_exp
                     | const_exp PLUS const_exp
                     | const_exp MINUS const_exp
                     | const_exp STAR const_exp
                     | const_exp SLASH const_exp
                     | const_exp PERCENT const_exp"""
        p[0] = ast.BinaryOp(p[2], p[1], p[3], self._tok(p, 2).loc)

    def p_const_exp_unary(self, p: Any) -> None:
        "const_exp : unary_expr"
        p[0] = p[1]

    def p_unary_expr_op(self, p: Any) -> None:
        """unary_expr : MINUS primary_expr
                      | PLUS primary_expr
                      | TILDE primary_expr"""
        p[0] = ast.UnaryOp(p[1], p[2], self._tok(p, 1).loc)

    def p_unary_expr_primary(self, p: Any) -> None:
        "unary_expr : primary_expr"
        p[0] = p[1]

    def p_primary_expr_name(self, p: Any) -> None:
        "primary_expr : scoped_name"
        p[0] = ast.NameRef(p[1], p[1].loc)

    def p_primary_expr_paren(self, p: Any) -> None:
        "primary_expr : LPAREN const_exp RPAREN"
        p[0] = p[2]

    def p_primary_expr_literal(self, p: Any) -> None:
        "primary_expr : literal"
        p[0] = p[1]

    def p_literal_simple(self, p: Any) -> None:
        """literal : INTEGER_LITERAL
                   | FLOATING_PT_LITERAL
                   | FIXED_PT_LITERAL
                   | CHAR_LITERAL
                   | WCHAR_LITERAL"""
        tok = self._tok(p, 1)
        kind = tok.type.split("_")[0].lower()
        kind = {"floating": "float"}.get(kind, kind)
        p[0] = ast.Literal(kind, p[1], tok.loc)

    def p_literal_string(self, p: Any) -> None:
        "literal : string_literals"
        text, loc = p[1]
        p[0] = ast.Literal("string", text, loc)

    def p_literal_wstring(self, p: Any) -> None:
        "literal : wstring_literals"
        text, loc = p[1]
        p[0] = ast.Literal("wstring", text, loc)

    def p_literal_true(self, p: Any) -> None:
        "literal : TRUE"
        p[0] = ast.Literal("boolean", True, self._tok(p, 1).loc)

    def p_literal_false(self, p: Any) -> None:
        "literal : FALSE"
        p[0] = ast.Literal("boolean", False, self._tok(p, 1).loc)

    def p_string_literals_one(self, p: Any) -> None:
        "string_literals : STRING_LITERAL"
        p[0] = (p[1], self._tok(p, 1).loc)

    def p_string_literals_more(self, p: Any) -> None:
        "string_literals : string_literals STRING_LITERAL"
        p[0] = (p[1][0] + p[2], p[1][1])

    def p_wstring_literals_one(self, p: Any) -> None:
        "wstring_literals : WSTRING_LITERAL"
        p[0] = (p[1], self._tok(p, 1).loc)

    def p_wstring_literals_more(self, p: Any) -> None:
        "wstring_literals : wstring_literals WSTRING_LITERAL"
        p[0] = (p[1][0] + p[2], p[1][1])

    # -- types and declarators -------------------------------------------------------

    def p_type_spec(self, p: Any) -> None:
        """type_spec : simple_type_spec
                     | struct_type
                     | union_type
                     | enum_type"""
        p[0] = p[1]

    def p_simple_type_spec(self, p: Any) -> None:
        """simple_type_spec : base_type_spec
                            | sequence_type
                            | string_type
                            | fixed_pt_type
                            | scoped_name"""
        p[0] = p[1]

    def p_base_type_spec(self, p: Any) -> None:
        """base_type_spec : floating_pt_type
                          | integer_type
                          | char_type
                          | boolean_type
                          | octet_type"""
        p[0] = p[1]

    def p_base_type_keyword(self, p: Any) -> None:
        """base_type_spec : ANY
                          | OBJECT"""
        p[0] = ast.BaseType(p[1], self._tok(p, 1).loc)

    def p_floating_pt_type(self, p: Any) -> None:
        """floating_pt_type : FLOAT
                            | DOUBLE"""
        p[0] = ast.BaseType(p[1], self._tok(p, 1).loc)

    def p_floating_pt_type_long(self, p: Any) -> None:
        "floating_pt_type : LONG DOUBLE"
        p[0] = ast.BaseType("long double", self._tok(p, 1).loc)

    def p_integer_type_signed(self, p: Any) -> None:
        """integer_type : SHORT
                        | LONG"""
        p[0] = ast.BaseType(p[1], self._tok(p, 1).loc)

    def p_integer_type_longlong(self, p: Any) -> None:
        "integer_type : LONG LONG"
        p[0] = ast.BaseType("long long", self._tok(p, 1).loc)

    def p_integer_type_unsigned(self, p: Any) -> None:
        """integer_type : UNSIGNED SHORT
                        | UNSIGNED LONG"""
        p[0] = ast.BaseType(f"unsigned {p[2]}", self._tok(p, 1).loc)

    def p_integer_type_unsigned_longlong(self, p: Any) -> None:
        "integer_type : UNSIGNED LONG LONG"
        p[0] = ast.BaseType("unsigned long long", self._tok(p, 1).loc)

    def p_char_type(self, p: Any) -> None:
        """char_type : CHAR
                     | WCHAR"""
        p[0] = ast.BaseType(p[1], self._tok(p, 1).loc)

    def p_boolean_type(self, p: Any) -> None:
        "boolean_type : BOOLEAN"
        p[0] = ast.BaseType("boolean", self._tok(p, 1).loc)

    def p_octet_type(self, p: Any) -> None:
        "octet_type : OCTET"
        p[0] = ast.BaseType("octet", self._tok(p, 1).loc)

    def p_string_type(self, p: Any) -> None:
        """string_type : STRING
                       | WSTRING"""
        p[0] = ast.StringType(p[1] == "wstring", None, self._tok(p, 1).loc)

    def p_string_type_bounded(self, p: Any) -> None:
        """string_type : STRING LT const_exp GT
                       | WSTRING LT const_exp GT"""
        p[0] = ast.StringType(p[1] == "wstring", p[3], self._tok(p, 1).loc)

    def p_sequence_type(self, p: Any) -> None:
        "sequence_type : SEQUENCE LT simple_type_spec GT"
        p[0] = ast.SequenceType(p[3], None, self._tok(p, 1).loc)

    def p_sequence_type_bounded(self, p: Any) -> None:
        "sequence_type : SEQUENCE LT simple_type_spec COMMA const_exp GT"
        p[0] = ast.SequenceType(p[3], p[5], self._tok(p, 1).loc)

    def p_fixed_pt_type(self, p: Any) -> None:
        "fixed_pt_type : FIXED LT const_exp COMMA const_exp GT"
        p[0] = ast.FixedType(p[3], p[5], self._tok(p, 1).loc)

    def p_declarators_one(self, p: Any) -> None:
        "declarators : declarator"
        p[0] = [p[1]]

    def p_declarators_more(self, p: Any) -> None:
        "declarators : declarators COMMA declarator"
        p[0] = p[1] + [p[3]]

    def p_declarator(self, p: Any) -> None:
        "declarator : identifier array_sizes"
        name, tok = p[1]
        p[0] = ast.Declarator(name, tuple(p[2]), tok.loc, tok.index)

    def p_array_sizes_more(self, p: Any) -> None:
        "array_sizes : array_sizes LBRACKET const_exp RBRACKET"
        p[0] = p[1] + [p[3]]

    def p_array_sizes_empty(self, p: Any) -> None:
        "array_sizes :"
        p[0] = []

    def p_simple_declarators_one(self, p: Any) -> None:
        "simple_declarators : identifier"
        name, tok = p[1]
        p[0] = [ast.Declarator(name, (), tok.loc, tok.index)]

    def p_simple_declarators_more(self, p: Any) -> None:
        "simple_declarators : simple_declarators COMMA identifier"
        name, tok = p[3]
        p[0] = p[1] + [ast.Declarator(name, (), tok.loc, tok.index)]

    def p_scoped_name_relative(self, p: Any) -> None:
        "scoped_name : IDENTIFIER"
        p[0] = ast.ScopedName((p[1],), False, self._tok(p, 1).loc)

    def p_scoped_name_absolute(self, p: Any) -> None:
        "scoped_name : SCOPE IDENTIFIER"
        p[0] = ast.ScopedName((p[2],), True, self._tok(p, 1).loc)

    def p_scoped_name_nested(self, p: Any) -> None:
        "scoped_name : scoped_name SCOPE IDENTIFIER"
        p[0] = ast.ScopedName((*p[1].parts, p[3]), p[1].absolute, p[1].loc)
