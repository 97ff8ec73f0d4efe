"""Turning results into rich renderables. Rendering changes nothing.

Every renderer is a pure function of the result; the Console is the caller's.
Colour follows rich's own rules, so ``NO_COLOR`` and dumb terminals are honoured
by the Console, and widths adapt to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from esplab.commands.result import (
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

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = ["field_rows", "hexdump", "render", "render_error"]

# One style per layer depth, cycled; the hexdump uses the same colours as the tree.
LAYER_STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red")


def render_error(message: str) -> Text:
    return Text(f"error: {message}", style="bold red")


def field_rows(layer: Packet) -> list[tuple[str, str]]:
    """(field name, shown value) for each field of one layer, as Scapy shows them."""
    rows: list[tuple[str, str]] = []
    for fld in layer.fields_desc:
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


def packet_tree(packet: Packet, title: str = "") -> Tree:
    tree = Tree(Text(title or packet.__class__.__name__, style="bold"))
    for depth, layer in enumerate(_layers(packet)):
        style = LAYER_STYLES[depth % len(LAYER_STYLES)]
        branch = tree.add(Text(layer.__class__.__name__, style=f"bold {style}"))
        table = Table.grid(padding=(0, 2))
        table.add_column(style=style, no_wrap=True)
        table.add_column(overflow="fold")
        for name, shown in field_rows(layer):
            table.add_row(name, shown)
        branch.add(table)
    return tree


def hexdump(data: bytes, spans: list[tuple[int, int, str]] | None = None) -> Text:
    """Offset, 16 bytes, ASCII; bytes inside ``spans`` (start, end, style) are coloured."""
    styles: list[str] = [""] * len(data)
    for start, end, style in spans or []:
        for i in range(max(0, start), min(len(data), end)):
            styles[i] = style
    out = Text()
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        out.append(f"{off:04x}  ", style="dim")
        for i, byte in enumerate(chunk):
            out.append(f"{byte:02x}", style=styles[off + i])
            out.append("  " if i == 7 else " ")
        out.append("   " * (16 - len(chunk)) + (" " if len(chunk) <= 8 else ""))
        out.append(" " + "".join(chr(b) if 32 <= b < 127 else "." for b in chunk), style="dim")
        if off + 16 < len(data):
            out.append("\n")
    return out


def _layer_spans(packet: Packet) -> list[tuple[int, int, str]]:
    spans = []
    total = len(bytes(packet))
    for depth, layer in enumerate(_layers(packet)):
        start = total - len(bytes(layer))
        end = total - len(bytes(layer.payload))
        spans.append((start, end, LAYER_STYLES[depth % len(LAYER_STYLES)]))
    return spans


def _render_packet(result: PacketResult) -> RenderableType:
    if result.packet is None:
        return Text(result.summary)
    packet = result.packet
    parts: list[RenderableType] = [packet_tree(packet, result.title)]
    try:
        data = bytes(packet)
        parts.append(hexdump(data, _layer_spans(packet)))
    except Exception as exc:  # building can fail for deliberately odd field values
        parts.append(Text(f"(cannot build bytes: {exc})", style="yellow"))
    parts.extend(Text(note, style="yellow") for note in result.notes)
    return Group(*parts)


def _render_help(result: HelpResult) -> RenderableType:
    if result.detail is not None:
        d = result.detail
        body = Text(d.summary + "\n")
        body.append("usage: ", style="bold")
        body.append(d.usage + "\n")
        if d.aliases:
            body.append("aliases: ", style="bold")
            body.append(", ".join(d.aliases) + "\n")
        if d.details:
            body.append(d.details + "\n")
        if d.example:
            body.append("example: ", style="bold")
            body.append(d.example, style="green")
        return Panel(body, title=d.name, title_align="left")
    table = Table(title="commands", show_header=True, header_style="bold", expand=False)
    table.add_column("command", style="cyan", no_wrap=True)
    table.add_column("what it does")
    for entry in result.entries:
        table.add_row(entry.name, entry.summary)
    return Group(table, Text("help COMMAND shows its usage and an example", style="dim"))


def _render_table(result: TableResult) -> RenderableType:
    table = Table(title=result.title or None, header_style="bold")
    for column in result.columns:
        table.add_column(column)
    for row in result.rows:
        table.add_row(*row)
    return table


FIDELITY_STYLE = {"C": "green", "D": "cyan", "U": "yellow", "M": "magenta"}


def _render_journey(result: JourneyResult) -> RenderableType:
    parts: list[RenderableType] = []
    for journey in result.journeys:
        table = Table(title=f"journey {journey.id} ({journey.origin}): {journey.verdict}",
                      title_justify="left", header_style="bold", expand=False)
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
                decision.append("  " + " ".join(f"{k}+{v}" for k, v in stage.counters.items()),
                                style="yellow")
            if result.explain and stage.why:
                decision.append("\n" + stage.why, style="dim")
            tag = Text(stage.fidelity, style=FIDELITY_STYLE.get(stage.fidelity, ""))
            table.add_row(str(index + 1), stage.tap, decision, tag)
        parts.append(table)
    if result.explain:
        parts.append(Text("tags: C confirmed by a source, D derived, U uncertain (a labelled "
                          "choice), M modelled design", style="dim"))
    return Group(*parts)


def render(result: Result) -> RenderableType:
    """The renderable for any result."""
    if isinstance(result, ErrorResult):
        return render_error(result.summary)
    if isinstance(result, TextResult):
        return Text(result.text)
    if isinstance(result, PacketResult):
        return _render_packet(result)
    if isinstance(result, HelpResult):
        return _render_help(result)
    if isinstance(result, TableResult):
        return _render_table(result)
    if isinstance(result, JourneyResult):
        return _render_journey(result)
    if isinstance(result, QuitResult):
        return Text("")
    if isinstance(result, MessageResult):
        return Text(result.summary, style="green")
    return Text(result.summary)
