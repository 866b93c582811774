"""``CORBA.ORB`` and ``CORBA.ORB_init``.

Strategy: ``ORB_init`` parses the standard ``-ORB`` arguments into an
:class:`ORBOptions` value and returns one ORB per ``orb_id`` (as omniORB
does). The ORB owns the TypeCode factory now; the GIOP transport, POA and
naming attach to it in ``cosnotify.orb.runtime`` (see docs/architecture.md).
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO
from cosnotify.orb.tcfactory import TypeCodeFactory

__all__ = ["ORB", "ORBOptions", "ORB_ID", "ORB_init", "parse_orb_args"]

ORB_ID = "omniORB4"


@attrs.frozen
class ORBOptions:
    """The ``-ORB`` arguments an ORB was initialised with."""

    endpoints: tuple[str, ...] = ()
    init_refs: tuple[tuple[str, str], ...] = ()
    default_init_ref: str = ""
    extra: tuple[tuple[str, str], ...] = ()


def parse_orb_args(argv: list[str]) -> tuple[ORBOptions, list[str]]:
    """Split ``argv`` into ORB options and the remaining (non-ORB) arguments.

    Accepts ``-ORBendPoint giop:tcp:HOST:PORT``, ``-ORBInitRef NAME=URL``,
    ``-ORBDefaultInitRef URL`` and any other ``-ORBname value`` pair.
    """
    endpoints: list[str] = []
    init_refs: list[tuple[str, str]] = []
    default_ref = ""
    extra: list[tuple[str, str]] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-ORB") and arg != "-ORB":
            if i + 1 >= len(argv):
                raise BAD_PARAM(0, COMPLETED_NO, f"{arg} needs a value")
            value = argv[i + 1]
            name = arg[4:].lower()
            if name in ("endpoint", "endpoints"):
                endpoints.append(value)
            elif name == "initref":
                key, sep, url = value.partition("=")
                if not sep or not key:
                    raise BAD_PARAM(0, COMPLETED_NO, f"-ORBInitRef wants NAME=URL, got {value!r}")
                init_refs.append((key, url))
            elif name == "defaultinitref":
                default_ref = value
            else:
                extra.append((arg[4:], value))
            i += 2
            continue
        rest.append(arg)
        i += 1
    return ORBOptions(tuple(endpoints), tuple(init_refs), default_ref, tuple(extra)), rest


class ORB(TypeCodeFactory):
    """The ORB pseudo-object."""

    def __init__(self, orb_id: str, options: ORBOptions) -> None:
        self.orb_id = orb_id
        self.options = options
        self._lock = threading.RLock()
        self._destroyed = False

    def __repr__(self) -> str:
        return f"<ORB {self.orb_id!r}>"


_orbs: dict[str, ORB] = {}
_orbs_lock = threading.Lock()


def ORB_init(argv: list[str] | None = None, orb_id: str = ORB_ID) -> Any:  # noqa: N802
    """Initialise (or return the existing) ORB named ``orb_id``.

    ORB arguments are removed from ``argv`` in place, as the mapping requires.
    """
    args = argv if argv is not None else []
    options, rest = parse_orb_args(list(args))
    if argv is not None:
        argv[:] = rest
    with _orbs_lock:
        orb = _orbs.get(orb_id)
        if orb is None or orb._destroyed:
            orb = ORB(orb_id, options)
            _orbs[orb_id] = orb
        return orb
