"""Loading user IDL for typed channels (cosnotify/typed/interfaces.py).

The rules come from the typed Event Service that section 2.7 builds on, and
from the spec's own Coffee example (section 2.7): ``<I>`` has operations with
``in`` parameters and ``void`` results; ``Pull<I>`` has, for each, a blocking
pull (named ``op`` as in the spec's example and JacORB, or ``pull_op``) and a
``boolean try_op``, both with the parameters as ``out``. Each bad IDL uses a
module name of its own: loaded stubs are process-wide.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from omniORB import CORBA

from cosnotify.typed.interfaces import IDLError, InterfaceRepository, Source, TypedInterface


def load(tmp_path: Path, text: str, name: str = "t.idl") -> InterfaceRepository:
    path = tmp_path / name
    path.write_text(text)
    repository = InterfaceRepository()
    repository.load([path])
    return repository


class TestCoffee:
    def test_the_interface_its_operations_and_parameters(self, coffee: TypedInterface) -> None:
        assert coffee.scoped_name == "CoffeeTest::Coffee"
        assert list(coffee.operations) == ["drinking_coffee", "cancel_coffee"]
        drinking = coffee.operations["drinking_coffee"]
        assert drinking.scoped == "::CoffeeTest::Coffee::drinking_coffee"
        assert [p.name for p in drinking.parameters] == ["name", "minutes"]
        assert drinking.parameters[0].typecode.equivalent(CORBA.TC_string)
        assert drinking.parameters[1].typecode.equivalent(CORBA.TC_long)
        assert coffee.stub.__name__ == "Coffee" and coffee.skeleton is not None

    def test_pull_coffee_is_found_and_checked(self, coffee: TypedInterface) -> None:
        assert coffee.pull_repo_id == "IDL:CoffeeTest/PullCoffee:1.0"
        assert coffee.pull_names == {
            "drinking_coffee": ("drinking_coffee", "try_drinking_coffee"),
            "cancel_coffee": ("cancel_coffee", "try_cancel_coffee")}

    @pytest.mark.parametrize("key", ["IDL:CoffeeTest/Coffee:1.0", "Coffee",
                                     "CoffeeTest::Coffee", "::CoffeeTest::Coffee"])
    def test_keys_name_it(self, repository: InterfaceRepository, coffee: TypedInterface,
                          key: str) -> None:
        assert repository.lookup(key) is coffee

    @pytest.mark.parametrize("key", ["Tea", "IDL:CoffeeTest/PullCoffee:1.0", "PullCoffee", ""])
    def test_other_keys_name_nothing(self, repository: InterfaceRepository, key: str) -> None:
        with pytest.raises(KeyError):
            repository.lookup(key)

    def test_the_event_service_pull_names_too(self, tmp_path: Path) -> None:
        repository = load(tmp_path, """
            module PullNames { interface Clock { void tick(in long n); };
                               interface PullClock { void pull_tick(out long n);
                                                     boolean try_tick(out long n); }; };""")
        assert repository.lookup("Clock").pull_names == {"tick": ("pull_tick", "try_tick")}

    def test_client_interfaces_are_not_keys(self, tmp_path: Path) -> None:
        """A consumer's own interface (PushConsumer and <I> in one) is not checked."""
        repository = load(tmp_path, """
            #include "CosEventComm.idl"
            module Clients { interface Alarm { void raise_alarm(in string text); };
                             interface AlarmConsumer : CosEventComm::PushConsumer, Alarm {}; };
            """)
        assert [i.scoped_name for i in repository.interfaces()] == ["Clients::Alarm"]


