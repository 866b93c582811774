"""POA managers and the upcall context (CORBA 3.0 11.3.2 and 11.3.9).

Strategy: a :class:`POAManager` is a small state machine that every request
passes through (:meth:`POAManager.enter` / ``leave``): ACTIVE admits it,
HOLDING makes it wait in the thread that read it (up to ``max_held`` at a
time, then ``TRANSIENT``), DISCARDING answers ``TRANSIENT`` and INACTIVE
``OBJ_ADAPTER`` (11.3.2.1). The thread-local upcall stack records which POA,
object id and servant each thread is serving, for
``PortableServer::Current`` and ``servant._this()``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from cosnotify.orb import PortableServer as PS
from cosnotify.orb.exceptions import (
    BAD_INV_ORDER,
    COMPLETED_NO,
    OBJ_ADAPTER,
    OMGVMCID,
    TRANSIENT,
    UserException,
)
from cosnotify.orb.values import Enum, EnumItem

if TYPE_CHECKING:
    from cosnotify.orb.poa import POA

__all__ = ["Current", "POAManager", "in_upcall", "pop_upcall", "push_upcall"]


def _exception(name: str, repo: str, fields: tuple[str, ...] = ()) -> type[UserException]:
    def __init__(self: UserException, *args: Any) -> None:
        UserException.__init__(self, *args)
        for field, value in zip(fields, args):
            setattr(self, field, value)

    return type(name, (UserException,), {"_NP_RepositoryId": f"IDL:omg.org/PortableServer/{repo}:1.0",
                                         "__init__": __init__, "__module__": __name__})


_STATES = tuple(EnumItem(n, i) for i, n in enumerate(("HOLDING", "ACTIVE", "DISCARDING", "INACTIVE")))
HOLDING, ACTIVE, DISCARDING, INACTIVE = _STATES
State = Enum("IDL:omg.org/PortableServer/POAManager/State:1.0", _STATES)


class POAManager:
    """Gatekeeper of the requests for one or more POAs (11.3.2)."""

    AdapterInactive = _exception("AdapterInactive", "POAManager/AdapterInactive")
    State = State
    HOLDING, ACTIVE, DISCARDING, INACTIVE = HOLDING, ACTIVE, DISCARDING, INACTIVE

    def __init__(self, name: str = "", max_held: int = 1000) -> None:
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._state = HOLDING
        self._running = 0
        self._held = 0
        self._idle_waiters = 0
        self.max_held = max_held

    def get_state(self) -> EnumItem:
        return self._state

    def get_id(self) -> str:
        return self._name

    def _set(self, state: EnumItem, wait_for_completion: bool) -> None:
        with self._cond:
            if self._state is INACTIVE and state is not INACTIVE:
                raise self.AdapterInactive()
            self._state = state
            self._cond.notify_all()
        if wait_for_completion:
            self._wait_idle()

    def activate(self) -> None:
        self._set(ACTIVE, False)

    def hold_requests(self, wait_for_completion: bool) -> None:
        self._set(HOLDING, wait_for_completion)

    def discard_requests(self, wait_for_completion: bool) -> None:
        self._set(DISCARDING, wait_for_completion)

    def deactivate(self, etherealize_objects: bool, wait_for_completion: bool) -> None:
        self._set(INACTIVE, wait_for_completion)

    def _wait_idle(self) -> None:
        if in_upcall():
            raise BAD_INV_ORDER(OMGVMCID | 3, COMPLETED_NO,
                                "wait_for_completion inside a request on this ORB")
        with self._cond:
            self._idle_waiters += 1
            try:
                self._cond.wait_for(lambda: self._running == 0)
            finally:
                self._idle_waiters -= 1

    def enter(self) -> None:
        """Admit a request, hold it, or refuse it, by the current state."""
        cond = self._cond
        with cond:
            while True:
                state = self._state
                if state is ACTIVE:
                    self._running += 1
                    return
                if state is DISCARDING:
                    raise TRANSIENT(OMGVMCID | 1, COMPLETED_NO, "the POA manager is discarding requests")
                if state is INACTIVE:
                    raise OBJ_ADAPTER(OMGVMCID | 1, COMPLETED_NO, "the POA manager is inactive")
                if self._held >= self.max_held:
                    raise TRANSIENT(OMGVMCID | 1, COMPLETED_NO, "too many requests held")
                self._held += 1
                try:
                    cond.wait()
                finally:
                    self._held -= 1

    def leave(self) -> None:
        with self._cond:
            self._running -= 1
            if self._running == 0 and self._idle_waiters:
                self._cond.notify_all()

    def __repr__(self) -> str:
        return f"<POAManager {self._name!r} {self._state._n}>"


# -- upcall context (PortableServer::Current) --------------------------------------------------


class _Upcalls(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[POA, bytes, PS.Servant]] = []


_local = _Upcalls()


def _stack() -> list[tuple[POA, bytes, PS.Servant]]:
    return _local.stack


def in_upcall() -> bool:
    return bool(_local.stack)


def push_upcall(poa: POA, oid: bytes, servant: PS.Servant) -> None:
    _local.stack.append((poa, oid, servant))


def pop_upcall() -> None:
    _local.stack.pop()


class Current:
    """``PortableServer::Current``: which POA, object and servant this request is for."""

    NoContext = _exception("NoContext", "Current/NoContext")

    def _top(self) -> tuple[POA, bytes, PS.Servant]:
        stack = _local.stack
        if not stack:
            raise self.NoContext()
        top: tuple[POA, bytes, PS.Servant] = stack[-1]
        return top

    def get_POA(self) -> POA:
        return self._top()[0]

    def get_object_id(self) -> bytes:
        return self._top()[1]

    def get_servant(self) -> PS.Servant:
        return self._top()[2]

    def get_reference(self) -> Any:
        poa, oid, servant = self._top()
        return poa.create_reference_with_id(oid, servant._NP_RepositoryId)
