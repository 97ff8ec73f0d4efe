"""Turning results into rich renderables. Rendering changes nothing.

Every renderer is a pure function of the result; the Console is the caller's.
Colour follows rich's own rules, so ``NO_COLOR`` and dumb terminals are honoured
by the Console, and widths adapt to it: hexdumps show 16 bytes a row, or 8 or 4
on narrow terminals.

Hexdumps colour each byte by the field it belongs to (``esplab.spans.field_spans``):
bytes with a role (ESP header, IV, payload, padding, pad length, next header, ICV,
MTK tag) have one style wherever they appear, other fields take their layer's
colour from the tree. A legend names every field with its offset, so the dump
reads without colour too. A diff shows only the rows that differ, the left side
(``-``) over the right (``+``), with the changed bytes highlighted and marked
``^^`` underneath.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from esplab.commands.result import (
    ByteView,
    DiffResult,
    ErrorResult,
    HelpResult,
    JourneyResult,
    MessageResult,
    PacketResult,
    QuitResult,
    Result,
    TableResult,
    TextResult,
)
from esplab.diff import present_fields
from esplab.render_table import FitTable

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.spans import EspLayout, FieldSpan

__all__ = [
    "DIFF_LEFT_STYLE",
    "DIFF_RIGHT_STYLE",
    "ICV_STYLE",
    "LAYER_STYLES",
    "ROLE_STYLES",
    "DiffBytes",
    "FitTable",
    "HexView",
    "bytes_per_row",
    "field_rows",
    "field_table",
    "hexdump",
    "legend",
    "packet_spans",
    "render",
    "render_error",
    "span_styles",
]

# One style per layer depth, cycled; the hexdump uses the same colours as the tree.
LAYER_STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red")
# Bytes with a meaning of their own look the same in every dump (esplab.spans.ROLES).
ROLE_STYLES = {
    "esp-header": "bold magenta",
    "iv": "bold yellow",
    "payload": "blue",
    "padding": "black on yellow",
    "pad-len": "black on cyan",
    "next-header": "black on green",
    "icv": "bold white on red",
    "mtk-tag": "bold white on blue",
}
ICV_STYLE = ROLE_STYLES["icv"]
DIFF_LEFT_STYLE = "bold red reverse"
DIFF_RIGHT_STYLE = "bold green reverse"


def render_error(message: str) -> Text:
    return Text(f"error: {message}", style="bold red")


def field_rows(layer: Packet) -> list[tuple[str, str]]:
    """(field name, shown value) for each field of one layer, as Scapy shows them."""
    rows: list[tuple[str, str]] = []
    for fld in present_fields(layer):
        value: Any = layer.getfieldval(fld.name)
        try:
            shown = fld.i2repr(layer, value)
        except Exception:  # a malformed value still shows, raw
            shown = repr(value)
        rows.append((fld.name, str(shown)))
    return rows


def _layers(packet: Packet) -> list[Packet]:
    out: list[Packet] = []
    layer: Any = packet
    while layer is not None and len(out) < 64:
        if layer.__class__.__name__ == "NoPayload":
            break
        out.append(layer)
        layer = layer.payload
    return out


def field_table(layer: Packet, style: str = "") -> Table:
    """One layer's fields as a register view (``esplab.render_fields``): offset or
    bit range, name (a word's fields indented under it), number right-aligned,
    meaning."""
    from esplab.render_fields import layer_rows

    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim", no_wrap=True, justify="right")
    table.add_column(style=style, no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(overflow="fold")
    for row in layer_rows(layer, present_fields(layer)):
        name = Text(("  " if row.inner else "") + row.name, style="bold" if row.word else "")
        table.add_row(row.where, name, row.number, row.meaning)
    return table


def packet_tree(packet: Packet, title: str = "") -> Tree:
    """The packet's layers, each with its field table indented under its name."""
    tree = Tree(Text(title or packet.__class__.__name__, style="bold"))
    for depth, layer in enumerate(_layers(packet)):
        style = LAYER_STYLES[depth % len(LAYER_STYLES)]
        heading = Text(layer.__class__.__name__, style=f"bold {style}")
        tree.add(Group(heading, Padding(field_table(layer, style), (0, 0, 0, 2), expand=False)))
    return tree


def _row_width(per_row: int, offset_digits: int = 4) -> int:
    """Characters of one hexdump row: offset, bytes (with the mid gap), ASCII."""
    return offset_digits + 2 + 3 * per_row + (1 if per_row > 8 else 0) + 1 + per_row


def bytes_per_row(width: int, length: int = 0, extra: int = 0) -> int:
    """16 bytes a row when the terminal is wide enough, else 8, else 4."""
    digits = max(4, len(f"{max(length - 1, 0):x}"))
    for per_row in (16, 8):
        if _row_width(per_row, digits) + extra <= width:
            return per_row
    return 4


def hexdump(
    data: bytes, spans: list[tuple[int, int, str]] | None = None, *, per_row: int = 16
) -> Text:
    """Offset, ``per_row`` bytes, ASCII; bytes inside ``spans`` (start, end, style) are
    styled, and so is the gap between two neighbours of the same style."""
    owner: list[int] = [-1] * len(data)
    styles = [style for _, _, style in spans or []]
    for index, (start, end, _) in enumerate(spans or []):
        for i in range(max(0, start), min(len(data), end)):
            owner[i] = index
    digits = max(4, len(f"{max(len(data) - 1, 0):x}"))
    half = per_row // 2 if per_row > 8 else -1
    out = Text()
    for off in range(0, len(data), per_row):
        chunk = data[off : off + per_row]
        out.append(f"{off:0{digits}x}  ", style="dim")
        for i, byte in enumerate(chunk):
            here = owner[off + i]
            out.append(f"{byte:02x}", style=styles[here] if here >= 0 else "")
            gap = "  " if i == half - 1 else " "
            after = owner[off + i + 1] if i + 1 < len(chunk) else -1
            joined = here >= 0 and after >= 0 and styles[after] == styles[here]
            out.append(gap, style=styles[here] if joined else "")
        missing = per_row - len(chunk)
        out.append("   " * missing + (" " if per_row > 8 and len(chunk) < half else ""))
        out.append(" " + "".join(chr(b) if 32 <= b < 127 else "." for b in chunk), style="dim")
        if off + per_row < len(data):
            out.append("\n")
    return out


def span_styles(spans: Sequence[FieldSpan]) -> list[str]:
    """The style of each field span: its role's, else its layer's colour, alternating
    between plain and underlined from one field to the next."""
    styles: list[str] = []
    turn: dict[str, int] = {}
    for span in spans:
        if span.role in ROLE_STYLES:
            styles.append(ROLE_STYLES[span.role])
            continue
        n = turn[span.layer] = turn.get(span.layer, -1) + 1
        base = LAYER_STYLES[span.depth % len(LAYER_STYLES)]
        styles.append(base if n % 2 == 0 else f"{base} underline")
    return styles


def legend(spans: Sequence[FieldSpan], styles: Sequence[str]) -> Text:
    """One line per layer: each field in its bytes' style, with its hex offset(s)."""
    out = Text()
    layer = None
    for span, style in zip(spans, styles, strict=True):
        if span.layer != layer:
            if layer is not None:
                out.append("\n")
            layer = span.layer
            out.append(f"{layer}:", style="bold")
        where = (
            f"{span.start:x}" if span.end - span.start == 1 else f"{span.start:x}-{span.end - 1:x}"
        )
        out.append(" ")
        out.append(span.field, style=style)
        out.append(f"@{where}", style="dim")
    return out


class HexView:
    """A packet's bytes coloured by field, with a legend; the row length follows the
    width rich offers (16 bytes a row, 8 or 4 on narrow terminals)."""

    def __init__(self, data: bytes, spans: Sequence[FieldSpan]) -> None:
        self.data = data
        self.spans = list(spans)
        self.styles = span_styles(self.spans)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        per_row = bytes_per_row(options.max_width, len(self.data))
        ranges = [(s.start, s.end, st) for s, st in zip(self.spans, self.styles, strict=True)]
        yield hexdump(self.data, ranges, per_row=per_row)
        if self.spans:
            yield legend(self.spans, self.styles)


def packet_spans(packet: Packet, esp: EspLayout | None = None) -> list[FieldSpan]:
    """Field spans of a packet; an empty list when its fields cannot be mapped."""
    from esplab.spans import field_spans

    try:
        return field_spans(packet, esp)
    except Exception:  # rendering never fails on an odd packet: bytes stay plain
        return []


def _trailer_branch(tree: Tree, esp: dict[str, Any]) -> None:
    if "padding" not in esp:
        return
    branch = tree.add(Text("ESP trailer (decrypted with the lab's SA)", style="bold red"))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="yellow", no_wrap=True)
    table.add_column(overflow="fold")
    verdict = "good" if esp.get("icv_ok") else "does not verify"
    for name, value in (
        ("iv", esp.get("iv", "")),
        ("padding", esp["padding"] or "(none)"),
        ("pad_len", esp.get("pad_len")),
        ("nh", esp.get("next_header")),
        ("icv", f"{esp.get('icv', '')} ({verdict})"),
    ):
        table.add_row(name, str(value))
    branch.add(table)


