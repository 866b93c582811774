"""Clients of a space: the seed's "EventHeap object", with its names and sequencing.

Strategy: a :class:`Client` is a handle on one Source's state in a space (a
SessionID, the next SequenceNum, and :class:`~cosnotify.tuplespace.
sequencing.Seen`). Its operations are the space's, with the client's part
of the seed done server-side: its put events are stamped (events.py), and
getEvent, removeEvent, waitForEvent and waitToRemoveEvent -- the operations
whose "Sequence Info Needed?" is "Yes" -- return only events it has not
received (sequencing.py); snoopEvents, getAll and the notification streams
ignore sequencing, as the seed says ("Sequencing is ignored").

"Only one Source of a given name may be active in an Event Heap at one
time", and "Clients should automatically reconnect to the server anytime the
connection goes down": connecting with a Source already connected replaces
the old handle (its waits end with OBJECT_NOT_EXIST, its calls are refused)
and the new one carries on the same state, so a reconnecting client keeps its
session and never receives an event twice. ``close()`` drops the state: a
later client of that Source starts a new session. The SessionID is a random
non-negative Java int (the seed leaves how to the client library). One
Source's puts are one at a time (``SourceState.put_lock``), so its
SequenceNums reach the space in order: a reader that received number 2 has
not skipped number 1.

Clients are *reaped*, since a client process may die without ``close()``
(and the seed suggests a random Source per start): a client with no call
begun or in progress for CLIENT_IDLE seconds is ended, and over CORBA one
whose connection closed and that does not call again within CLIENT_GRACE
(``connection_lost``, from the servants' connection watch). An ended client
is gone as a closed one is; ``on_end`` callbacks (a servant's deactivation)
are told, under the space's lock, so they must not block or call the space.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Callable
from typing import Any

from cosnotify.tuplespace.limits import MAX_NAME_LENGTH
from cosnotify.tuplespace.records import ClientInfo, Tuple, invalid_source
from cosnotify.tuplespace.sequencing import Seen
from cosnotify.tuplespace.waits import Accept, Cancel

__all__ = ["Client", "SourceState", "check_info"]

#: The largest SequenceNum (a Java int); numbering wraps to 1 after it.
_MAX_NUMBER = 2**31 - 1


class SourceState:
    """One Source's session, numbering and sequencing (the module docstring)."""

    def __init__(self) -> None:
        self.session_id = secrets.randbits(31)
        self._numbers = itertools.count(1)
        self.seen = Seen()
        #: Held by a put from stamping to acceptance: the Source's numbers arrive in order.
        self.put_lock = threading.Lock()

    def next_number(self) -> int:
        return (next(self._numbers) - 1) % _MAX_NUMBER + 1


def check_info(info: ClientInfo) -> ClientInfo:
    """``info`` if its names are usable, else InvalidSource with the reason."""
    for name in ("source", "application", "device", "person", "group"):
        value = getattr(info, name)
        if not isinstance(value, str):
            raise invalid_source(f"{name} must be a string, not {value!r:.100}")
        if len(value) > MAX_NAME_LENGTH:
            raise invalid_source(f"{name} is longer than {MAX_NAME_LENGTH} characters")
    if not info.source:
        raise invalid_source("a client needs a Source: \"Source should be a unique value\" "
                             "(Event Heap Client Responsibilities)")
    return info


class Client:
    """One connected client of a space (module docstring); made by ``space.connect``."""

    def __init__(self, space: Any, info: ClientInfo, state: SourceState, now: float) -> None:
        self._space = space
        self.info = info
        self._state = state
        #: False once replaced by a newer client of its Source, closed, ended or the space
        #: ended.
        self.active = True
        #: When it last began or ended a call (the channel's clock), how many calls it has
        #: begun, and how many of its waits are in progress (the space's lock guards them).
        self.heard = now
        self.calls = 0
        self.waiting = 0
        #: Called (no argument) once when it stops being active (module docstring).
        self.on_end: list[Callable[[], None]] = []

    @property
    def source(self) -> str:
        return self.info.source

    @property
    def session_id(self) -> int:
        return self._state.session_id

    @property
    def seen(self) -> Seen:
        return self._state.seen

    @property
    def put_lock(self) -> threading.Lock:
        return self._state.put_lock

    @property
    def space(self) -> Any:
        return self._space

    def stamped_fields(self) -> dict[str, str]:
        """The Source fields its events get (Tables 1 and 2), empty ones included."""
        info = self.info
        return {"Source": info.source, "SourceApplication": info.application,
                "SourceDevice": info.device, "SourcePerson": info.person,
                "SourceGroup": info.group}

    def next_number(self) -> int:
        return self._state.next_number()

    # -- the seed's operations, as this client -----------------------------------------------
    def put_event(self, event: Any) -> int:
        result: int = self._space.put_event(event, client=self)
        return result

    # ``accept``: the caller's test of a stored event (space.py's module docstring).
    def get_event(self, templates: Any, accept: Accept | None = None) -> Tuple | None:
        found: Tuple | None = self._space.get_event(templates, client=self, accept=accept)
        return found

    def remove_event(self, templates: Any, accept: Accept | None = None) -> Tuple | None:
        found: Tuple | None = self._space.remove_event(templates, client=self, accept=accept)
        return found

    def wait_for_event(self, templates: Any, timeout: float | None = None,
                       cancel: Cancel | None = None, accept: Accept | None = None
                       ) -> Tuple | None:
        found: Tuple | None = self._space.wait_for_event(templates, timeout, client=self,
                                                         cancel=cancel, accept=accept)
        return found

    def wait_to_remove_event(self, templates: Any, timeout: float | None = None,
                             cancel: Cancel | None = None, accept: Accept | None = None
                             ) -> Tuple | None:
        found: Tuple | None = self._space.wait_to_remove_event(
            templates, timeout, client=self, cancel=cancel, accept=accept)
        return found

    def snoop_events(self, templates: Any, max_results: int | None = None) -> list[Tuple]:
        self._space._check_client(self)
        found: list[Tuple] = self._space.snoop_events(templates, max_results)
        return found

    def get_all(self, max_results: int | None = None) -> list[Tuple]:
        self._space._check_client(self)
        found: list[Tuple] = self._space.get_all(max_results)
        return found

    def register_for_events(self, templates: Any, consumer: Any) -> int:
        """registerForEvents: the stream is this client's Source's (streams.py)."""
        stream: int = self._space.register_for_events(templates, consumer, client=self)
        return stream

    def register_for_all(self, consumer: Any) -> int:
        stream: int = self._space.register_for_all(consumer, client=self)
        return stream

    def deregister(self, stream: int) -> bool:
        """deregister: a stream of this client's Source; False for any other."""
        return bool(self._space.deregister(stream, client=self))

    def delete_event(self, tuple_or_id: Any) -> bool:
        self._space._check_client(self)
        return bool(self._space.delete_event(tuple_or_id))

    def clear(self) -> int:
        self._space._check_client(self)
        cleared: int = self._space.clear()
        return cleared

    def close(self) -> None:
        """The client goes: its state is dropped and its waits end (OBJECT_NOT_EXIST)."""
        self._space._disconnect(self)

    def connection_lost(self) -> None:
        """The connection it last called on closed: it is ended unless it calls again
        within CLIENT_GRACE (module docstring)."""
        self._space._connection_lost(self)

    def __repr__(self) -> str:
        state = "active" if self.active else "gone"
        return f"<Client {self.info.source!r} session={self.session_id} {state}>"
