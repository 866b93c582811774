"""The IDL lexer and grammar."""

from __future__ import annotations

import decimal
from pathlib import Path

import pytest

from cosnotify.idl import IDLError, model
from cosnotify.idl.lexer import IDLLexer
from cosnotify.idl.parser import _shared_parser, grammar_report
from tests.idl.helpers import decl, error, parse


def lex(text: str) -> list[tuple[str, object]]:
    return [(t.type, t.value) for t in IDLLexer().tokenize(text, "t.idl")]


class TestGrammar:
    """The PLY grammar itself."""

    def test_no_conflicts(self) -> None:
        """The LALR tables build with no shift/reduce or reduce/reduce conflicts."""
        messages = grammar_report()
        assert not [m for m in messages if "conflict" in m], messages

    def test_parser_built_once(self) -> None:
        """The shared parser is built once per process."""
        assert _shared_parser() is _shared_parser()


class TestLexer:
    """Tokens, literals and identifiers."""

    def test_escaped_identifier(self) -> None:
        """A leading underscore escapes an identifier, even a keyword."""
        assert lex("_EventType _module") == [("IDENTIFIER", "EventType"), ("IDENTIFIER", "module")]

    def test_keywords_are_case_sensitive(self) -> None:
        """An identifier equal to a keyword but for case is an error."""
        with pytest.raises(IDLError, match="collides with keyword 'module'"):
            lex("Module")

    def test_integer_literals(self) -> None:
        """Decimal, octal and hexadecimal integers."""
        assert [v for _, v in lex("42 017 0x1F 0")] == [42, 15, 31, 0]

    def test_float_and_fixed_literals(self) -> None:
        """Floating-point and fixed-point literals."""
        assert lex("1.5 2e3 .5 3.25d") == [
            ("FLOATING_PT_LITERAL", 1.5), ("FLOATING_PT_LITERAL", 2000.0),
            ("FLOATING_PT_LITERAL", 0.5), ("FIXED_PT_LITERAL", decimal.Decimal("3.25")),
        ]  # fmt: skip

    def test_char_and_string_escapes(self) -> None:
        """Escapes in character and string literals, and wide literals."""
        assert lex(r"'\n' '\x41' '\101' L'\u263A' " + r'"a\tb" L"w"') == [
            ("CHAR_LITERAL", "\n"), ("CHAR_LITERAL", "A"), ("CHAR_LITERAL", "A"),
            ("WCHAR_LITERAL", "\u263a"), ("STRING_LITERAL", "a\tb"), ("WSTRING_LITERAL", "w"),
        ]  # fmt: skip

    def test_scope_and_shift_tokens(self) -> None:
        """'::', '<<' and '>>' are single tokens."""
        assert [t for t, _ in lex(":: : << >> < >")] == ["SCOPE", "COLON", "LSHIFT", "RSHIFT",
                                                         "LT", "GT"]  # fmt: skip

    def test_token_locations(self) -> None:
        """Tokens carry 1-based line and column."""
        toks = IDLLexer().tokenize("a\n  bb", "f.idl", first_line=10)
        assert [(t.loc.line, t.loc.column) for t in toks] == [(10, 1), (11, 3)]


class TestConstructs:
    """Every IDL 2.x construct the compiler accepts."""

    def test_nested_and_reopened_modules(self, tmp_path: Path) -> None:
        """Modules nest and reopen; the reopened module sees earlier definitions."""
        spec = parse(tmp_path, "module A { module B { typedef long T; }; };\n"
                               "module A { typedef B::T U; };\n")  # fmt: skip
        assert decl(spec, "A::U").type == model.Named(decl(spec, "A::B::T"))

    def test_typedef_declarators(self, tmp_path: Path) -> None:
        """One typedef can declare several names, including multi-dimensional arrays."""
        spec = parse(tmp_path, "typedef long A, B[2][3], C[4];")
        assert decl(spec, "B").type == model.ArrayT(model.Primitive("long"), (2, 3))
        assert decl(spec, "C").type == model.ArrayT(model.Primitive("long"), (4,))

    def test_template_types(self, tmp_path: Path) -> None:
        """Bounded and unbounded sequences, strings, wstrings and fixed."""
        spec = parse(tmp_path, "typedef sequence<sequence<string<5>, 3> > S; typedef wstring W;"
                               " typedef fixed<9, 2> F;")  # fmt: skip
        assert decl(spec, "S").type == model.SequenceT(
            model.SequenceT(model.StringT(False, 5), 3), 0)
        assert decl(spec, "W").type == model.StringT(True, 0)
        assert decl(spec, "F").type == model.FixedT(9, 2)

    def test_interface_features(self, tmp_path: Path) -> None:
        """Attributes (several per line), oneway, modes, raises and context clauses."""
        spec = parse(tmp_path, """
            exception E {};
            interface I {
                readonly attribute long a, b;
                attribute string s;
                oneway void ping(in long n);
                long op(in long x, out string y, inout any z) raises (E) context ("c1", "c2");
            };""")
        iface = decl(spec, "I")
        assert isinstance(iface, model.Interface)
        assert [(a.name, a.readonly) for a in iface.attributes] == [
            ("a", True), ("b", True), ("s", False)]
        op = iface.operations[1]
        assert [(p.name, p.mode) for p in op.params] == [("x", "in"), ("y", "out"), ("z", "inout")]
        assert [e.name for e in op.raises] == ["E"] and op.contexts == ["c1", "c2"]
        assert iface.operations[0].oneway

    def test_forward_declarations(self, tmp_path: Path) -> None:
        """Forward-declared interfaces and structs (recursion through a sequence)."""
        spec = parse(tmp_path, "interface B; interface A { B get(); }; interface B { A get(); };"
                               " struct N; typedef sequence<N> Ns; struct N { Ns kids; };")
        assert isinstance(decl(spec, "B"), model.Interface)
        assert decl(spec, "N").defined

    def test_anonymous_recursive_sequence(self, tmp_path: Path) -> None:
        """A struct may contain a sequence of itself."""
        spec = parse(tmp_path, "struct Tree { sequence<Tree> kids; };")
        member = decl(spec, "Tree").members[0]
        assert member.type == model.SequenceT(model.Named(decl(spec, "Tree")), 0)

    def test_native_and_object(self, tmp_path: Path) -> None:
        """native declarations, Object, any and CORBA::TypeCode without orb.idl."""
        spec = parse(tmp_path, "native N; struct S { Object o; any a; CORBA::TypeCode t;"
                               " ::CORBA::TypeCode u; };"
                               " module CORBA { typedef TypeCode TC; };")  # fmt: skip
        types = [m.type for m in decl(spec, "S").members]
        assert types == [model.Primitive("Object"), model.Primitive("any"),
                         model.Primitive("TypeCode"), model.Primitive("TypeCode")]
        assert decl(spec, "CORBA::TC").type == model.Primitive("TypeCode")
        assert isinstance(decl(spec, "N"), model.Native)

    def test_empty_file(self, tmp_path: Path) -> None:
        """A file with no definitions (only comments) is valid."""
        assert list(parse(tmp_path, "// nothing here\n").walk()) == []

    def test_empty_module_is_a_syntax_error(self, tmp_path: Path) -> None:
        """IDL requires at least one definition in a module."""
        assert "syntax error" in error(tmp_path, "module M { };").message