def _render_packet(result: PacketResult) -> RenderableType:
    from esplab.spans import EspLayout

    if result.packet is None:
        return Text(result.summary)
    packet = result.packet
    tree = packet_tree(packet, result.title)
    esp = result.data.get("esp") if isinstance(result.data.get("esp"), dict) else None
    if esp is not None:
        _trailer_branch(tree, esp)
    parts: list[RenderableType] = [tree]
    try:
        data = bytes(packet)
        parts.append(HexView(data, packet_spans(packet, EspLayout.from_data(esp))))
    except Exception as exc:  # building can fail for deliberately odd field values
        parts.append(Text(f"(cannot build bytes: {exc})", style="yellow"))
    parts.extend(Text(note, style="yellow") for note in result.notes)
    return Group(*parts)


def _render_help(result: HelpResult) -> RenderableType:
    if result.detail is not None:
        d = result.detail
        # The consoles soft-wrap (esplab.console), which would crop text inside a box:
        # the box's text wraps at spaces instead.
        body = Text(d.summary + "\n", no_wrap=False, overflow="fold")
        body.append("usage: ", style="bold")
        body.append(d.usage)
        if d.aliases:
            body.append("\naliases: ", style="bold")
            body.append(", ".join(d.aliases))
        if d.details:
            body.append("\n" + d.details)
        parts: list[RenderableType] = [Panel(body, title=d.name, title_align="left")]
        if d.example:
            # A command line to copy: outside the box and never wrapped or cut (a long
            # one goes past the edge, and the terminal folds it without a line break).
            example = Text("example: ", style="bold", no_wrap=True, overflow="ignore")
            example.append(d.example, style="green")
            parts.append(example)
        return Group(*parts)
    table = Table(title="commands", show_header=True, header_style="bold", expand=False)
    table.add_column("command", style="cyan", no_wrap=True)
    table.add_column("what it does")
    for entry in result.entries:
        table.add_row(entry.name, entry.summary)
    return Group(table, Text("help COMMAND shows its usage and an example", style="dim"))


