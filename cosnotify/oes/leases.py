"""The lease timer of a tree's subscription contracts.

Strategy: "If the lease expires, however, all subscriptions associated with
the expired contract are immediately cancelled" (Subscription Contracts). A
tree has one timer on the service's clock, at the earliest expiry of its
contracts' leases, and a heap of ``(expiry, contract id)`` with one entry per
leased contract. A renewal only moves an expiry later ("further extending into
the future the time at which the lease expires"), so it adds nothing: the
entry is looked at again when it comes up and put back at the new expiry. An
ended contract leaves only its id in the heap (dropped when it comes up, or
when such entries outnumber the live ones), and a timer that is replaced
keeps no reference: nothing keeps an ended contract, its admin or its
consumer alive.
"""

from __future__ import annotations

import heapq
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cosnotify.oes.contracts import ContractBook, _Contract

__all__ = ["Leases"]

log = logging.getLogger("cosnotify.oes")


class Leases:
    """The leases of one tree's contracts (every method but the timer's runs under the
    tree's lock)."""

    def __init__(self, book: ContractBook) -> None:
        self._book = book
        self._clock = book._service.clock
        #: (expiry, contract id), earliest first; entries of ended contracts wait there.
        self._expiries: list[tuple[float, int]] = []
        self._timer: Any = None

    def add(self, contract: _Contract) -> None:
        """A new contract's lease: its entry, and the timer if it ends first."""
        heapq.heappush(self._expiries, (contract.expiry, contract.id))
        self._arm()

    def clear(self) -> None:
        """The channel is destroyed: no lease is watched any more."""
        self._expiries.clear()
        self._disarm()

    def _arm(self) -> None:
        """The one timer, at the earliest entry (the entries of ended contracts are
        dropped when they outnumber the live ones)."""
        heap = self._expiries
        live = self._book._contracts
        if len(heap) > 2 * len(live) + 64:
            heap[:] = [(c.expiry, c.id) for c in live.values()]
            heapq.heapify(heap)
        if not heap:
            self._disarm()
            return
        when = heap[0][0]
        timer = self._timer
        if timer is not None and not timer.cancelled and timer.when <= when:
            return  # it fires first, and arms again
        self._disarm()
        self._timer = self._clock.call_at(when, self._expire)

    def _disarm(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            timer.callback = _nothing  # the clock keeps it until its time: keep nothing

    def _expire(self) -> None:
        """The timer: the contracts whose lease is over end; the others (renewed
        meanwhile) wait for their new expiry."""
        book = self._book
        if book._channel._factory._closed:
            return  # stopping: a persistent contract comes back with its lease
        with book._tree._lock:
            if book._tree._ended:
                return
            self._timer = None
            now = self._clock.now()
            heap = self._expiries
            while heap and heap[0][0] <= now:
                _, contract_id = heapq.heappop(heap)
                contract = book._contracts.get(contract_id)
                if contract is None:
                    continue  # ended before its lease did
                if contract.expiry > now:
                    heapq.heappush(heap, (contract.expiry, contract_id))
                    continue
                try:
                    book._end(contract, "its lease expired")
                except Exception:
                    log.exception("contract %d could not be ended", contract_id)
            self._arm()


def _nothing() -> None:
    """What a disarmed timer would call."""
