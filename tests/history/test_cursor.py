"""``after``: a query that continues a previous page (cosnotify's addition, docs/history.md).

The Eventer seed's query has ``maxResults`` but no way to ask for the next
results; a client reading a long history (``cosnotify query``, the Spark
history read) continues after the last event it got. Every page together
is the whole answer, once, in the query's order -- also when many events
share one timestamp (one supply call's events share one, as "All events
created based on a single MsgRegisterReq have the same timestamp").
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.history.query import EventId
from tests.history.test_channel import event, numbers, retain, supplier


def pages(channel: Any, size: int, **fields: Any) -> list[list[int]]:
    """Every page of ``size`` a query gives, each continuing after the last."""
    out: list[list[int]] = []
    after = None
    while True:
        found = channel.query(maxResults=size, **fields,
                              **({} if after is None else {"after": after}))
        if found:
            out.append(numbers(found))
        if len(found) < size:
            return out
        after = found[-1].id


def test_pages_make_the_whole_answer_once(factory: EventChannelFactory,
                                          clock: ManualClock) -> None:
    """Ten events of one timestamp (one supply call), then five more: pages of 3, in
    either order, give each event once, in the order of the query without pages."""
    channel, _ = factory.create_channel([], retain(count=100))
    push = supplier(channel)
    push.push_structured_events([event("a", "b", n) for n in range(10)])
    clock.advance(1)
    push.push_structured_events([event("a", "b", n) for n in range(10, 15)])
    for order in ("ascending", "descending"):
        whole = numbers(channel.query(order=order))
        paged = pages(channel, 3, order=order)
        assert [n for page in paged for n in page] == whole
        assert all(len(page) == 3 for page in paged)


def test_pages_by_source_timestamp_go_on_into_the_undefined(
        factory: EventChannelFactory) -> None:
    """Ordered by source timestamp, "events with source timestamp undefined returned
    last": a page may end in either part, and the next goes on from there."""
    channel, _ = factory.create_channel([], retain(count=100))
    supplier(channel).push_structured_events(
        [event("a", "b", n, source=None if n % 2 else 100.0 - n) for n in range(9)])
    whole = numbers(channel.query(orderBy="sourceTimestamp", order="ascending"))
    assert whole == [8, 6, 4, 2, 0, 1, 3, 5, 7]
    for size in (1, 2, 4):
        paged = pages(channel, size, orderBy="sourceTimestamp", order="ascending")
        assert [n for page in paged for n in page] == whole


def test_unique_type_answers_go_on_after_a_cursor(factory: EventChannelFactory,
                                                  clock: ManualClock) -> None:
    """Under uniqueType, ``after`` gives the first event of each type past the cursor
    (review 68: it was refused, though a cut answer said ``more``); dropping the types
    it already has, a client paging gets the answer asked in one query."""
    channel, _ = factory.create_channel([], retain(count=100))
    push = supplier(channel)
    for n in range(20):
        push.push_structured_events([event("a", f"t{n * 7 % 5}", n)])
        clock.advance(1)
    for order in ("ascending", "descending"):
        whole = channel.query(order=order, uniqueType=True)
        assert len(whole) == 5
        got: list[Any] = []
        seen: set[tuple[str, ...]] = set()
        after = None
        while True:
            page = channel.query(order=order, uniqueType=True, maxResults=2,
                                 **({} if after is None else {"after": after}))
            got += [e for e in page if e.type not in seen]
            seen.update(e.type for e in page)
            if len(page) < 2:
                break
            after = page[-1].id
        assert numbers(got) == numbers(whole)


def test_a_cursor_that_is_gone_is_bad_param(factory: EventChannelFactory) -> None:
    """An event trimmed meanwhile cannot say where to go on: BAD_PARAM with the
    reason; an id of another server has nothing after it here."""
    channel, _ = factory.create_channel([], retain(count=2))
    push = supplier(channel)
    push.push_structured_events([event("a", "b", 0)])
    first = channel.query()[0].id
    push.push_structured_events([event("a", "b", n) for n in range(1, 4)])
    with pytest.raises(CORBA.BAD_PARAM, match="not retained"):
        channel.query(after=first)
    with pytest.raises(CORBA.BAD_PARAM, match="not retained"):
        channel.query(after=EventId(first.server, first.session + 1, first.instance))
    assert channel.query(after=EventId(first.server + 1, 0, 0)) == []