class TestBadIDL:
    """IDL errors and rule breaches stop the load with the file and line."""

    def test_a_syntax_error(self, tmp_path: Path) -> None:
        with pytest.raises(IDLError) as caught:
            load(tmp_path, "module Broken1 {\n  interface I { void op(in long n) };\n};\n")
        assert caught.value.file is not None and caught.value.file.endswith("t.idl")
        assert caught.value.line == 2

    @pytest.mark.parametrize(("body", "line", "words"), [
        ("void op(out long n);", 3, "in parameters only"),
        ("void op(inout long n);", 3, "in parameters only"),
        ("long op(in long n);", 3, "returns void"),
        ("attribute long level;", 2, "operations only"),
    ])
    def test_an_interface_that_breaks_the_rules(self, tmp_path: Path, body: str, line: int,
                                                words: str) -> None:
        module = f"Breach{abs(hash(body)) % 10_000}"
        with pytest.raises(IDLError, match=words) as caught:
            load(tmp_path, f"module {module} {{\n  interface I {{\n    {body}\n  }};\n}};\n")
        assert caught.value.line == line
        assert module not in sys.modules  # checked before anything is imported

    @pytest.mark.parametrize(("pull", "words"), [
        ("void pull_op(out long n);", "no boolean try_op"),
        ("boolean try_op(out long n);", "no void pull_op"),
        ("void op(out long m); boolean try_op(out long m);", r"must be void op\(out n\)"),
        ("void op(in long n); boolean try_op(out long n);", r"must be void op\(out n\)"),
        ("void op(out long n); void try_op(out long n);", "must be boolean try_op"),
    ])
    def test_a_pull_interface_that_does_not_match(self, tmp_path: Path, pull: str,
                                                  words: str) -> None:
        with pytest.raises(IDLError, match=words):
            load(tmp_path, f"module PullBreach{abs(hash(pull)) % 10_000} {{ interface I "
                           f"{{ void op(in long n); }}; interface PullI {{ {pull} }}; }};")

    def test_an_operation_with_a_context_clause(self, tmp_path: Path) -> None:
        """A context clause is refused at load, naming the interface and operation."""
        with pytest.raises(IDLError, match=r"CtxBreach::Tea::brew has a context clause") \
                as caught:
            load(tmp_path, 'module CtxBreach {\n  interface Tea {\n'
                           '    void brew(in long m) context("x");\n  };\n};\n')
        assert caught.value.line == 3
        assert "CtxBreach" not in sys.modules  # checked before anything is imported

    def test_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(IDLError, match="no such IDL file"):
            InterfaceRepository().load([tmp_path / "none.idl"])


class TestSafety:
    """Found in review: what the generated stubs would run, or replace."""

    def test_a_repository_id_that_would_escape_the_stubs(self, tmp_path: Path) -> None:
        marker = tmp_path / "ran"
        text = (f'#pragma prefix "x\\" if __import__(\'os\').system(\'touch {marker}\') '
                'else \\""\nmodule Escape1 { interface Coffee { void op(in long n); }; };\n')
        with pytest.raises(IDLError, match="repository id") as caught:
            load(tmp_path, text)
        assert caught.value.line is not None
        assert not marker.exists() and "Escape1" not in sys.modules

    @pytest.mark.parametrize("name", ["sys", "json", "CORBA", "CosNotification", "omniORB",
                                      "cosnotify"])
    def test_a_module_named_like_a_python_module(self, tmp_path: Path, name: str) -> None:
        before = sys.modules.get(name)
        with pytest.raises(IDLError, match=f"module {name} would replace"):
            load(tmp_path, f"module {name} {{ interface Thing {{ void op(in long n); }}; }};")
        assert sys.modules.get(name) is before

    def test_the_spec_example_at_global_scope(self, tmp_path: Path) -> None:
        """Section 2.7 declares Coffee and PullCoffee at global scope."""
        repository = load(tmp_path, """
            interface GlobalCoffee { void drinking_coffee(in string name, in long minutes); };
            interface PullGlobalCoffee {
                void drinking_coffee(out string name, out long minutes);
                boolean try_drinking_coffee(out string name, out long minutes); };""")
        coffee = repository.lookup("GlobalCoffee")
        assert coffee.stub.__name__ == "GlobalCoffee" and coffee.pull_stub is not None

    def test_pull_out_types_must_match(self, tmp_path: Path) -> None:
        with pytest.raises(IDLError, match="with the types of"):
            load(tmp_path, """module PullTypes { interface I { void op(in long n); };
                interface PullI { void op(out string n); boolean try_op(out string n); }; };""")


