"""xsk: an AF_XDP socket step by step, as an application drives it through libxdp.

``xsk create|bind|fill|send|recv|complete|rings|ownership|stats|close|list``: the
UMEM and its four rings, bind with its rules, the fill ring, TX descriptors and
their journeys, RX, completions, who owns each frame, and the kernel's counters.
A node name in front addresses another node (``host xsk create s0``). The model is
:mod:`esplab.model.journey.xsk`; the words are read as :mod:`.xdp` reads them.
"""

from __future__ import annotations

from collections.abc import Callable

from esplab.commands.base import Session
from esplab.commands.handlers.xdp_args import (
    need_words,
    node_devices,
    subcommand,
    target_node,
    undone_on_failure_handler,
    word_options,
)
from esplab.commands.parser import Invocation, parse_int
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import JourneyResult, MessageResult, Result, TableResult
from esplab.errors import BadArgument
from esplab.model.journey import xsk
from esplab.model.journey.xdp import XdpLab, lab_xdp
from esplab.model.kernel.xdp.consts import BindFlag
from esplab.model.kernel.xdp.rings import Ring, XskDesc
from esplab.model.kernel.xdp.umem import FrameState
from esplab.model.stage import decode_snapshot

__all__ = ["COMMANDS", "XSK_SUBCOMMANDS"]

XSK_SUBCOMMANDS = (
    "create",
    "bind",
    "fill",
    "send",
    "recv",
    "complete",
    "rings",
    "ownership",
    "stats",
    "close",
    "list",
)
_XSK_USAGE = (
    "xsk create NAME [frames N] [frame-size N] [headroom N] [ring N] | bind NAME DEV "
    "QUEUE [copy|zerocopy] [need-wakeup] | fill NAME N | send NAME N [size N] "
    "[addr A] | recv NAME [N] | complete NAME [N] | rings|ownership|stats|close NAME "
    "| list"
)


