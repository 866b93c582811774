"""The IDL preprocessor: includes, guards, macros, conditionals and pragmas."""

from __future__ import annotations

from pathlib import Path

from cosnotify.idl import model
from cosnotify.idl.preprocessor import FileEnter, FileExit, PragmaPrefix, Preprocessor
from tests.idl.helpers import decl, error, ids, parse

GUARDED = "#ifndef INC_IDL\n#define INC_IDL\nstruct Inc { long x; };\n#endif\n"


class TestIncludes:
    """``#include`` searches the including file's directory, then -I directories."""

    def test_quoted_include_beside_includer(self, tmp_path: Path) -> None:
        """A quoted include is found next to the file that includes it."""
        spec = parse(tmp_path, '#include "sub/a.idl"\n', {
            "sub/a.idl": '#include "b.idl"\ntypedef B A;\n',
            "sub/b.idl": "typedef long B;\n",
        })  # fmt: skip
        assert isinstance(decl(spec, "A"), model.Alias)

    def test_angle_include_uses_include_dirs(self, tmp_path: Path) -> None:
        """An angle-bracket include is found through -I."""
        spec = parse(tmp_path, "#include <inc.idl>\ntypedef Inc T;\n", {"dirs/inc.idl": GUARDED},
                     includes=("dirs",))  # fmt: skip
        assert decl(spec, "T").loc.line == 2

    def test_include_dir_order(self, tmp_path: Path) -> None:
        """The first -I directory holding the file wins."""
        files = {"one/x.idl": "typedef long X1;\n", "two/x.idl": "typedef long X2;\n"}
        spec = parse(tmp_path, '#include "x.idl"\n', files, includes=("two", "one"))
        assert "X2" in ids(spec) and "X1" not in ids(spec)

    def test_locations_through_includes(self, tmp_path: Path) -> None:
        """Declarations keep the file and line they come from; the main file resumes after."""
        spec = parse(tmp_path, '// head\n#include "inc.idl"\ntypedef long After;\n',
                     {"inc.idl": "\n\ntypedef long Inside;\n"})  # fmt: skip
        inside, after = decl(spec, "Inside"), decl(spec, "After")
        assert (inside.loc.file, inside.loc.line, inside.loc.column) == (
            str(tmp_path / "inc.idl"), 3, 14)
        assert (after.loc.file, after.loc.line) == (str(tmp_path / "main.idl"), 3)

    def test_columns_exact_after_comments(self, tmp_path: Path) -> None:
        """Comments are blanked in place, so columns after them are the source's columns."""
        spec = parse(tmp_path, "/* a\n  b */ typedef long /* c */ T; // d\n")
        assert (decl(spec, "T").loc.line, decl(spec, "T").loc.column) == (2, 29)

    def test_guard_includes_once(self, tmp_path: Path) -> None:
        """A guarded file included twice is read once."""
        spec = parse(tmp_path, '#include "inc.idl"\n#include "inc.idl"\n', {"inc.idl": GUARDED})
        assert isinstance(decl(spec, "Inc"), model.Struct)

    def test_unguarded_twice_is_a_redefinition(self, tmp_path: Path) -> None:
        """Without a guard, the second include redefines its declarations (no silent dedupe)."""
        err = error(tmp_path, '#include "inc.idl"\n#include "inc.idl"\n',
                    {"inc.idl": "struct Inc { long x; };\n"})  # fmt: skip
        assert "'Inc' redefined" in err.message

    def test_recursive_include_is_an_error(self, tmp_path: Path) -> None:
        """A file that includes itself without a guard stops with an error."""
        err = error(tmp_path, '#include "main.idl"\n')
        assert "nested too deeply" in err.message


