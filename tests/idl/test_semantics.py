"""Semantic analysis: name lookup, constants, unions, interfaces, repository ids."""

from __future__ import annotations

import decimal
from pathlib import Path

import pytest

from cosnotify.idl import model
from tests.idl.helpers import decl, error, ids, parse


def const(tmp_path: Path, text: str, name: str = "C") -> object:
    return decl(parse(tmp_path, text), name).value


class TestNameLookup:
    """CORBA 2.6 section 3.15.3: scope, inherited scopes, then enclosing scopes."""

    def test_enclosing_scopes(self, tmp_path: Path) -> None:
        """A name is found in the innermost enclosing scope that declares it."""
        spec = parse(tmp_path, "typedef long T; module A { typedef short T; module B {"
                               " typedef T U; typedef ::T V; }; };")  # fmt: skip
        assert decl(spec, "A::B::U").type == model.Named(decl(spec, "A::T"))
        assert decl(spec, "A::B::V").type == model.Named(decl(spec, "T"))

    def test_inherited_scope(self, tmp_path: Path) -> None:
        """Names declared in a base interface are visible in derived interfaces."""
        spec = parse(tmp_path, "interface A { typedef long T; exception E {}; };"
                               " interface B : A { T op() raises (E); };")  # fmt: skip
        op = decl(spec, "B").operations[0]
        assert op.result == model.Named(decl(spec, "A::T")) and op.raises == [decl(spec, "A::E")]

    def test_derived_may_redefine_types(self, tmp_path: Path) -> None:
        """A derived interface may redefine an inherited type name."""
        spec = parse(tmp_path, "interface A { typedef long T; }; interface B : A {"
                               " typedef string T; T op(); };")  # fmt: skip
        assert decl(spec, "B").operations[0].result == model.Named(decl(spec, "B::T"))

    def test_diamond_is_not_ambiguous(self, tmp_path: Path) -> None:
        """A name reached through two paths to the same base is one declaration."""
        spec = parse(tmp_path, "interface A { typedef long T; void f(); }; interface B : A {};"
                               " interface C : A {}; interface D : B, C { T g(); };")
        assert decl(spec, "D").operations[0].result == model.Named(decl(spec, "A::T"))

    def test_escaped_identifier_is_the_same_name(self, tmp_path: Path) -> None:
        """'_EventType' declares EventType, which plain 'EventType' then refers to."""
        spec = parse(tmp_path, "module N { struct _EventType { string d; };"
                               " typedef sequence<EventType> Seq; typedef _EventType Same; };")
        assert ids(spec)["N::EventType"] == "IDL:N/EventType:1.0"
        assert decl(spec, "N::Same").type == model.Named(decl(spec, "N::EventType"))

    def test_reference_differing_in_case(self, tmp_path: Path) -> None:
        """Referring to a name with the wrong case is an error, not another name."""
        assert "differs only in case" in error(tmp_path, "typedef long Foo; typedef foo B;").message


class TestConstants:
    """Constant expressions, their types and ranges (CORBA 2.6 section 3.10.2)."""

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("const long C = (1 + 2) * 3 - 4 / 3 % 2;", 8),
            ("const long C = -7 / 2;", -3),
            ("const long C = -7 % 2;", -1),
            ("const long C = 0xF0 | 0x0F ^ 0xFF & 0x3C;", 0xF0 | (0x0F ^ (0xFF & 0x3C))),
            ("const long C = 1 << 4 >> 2;", 4),
            ("const long C = ~5;", -6),
            ("const unsigned short C = ~0;", 0xFFFF),
            ("const unsigned long C = ~1;", 0xFFFFFFFE),
            ("const long long C = 2147483647 + 1;", 2147483648),
            ("const octet C = 255;", 255),
            ("const long A = 5; const long C = A * A;", 25),
            ("module M { const short A = 2; }; const long C = M::A + ::M::A;", 4),
        ],
    )  # fmt: skip
    def test_integer_expressions(self, tmp_path: Path, text: str, value: int) -> None:
        """Integer operators follow C rules (truncating division, precedence)."""
        assert const(tmp_path, text) == value

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("const double C = 1.0 / 4;", 0.25),
            ("const float C = -2.5e2;", -250.0),
            ("const fixed C = 1.25d * 2;", decimal.Decimal("2.50")),
            ("const char C = 'x';", "x"),
            ("const wchar C = L'\\u00e9';", "\u00e9"),
            ('const string C = "ab" "cd";', "abcd"),
            ('const wstring C = L"w";', "w"),
            ("const boolean C = TRUE;", True),
            ('const string A = "x"; const string C = A;', "x"),
        ],
    )  # fmt: skip
    def test_other_constant_kinds(self, tmp_path: Path, text: str, value: object) -> None:
        """Floating, fixed, char, string, boolean constants and references to constants."""
        assert const(tmp_path, text) == value

    def test_enum_constant(self, tmp_path: Path) -> None:
        """An enum constant is one of the enum's enumerators."""
        spec = parse(tmp_path, "enum Colour { red, green }; const Colour C = green;")
        assert decl(spec, "C").value is decl(spec, "green")

    def test_typedef_const_type(self, tmp_path: Path) -> None:
        """A constant may be declared with a typedef of a constant type; ranges still apply."""
        assert const(tmp_path, "typedef short S; const S C = 7;") == 7
        err = error(tmp_path, "typedef short S; const S X = 70000;")
        assert "out of range for short" in err.message

    def test_float_range(self, tmp_path: Path) -> None:
        """A float constant must fit in a float."""
        assert "out of range for float" in error(tmp_path, "const float F = 1e39;").message

    def test_operators_on_strings(self, tmp_path: Path) -> None:
        """Operators do not apply to string constants."""
        err = error(tmp_path, 'const string S = "a" + "b";')
        assert "operators cannot be applied" in err.message