def _render_table(result: TableResult) -> RenderableType:
    table = FitTable(result)
    if not result.rows and result.summary:
        return Group(table, Text(result.summary, style="dim"))  # say why it is empty
    return table


class DiffBytes:
    """Two byte strings row by row: rows that differ show ``-`` (left) over ``+``
    (right) with the changed bytes highlighted and ``^^`` under them; one row of
    context stays around them and longer identical stretches fold into one line."""

    def __init__(self, view: ByteView) -> None:
        self.view = view

    def _changed(self, length: int) -> list[bool]:
        marks = [False] * length
        for start, end in self.view.ranges:
            for i in range(start, min(end, length)):
                marks[i] = True
        return marks

    def _line(
        self,
        sign: str,
        off: int,
        data: bytes,
        marks: list[bool],
        per_row: int,
        style: str,
        digits: int,
    ) -> Text:
        line = Text(f"{off:0{digits}x} ", style="dim")
        line.append(sign + " ", style=style.replace(" reverse", "") if sign != " " else "dim")
        half = per_row // 2 if per_row > 8 else -1
        for i in range(per_row):
            pos = off + i
            text = f"{data[pos]:02x}" if pos < len(data) else "  "
            changed = sign != " " and pos < len(marks) and marks[pos]
            line.append(text, style=style if changed else "")
            line.append("  " if i == half - 1 else " ")
        chunk = data[off : off + per_row]
        line.append(" " + "".join(chr(b) if 32 <= b < 127 else "." for b in chunk), style="dim")
        return line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        left, right = self.view.left, self.view.right
        length = max(len(left), len(right))
        digits = max(4, len(f"{max(length - 1, 0):x}"))
        per_row = bytes_per_row(options.max_width, length, extra=2)
        marks = self._changed(length)
        rows = list(range(0, length, per_row))
        differs = [any(marks[r : r + per_row]) for r in rows]
        keep = [d or any(differs[max(0, i - 1) : i + 2]) for i, d in enumerate(differs)]
        out = Text()
        folded = 0
        for i, off in enumerate(rows):
            if not keep[i]:
                folded += 1
                continue
            if folded:
                out.append(f"{'':{digits}}   ... {folded} identical row(s)\n", style="dim")
                folded = 0
            if not differs[i]:
                out.append_text(self._line(" ", off, left, marks, per_row, "", digits))
                out.append("\n")
                continue
            out.append_text(self._line("-", off, left, marks, per_row, DIFF_LEFT_STYLE, digits))
            out.append("\n")
            out.append_text(self._line("+", off, right, marks, per_row, DIFF_RIGHT_STYLE, digits))
            out.append("\n")
            half = per_row // 2 if per_row > 8 else -1
            carets = "".join(
                ("^^" if off + k < length and marks[off + k] else "  ")
                + ("  " if k == half - 1 else " ")
                for k in range(per_row)
            )
            out.append(f"{'':{digits}}   {carets}".rstrip() + "\n", style="bold")
        if folded:
            out.append(f"{'':{digits}}   ... {folded} identical row(s)\n", style="dim")
        out.rstrip()
        yield out


