"""Building the C++ typed supplier (tests/typed/cxx/) with Debian's omniORB.

Debian's libCOS4 has no typed notification stubs, so Debian's ``omniidl
-bcxx`` generates them (from its own ``/usr/share/idl/omniORB/COS``) beside
the Coffee stubs, into the build directory; the program links against
libCOS4 for the rest. Built once per source change, as tests/interop does.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

from tests.interop.notify import harness

HERE = pathlib.Path(__file__).resolve().parent
COS_IDL = pathlib.Path("/usr/share/idl/omniORB/COS")
TYPED_COS = ("CosTypedEventComm", "CosTypedEventChannelAdmin", "CosTypedNotifyComm",
             "CosTypedNotifyChannelAdmin")
NAME = "typed_supplier"


def build_typed_supplier() -> pathlib.Path:
    """The C++ typed supplier's path (``Unavailable`` without g++ and omniORB's IDL)."""
    harness.require_cxx()
    if not (COS_IDL / "CosTypedNotifyChannelAdmin.idl").exists() or not shutil.which("omniidl"):
        raise harness.Unavailable("Debian's omniidl and COS IDL are not installed")
    source = HERE / "cxx" / f"{NAME}.cc"
    coffee = HERE / "data" / "Coffee.idl"

    def build(work: pathlib.Path) -> None:
        for idl in [*(COS_IDL / f"{m}.idl" for m in TYPED_COS), coffee]:  # one at a time
            done = subprocess.run(["/usr/bin/omniidl", "-bcxx", f"-I{COS_IDL}", str(idl)],
                                  cwd=work, capture_output=True, text=True, timeout=300,
                                  check=False)
            if done.returncode != 0:
                raise harness.Unavailable(f"omniidl -bcxx {idl.name}: {done.stderr.strip()}")
        stubs = [str(work / f"{m}SK.cc") for m in (*TYPED_COS, "Coffee")]
        harness._compile_all({NAME: ["g++", "-O1", "-w", "-I.", *harness.CXXFLAGS, "-o",
                                     str(work / NAME), str(source), *stubs, *harness.LIBS]},
                             work)

    out = harness._cached("typed-" + harness._digest([source, coffee]), [NAME], build)
    return out / NAME
