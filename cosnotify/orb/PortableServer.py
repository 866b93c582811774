"""The ``PortableServer`` module: servants, and (with the ORB) the POA.

Strategy: the skeleton base class lives here so that generated ``__POA``
packages can import it before any ORB exists. A servant knows its interface
through ``_NP_RepositoryId`` and ``_NP_operations`` (set by the generated
skeleton class) and answers ``_is_a`` locally.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from cosnotify.orb.interface import Operation

__all__ = ["Servant"]


class Servant:
    """Base of every skeleton class (``PortableServer::Servant``)."""

    _NP_RepositoryId: ClassVar[str] = ""
    _NP_operations: ClassVar[Mapping[str, Operation]] = {}

    def _is_a(self, repo_id: str) -> bool:
        if repo_id == "IDL:omg.org/CORBA/Object:1.0":
            return True
        return any(getattr(c, "_NP_RepositoryId", None) == repo_id for c in type(self).__mro__)

    def _non_existent(self) -> bool:
        return False

    def _this(self) -> Any:
        from cosnotify.orb.exceptions import BAD_INV_ORDER, COMPLETED_NO

        raise BAD_INV_ORDER(0, COMPLETED_NO, "no POA is running to activate this servant")