def _render_diff(result: DiffResult) -> RenderableType:
    parts: list[RenderableType] = []
    if result.identical:
        parts.append(Text(result.summary, style="green"))
    elif result.rows:
        parts.append(_render_table(result))
    else:
        parts.append(Text(f"{result.summary} (no field differs)", style="yellow"))
    for view in result.views:
        if not view.ranges:
            continue
        head = Text(f"{view.title}: ", style="bold")
        head.append(
            f"{view.changed} byte(s) differ; - {result.left_label} "
            f"({len(view.left)} bytes), + {result.right_label} "
            f"({len(view.right)} bytes)"
        )
        parts.extend([head, DiffBytes(view)])
    parts.extend(Text(note, style="dim") for note in result.notes)
    return Group(*parts)


FIDELITY_STYLE = {"C": "green", "D": "cyan", "U": "yellow", "M": "magenta"}


def _render_journey(result: JourneyResult) -> RenderableType:
    parts: list[RenderableType] = []
    for journey in result.journeys:
        table = Table(
            title=f"journey {journey.id} ({journey.origin}): {journey.verdict}",
            title_justify="left",
            header_style="bold",
            expand=False,
        )
        table.add_column("#", justify="right", style="dim")
        table.add_column("tap", style="cyan", no_wrap=True)
        table.add_column("decision", overflow="fold")
        table.add_column("tag", justify="center")
        stop = len(journey.stages) if result.stop is None else result.stop
        for index in range(result.start, stop):
            stage = journey.stages[index]
            if result.only is not None and stage.tap != result.only:
                continue
            decision = Text(stage.decision, style="bold red" if stage.drop else "")
            if stage.counters:
                decision.append(
                    "  " + " ".join(f"{k}+{v}" for k, v in stage.counters.items()), style="yellow"
                )
            if result.explain and stage.why:
                decision.append("\n" + stage.why, style="dim")
            tag = Text(stage.fidelity, style=FIDELITY_STYLE.get(stage.fidelity, ""))
            table.add_row(str(index + 1), stage.tap, decision, tag)
        parts.append(table)
    if result.explain:
        parts.append(
            Text(
                "tags: C confirmed by a source, D derived, U uncertain (a labelled "
                "choice), M modelled design",
                style="dim",
            )
        )
    if result.show_summary:
        parts.append(Text(result.summary, style="bold"))
    return Group(*parts)


def render(result: Result) -> RenderableType:
    """The renderable for any result, then what ``ip xfrm monitor`` printed meanwhile."""
    main = _render_result(result)
    return Group(main, Text(result.monitor.rstrip("\n"))) if result.monitor else main


def _render_result(result: Result) -> RenderableType:
    if isinstance(result, ErrorResult):
        return render_error(result.summary)
    if isinstance(result, TextResult):
        return Text(result.text)
    if isinstance(result, PacketResult):
        return _render_packet(result)
    if isinstance(result, HelpResult):
        return _render_help(result)
    if isinstance(result, TableResult):
        if isinstance(result, DiffResult):
            return _render_diff(result)
        return _render_table(result)
    if isinstance(result, JourneyResult):
        return _render_journey(result)
    if isinstance(result, QuitResult):
        return Text("")
    if isinstance(result, MessageResult):
        return Text(result.summary, style="green")
    return Text(result.summary)
