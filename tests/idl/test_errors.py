"""Bad IDL: every error class gives file:line:column and IDLError, and the CLI exits 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cosnotify.idl import IDLError
from tests.idl.helpers import REPO, error

#: (id, IDL text, line, column, part of the message)
BAD_IDL = [
    ("redefinition", "module M { struct S { long x; }; typedef long S; };", 1, 47,
     "'S' redefined: already declared as struct"),
    ("case-collision", "module M { typedef long Foo; typedef long foo; };", 1, 43,
     "'foo' clashes with 'Foo'"),
    ("member-redefinition", "struct S { long x; short x; };", 1, 26, "'x' redefined"),
    ("name-of-scope", "module M { struct M { long x; }; };", 1, 12,
     "'M' may not be redefined inside module 'M'"),
    ("keyword-case", "module Interface { };", 1, 8,
     "identifier 'Interface' collides with keyword 'interface'"),
    ("unknown-type", "module M { typedef Nope T; };", 1, 20, "unknown name 'Nope'"),
    ("unknown-scope-member", "module M { typedef long T; }; typedef M::U V;", 1, 39,
     "'U' is not declared in module 'M'"),
    ("constant-as-type", "module M { const long C = 1; typedef C T; };", 1, 38,
     "'C' is a constant, not a type"),
    ("exception-as-type", "module M { exception E {}; struct S { E e; }; };", 1, 39,
     "'E' is an exception, not a type"),
    ("ambiguous-inherited", ("interface A { typedef long T; }; interface B { typedef short T; };"
     " interface C : A, B { T op(); };"), 1, 89, "'T' is ambiguous"),
    ("short-overflow", "const short X = 40000;", 1, 17, "value 40000 out of range for short"),
    ("long-overflow", "const long Y = 2147483647 + 1;", 1, 27,
     "value 2147483648 out of range for long"),
    ("64-bit-overflow", "const unsigned long long Z = 18446744073709551615 + 1;", 1, 51,
     "integer overflow"),
    ("unsigned-negative", "const unsigned long U = -1;", 1, 25,
     "value -1 out of range for unsigned long"),
    ("division-by-zero", "const long Z = 1 / 0;", 1, 18, "division by zero"),
    ("shift-count", "const long long S = 1 << 64;", 1, 23, "shift count 64 out of range"),
    ("float-in-integer", "const long X = 1.5;", 1, 16,
     "expected an integer constant, found float literal"),
    ("string-bound", 'const string<3> S = "toolong";', 1, 21, "exceeds bound 3"),
    ("enum-constant", "enum E {a}; enum F {b}; const E C = b;", 1, 37,
     "expected a value of enum 'E', found enumerator 'b'"),
    ("oneway-out", "interface I { oneway void f(out long x); };", 1, 38,
     "oneway operation 'f' may only have 'in' parameters"),
    ("oneway-result", "interface I { oneway long f(); };", 1, 15,
     "oneway operation 'f' must return void"),
    ("oneway-raises", "exception E {}; interface I { oneway void f() raises (E); };", 1, 55,
     "may not raise exceptions"),
    ("raises-non-exception", "struct S {long x;}; interface I { void f() raises (S); };", 1, 52,
     "'S' is a struct, not an exception"),
    ("duplicate-parameter", "interface I { void f(in long a, in long A); };", 1, 41,
     "parameter 'A' clashes with parameter 'a'"),
    ("duplicate-label", "union U switch (long) { case 1: long a; case 1: long b; };", 1, 46,
     "duplicate case label 1"),
    ("two-defaults", "union U switch (long) { default: long a; default: long b; };", 1, 42,
     "more than one default"),
    ("label-of-other-enum", "enum E {a, b}; enum F {c}; union U switch (E) { case c: long x; };",
     1, 54, "expected a value of enum 'E'"),
    ("label-out-of-range", "union U switch (short) { case 70000: long x; };", 1, 31,
     "value 70000 out of range for short"),
    ("default-with-full-cover", ("union U switch (boolean) { case TRUE: long a; case FALSE: long b;"
     " default: long c; };"), 1, 67, "labels already cover every discriminator value"),
    ("bad-discriminator", "typedef string S; union U switch (S) { case 1: long x; };", 1, 35,
     "cannot be a union discriminator type"),
    ("inherit-forward", "interface A; interface B : A {};", 1, 28, "only forward-declared"),
    ("inherit-non-interface", "struct S { long x; }; interface B : S {};", 1, 37,
     "'S' is a struct, not an interface"),
    ("inherit-twice", "interface A {}; interface B : A, A {};", 1, 34, "inherited more than once"),
    ("operation-redefined", "interface A { void f(); }; interface B : A { void f(); };", 1, 51,
     "redefines a name inherited from interface 'A'"),
    ("operation-from-two-bases", ("interface A { void f(); }; interface B { void f(); };"
     " interface C : A, B {};"), 1, 55, "inherits 'f' from both"),
    ("recursive-member", "struct S { S inner; };", 1, 12, "struct 'S' is incomplete here"),
    ("forward-never-defined", "struct S; typedef sequence<S> SS;", 1, 1,
     "forward-declared but never defined"),
    ("fixed-digits", "typedef fixed<32, 2> F;", 1, 15, "at most 31 digits"),
    ("zero-array", "typedef long A[0];", 1, 16, "array size must be positive"),
    ("syntax-missing-semicolon", "module M { struct S { long x } };", 1, 30,
     "syntax error: expected ',', ';' or '[', found '}'"),
    ("syntax-end-of-input", "module M { struct S { long x; };", 1, 33,
     "unexpected end of input"),
    ("syntax-valuetype", "valuetype V { };", 1, 1, "valuetypes"),
    ("bad-character", "module M { long @ };", 1, 17, "unexpected character '@'"),
    ("bad-octal", "const long X = 08;", 1, 16, "invalid octal literal"),
    ("unterminated-string", 'const string S = "abc;', 1, 18, "unterminated"),
    ("unterminated-comment", "struct S { long x; }; /* oops", 1, 23, "unterminated /* comment"),
    ("bad-repository-id", 'struct S { long x; };\n#pragma ID S "nonsense"\n', 2, 1,
     "invalid repository id"),
    ("pragma-unknown-name", '#pragma ID Nope "IDL:x/Nope:1.0"\nstruct S { long x; };', 1, 1,
     "unknown name 'Nope'"),
    ("duplicate-repository-id", ('struct S { long x; };\nstruct T { long y; };\n'
     '#pragma ID T "IDL:S:1.0"\n'), 2, 1, "repository id 'IDL:S:1.0' is also used"),
    ("function-like-macro", "#define F(x) x\n", 1, 1, "function-like macro 'F'"),
    ("unterminated-if", "#ifdef X\nstruct S { long x; };\n", 1, 1, "missing #endif"),
    ("else-without-if", "#else\n", 1, 1, "#else without matching #if"),
    ("missing-include", '#include "nothere.idl"\n', 1, 1, "cannot find include file"),
    ("error-directive", "#error stop here\n", 1, 1, "#error stop here"),
    ("unknown-directive", "#frobnicate\n", 1, 1, "unknown preprocessor directive"),
]  # fmt: skip


class TestErrorLocations:
    """Each kind of bad IDL raises IDLError at the right place with a clear message."""

    @pytest.mark.parametrize(
        ("text", "line", "column", "message"),
        [case[1:] for case in BAD_IDL],
        ids=[case[0] for case in BAD_IDL],
    )
    def test_error(self, tmp_path: Path, text: str, line: int, column: int, message: str) -> None:
        """The error names the file, line, column and what went wrong."""
        err = error(tmp_path, text)
        assert (err.file, err.line, err.column) == (str(tmp_path / "main.idl"), line, column)
        assert message in err.message
        assert str(err).startswith(f"{tmp_path / 'main.idl'}:{line}:{column}: ")

    def test_error_type(self) -> None:
        """IDLError is a ValueError carrying structured fields."""
        err = IDLError("a.idl", 3, 7, "bad")
        assert isinstance(err, ValueError)
        assert (err.file, err.line, err.column, err.message) == ("a.idl", 3, 7, "bad")
        assert str(err) == "a.idl:3:7: bad"

    def test_caret_excerpt(self, tmp_path: Path) -> None:
        """The message shows the source line with a caret under the column."""
        err = error(tmp_path, "module M {\n  typedef Nope T;\n};\n")
        assert str(err).splitlines()[1:] == ["      typedef Nope T;", "              ^"]

    def test_error_in_included_file(self, tmp_path: Path) -> None:
        """An error inside an included file is reported at that file's line and column."""
        err = error(tmp_path, '#include "inc.idl"\n', {"inc.idl": "\n\n  struct S { long x };\n"})
        assert (err.file, err.line, err.column) == (str(tmp_path / "inc.idl"), 3, 21)

    def test_pickles(self) -> None:
        """IDLError survives pickling (pytest-xdist and multiprocessing need this)."""
        import pickle

        err = pickle.loads(pickle.dumps(IDLError("f", 1, 2, "m", "excerpt")))
        fields = (err.file, err.line, err.column, err.message, err.excerpt)
        assert fields == ("f", 1, 2, "m", "excerpt")


class TestCommandLineErrors:
    """The CLI reports bad IDL on stderr with exit status 1 and no traceback."""

    def run(self, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cosnotify.idl", *args],
            check=False, capture_output=True, text=True, cwd=cwd, timeout=120,
        )  # fmt: skip

    @pytest.mark.parametrize(
        "text",
        ["const short X = 40000;\n", "module M { struct S { long x } };\n",
         "interface I { oneway long f(); };\n"],
        ids=["semantic", "syntax", "oneway"],
    )  # fmt: skip
    def test_bad_idl_exit_status(self, tmp_path: Path, text: str) -> None:
        """Exit status 1, file:line:column on stderr, no traceback, nothing written."""
        (tmp_path / "bad.idl").write_text(text)
        result = self.run("bad.idl", "-o", "out", cwd=tmp_path)
        assert result.returncode == 1
        assert result.stderr.startswith("bad.idl:1:")
        assert "Traceback" not in result.stderr
        assert not (tmp_path / "out").exists()

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing input file is an error, not a crash."""
        result = self.run("nothere.idl", "-o", "out", cwd=tmp_path)
        assert result.returncode == 1
        assert "cannot read IDL file 'nothere.idl'" in result.stderr
        assert "Traceback" not in result.stderr
