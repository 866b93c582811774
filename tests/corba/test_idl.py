"""idl/ against the COS stubs omniORB bundles: omniidl makes the same modules from ours.

Every module omniORB ships is compiled from idl/ with the wheel's omniidl and
compared with omniORB's own generated file, line by line, after dropping
what depends only on where the IDL file lives or the order of includes. The
only allowed differences are those docs/idl.md ("Differences from omniORB's
COS IDL") lists: two raises clauses of CosNaming.
"""

from __future__ import annotations

import re
from pathlib import Path

import omniORB
import pytest

from cosnotify.corba.stubgen import ROOT, omniidl

BUNDLED = Path(omniORB.__file__).parent / "COS"
MODULES = [
    "TimeBase", "CosEventComm", "CosEventChannelAdmin", "CosTypedEventComm",
    "CosTypedEventChannelAdmin", "CosNotification", "CosNotifyFilter", "CosNotifyComm",
    "CosNotifyChannelAdmin", "CosTypedNotifyComm", "CosTypedNotifyChannelAdmin", "CosNaming",
]  # fmt: skip
#: docs/idl.md rows 1 and 2: resolve_str without AlreadyBound (the OMG text, TAO, JacORB);
#: bind_new_context's exceptions in TAO's and JacORB's order.
ALLOWED = {"CosNaming": ("NamingContext._d_bind_new_context", "NamingContextExt._d_resolve_str")}
#: An included module opened (its order follows the include list, which carries no meaning).
_INCLUDED = re.compile(r'^_0_\w+ = omniORB\.openModule\("\w+"\)$')


def significant(text: str) -> list[str]:
    """The generated lines that carry the IDL's meaning."""
    lines = []
    for line in text.splitlines():
        if line.startswith(("# Python stubs generated", "# #include", "import ")) or not line:
            continue
        if _INCLUDED.match(line):
            continue
        lines.append(re.sub(r', r"[^"]*\.idl"\)', ")", line))  # openModule(..., path)
    return lines


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cos")
    omniidl(["-bpython", "-Iidl", "-C", str(out), *(f"idl/{m}.idl" for m in MODULES)], cwd=ROOT)
    return out


@pytest.mark.parametrize("module", MODULES)
def test_idl_generates_what_omniorb_ships(generated: Path, module: str) -> None:
    """The stubs from idl/ equal omniORB's bundled ones, but for docs/idl.md's differences."""
    ours = significant((generated / f"{module}_idl.py").read_text())
    theirs = significant((BUNDLED / f"{module}_idl.py").read_text())
    assert len(ours) == len(theirs)
    differing = [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]
    allowed = ALLOWED.get(module, ())
    assert [a.split(" =")[0] for a, _ in differing] == list(allowed)