# ---- xsk ----------------------------------------------------------------------------------
@undone_on_failure_handler
def _xsk(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"]) or ["list"]
    sub = subcommand(words, XSK_SUBCOMMANDS, "xsk", _XSK_USAGE)
    xl, node, rest = lab_xdp(session.lab), target_node(session, inv), words[1:]
    if sub == "list":
        word_options(rest, "xsk list")
        return _list(xl)
    need_words(rest, 1, "the socket NAME", _XSK_USAGE)
    name = rest[0]
    handler = _XSK[sub]
    return handler(xl, node, name, rest[1:])


def _create(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    usage = "xsk create NAME [frames N] [frame-size N] [headroom N] [ring N]"
    opts, _ = word_options(words, usage, ("frames", "frame-size", "headroom", "ring"))
    ls = xsk.create(
        xl,
        name,
        node,
        opts.get("frames", 64),
        opts.get("frame-size", 4096),
        opts.get("headroom", 0),
        opts.get("ring", 64),
    )
    u = ls.umem
    return MessageResult(
        summary=f"{name} on {node}: UMEM {u.chunks} x {u.chunk_size} bytes (headroom "
        f"{u.headroom}, RX frames up to {u.rx_frame_size} bytes), FILL/COMPLETION/RX/TX "
        f"{ls.ring} entries; unbound",
        data={
            "socket": name,
            "node": node,
            "frames": u.chunks,
            "frame_size": u.chunk_size,
            "headroom": u.headroom,
            "rx_frame_size": u.rx_frame_size,
            "ring": ls.ring,
        },
    )


def _bind(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    usage = "xsk bind NAME DEV QUEUE [copy|zerocopy] [need-wakeup]"
    need_words(words, 2, "DEV and QUEUE", usage)
    _, flags = word_options(words[2:], usage, (), ("copy", "zerocopy", "need-wakeup"))
    if {"copy", "zerocopy"} <= flags:
        raise BadArgument(
            "copy and zerocopy together", hint="the kernel refuses both flags with EINVAL; pick one"
        )
    mode = BindFlag.COPY if "copy" in flags else BindFlag.ZEROCOPY if "zerocopy" in flags else None
    ls, note = xsk.bind(
        xl, name, node, words[0], parse_int(words[1], "queue"), mode, "need-wakeup" in flags
    )
    sock = ls.sock
    how = "zero copy" if sock.zc else "copy mode"
    if sock.fallback_reason:
        how += f" (zero copy not granted: {sock.fallback_reason})"
    return MessageResult(
        summary=f"{name} bound to {ls.dev} queue {sock.queue_id}: {how}; {note}",
        data={
            "socket": name,
            "dev": ls.dev,
            "queue": sock.queue_id,
            "mode": ls.mode,
            "need_wakeup": "need-wakeup" in flags,
            "fallback": sock.fallback_reason,
            "note": note,
        },
    )


def _fill(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    need_words(words, 1, "how many frames", "xsk fill NAME N")
    word_options(words[1:], "xsk fill NAME N")
    addrs, kicked = xsk.fill(xl, name, parse_int(words[0], "frames"))
    ls = xl.socket(name)
    ring = ls.sock.fill
    assert ring is not None
    pool = ls.sock.pool
    posted = len(pool.posted) if pool is not None and pool.zc else 0
    text = (
        f"{name}: {len(addrs)} frame(s) to FILL ({addrs[0]:#x}..{addrs[-1]:#x}); FILL holds "
        f"{ring.occupancy}"
    )
    if kicked:
        text += "; FILL asked for a wakeup, so recvfrom kicked the driver"
    if posted:
        text += f"; {posted} frame(s) posted to the NIC (zero copy)"
    return MessageResult(
        summary=text,
        data={
            "socket": name,
            "posted": len(addrs),
            "fill": ring.occupancy,
            "kicked": kicked,
            "nic": posted,
            "addrs": [hex(a) for a in addrs],
        },
    )


def _ring_row(label: str, ring: Ring[int] | Ring[XskDesc] | None) -> tuple[str, ...]:
    if ring is None:
        return (label, "-", "-", "-", "-", "-", "-")
    private = "" if ring.cons_head == ring.consumer else f" (kernel at {ring.cons_head:#x})"
    return (
        label,
        str(ring.size),
        f"{ring.producer:#x}",
        f"{ring.consumer:#x}{private}",
        str(ring.occupancy),
        str(len(ring.reserved())),
        "NEED_WAKEUP" if ring.needs_wakeup else "-",
    )


def _rings(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    word_options(words, "xsk rings NAME")
    ls = xl.socket(name)
    sock = ls.sock
    rows = [
        _ring_row("fill", sock.fill),
        _ring_row("completion", sock.comp),
        _ring_row("rx", sock.rx),
        _ring_row("tx", sock.tx),
    ]
    data: dict[str, object] = {"socket": name}
    for label, ring in (("fill", sock.fill), ("completion", sock.comp)):
        assert ring is not None
        entries = ring.in_flight()
        data[label] = {
            "size": ring.size,
            "producer": ring.producer,
            "consumer": ring.consumer,
            "in_flight": len(entries),
            "need_wakeup": ring.needs_wakeup,
            "addrs": [hex(a) for a in entries[:64]],
        }
        if entries:
            shown = ", ".join(f"{a:#x}" for a in entries[:8]) + (" ..." if len(entries) > 8 else "")
            rows.append((f"  {label} entries", "", "", "", "", "", shown))
    for label, dring in (("rx", sock.rx), ("tx", sock.tx)):
        assert dring is not None
        descs = dring.in_flight()
        data[label] = {
            "size": dring.size,
            "producer": dring.producer,
            "consumer": dring.consumer,
            "in_flight": len(descs),
            "need_wakeup": dring.needs_wakeup,
            "descs": [{"addr": d.addr, "len": d.len, "options": d.options} for d in descs[:64]],
        }
        first = dring.cons_head
        for i, desc in enumerate(descs[:16]):
            shown = decode_snapshot("xdp", desc.pack()).summary()
            rows.append((f"  {label} #{(first + i) & 0xFFFF_FFFF}", "", "", "", "", "", shown))
    return TableResult(
        summary=f"{name} rings ({ls.where}, {ls.mode})",
        title=f"{name} rings",
        columns=(
            "ring",
            "size",
            "producer",
            "consumer",
            "in flight",
            "reserved",
            "flags / entries",
        ),
        rows=rows,
        data=data,
    )


def _ownership(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    word_options(words, "xsk ownership NAME")
    ls = xl.socket(name)
    states = sorted(ls.umem.ownership().items())
    posted = (
        set()
        if ls.sock.is_bound or ls.sock.fill is None
        else {ls.umem.frame_base(a) for a in ls.sock.fill.in_flight()}
    )  # FILL before bind
    spans: list[tuple[int, int, FrameState]] = []
    for base, state in states:
        state = FrameState.FILL if base in posted else state
        if spans and spans[-1][2] is state and spans[-1][1] + ls.umem.chunk_size == base:
            spans[-1] = (spans[-1][0], base, state)
        else:
            spans.append((base, base, state))
    size = ls.umem.chunk_size
    rows = [
        (f"{a:#x}" if a == b else f"{a:#x}-{b:#x}", str((b - a) // size + 1), s.value, s.owner)
        for a, b, s in spans
    ]
    counts: dict[str, int] = {}
    for a, b, s in spans:
        counts[s.value] = counts.get(s.value, 0) + (b - a) // size + 1
    return TableResult(
        summary=", ".join(f"{v} {k}" for k, v in counts.items()),
        title=f"{name}: who owns each UMEM frame (af_xdp.md 2.6)",
        columns=("frames", "count", "state", "owner"),
        rows=rows,
        data={"socket": name, "frames": len(states), **counts},
    )


def _stats(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    word_options(words, "xsk stats NAME")
    ls = xl.socket(name)
    stats = dict(vars(ls.sock.statistics()))
    rows = [(k, str(v)) for k, v in stats.items()]
    rows.append(("XDP_OPTIONS", "XDP_OPTIONS_ZEROCOPY" if ls.sock.options() else "0"))
    return TableResult(
        summary=f"{name}: XDP_STATISTICS ({ls.where}, {ls.mode})",
        title=f"{name}: getsockopt(XDP_STATISTICS)",
        columns=("counter", "value"),
        rows=rows,
        data={"socket": name, "mode": ls.mode, **stats},
    )


def _send(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    usage = "xsk send NAME N [size N] [addr A]"
    need_words(words, 1, "how many frames", usage)
    opts, _ = word_options(words[1:], usage, ("size", "addr"))
    report = xsk.send(
        xl, name, parse_int(words[0], "count"), opts.get("size", 64), opts.get("addr")
    )
    ids = [j.id for j in report.journeys]
    last = report.journeys[-1]
    parts = [f"{report.sent} sent ({'zero copy' if report.zerocopy else 'copy mode'})"]
    if report.invalid:
        parts.append(f"{report.invalid} invalid (tx_invalid_descs; no completion)")
    if report.pending:
        parts.append(f"{report.pending} still on the TX ring")
    parts.append(f"{report.completed} completion(s)")
    span = f"journey {ids[0]}" if len(ids) == 1 else f"journeys {ids[0]}-{ids[-1]}"
    return JourneyResult(
        summary=f"{name}: " + ", ".join(parts) + f"; {span}; last: {last.verdict}",
        journeys=[last],
        data={
            "socket": name,
            "sent": report.sent,
            "invalid": report.invalid,
            "pending": report.pending,
            "completed": report.completed,
            "reclaimed": report.reclaimed,
            "journeys": ids,
            "verdict": last.verdict,
            "mode": "zerocopy" if report.zerocopy else "copy",
        },
    )


def _recv(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    count = parse_int(words[0], "count") if words else None
    word_options(words[1:], "xsk recv NAME [N]")
    if count is not None and count < 1:
        raise BadArgument(f"count {count}", valid="1 or more")
    got = xsk.recv(xl, name, count)
    rows, descs = [], []
    for index, desc, frame, jid in got:
        summary = decode_snapshot("xdp", desc.pack() + frame).summary()
        rows.append(
            (
                f"#{index}",
                f"{desc.addr:#x}",
                str(desc.len),
                str(desc.options),
                summary,
                "-" if jid is None else str(jid),
            )
        )
        descs.append(
            {
                "index": index,
                "addr": desc.addr,
                "len": desc.len,
                "options": desc.options,
                "journey": jid,
            }
        )
    return TableResult(
        summary=f"{name}: {len(got)} descriptor(s) read and released",
        title=f"{name} RX",
        columns=("rx", "addr", "len", "options", "packet", "journey"),
        rows=rows,
        data={"socket": name, "count": len(got), "descs": descs},
    )


def _complete(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    count = parse_int(words[0], "count") if words else None
    word_options(words[1:], "xsk complete NAME [N]")
    if count is not None and count < 1:
        raise BadArgument(f"count {count}", valid="1 or more (none: every completion)")
    addrs = xsk.complete(xl, name, count)
    shown = ", ".join(f"{a:#x}" for a in addrs[:8]) + (" ..." if len(addrs) > 8 else "")
    return MessageResult(
        summary=f"{name}: {len(addrs)} completion(s) drained"
        + (f" ({shown}); the frames are the user's again" if addrs else ""),
        data={"socket": name, "completed": len(addrs), "addrs": [hex(a) for a in addrs]},
    )


def _close(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    word_options(words, "xsk close NAME")
    ls, note = xsk.close(xl, name)
    freed = f"{ls.where} is free" if ls.dev is not None else "it was never bound"
    return MessageResult(
        summary=f"{name} closed; {freed}" + (f"; {note}" if note else ""),
        data={"socket": name, "unloaded": note is not None, "was_bound": ls.dev is not None},
    )


def _list(xl: XdpLab) -> Result:
    rows = []
    for ls in xl.sockets.values():
        fill, rx = ls.sock.fill, ls.sock.rx
        rows.append(
            (
                ls.name,
                ls.node,
                ls.where,
                ls.mode,
                f"{ls.umem.chunks} x {ls.umem.chunk_size}",
                str(fill.occupancy if fill else 0),
                str(rx.occupancy if rx else 0),
            )
        )
    return TableResult(
        summary=f"{len(rows)} AF_XDP socket(s)",
        title="AF_XDP sockets",
        columns=("name", "node", "bound to", "mode", "UMEM", "fill", "rx"),
        rows=rows,
        data={"sockets": [r[0] for r in rows]},
    )


_XSK: dict[str, Callable[[XdpLab, str, str, list[str]], Result]] = {
    "create": _create,
    "bind": _bind,
    "fill": _fill,
    "rings": _rings,
    "ownership": _ownership,
    "stats": _stats,
    "send": _send,
    "recv": _recv,
    "complete": _complete,
    "close": _close,
}


def _xsk_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return list(XSK_SUBCOMMANDS)
    # (completion reads the XDP side, and does not bring it into being)
    state = session.lab.xdp_state
    names = sorted(state.sockets) if isinstance(state, XdpLab) else []
    sub, n = words[0], len(words)
    if sub == "list":
        return []
    if n == 1:
        return [] if sub == "create" else names
    return {
        "create": ["frames", "frame-size", "headroom", "ring"],
        "bind": node_devices(session)
        if n == 2
        else ["0"]
        if n == 3
        else ["copy", "zerocopy", "need-wakeup"],
        "send": ["size", "addr"],
    }.get(sub, [])


def _xsk_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: the subcommand (none: ``list``)."""
    subcommand(list(inv.args["args"]) or ["list"], XSK_SUBCOMMANDS, "xsk", "")


COMMANDS = (
    Command(
        name="xsk",
        summary="AF_XDP sockets: UMEM and rings, bind, fill, send, recv, ownership, stats",
        handler=_xsk,
        check=_xsk_check,
        params=(Param("args", kind="rest", optional=True, metavar="SUBCOMMAND"),),
        usage_text=f"[NODE] {_XSK_USAGE}",
        example="xsk create xsk0 frames 64; xsk bind xsk0 wan 0; xsk fill xsk0 32",
        details="send writes TX descriptors for free frames (addr A points them anywhere, to "
        "see the kernel's validation), kicks with sendto and follows each frame as a journey.",
        complete=_xsk_complete,
        complete_on_node=True,
    ),
)