class TestIncludes:
    """A file that includes user IDL files: each is compiled and imported first (its
    stubs are what the main file's stubs import), found as the preprocessor finds it."""

    def test_types_from_included_files(self, tmp_path: Path) -> None:
        (tmp_path / "sub").mkdir()
        (tmp_path / "incdir").mkdir()
        (tmp_path / "sub" / "IncBase.idl").write_text(
            "module IncBase { struct Size { short cl; }; };\n")
        (tmp_path / "sub" / "IncCup.idl").write_text(  # found beside the file including it
            '#include "IncBase.idl"\nmodule IncCup { struct Cup { IncBase::Size size; }; };\n')
        (tmp_path / "incdir" / "IncSugar.idl").write_text(  # found in an include directory
            "module IncSugar { enum Sugar { NONE, SOME }; };\n")
        main = tmp_path / "IncOrder.idl"
        main.write_text('#include "sub/IncCup.idl"\n#include "IncSugar.idl"\n'
                        "module IncOrder { interface Order { void ordered(in IncCup::Cup cup,"
                        " in IncSugar::Sugar sugar); }; };\n")
        repository = InterfaceRepository()
        [order] = repository.load([main], include=[tmp_path / "incdir"])
        cup, sugar = order.operations["ordered"].parameters
        assert cup.typecode.id() == "IDL:IncCup/Cup:1.0"
        assert sugar.typecode.id() == "IDL:IncSugar/Sugar:1.0"
        assert {Path(path).name for path, _ in repository.sources[str(main)].included} == {
            "IncBase.idl", "IncCup.idl", "IncSugar.idl"}
        import IncCup  # the included file's module was imported

        assert IncCup.Cup is not None
        assert repository.interfaces() == [order]  # included files give types, not keys

    def test_an_included_file_that_is_not_found(self, tmp_path: Path) -> None:
        main = tmp_path / "IncLost.idl"
        main.write_text('#include "Nowhere.idl"\nmodule IncLost { interface I { void op(); };'
                        " };\n")
        with pytest.raises(IDLError, match="Nowhere.idl"):
            InterfaceRepository().load([main])

    def test_an_included_module_named_like_a_python_module(self, tmp_path: Path) -> None:
        (tmp_path / "Clash.idl").write_text("module json { struct S { long n; }; };\n")
        main = tmp_path / "IncClash.idl"
        main.write_text('#include "Clash.idl"\nmodule IncClash { interface I { '
                        "void op(in json::S s); }; };\n")
        with pytest.raises(IDLError, match="module json would replace"):
            InterfaceRepository().load([main])
        assert "IncClash" not in sys.modules

    def test_two_included_files_of_one_name(self, tmp_path: Path) -> None:
        for place, module in (("a", "IncTwinA"), ("b", "IncTwinB")):
            (tmp_path / place).mkdir()
            (tmp_path / place / "Twin.idl").write_text(
                f"module {module} {{ struct S {{ long n; }}; }};\n")
            (tmp_path / place / "Main.idl").write_text(
                f'#include "Twin.idl"\nmodule {module}Main {{ interface I {{ '
                f"void op(in {module}::S s); }}; }};\n")
        InterfaceRepository().load([tmp_path / "a" / "Main.idl"])
        with pytest.raises(IDLError, match="is not the Twin.idl loaded before"):
            InterfaceRepository().load([tmp_path / "b" / "Main.idl"])


class TestLatin1:
    """IDL source is ISO Latin-1 (CORBA 3.0, 7.2): a file that is not UTF-8 loads, and is
    kept and written back with the same bytes."""

    def test_a_latin1_comment_loads(self, tmp_path: Path) -> None:
        """A Latin-1 byte (0xE9) in a comment is no error."""
        idl = tmp_path / "Lat.idl"
        idl.write_bytes(b"// caf\xe9\nmodule LatMain { interface Lat { void ping(in long x); }; };\n")
        repository = InterfaceRepository()
        assert [i.repo_id for i in repository.load([idl])] == ["IDL:LatMain/Lat:1.0"]
        assert repository.sources[str(idl)].text.startswith("// caf\xe9\n")

    def test_a_kept_latin1_file_and_its_include_load_again(self, tmp_path: Path) -> None:
        """Main and included Latin-1 files are kept as read and written back as Latin-1."""
        (tmp_path / "LatShared.idl").write_bytes(
            b"// na\xefve\nmodule LatShared { struct Cup { short cl; }; };\n")
        main = tmp_path / "LatOrder.idl"
        main.write_bytes(b'#include "LatShared.idl"\n// cr\xe8me\nmodule LatOrder { interface '
                         b"Order { void ordered(in LatShared::Cup cup); }; };\n")
        first = InterfaceRepository()
        first.load([main])
        [(_, kept)] = first.sources[str(main)].included
        assert kept.startswith("// na\xefve\n")
        [order] = InterfaceRepository().load_source(first.sources[str(main)])
        assert order.operations["ordered"].parameters[0].typecode.id() == "IDL:LatShared/Cup:1.0"

    def test_a_file_kept_as_utf8_before_loads_again(self, tmp_path: Path) -> None:
        """A kept text with a character Latin-1 lacks (read as UTF-8 before) is written
        back as UTF-8, not refused with an encoding error."""
        source = Source(str(tmp_path / "LatOld.idl"), "// \u20ac\nmodule LatOld { interface "
                        "Old { void ping(in long x); }; };\n")
        assert [i.repo_id for i in InterfaceRepository().load_source(source)] == [
            "IDL:LatOld/Old:1.0"]
