"""``cosnotify top``'s two tables: their columns, and which fit a window's width.

Strategy: a table is its rows' cells by heading; :func:`_kept` picks the
columns a width holds (the rows' numbers and states keep their width, so whole
columns go, those that matter least first, rather than every text column being
narrowed to ``…``), and the text columns left share what remains, the widest
cut first, none below its least width (docs/top.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from cosnotify.tools.top import ChannelRow, ProxyRow

__all__ = ["cell", "channel_table", "proxy_table", "table"]


def table(plain: bool) -> Table:
    return Table(box=None, pad_edge=False, show_edge=False, expand=False,
                 header_style="bold" if plain else "bold reverse")


_NUMBER: dict[str, Any] = {"justify": "right", "no_wrap": True}
#: Text columns may be narrowed (widest first) to fit; their cells stay on one line.
_WORDS: dict[str, Any] = {"overflow": "ellipsis"}


#: Each table's columns: (heading, kept rank, least width); the narrower the window,
#: the more columns go, highest rank first (the row's identity, state and failures
#: last), and a text column is narrowed (``…``) no further than its least width.
_CHANNEL_COLUMNS = [("CHANNEL", 0, 10), ("PROXIES", 5, 0), ("IN/s", 3, 0), ("OUT/s", 2, 0),
                    ("QUEUED", 1, 0), ("DISCARDED", 7, 0), ("DISC/s", 6, 0),
                    ("FAILED", 4, 0), ("FAIL/s", 1, 0)]
_PROXY_COLUMNS = [("CHANNEL", 0, 4), ("ADMIN", 8, 4), ("PROXY", 0, 5), ("KIND", 1, 9),
                  ("CLIENT", 7, 6), ("STATE", 0, 0), ("IN/s", 5, 0), ("OUT/s", 3, 0),
                  ("QUEUE", 2, 0), ("DISCARDED", 9, 0), ("FAILED", 4, 0), ("FAIL/s", 2, 0),
                  ("LAST FAILURE", 10, 12)]
_TEXT = frozenset({"CHANNEL", "ADMIN", "PROXY", "KIND", "CLIENT", "LAST FAILURE"})


def _kept(columns: list[tuple[str, int, int]], rows: list[dict[str, Any]],
          width: int | None) -> list[tuple[str, int | None]]:
    """The columns shown in ``width`` columns, each with the most its text may take
    (None: all of it). The rows' numbers and states keep their width, so rather than
    narrowing every text column to ``…``, whole columns go, highest rank first, until
    what they need fits; the text columns then share what is left, each at least its
    least width."""
    def cells(head: str) -> list[int]:
        return [len(head)] + [Text(row[head]).cell_len if isinstance(row[head], str)
                              else row[head].cell_len for row in rows]

    kept = [(head, rank, max(least, len(head)) if head in _TEXT else max(cells(head)))
            for head, rank, least in columns]
    while width is not None and len(kept) > 1 and \
            sum(column[2] for column in kept) + 2 * (len(kept) - 1) > width:
        kept.remove(max(kept, key=lambda column: column[1]))
    if width is None:
        return [(head, None) for head, _, _ in kept]
    texts = {head: (least, max(cells(head))) for head, _, least in kept if head in _TEXT}
    room = width - 2 * (len(kept) - 1) - sum(n for head, _, n in kept if head not in _TEXT)

    def used(level: int) -> int:  # every text column cut at ``level``, none below least
        return sum(max(least, min(natural, level)) for least, natural in texts.values())

    level = max((natural for _, natural in texts.values()), default=0)
    while level > 0 and used(level) > room:  # the widest are cut first
        level -= 1
    return [(head, max(texts[head][0], level) if head in texts and texts[head][1] > level
             else None) for head, _, _ in kept]


def _filled(table: Table, kept: list[tuple[str, int | None]],
            rows: list[dict[str, Any]]) -> Table:
    for head, cap in kept:
        if head in _TEXT:
            table.add_column(cell(head), max_width=cap, **_WORDS)
        elif head == "STATE":
            table.add_column(cell(head), no_wrap=True)
        else:
            table.add_column(cell(head), **_NUMBER)
    for row in rows:
        table.add_row(*(row[head] for head, _ in kept))
    return table


def channel_table(rows: list[ChannelRow], plain: bool, width: int | None = None) -> Table:
    cells = [{"CHANNEL": cell(row.label), "PROXIES": str(row.proxies),
              "IN/s": _rate(row.events_in), "OUT/s": _rate(row.events_out),
              "QUEUED": str(row.depth), "DISCARDED": str(row.discarded),
              "DISC/s": _rate(row.discards), "FAILED": _failed(row.failed),
              "FAIL/s": _rate(row.failures, alarm=True)} for row in rows]
    return _filled(table(plain), _kept(_CHANNEL_COLUMNS, cells, width), cells)


def proxy_table(rows: list[ProxyRow], plain: bool, width: int | None = None) -> Table:
    cells = []
    for row in rows:
        queue = "" if row.depth is None else (f"{row.depth}/{row.limit}" if row.limit > 0
                                              else str(row.depth))
        supplier = row.depth is not None
        cells.append({
            "CHANNEL": cell(row.channel), "ADMIN": cell(row.admin), "PROXY": cell(row.proxy),
            "KIND": cell(row.kind), "CLIENT": cell(row.client), "STATE": cell(row.state),
            "IN/s": _rate(row.events_in), "OUT/s": _rate(row.events_out, supplier),
            "QUEUE": queue, "DISCARDED": "" if row.discarded is None else str(row.discarded),
            "FAILED": _failed(row.failed), "FAIL/s": _rate(row.failures, supplier, alarm=True),
            "LAST FAILURE": cell(row.last_failure, "red")})
    return _filled(table(plain), _kept(_PROXY_COLUMNS, cells, width), cells)


def cell(text: str, style: str = "") -> Text:
    """``text`` as it is (no markup), on one line, cut with an ellipsis if too wide."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _rate(value: float | None, show: bool = True, alarm: bool = False) -> Text:
    if not show:
        return Text("")
    if value is None:
        return Text("-", style="dim")
    return Text(f"{value:.1f}", style="bold red" if alarm and value > 0 else "")


def _failed(value: int | None) -> Text:
    if value is None:
        return Text("")
    return Text(str(value), style="red" if value else "")