class TestUnions:
    """Discriminators, labels, and the value chosen for the default member."""

    def test_labels_and_default_value(self, tmp_path: Path) -> None:
        """Multiple labels per member; the default member gets an unused discriminator."""
        spec = parse(tmp_path, "union U switch (long) { case 0: case 1: long a; case 3: short b;"
                               " default: string c; };")  # fmt: skip
        union = decl(spec, "U")
        assert isinstance(union, model.Union_)
        assert [(c.name, c.labels) for c in union.cases] == [
            ("a", [0, 1]), ("b", [3]), ("c", [model.DEFAULT])]
        assert union.default_value == 2

    @pytest.mark.parametrize(
        ("switch", "labels", "expected"),
        [("boolean", "case TRUE:", False), ("char", "case '\\0':", "\x01"),
         ("E", "case a: long y; case b:", "c"), ("unsigned short", "case 0:", 1)],
    )  # fmt: skip
    def test_unused_discriminator(self, tmp_path: Path, switch: str, labels: str,
                                  expected: object) -> None:  # fmt: skip
        """Without a default member, _def_d is a value that selects no member."""
        text = f"enum E {{a, b, c}}; union U switch ({switch}) {{ {labels} long x; }};"
        spec = parse(tmp_path, text)
        value = decl(spec, "U").default_value
        assert (value.name if isinstance(value, model.Enumerator) else value) == expected

    def test_enum_and_typedef_discriminators(self, tmp_path: Path) -> None:
        """Discriminators may be typedefs of integer types, or an enum declared inline."""
        spec = parse(tmp_path, "typedef unsigned long Id; union U switch (Id) { case 4: long a; };"
                               " union V switch (enum K { k1, k2 }) { case k2: long b; };")
        assert decl(spec, "V::K").items[1] is decl(spec, "V").cases[0].labels[0]

    def test_all_booleans_covered(self, tmp_path: Path) -> None:
        """With both booleans used and no default, no value selects 'no member'."""
        text = "union U switch (boolean) { case TRUE: long a; case FALSE: long b; };"
        spec = parse(tmp_path, text)
        assert decl(spec, "U").default_value is None


class TestRepositoryIds:
    """Repository ids of every kind of declaration."""

    def test_nested_ids(self, tmp_path: Path) -> None:
        """Ids follow the scoped name, through interfaces and structs."""
        spec = parse(tmp_path, '#pragma prefix "omg.org"\nmodule M { interface I {'
                               " exception E { struct Inner { long x; } i; }; }; };")  # fmt: skip
        assert ids(spec) == {
            "M": "IDL:omg.org/M:1.0", "M::I": "IDL:omg.org/M/I:1.0",
            "M::I::E": "IDL:omg.org/M/I/E:1.0", "M::I::E::Inner": "IDL:omg.org/M/I/E/Inner:1.0",
        }  # fmt: skip

    def test_forward_declaration_shares_the_id(self, tmp_path: Path) -> None:
        """A forward-declared interface and its definition are one declaration."""
        spec = parse(tmp_path, '#pragma prefix "p"\ninterface I; interface I { void f(); };')
        forwards = [d for d in spec.walk() if isinstance(d, model.Forward)]
        assert forwards[0].target is decl(spec, "I")
        assert decl(spec, "I").repo_id == "IDL:p/I:1.0"
