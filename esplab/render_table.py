"""Tables that fit the terminal without splitting a value.

:class:`FitTable` draws a :class:`~esplab.commands.result.TableResult` at whatever
width rich offers: SPIs, addresses, hex words, modes and counters are never split,
free text wraps at spaces, and when no boxed table fits a compact one (then one
block of ``column value`` lines a row) takes its place.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from esplab.commands.result import TableResult

__all__ = ["FitTable"]

#: Free text (a cell of more than this many words) wraps at spaces; a word of it longer
#: than TEXT_WORD columns folds. Other columns hold values (SPIs, addresses, hex words,
#: modes, devices, counters), and none of their words is ever split.
TEXT_WORDS = 3
TEXT_WORD = 20
#: Columns between two cells: the boxed table's ``│`` and padding; the compact one's.
BOXED_GAP, COMPACT_GAP = 3, 2


def _words(text: str) -> list[str]:
    return text.split() or [""]


def _header_pieces(header: str) -> list[str]:
    """A header's unbreakable pieces: its words, split after each ``/``
    (``replay/win/failed`` may stand as ``replay/``, ``win/``, ``failed``)."""
    return [p for w in _words(header) for p in re.findall(r"[^/]*/|[^/]+", w) or [w]]


def _header_text(header: str, width: int) -> Text:
    """The header, its pieces packed into lines of at most ``width`` columns."""
    lines: list[str] = []
    for piece in _header_pieces(header):
        glue = "" if lines and lines[-1].endswith("/") else " "
        if lines and len(lines[-1]) + len(glue) + len(piece) <= width:
            lines[-1] += glue + piece
        else:
            lines.append(piece)
    return Text("\n".join(lines))


class FitTable:
    """A TableResult that fits the width rich offers without splitting a value.

    Each column gets at least its longest word (a free-text column at most TEXT_WORD
    of it), so values never split and text wraps at spaces. When the boxed table
    cannot give that, a compact one without borders is tried, then one block of
    ``column value`` lines a row.
    """

    def __init__(self, result: TableResult) -> None:
        self.result = result
        self.rows = [[str(cell) for cell in row] for row in result.rows]

    def _widths(self) -> tuple[list[int], list[int]]:
        """(least, natural) content width of each column."""
        least: list[int] = []
        natural: list[int] = []
        for i, header in enumerate(self.result.columns):
            cells = [row[i] for row in self.rows if i < len(row)]
            text = any(len(_words(c)) > TEXT_WORDS for c in cells)
            word = max((len(w) for c in cells for w in _words(c)), default=0)
            head = max(len(p) for p in _header_pieces(header))
            least.append(max(min(word, TEXT_WORD) if text else word, head, 1))
            lines = [ln for c in [header, *cells] for ln in c.splitlines()]
            natural.append(max((len(ln) for ln in lines), default=1))
        return least, natural

    @staticmethod
    def _share(least: list[int], natural: list[int], room: int) -> list[int]:
        """Widths from ``least`` up towards ``natural``, within ``room`` columns."""
        widths = list(least)
        spare = room - sum(widths)
        while spare > 0:
            short = [i for i, w in enumerate(widths) if w < natural[i]]
            if not short:
                break
            step = max(1, spare // len(short))
            for i in short:
                give = min(step, natural[i] - widths[i], spare)
                widths[i] += give
                spare -= give
        return widths

    def _table(self, widths: list[int] | None, compact: bool) -> Table:
        result = self.result
        table = Table(title=result.title or None, header_style="bold")
        if compact:  # no borders: a rule under the header, COMPACT_GAP between columns
            table.box = box.SIMPLE_HEAD
            table.show_edge = table.pad_edge = False
            table.padding = (0, 0, 0, COMPACT_GAP - 1)
        for i, header in enumerate(result.columns):
            width = None if widths is None else widths[i]
            shown = header if width is None else _header_text(header, width)
            table.add_column(shown, width=width, overflow="fold")  # folds only past TEXT_WORD
        for row in self.rows:
            table.add_row(*row)
        return table

    def _records(self) -> Group:
        """One block a row, ``column value`` a line: for widths no table fits."""
        parts: list[RenderableType] = []
        if self.result.title:
            parts.append(Text(self.result.title, style="italic"))
        for n, row in enumerate(self.rows):
            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold", no_wrap=True)
            grid.add_column(overflow="fold")
            for header, cell in zip(self.result.columns, row, strict=False):
                grid.add_row(" ".join(_words(header)), cell)
            parts.extend([Text(""), grid] if n else [grid])  # a blank line between rows
        return Group(*parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = options.max_width
        least, natural = self._widths()
        count = len(least)
        boxed = room - BOXED_GAP * count - 1  # │ x │ y │
        if sum(natural) <= boxed or not count:
            yield self._table(None, compact=False)  # rich's own layout: nothing wraps
        elif sum(least) <= boxed:
            yield self._table(self._share(least, natural, boxed), compact=False)
        elif sum(least) <= (compact := room - COMPACT_GAP * (count - 1)):
            yield self._table(self._share(least, natural, compact), compact=True)
        else:
            yield self._records()
