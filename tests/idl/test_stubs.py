"""The committed cosnotify/stubs/ and ``python -m cosnotify.idl --check / --regen``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cosnotify.idl import __main__ as cli
from cosnotify.idl import repo_idl_dir
from cosnotify.idl.stubs import check_stubs, expected_stubs, regen_stubs
from tests.idl.helpers import REPO

STUBS = REPO / "cosnotify" / "stubs"


class TestCommittedStubs:
    """cosnotify/stubs/ is what idl/ compiles to, and it imports."""

    def test_check_passes(self) -> None:
        """``--check`` exits 0 on the committed tree."""
        result = subprocess.run(
            [sys.executable, "-m", "cosnotify.idl", "--check"],
            check=False, capture_output=True, text=True, cwd=REPO, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr

    def test_structured_event_typecode(self) -> None:
        """The stubs carry full repository ids (docs/public-api.md section 1)."""
        from cosnotify.stubs import CosNotification

        assert (
            CosNotification._tc_StructuredEvent.id()
            == "IDL:omg.org/CosNotification/StructuredEvent:1.0"
        )

    def test_every_module_imports(self) -> None:
        """Each generated package and its skeletons import."""
        import importlib

        for source in sorted(repo_idl_dir().glob("*.idl")):
            stubs = importlib.import_module(f"cosnotify.stubs.{source.stem}")
            poa = importlib.import_module(f"cosnotify.stubs.{source.stem}__POA")
            assert stubs.__doc__ and poa.__doc__

    def test_mapping_details(self) -> None:
        """Nested types, escaped identifiers and Python keywords map as documented."""
        from cosnotify.stubs import CosNaming, CosNotification, CosNotifyCommAck

        assert CosNaming.NamingContext._tc_NotFound.id() == (
            "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0")
        assert CosNotification.EventType("d", "t").domain_name == "d"
        assert CosNotifyCommAck._None == 0


class TestCheckAndRegen:
    """--check reports differences; --regen fixes them."""

    def test_regen_then_check(self, tmp_path: Path) -> None:
        """Regenerating into an empty directory makes it match; a change is then reported."""
        stubs = tmp_path / "stubs"
        stubs.mkdir()
        (stubs / "__init__.py").write_text('"""kept"""\n')
        regen_stubs(repo_idl_dir(), stubs)
        assert check_stubs(repo_idl_dir(), stubs) == []
        assert (stubs / "__init__.py").read_text() == '"""kept"""\n'
        target = stubs / "TimeBase" / "__init__.py"
        target.write_text(target.read_text() + "# edited\n")
        (stubs / "Stale").mkdir()
        (stubs / "Stale" / "__init__.py").write_text("")
        shutil.rmtree(stubs / "CosNaming__POA")
        assert check_stubs(repo_idl_dir(), stubs) == [
            "missing: CosNaming__POA/__init__.py",
            "not generated from idl/ (stale): Stale/__init__.py",
            "differs: TimeBase/__init__.py",
        ]
        regen_stubs(repo_idl_dir(), stubs)
        assert check_stubs(repo_idl_dir(), stubs) == [] and not (stubs / "Stale").exists()

    def test_expected_matches_committed(self) -> None:
        """The in-process comparison agrees with the committed files."""
        assert set(expected_stubs(repo_idl_dir())) >= {
            "CosNotification/__init__.py", "CosNotification__POA/__init__.py"}

    def test_missing_idl_dir(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--check fails with a clear message when the idl/ directory is missing."""
        monkeypatch.setattr(cli, "repo_idl_dir", lambda: tmp_path / "no-idl")
        assert cli.main(["--check"]) == 1
        assert "IDL directory" in capsys.readouterr().err
