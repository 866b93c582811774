"""The tuple space's limits and defaults, each one constant (docs/history.md).

Strategy: every bound the space enforces is named here, so the docs, the
IDL constants (idl/CosNotifyEventHeap.idl: MaxWaitMs, MaxResults,
MaxTemplates) and the code read the same numbers.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLIENT_GRACE",
    "CLIENT_IDLE",
    "DEFAULT_TIME_TO_LIVE",
    "ID_BLOCK",
    "INDEX_IDLE",
    "MAX_BYTES",
    "MAX_CLIENTS",
    "MAX_CURSORS",
    "MAX_INDEXED_NAMES",
    "MAX_NAME_LENGTH",
    "MAX_RESULTS",
    "MAX_SEEN",
    "MAX_SESSIONS_SEEN",
    "MAX_TEMPLATES",
    "MAX_TUPLES",
    "MAX_WAIT",
    "MAX_WAITERS",
    "SCAN_SLICE",
    "WAIT_GRACE",
]

#: Seconds a tuple lives when its event has no Timeout or StopTime: the seed's Table 1,
#: "TimeToLive  Integer  120000 ms" (the post value an Event Heap client sets).
DEFAULT_TIME_TO_LIVE: Final = 120.0
#: Live tuples a space holds at most (``TupleSpace.of(channel, max_tuples=...)`` may
#: choose fewer or more). A put beyond it is LimitExceeded; an event another supplier
#: brings is still delivered to the channel's consumers but not kept (counted).
MAX_TUPLES: Final = 250_000
#: Estimated encoded bytes of the live tuples of a space at most
#: (``TupleSpace.of(channel, max_bytes=...)``; sizes.py). A put beyond it is
#: LimitExceeded; an event another supplier brings is kept by dropping the oldest
#: tuples (counted), as retention's RetainBytes does.
MAX_BYTES: Final = 256 * 2**20
#: Seconds a wait lasts at most (the IDL's MaxWaitMs); a longer one is LimitExceeded.
MAX_WAIT: Final = 300.0
#: Seconds past its own end a waiting thread also stops on the real clock, whatever the
#: channel's clock says (a safety net for a clock that does not move).
WAIT_GRACE: Final = 60.0
#: Calls waiting at once on one space.
MAX_WAITERS: Final = 1_000
#: Templates one call takes (the IDL's MaxTemplates).
MAX_TEMPLATES: Final = 64
#: Tuples snoop_events and get_all return at most (the IDL's MaxResults).
MAX_RESULTS: Final = 10_000
#: Clients (Sources) connected to one space at once.
MAX_CLIENTS: Final = 10_000
#: Seconds a client may go without a call (none begun, none in progress) before it is
#: ended: its state is dropped and its calls are OBJECT_NOT_EXIST (it reconnects).
CLIENT_IDLE: Final = 600.0
#: Over CORBA: seconds a client has to call again after the connection it last called
#: on closes; then it is ended (a client process that died frees its Source).
CLIENT_GRACE: Final = 60.0
#: Characters of a client's Source, Application, Device, Person or Group.
MAX_NAME_LENGTH: Final = 1_024
#: Property names the space indexes tuples by (besides EventType), made on first use by
#: a template's actual or formal field; past it, templates on other names are matched by
#: scan.
MAX_INDEXED_NAMES: Final = 16
#: Seconds an index of a property name lives unused by any template; then it is dropped
#: (events no longer pay for it, and its place is free for another name).
INDEX_IDLE: Final = 60.0
#: Tuples a call examines (or indexes) while holding the space's lock; then it lets the
#: lock go, so the channel's pushes and other calls go on, and resumes where it was.
SCAN_SLICE: Final = 2_000
#: Templates a client's sequencing remembers a cursor for (the least recently used goes).
MAX_CURSORS: Final = 64
#: (EventType, Source) pairs a client's sequencing remembers; past it the oldest goes.
MAX_SEEN: Final = 100_000
#: Sessions remembered per (EventType, Source) pair; past it the oldest goes.
MAX_SESSIONS_SEEN: Final = 16
#: Tuple ids taken from the store's counter at a time: one counter write (an fsync)
#: per ID_BLOCK tuples, not per tuple.
ID_BLOCK: Final = 1_024
