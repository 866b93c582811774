"""Exactly-once streaming: the stream reader of an acknowledging subscription.

Strategy: the channel keeps every event until the reader acknowledges it
(``acked.py``), so the reader acknowledges an event only once Spark has
committed the micro-batch that holds it, and a query restarted from its
checkpoint finds the uncommitted events in the channel again.

- An offset names the events of the batch that ends at it by their
  SequenceNumbers: ``{"events": n, "numbers": "3-7,9", "source": ...}``
  (``events`` counts every event the query has read, so offsets differ from
  batch to batch). Numbers are store ids, in arrival order as a rule but not
  always in queue order (a priority OrderPolicy, concurrent suppliers sharing
  a commit), so a batch is a set, not a range.
- ``latestOffset`` pulls up to the read limit, dropping numbers it already
  holds (an event given again after RetryInterval), and plans the events not
  yet in a batch. At most half the subscription's window goes in one batch,
  so the next one can be pulled while this one waits for its commit.
- ``partitions(start, end)`` ships the rows of ``end``'s numbers as Arrow
  IPC. After a restart the reader holds none of them: it pulls until the
  channel has given them all again (RetryInterval after the dead reader was
  given them; at once after a server restart), keeping newer events for
  later batches, and fails with ChannelError if they have not come within
  ``replay_timeout``.
- ``commit(end)`` acknowledges the numbers of every batch up to ``end``;
  nothing before. Once acknowledge returns, the server has released them
  from its store, so they never come again.
- ``start``, in the first call a new reader gets, is committed: its numbers
  are acknowledged at once (the dead reader may have died before it did so),
  and dropped if they come again.

Events that cannot become rows are logged, acknowledged and skipped, as the
at-most-once reader skips them. The subscription outlives the query:
``stop()`` leaves it connected, holding what was not acknowledged.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.streaming.datasource import ReadLimit

from spark_bridge.acked import AckPuller, numbers_text, parse_numbers
from spark_bridge.arrow import events_to_arrow
from spark_bridge.connect import ChannelError
from spark_bridge.source import EventPartition, SourceOptions, StreamReader, _exit_on_sigterm

__all__ = ["AckStreamReader"]

log = logging.getLogger("spark_bridge.source")

_POLL = 0.05  # seconds between pulls while a replayed batch waits for its events
#: Committed batches whose numbers the reader remembers. An acknowledged event does
#: not come again (the proxy releases it before acknowledge returns, also after a
#: restart); this only guards against a copy given again while the acknowledge was
#: on its way.
RECENT = 8


class AckStreamReader(StreamReader):
    """Micro-batches of an acknowledging subscription, exactly once (module docstring).

    ``stop()`` and ``read()`` are the at-most-once reader's.
    """

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self._reset()

    def _reset(self) -> None:
        self._subscription: AckPuller | None = None  # type: ignore[assignment]
        #: Pulled, not committed: chunks of (numbers, rows), in pull order.
        self._chunks: list[tuple[list[int], pa.Table]] = []
        self._held: set[int] = set()
        #: Batches planned and not committed: (events at their end, numbers), in order.
        self._planned: list[tuple[int, set[int]]] = []
        self._in_batches: set[int] = set()
        #: Numbers Spark has committed lately (the last RECENT batches, and the start of
        #: this reader): acknowledged again, and dropped, if they come again.
        self._recent: deque[set[int]] = deque(maxlen=RECENT)
        self._committed: set[int] = set()
        self._began = False
        self._until_empty = False  # Trigger.AvailableNow: pull until a pull comes back short
        self._left: int | None = None  # ... or until max_events events are planned
        self._frozen = False
        #: The last batch planned: (its start, its end), answered again for that start.
        self._last_plan: tuple[Any, dict[str, Any]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._reset()

    def _connected(self) -> AckPuller:  # type: ignore[override]
        if self._subscription is None:
            _exit_on_sigterm()
            assert self.options.proxy_id is not None
            self._subscription = AckPuller.open(self.options.address, self.options.proxy_id)
            log.info("pulling from acknowledging proxy %d", self._subscription.proxy_id)
        return self._subscription

    # -- offsets ---------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        self._connected()
        return {"events": 0, "numbers": "", "source": self.options.source}

    def _offset(self, events: int, numbers: set[int]) -> dict[str, Any]:
        return {"events": events, "numbers": numbers_text(numbers),
                "source": self.options.source}

    def _begin(self, start: dict[str, Any]) -> None:
        """The first call of this reader: ``start`` is committed (module docstring)."""
        self.options.check_offset(start)
        if "numbers" not in start:
            raise ChannelError(self.options.address.url,
                               "the checkpoint was made by an at-most-once read of this "
                               "subscription's id, not by an exactly-once one: start the "
                               "query with a new checkpointLocation")
        if self._began:
            return
        self._began = True
        committed = parse_numbers(start["numbers"])
        self._remember(committed)
        if committed:
            self._connected().acknowledge(sorted(committed))

    def _batch_limit(self, limit: ReadLimit) -> int:
        most = getattr(limit, "max_rows", None)  # ReadMaxRows; ReadAllAvailable has none
        half = max(1, self._connected().window // 2)
        return half if most is None else max(1, min(int(most), half))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self._begin(start)
        key = (start["events"], start["numbers"])
        if self._last_plan is not None and self._last_plan[0] == key:
            return self._last_plan[1]  # asked again from the same start: the same batch
        most = self._batch_limit(limit)
        if self._left is not None:  # AvailableNow with max_events: what is left to plan
            most = min(most, self._left)
            if not most:
                self._frozen = True
        free = self._free()
        spent, budget = 0, self._connected().window + most
        while not self._frozen and len(free) < most and spent < budget:
            asked = most - len(free)
            given, _ = self._take_given(asked)
            spent += given  # copies given again count against the budget, not the batch
            if self._until_empty and given < asked:
                self._frozen = True  # what was there when the trigger began is read
            free = self._free()
            if given < asked:
                break  # the subscription has nothing more now
        taken = set(free[:most])
        if not taken:
            return start
        if self._left is not None:
            self._left -= len(taken)
        events = int(start["events"]) + len(taken)
        self._plan(events, taken)
        end = self._offset(events, taken)
        self._last_plan = (key, end)
        return end

    def _free(self) -> list[int]:
        """Numbers held and in no planned batch, in pull order."""
        return [n for numbers, _ in self._chunks for n in numbers if n not in self._in_batches]

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None

    def prepareForTriggerAvailableNow(self) -> None:
        self._until_empty = True
        self._left = self.options.max_events

    def _plan(self, events: int, numbers: set[int]) -> None:
        if all(numbers != planned for _, planned in self._planned):
            self._planned.append((events, numbers))
            self._in_batches |= numbers

    def _take_given(self, limit: int) -> tuple[int, int]:
        """Pull up to ``limit`` events; keep the new ones. How many the proxy gave, and
        how many of those were new."""
        puller = self._connected()
        given = puller.pull(limit)
        fresh: list[tuple[int, Any]] = []
        again: list[int] = []  # committed already: acknowledged again, not kept
        for number, event in given:
            if number in self._held:
                continue  # given again after RetryInterval: we have it
            if number in self._committed:
                again.append(number)
            else:
                self._held.add(number)
                fresh.append((number, event))
        if fresh:
            arrival = time.time()
            table, rejected = events_to_arrow([(event, arrival) for _, event in fresh],
                                              references=puller.orb,
                                              default_priority=puller.default_priority,
                                              default_timeout=puller.default_timeout)
            bad = {id(item.event) for item in rejected}
            for item in rejected:
                log.warning("dropped: %s", item)
            numbers = [n for n, event in fresh if id(event) not in bad]
            for number, event in fresh:
                if id(event) in bad:
                    self._held.discard(number)
                    again.append(number)  # can never be a row: acknowledged, skipped
            if numbers:
                self._chunks.append((numbers, table))
        if again:
            puller.acknowledge(again)
        return len(given), len(fresh)

    def _remember(self, committed: set[int]) -> None:
        if len(self._recent) == self._recent.maxlen:
            self._committed -= self._recent[0]
        self._recent.append(committed)
        for numbers in self._recent:
            self._committed |= numbers

    # -- planning and reading --------------------------------------------------------------
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[EventPartition]:
        self._begin(start)
        self.options.check_offset(end)
        wanted = parse_numbers(end.get("numbers", ""))
        if not wanted:
            return []
        self._plan(int(end["events"]), wanted)
        missing = wanted - self._held
        if missing:
            self._replay(wanted, missing)
        pieces = []
        for numbers, table in self._chunks:
            mask = [n in wanted for n in numbers]
            if any(mask):
                pieces.append(table.filter(pa.array(mask)))
        return self.options.event_partitions(int(start["events"]), pa.concat_tables(pieces))

    def _replay(self, wanted: set[int], missing: set[int]) -> None:
        """After a restart: pull until the channel has given ``missing`` again."""
        puller = self._connected()
        timeout = self.options.replay_timeout
        if timeout is None:
            timeout = 2 * puller.retry_interval + 30.0
        log.info("replaying a batch of %d events: waiting for %d the channel holds",
                 len(wanted), len(missing))
        give_up = time.monotonic() + timeout
        while True:
            came, _ = self._take_given(max(1, puller.window // 2))
            missing -= self._held
            if not missing:
                return
            if time.monotonic() > give_up:
                raise ChannelError(self.options.address.url,
                                   f"{len(missing)} of the {len(wanted)} events of the batch "
                                   f"being replayed did not come back within {timeout:g} s "
                                   f"(numbers {numbers_text(missing)[:200]}): they have left "
                                   "the channel (expired, discarded, or the subscription was "
                                   "made again)")
            if not came:
                time.sleep(_POLL)  # the channel gives them again after RetryInterval

    def commit(self, end: dict[str, Any]) -> None:
        done = int(end["events"])
        numbers = parse_numbers(end.get("numbers", ""))
        while self._planned and self._planned[0][0] <= done:
            numbers |= self._planned.pop(0)[1]
        if not numbers:
            return
        self._connected().acknowledge(sorted(numbers))
        self._remember(numbers)
        self._in_batches -= numbers
        self._held -= numbers
        kept = []
        for chunk_numbers, table in self._chunks:
            mask = [n not in numbers for n in chunk_numbers]
            if all(mask):
                kept.append((chunk_numbers, table))
            elif any(mask):
                kept.append(([n for n in chunk_numbers if n not in numbers],
                             table.filter(pa.array(mask))))
        self._chunks = kept
