"""What ``esplab decode`` shows a person: rich tables of packets, SAs and sequence
numbers, and the overall counts, as renderables; printing is the caller's business.

The packet table has every packet when there are few, otherwise the ones with a
problem (at most ``--rows``; ``formats.PacketRows`` keeps them).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from esplab.capfile.formats import PacketRows, RunInfo, linktype_name
from esplab.capfile.linklayer import SKIP_REASONS
from esplab.capfile.records import STATUSES, SaResult, Summary

__all__ = ["render_packets", "render_summary"]


def _int(value: int | None) -> str:
    return "null" if value is None else str(value)


def render_packets(rows: PacketRows) -> Table | None:
    """The packet table, or None when there is no ESP packet."""
    if not rows.seen:
        return None
    if rows.seen <= rows.limit:
        shown, title = rows.first, f"ESP packets ({rows.seen})"
    elif rows.problems:
        shown = rows.problems
        title = (
            f"ESP packets with a problem: {len(shown)} shown of {rows.problem_count}, "
            f"{rows.seen} ESP packets in all (--rows N shows more, --json all)"
        )
    else:
        shown = rows.first
        title = f"ESP packets: the first {len(shown)} of {rows.seen}, none with a problem"
    table = _table(title)
    for name in ("Frame", "SPI", "Seq", "SA", "ICV", "Status", "Trailer", "Inner", "Notes"):
        short = name not in ("Trailer", "Inner", "Notes")
        table.add_column(
            name,
            overflow="fold",
            no_wrap=short,
            justify="right" if name in ("Frame", "Seq") else "left",
        )
    for r in shown:
        style = "" if r.status == "ok" else "red"
        table.add_row(
            str(r.frame),
            r.spi,
            r.seq,
            r.sa,
            Text(r.icv, style="green" if r.icv == "good" else style),
            Text(r.status, style=style),
            r.trailer,
            r.inner,
            r.notes,
        )
    return table


def _table(title: str, caption: str | None = None) -> Table:
    """The look of every table here: no vertical rules and single gaps, so that on an
    80-column terminal addresses and algorithm names keep room to stay whole."""
    return Table(
        title=title,
        title_justify="left",
        caption=caption,
        caption_justify="left",
        expand=False,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )


def _sa_table(results: Sequence[SaResult]) -> Table:
    table = _table("SAs")
    for name in ("SA", "SPI", "Src > Dst", "Algorithms", "Packets", "OK", "ICV bad", "Other"):
        table.add_column(name, overflow="fold", no_wrap=name in ("SA", "SPI", "OK"))
    for r in results:
        s, c = r.spec, r.counters
        other = [
            f"{n} {what}"
            for n, what in (
                (c.malformed, "malformed"),
                (c.bad_trailer, "bad trailer"),
                (c.mode_error, "mode error"),
                (c.encap_mismatch, "encap mismatch"),
                (c.truncated, "truncated by the snaplen"),
                (c.padding_nonstandard, "padding not 1,2,3.."),
                (c.dummy, "dummy"),
                (c.no_integrity, "no integrity"),
            )
            if n
        ]
        if not c.packets:
            other = ["matched no packet"]
        table.add_row(
            str(s.index),
            s.spi_text,
            f"{s.src or '*'} > {s.dst or '*'}",
            s.algorithms,
            str(c.packets),
            str(c.ok),
            Text(str(c.icv_bad), style="red" if c.icv_bad else ""),
            Text(", ".join(other), style="yellow" if other else ""),
        )
    return table


def _seq_table(results: Sequence[SaResult]) -> Table:
    table = _table(
        "Sequence numbers",
        caption="Missing: never seen (late arrivals deducted); Dup: seen twice; Late: below "
        "the highest, first time; Old: left of the SA's replay window (the kernel drops it)",
    )
    for name in ("SA", "First", "Highest", "Gaps", "Missing", "Dup", "Late", "Old", "ESN", "Notes"):
        table.add_column(name, overflow="fold", no_wrap=name not in ("ESN", "Notes"))
    for r in results:
        q = r.seq
        if not q.packets:
            continue
        notes = []
        if q.wraps:
            notes.append(f"{q.wraps} wrap(s) of the 32-bit counter without ESN")
        if q.zeros:
            notes.append(f"{q.zeros} with sequence number 0")
        esn = "on" if r.spec.esn else "off"
        if q.rollovers:
            esn += "; rollover at frame " + ", ".join(f"{f} (hi {hi})" for f, hi in q.rollovers[:4])
        table.add_row(
            str(r.spec.index),
            _int(q.first),
            _int(q.highest),
            str(q.gaps),
            str(q.missing),
            str(q.duplicates),
            str(q.late),
            str(q.too_old),
            esn,
            "; ".join(notes),
        )
    return table


def render_summary(summary: Summary, info: RunInfo) -> list[RenderableType]:
    """The SA tables and the overall lines."""
    out: list[RenderableType] = [_sa_table(summary.sas)]
    if any(r.seq.packets for r in summary.sas):
        out.append(_seq_table(summary.sas))
    lines = Text()
    statuses = ", ".join(
        f"{n} {st}" for st, n in sorted(summary.by_status.items(), key=lambda i: -i[1])
    )
    lines.append(f"{summary.frames} frame(s): {summary.esp} ESP ({statuses or 'none'})")
    if summary.non_esp:
        reasons = ", ".join(
            f"{n} {SKIP_REASONS.get(k, k)}" for k, n in sorted(summary.skipped.items())
        )
        lines.append(f"; {summary.non_esp} non-ESP skipped ({reasons})")
    lines.append("\n")
    for lt, n in sorted(summary.linktypes_skipped.items()):
        lines.append(f"{n} frame(s) of {linktype_name(lt)} not decoded\n", style="yellow")
    for spi, n in sorted(summary.unknown_spi.items()):
        name = "other SPIs" if spi < 0 else f"SPI 0x{spi:08x}"
        lines.append(f"{n} ESP packet(s) with {name}: no SA in the SA file\n", style="yellow")
    for r in summary.sas:
        if not r.counters.packets:
            lines.append(f"{r.spec.label} matched no packet\n", style="yellow")
        for note in r.spec.notes:
            lines.append(f"{r.spec.label}: {note}\n", style="yellow")
    for note in info.sa_file.notes:
        lines.append(note + "\n", style="yellow")
    if info.limit_reached:
        lines.append(f"stopped after {summary.frames} frame(s) (--limit)\n", style="yellow")
    if info.truncated is not None:
        lines.append(
            f"capture damaged: {info.truncated}; the {summary.frames} frame(s) before it "
            "were decoded\n",
            style="bold red",
        )
    padding = summary.padding_bad
    if padding:
        lines.append(
            f"{_padding_packets(summary.sas, padding)} with padding that is not 1,2,3.. "
            "(RFC 4303 2.4; Linux accepts them, but a wrong encryption key or cipher is the "
            "usual cause: esplab diagnose tries the known mistakes)\n",
            style="bold yellow",
        )
    cut = summary.by_status.get("truncated", 0)
    if cut:
        lines.append(
            f"{cut} ESP packet(s) truncated by the snaplen (at most {summary.cut_captured} of "
            f"up to {summary.cut_wire} bytes captured): they cannot be verified; capture again "
            f"with a snaplen of at least {summary.cut_wire} (tcpdump -s 0 keeps whole packets)\n",
            style="bold red",
        )
    if summary.failed:
        by = ", ".join(
            f"{n} {STATUSES.get(st, st)}"
            for st, n in sorted(summary.by_status.items())
            if st != "ok" and n
        )
        lines.append(
            f"{summary.failed} of {summary.esp} ESP packet(s) did not authenticate or "
            f"decrypt: {by}",
            style="bold red",
        )
    elif summary.esp:
        style = "bold yellow" if padding else "bold green"
        lines.append(_all_passed(summary, decrypted=not padding), style=style)
    else:
        lines.append("no ESP packet in the capture", style="yellow")
    out.append(lines)
    return out


def _padding_packets(sas: Sequence[SaResult], padding: int) -> str:
    """The ok packets with bad padding: authenticated, or of SAs without integrity
    (nothing to authenticate them with)."""
    bare = sum(r.counters.ok_padding_bad for r in sas if r.counters.no_integrity)
    if not bare:
        return f"{padding} authenticated ESP packet(s)"
    if bare == padding:
        return f"{padding} ESP packet(s) of SA(s) without integrity (not authenticated)"
    return (
        f"{padding} ESP packet(s) ({padding - bare} authenticated, {bare} of SA(s) without "
        "integrity)"
    )


def _all_passed(summary: Summary, *, decrypted: bool) -> str:
    """The last line when no ESP packet failed: which were authenticated, and whether
    every one also decrypted to a clean trailer."""
    n = summary.esp
    bare = sum(r.counters.no_integrity for r in summary.sas)
    if not bare:
        line = f"every ESP packet ({n}) authenticated"
    else:
        line = (
            f"{n - bare} of {n} ESP packet(s) authenticated; {bare} belong to SA(s) without "
            "integrity, which cannot be authenticated"
        )
    if decrypted:
        line += " and decrypted" if not bare else "; every packet decrypted"
    return line