class TestMacros:
    """Object-like macros are substituted in the token stream."""

    def test_define_substitutes(self, tmp_path: Path) -> None:
        """A macro used as a bound and as a type name expands to its tokens."""
        spec = parse(tmp_path, "#define N 4 * 2\n#define T long\ntypedef sequence<T, N> S;\n")
        assert decl(spec, "S").type == model.SequenceT(model.Primitive("long"), 8)

    def test_command_line_define(self, tmp_path: Path) -> None:
        """-D NAME=VAL defines a macro before the file is read."""
        spec = parse(tmp_path, "const long C = SIZE;\n", defines={"SIZE": "12"})
        assert decl(spec, "C").value == 12

    def test_undef(self, tmp_path: Path) -> None:
        """#undef removes a macro."""
        spec = parse(tmp_path, "#define A 1\n#undef A\n#ifdef A\nerror here\n#endif\n"
                               "typedef long A;\n")  # fmt: skip
        assert isinstance(decl(spec, "A"), model.Alias)

    def test_self_reference_does_not_loop(self, tmp_path: Path) -> None:
        """A macro is not expanded inside its own expansion."""
        spec = parse(tmp_path, "#define X X\ntypedef long X;\n")
        assert isinstance(decl(spec, "X"), model.Alias)

    def test_continuation_lines(self, tmp_path: Path) -> None:
        """A backslash continues a directive; later lines keep their numbers."""
        spec = parse(tmp_path, "#define N \\\n  3\ntypedef long A[N];\n")
        assert decl(spec, "A").type == model.ArrayT(model.Primitive("long"), (3,))
        assert decl(spec, "A").loc.line == 3


class TestConditionals:
    """#ifdef, #ifndef, #if/#elif with defined() and integer expressions, #else, #endif."""

    def names(self, tmp_path: Path, text: str) -> set[str]:
        return set(ids(parse(tmp_path, text)))

    def test_ifdef_ifndef(self, tmp_path: Path) -> None:
        """#ifdef and #ifndef pick the branch by whether the macro exists."""
        text = ("#define A\n#ifdef A\ntypedef long Yes1;\n#else\ntypedef long No1;\n#endif\n"
                "#ifndef A\ntypedef long No2;\n#endif\n")  # fmt: skip
        assert self.names(tmp_path, text) == {"Yes1"}

    def test_if_expressions(self, tmp_path: Path) -> None:
        """#if evaluates integer arithmetic, comparisons, logic and defined()."""
        text = ("#define V 3\n"
                "#if V * 2 == 6 && defined(V) && !defined X && (1 << 4) > 15 ? 1 : 0\n"
                "typedef long Yes;\n#endif\n"
                "#if UNDEFINED_NAME\ntypedef long No;\n#endif\n")  # fmt: skip
        assert self.names(tmp_path, text) == {"Yes"}

    def test_elif_chain(self, tmp_path: Path) -> None:
        """Only the first true branch of #if/#elif/#else is kept."""
        text = ("#define V 2\n#if V == 1\ntypedef long One;\n#elif V == 2\ntypedef long Two;\n"
                "#elif V >= 2\ntypedef long AlsoTwo;\n#else\ntypedef long Other;\n#endif\n")
        assert self.names(tmp_path, text) == {"Two"}

    def test_nested_inactive(self, tmp_path: Path) -> None:
        """Directives inside a skipped branch do not act, and its text is not lexed."""
        text = ("#if 0\n#define A\n#include \"missing.idl\"\n@@ junk '\n#if 1\n#else\n#endif\n"
                "#endif\n#ifdef A\ntypedef long No;\n#endif\ntypedef long Yes;\n")
        assert self.names(tmp_path, text) == {"Yes"}

    def test_hash_in_comment_is_not_a_directive(self, tmp_path: Path) -> None:
        """A '#' line inside a block comment is comment text."""
        assert self.names(tmp_path, "/*\n#error no\n*/\ntypedef long T;\n") == {"T"}


class TestPragmas:
    """#pragma prefix (scoped, CORBA 2.6 section 10.7.5), ID and version; others ignored."""

    def test_prefix_applies_to_the_rest_of_the_file(self, tmp_path: Path) -> None:
        """Definitions after a prefix pragma get it; earlier ones do not."""
        text = 'typedef long A;\n#pragma prefix "p.org"\nmodule M { typedef long B; };'
        spec = parse(tmp_path, text)
        assert ids(spec) == {"A": "IDL:A:1.0", "M": "IDL:p.org/M:1.0", "M::B": "IDL:p.org/M/B:1.0"}

    def test_included_file_starts_without_prefix(self, tmp_path: Path) -> None:
        """An included file does not inherit the includer's prefix, which comes back after."""
        text = '#pragma prefix "outer"\n#include "inc.idl"\ntypedef long After;\n'
        spec = parse(tmp_path, text, {"inc.idl": 'typedef long Plain;\n#pragma prefix "inner"\n'
                                                 "typedef long Inner;\n"})  # fmt: skip
        assert ids(spec) == {
            "Plain": "IDL:Plain:1.0", "Inner": "IDL:inner/Inner:1.0",
            "After": "IDL:outer/After:1.0",
        }  # fmt: skip

    def test_prefix_inside_a_module_ends_with_it(self, tmp_path: Path) -> None:
        """A prefix set in a scope replaces the enclosing path until the scope closes."""
        text = ('#pragma prefix "P1"\nmodule M {\n  typedef long T1;\n  #pragma prefix "P2"\n'
                '  typedef long T2;\n  module N { typedef long T3; };\n};\ntypedef long T4;\n')
        assert ids(parse(tmp_path, text)) == {
            "M": "IDL:P1/M:1.0", "M::T1": "IDL:P1/M/T1:1.0", "M::T2": "IDL:P2/T2:1.0",
            "M::N": "IDL:P2/N:1.0", "M::N::T3": "IDL:P2/N/T3:1.0", "T4": "IDL:P1/T4:1.0",
        }  # fmt: skip

    def test_pragma_id(self, tmp_path: Path) -> None:
        """#pragma ID sets a declaration's repository id outright."""
        text = 'module M { struct S { long x; };\n#pragma ID S "IDL:custom/Thing:2.5"\n};\n'
        assert ids(parse(tmp_path, text))["M::S"] == "IDL:custom/Thing:2.5"

    def test_pragma_version(self, tmp_path: Path) -> None:
        """#pragma version changes the version part of the default id."""
        text = '#pragma prefix "x"\ninterface I {};\n#pragma version I 3.14\n'
        assert ids(parse(tmp_path, text))["I"] == "IDL:x/I:3.14"

    def test_pragma_version_after_id_is_an_error(self, tmp_path: Path) -> None:
        """A version cannot be applied to an id set by #pragma ID."""
        text = 'interface I {};\n#pragma ID I "IDL:y/I:1.0"\n#pragma version I 2.0\n'
        err = error(tmp_path, text)
        assert (err.line, "set by #pragma ID") == (3, "set by #pragma ID")

    def test_unknown_pragmas_ignored(self, tmp_path: Path) -> None:
        """omniORB's '#pragma hh' and other unknown pragmas change nothing."""
        text = '#pragma hh #include "COS_sysdep.h"\n#pragma once\ntypedef long T;\n'
        spec = parse(tmp_path, text)
        assert ids(spec) == {"T": "IDL:T:1.0"}

    def test_events_mark_token_positions(self, tmp_path: Path) -> None:
        """Pragmas and file boundaries become events at the index of the next token."""
        (tmp_path / "inc.idl").write_text('#pragma prefix "i"\ntypedef long I;\n')
        (tmp_path / "main.idl").write_text('typedef long A;\n#include "inc.idl"\ntypedef long B;\n')
        result = Preprocessor().run(tmp_path / "main.idl")
        kinds = [(type(e).__name__, e.index) for e in result.events]
        assert kinds == [("FileEnter", 4), ("PragmaPrefix", 4), ("FileExit", 8)]
        assert isinstance(result.events[0], FileEnter) and isinstance(result.events[2], FileExit)
        assert isinstance(result.events[1], PragmaPrefix) and result.events[1].prefix == "i"
