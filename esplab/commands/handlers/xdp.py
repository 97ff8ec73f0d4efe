"""xdp, xsk and xdpsock: XDP programs and AF_XDP sockets on the lab's devices.

* ``xdp attach|detach|show|driver|costs``: a program per device (as ``ip link set
  DEV xdpgeneric|xdpdrv``), the device's driver profile, and the cost model beside
  the seed's measured table;
* ``xsk create|bind|fill|send|recv|complete|rings|ownership|stats|close|list``: an
  AF_XDP socket step by step, as an application drives it through libxdp;
* ``xdpsock DEV rxdrop|txonly|l2fwd ...``: the benchmark on a device's port.

A node name in front addresses another node (``host xdp attach eth0 native drop``).
The kernel's refusals come back as its errno name and why; packets leave journeys
and tap captures (see :mod:`esplab.model.xdp_lab`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from esplab.commands.parser import Invocation, parse_int
from esplab.commands.registry import Command, Param
from esplab.commands.result import JourneyResult, MessageResult, Result, TableResult, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.model import xdp_lab_xsk as xsk
from esplab.model.journey import decode_snapshot
from esplab.model.xdp.consts import Benchmark, BindFlag, NetdevXdpAct
from esplab.model.xdp.costmodel import CostModel, line_rate_pps, seed_table
from esplab.model.xdp.rings import Ring, XskDesc
from esplab.model.xdp.umem import FrameState
from esplab.model.xdp.xdpsock import NUM_FRAMES
from esplab.model.xdp_lab import ATTACH_MODES, PROFILES, PROGRAMS, XdpLab, default_profile, lab_xdp

__all__ = ["COMMANDS", "XDP_SUBCOMMANDS", "XSK_SUBCOMMANDS"]

XDP_SUBCOMMANDS = ("attach", "detach", "show", "driver", "costs")
XSK_SUBCOMMANDS = ("create", "bind", "fill", "send", "recv", "complete", "rings", "ownership",
                   "stats", "close", "list")
_XDP_USAGE = ("xdp attach DEV skb|native|zc PROG [queue N] [force] | detach DEV | show [DEV] | "
              "driver DEV [PROFILE] | costs [params]")
_XSK_USAGE = ("xsk create NAME [frames N] [frame-size N] [headroom N] [ring N] | bind NAME DEV "
              "QUEUE [copy|zerocopy] [need-wakeup] | fill NAME N | send NAME N [size N] "
              "[addr A] | recv NAME [N] | complete NAME [N] | rings|ownership|stats|close NAME "
              "| list")
_XDPSOCK_USAGE = ("xdpsock DEV rxdrop|txonly|l2fwd [batch N] [size N] [packets N] "
                  "[mode skb|native|zc] [queue N] [no-wakeup]")
_MODEL = "model: rates come from the cost model, not from a measurement"


def _opts(words: list[str], usage: str, ints: tuple[str, ...] = (),
          flags: tuple[str, ...] = ()) -> tuple[dict[str, int], set[str]]:
    """``key N`` pairs and bare flags after the positional words."""
    values: dict[str, int] = {}
    seen: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        if word in flags:
            seen.add(word)
            i += 1
        elif word in ints:
            if i + 1 >= len(words):
                raise BadArgument(f"'{word}' needs a number", hint=f"usage: {usage}")
            values[word] = parse_int(words[i + 1], word)
            i += 2
        else:
            raise BadArgument(f"unexpected '{word}'", valid=[*ints, *flags] or "nothing more",
                              value=word, hint=f"usage: {usage}")
    return values, seen


def _need(words: list[str], count: int, what: str, usage: str) -> None:
    if len(words) < count:
        raise BadArgument(f"missing {what}", hint=f"usage: {usage}")


def _sub(words: list[str], valid: tuple[str, ...], cmd: str, usage: str) -> str:
    if not words:
        raise BadArgument(f"{cmd} needs a subcommand", valid=valid, hint=f"usage: {usage}")
    if words[0] not in valid:
        raise BadArgument(f"unknown {cmd} subcommand '{words[0]}'", valid=valid, value=words[0])
    return words[0]


def _node(session: Session, inv: Invocation) -> str:
    return session.lab.node(inv.node).name


# ---- xdp ----------------------------------------------------------------------------------
def _xdp(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    sub = _sub(words, XDP_SUBCOMMANDS, "xdp", _XDP_USAGE)
    xl, node, rest = lab_xdp(session.lab), _node(session, inv), words[1:]
    if sub == "attach":
        usage = "xdp attach DEV skb|native|zc PROG [queue N] [force]"
        _need(rest, 3, "DEV, MODE and PROG", usage)
        opts, flags = _opts(rest[3:], usage, ("queue",), ("force",))
        xp = xl.attach(node, rest[0], rest[1], rest[2], opts.get("queue", 0),
                       force="force" in flags)
        binds = {"skb": "copy", "native": "copy", "zc": "zerocopy"}[rest[1]]
        return MessageResult(
            summary=f"{xp.dev}: {xp.port.program} attached ({xp.describe()['attach']}, "
            f"{rest[1]}); lab frames arrive on queue {xp.rx_queue}; sockets bound here default "
            f"to {binds}", data=xp.describe())
    if sub == "detach":
        _need(rest, 1, "DEV", "xdp detach DEV")
        _opts(rest[1:], "xdp detach DEV")
        xp = xl.detach(node, rest[0])
        return MessageResult(summary=f"{xp.dev}: XDP program detached", data=xp.describe())
    if sub == "show":
        _opts(rest[1:], "xdp show [DEV]")
        return _show(xl, node, rest[0] if rest else None)
    if sub == "driver":
        usage = f"xdp driver DEV [{'|'.join(PROFILES)}]"
        _need(rest, 1, "DEV", usage)
        _opts(rest[2:], usage)
        xp = xl.set_driver(node, rest[0], rest[1]) if len(rest) > 1 else xl.port(node, rest[0])
        d = xp.port.driver
        return MessageResult(
            summary=f"{xp.dev}: driver {xp.profile} ({d.name}): native XDP "
            f"{'yes' if d.native_xdp else 'no'}, features {_features(d.xdp_features)}, "
            f"{d.rx_queues} RX / {d.tx_queues} TX queue(s), ring {d.hw_ring_size}",
            data={"dev": xp.dev, "driver": xp.profile, "name": d.name,
                  "native_xdp": d.native_xdp, "rx_queues": d.rx_queues,
                  "tx_queues": d.tx_queues, "features": _features(d.xdp_features),
                  "zerocopy": bool(d.xdp_features & NetdevXdpAct.XSK_ZEROCOPY)})
    _opts(rest[1:], "xdp costs [params]")
    if rest and rest[0] != "params":
        raise BadArgument(f"unknown xdp costs view '{rest[0]}'", valid=["params"])
    return _params() if rest else _costs()


def _features(bits: NetdevXdpAct) -> str:
    """``netdev_xdp_act`` bits by name, as ``ynl ... dev-get`` shows them (af_xdp.md 1.1)."""
    names = [f.name.lower().replace("_", "-") for f in NetdevXdpAct if f and f in bits and f.name]
    return ",".join(names) or "none"


def _show(xl: XdpLab, node: str, dev: str | None) -> Result:
    the_node = xl.lab.node(node)
    devs = [the_node.dev(dev).name] if dev is not None else list(the_node.devs)
    rows, data = [], {}
    for name in devs:
        xp = xl.ports.get((node, name))
        if xp is not None:
            d = xp.describe()
            d["sockets"] = [s.name for s in xl.sockets_on(xp)]
        else:
            d = {"node": node, "dev": name, "driver": default_profile(the_node.dev(name)),
                 "mode": None, "attach": None, "program": None, "prog_name": None, "queue": 0,
                 "xdp_pass": 0, "xdp_drop": 0, "xdp_tx": 0, "xdp_redirect": 0,
                 "xdp_redirect_err": 0, "xdp_aborted": 0, "sockets": []}
        data[name] = d
        rows.append((name, str(d["driver"]), d["attach"] or "-", d["prog_name"] or "-",
                     str(d["queue"]), *(str(d[k]) for k in ("xdp_pass", "xdp_drop", "xdp_tx",
                     "xdp_redirect", "xdp_redirect_err", "xdp_aborted")),
                     ",".join(d["sockets"]) or "-"))
    one = data[devs[0]] if dev is not None else {"devs": data}
    attached = sum(1 for d in data.values() if d["program"])
    return TableResult(summary=f"{node}: {attached} device(s) with an XDP program",
                       title=f"XDP on {node}",
                       columns=("dev", "driver", "mode", "program", "q", "pass", "drop", "tx",
                                "redir", "err", "abort", "sockets"),
                       rows=rows, data=one)


def _costs() -> Result:
    rows, cells = [], {}
    for r in seed_table():
        model = "-" if r.model_kpps is None else f"{r.model_kpps:.0f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        rows.append((r.benchmark.value, str(r.frame_size), r.mode.value, model, str(r.seed_kpps),
                     ratio, r.limited_by, r.status))
        cells[f"{r.benchmark.value}/{r.frame_size}/{r.mode.value}"] = {
            "model_kpps": None if r.model_kpps is None else round(r.model_kpps, 1),
            "seed_kpps": r.seed_kpps, "limited_by": r.limited_by, "status": r.status}
    bugs = sum(1 for r in seed_table() if r.model_kpps is None)
    return TableResult(
        summary=f"{len(rows)} cells; the model column is a MODEL, the seed column was measured "
        "(am65-cpsw v2 cover letter, AM62x-sk, 1 Gbit/s)",
        title="xdpsock Kpps: cost MODEL (not a measurement) beside the seed's measured numbers",
        columns=("benchmark", "size", "mode", "model Kpps", "seed Kpps (measured)", "model/seed",
                 "limited by", "status"),
        rows=rows, data={"label": "model", "rows": len(rows), "bugs": bugs, "cells": cells,
                         "link_bps": CostModel().link_bps})


def _params() -> Result:
    model = CostModel()
    params = {f.name: float(getattr(model.params, f.name)) for f in fields(model.params)}
    rows = [(name, f"{value:g}", "ns/byte" if "per_byte" in name else "ns/packet")
            for name, value in params.items()]
    rates = {size: line_rate_pps(size, model.link_bps) for size in (64, 512, 1500)}
    rows += [("link", f"{model.link_bps / 1e9:g} Gbit/s", "the seed's link")]
    rows += [(f"line rate {size} B", f"{pps / 1e3:.1f} Kpps", "link / ((L + 20) x 8)")
             for size, pps in rates.items()]
    rows += [("cores", "one" if model.same_core else "two",
              "kernel and application work on separate cores; the busier one sets the rate")]
    return TableResult(
        summary="cost model parameters (a MODEL calibrated to the seed, not measured)",
        title="cost model parameters (model)", columns=("parameter", "value", "unit"), rows=rows,
        data={"label": "model", "params": params, "link_bps": model.link_bps,
              "same_core": model.same_core,
              "line_rate_kpps": {str(k): round(v / 1e3, 1) for k, v in rates.items()}})


# ---- xsk ----------------------------------------------------------------------------------
def _xsk(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"]) or ["list"]
    sub = _sub(words, XSK_SUBCOMMANDS, "xsk", _XSK_USAGE)
    xl, node, rest = lab_xdp(session.lab), _node(session, inv), words[1:]
    if sub == "list":
        _opts(rest, "xsk list")
        return _list(xl)
    _need(rest, 1, "the socket NAME", _XSK_USAGE)
    name = rest[0]
    handler = _XSK[sub]
    return handler(xl, node, name, rest[1:])


def _create(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    usage = "xsk create NAME [frames N] [frame-size N] [headroom N] [ring N]"
    opts, _ = _opts(words, usage, ("frames", "frame-size", "headroom", "ring"))
    ls = xsk.create(xl, name, node, opts.get("frames", 64), opts.get("frame-size", 4096),
                    opts.get("headroom", 0), opts.get("ring", 64))
    u = ls.umem
    return MessageResult(
        summary=f"{name} on {node}: UMEM {u.chunks} x {u.chunk_size} bytes (headroom "
        f"{u.headroom}, RX frames up to {u.rx_frame_size} bytes), FILL/COMPLETION/RX/TX "
        f"{ls.ring} entries; unbound",
        data={"socket": name, "node": node, "frames": u.chunks, "frame_size": u.chunk_size,
              "headroom": u.headroom, "rx_frame_size": u.rx_frame_size, "ring": ls.ring})


def _bind(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    usage = "xsk bind NAME DEV QUEUE [copy|zerocopy] [need-wakeup]"
    _need(words, 2, "DEV and QUEUE", usage)
    _, flags = _opts(words[2:], usage, (), ("copy", "zerocopy", "need-wakeup"))
    if {"copy", "zerocopy"} <= flags:
        raise BadArgument("copy and zerocopy together",
                          hint="the kernel refuses both flags with EINVAL; pick one")
    mode = BindFlag.COPY if "copy" in flags else BindFlag.ZEROCOPY if "zerocopy" in flags else None
    ls, note = xsk.bind(xl, name, node, words[0], parse_int(words[1], "queue"), mode,
                        "need-wakeup" in flags)
    sock = ls.sock
    how = "zero copy" if sock.zc else "copy mode"
    if sock.fallback_reason:
        how += f" (zero copy not granted: {sock.fallback_reason})"
    return MessageResult(
        summary=f"{name} bound to {ls.dev} queue {sock.queue_id}: {how}; {note}",
        data={"socket": name, "dev": ls.dev, "queue": sock.queue_id, "mode": ls.mode,
              "need_wakeup": "need-wakeup" in flags, "fallback": sock.fallback_reason,
              "note": note})


def _fill(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    _need(words, 1, "how many frames", "xsk fill NAME N")
    _opts(words[1:], "xsk fill NAME N")
    addrs, kicked = xsk.fill(xl, name, parse_int(words[0], "frames"))
    ls = xl.socket(name)
    ring = ls.sock.fill
    assert ring is not None
    pool = ls.sock.pool
    posted = len(pool.posted) if pool is not None and pool.zc else 0
    text = f"{name}: {len(addrs)} frame(s) to FILL ({addrs[0]:#x}..{addrs[-1]:#x}); FILL holds " \
           f"{ring.occupancy}"
    if kicked:
        text += "; FILL asked for a wakeup, so recvfrom kicked the driver"
    if posted:
        text += f"; {posted} frame(s) posted to the NIC (zero copy)"
    return MessageResult(summary=text, data={"socket": name, "posted": len(addrs),
                                             "fill": ring.occupancy, "kicked": kicked,
                                             "nic": posted, "addrs": [hex(a) for a in addrs]})


def _ring_row(label: str, ring: Ring[int] | Ring[XskDesc] | None) -> tuple[str, ...]:
    if ring is None:
        return (label, "-", "-", "-", "-", "-", "-")
    private = "" if ring.cons_head == ring.consumer else f" (kernel at {ring.cons_head:#x})"
    return (label, str(ring.size), f"{ring.producer:#x}", f"{ring.consumer:#x}{private}",
            str(ring.occupancy), str(len(ring.reserved())),
            "NEED_WAKEUP" if ring.needs_wakeup else "-")


def _rings(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    _opts(words, "xsk rings NAME")
    ls = xl.socket(name)
    sock = ls.sock
    rows = [_ring_row("fill", sock.fill), _ring_row("completion", sock.comp),
            _ring_row("rx", sock.rx), _ring_row("tx", sock.tx)]
    data: dict[str, object] = {"socket": name}
    for label, ring in (("fill", sock.fill), ("completion", sock.comp)):
        assert ring is not None
        entries = ring.in_flight()
        data[label] = {"size": ring.size, "producer": ring.producer, "consumer": ring.consumer,
                       "in_flight": len(entries), "need_wakeup": ring.needs_wakeup,
                       "addrs": [hex(a) for a in entries[:64]]}
        if entries:
            shown = ", ".join(f"{a:#x}" for a in entries[:8]) + (" ..." if len(entries) > 8
                                                                   else "")
            rows.append((f"  {label} entries", "", "", "", "", "", shown))
    for label, dring in (("rx", sock.rx), ("tx", sock.tx)):
        assert dring is not None
        descs = dring.in_flight()
        data[label] = {"size": dring.size, "producer": dring.producer,
                       "consumer": dring.consumer, "in_flight": len(descs),
                       "need_wakeup": dring.needs_wakeup,
                       "descs": [{"addr": d.addr, "len": d.len, "options": d.options}
                                 for d in descs[:64]]}
        first = dring.cons_head
        for i, desc in enumerate(descs[:16]):
            shown = decode_snapshot("xdp", desc.pack()).summary()
            rows.append((f"  {label} #{(first + i) & 0xFFFF_FFFF}", "", "", "", "", "", shown))
    return TableResult(summary=f"{name} rings ({ls.where}, {ls.mode})", title=f"{name} rings",
                       columns=("ring", "size", "producer", "consumer", "in flight", "reserved",
                                "flags / entries"), rows=rows, data=data)


def _ownership(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    _opts(words, "xsk ownership NAME")
    ls = xl.socket(name)
    states = sorted(ls.umem.ownership().items())
    posted = set() if ls.sock.is_bound or ls.sock.fill is None else {
        ls.umem.frame_base(a) for a in ls.sock.fill.in_flight()}  # FILL before bind
    spans: list[tuple[int, int, FrameState]] = []
    for base, state in states:
        state = FrameState.FILL if base in posted else state
        if spans and spans[-1][2] is state and spans[-1][1] + ls.umem.chunk_size == base:
            spans[-1] = (spans[-1][0], base, state)
        else:
            spans.append((base, base, state))
    size = ls.umem.chunk_size
    rows = [(f"{a:#x}" if a == b else f"{a:#x}-{b:#x}", str((b - a) // size + 1), s.value,
             s.owner) for a, b, s in spans]
    counts: dict[str, int] = {}
    for a, b, s in spans:
        counts[s.value] = counts.get(s.value, 0) + (b - a) // size + 1
    return TableResult(summary=", ".join(f"{v} {k}" for k, v in counts.items()),
                       title=f"{name}: who owns each UMEM frame (af_xdp.md 2.6)",
                       columns=("frames", "count", "state", "owner"), rows=rows,
                       data={"socket": name, "frames": len(states), **counts})


def _stats(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    _opts(words, "xsk stats NAME")
    ls = xl.socket(name)
    stats = dict(vars(ls.sock.statistics()))
    rows = [(k, str(v)) for k, v in stats.items()]
    rows.append(("XDP_OPTIONS", "XDP_OPTIONS_ZEROCOPY" if ls.sock.options() else "0"))
    return TableResult(summary=f"{name}: XDP_STATISTICS ({ls.where}, {ls.mode})",
                       title=f"{name}: getsockopt(XDP_STATISTICS)", columns=("counter", "value"),
                       rows=rows, data={"socket": name, "mode": ls.mode, **stats})


def _send(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    usage = "xsk send NAME N [size N] [addr A]"
    _need(words, 1, "how many frames", usage)
    opts, _ = _opts(words[1:], usage, ("size", "addr"))
    report = xsk.send(xl, name, parse_int(words[0], "count"), opts.get("size", 64),
                      opts.get("addr"))
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
        data={"socket": name, "sent": report.sent, "invalid": report.invalid,
              "pending": report.pending, "completed": report.completed,
              "reclaimed": report.reclaimed, "journeys": ids, "verdict": last.verdict,
              "mode": "zerocopy" if report.zerocopy else "copy"})


def _recv(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    count = parse_int(words[0], "count") if words else None
    _opts(words[1:], "xsk recv NAME [N]")
    if count is not None and count < 1:
        raise BadArgument(f"count {count}", valid="1 or more")
    got = xsk.recv(xl, name, count)
    rows, descs = [], []
    for index, desc, frame, jid in got:
        summary = decode_snapshot("xdp", desc.pack() + frame).summary()
        rows.append((f"#{index}", f"{desc.addr:#x}", str(desc.len), str(desc.options), summary,
                     "-" if jid is None else str(jid)))
        descs.append({"index": index, "addr": desc.addr, "len": desc.len,
                      "options": desc.options, "journey": jid})
    return TableResult(summary=f"{name}: {len(got)} descriptor(s) read and released",
                       title=f"{name} RX", columns=("rx", "addr", "len", "options", "packet",
                                                    "journey"),
                       rows=rows, data={"socket": name, "count": len(got), "descs": descs})


def _complete(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    count = parse_int(words[0], "count") if words else None
    _opts(words[1:], "xsk complete NAME [N]")
    addrs = xsk.complete(xl, name, count)
    shown = ", ".join(f"{a:#x}" for a in addrs[:8]) + (" ..." if len(addrs) > 8 else "")
    return MessageResult(summary=f"{name}: {len(addrs)} completion(s) drained"
                         + (f" ({shown}); the frames are the user's again" if addrs else ""),
                         data={"socket": name, "completed": len(addrs),
                               "addrs": [hex(a) for a in addrs]})


def _close(xl: XdpLab, node: str, name: str, words: list[str]) -> Result:
    _opts(words, "xsk close NAME")
    ls, note = xsk.close(xl, name)
    return MessageResult(summary=f"{name} closed ({ls.where} is free)"
                         + (f"; {note}" if note else ""),
                         data={"socket": name, "unloaded": note is not None})


def _list(xl: XdpLab) -> Result:
    rows = []
    for ls in xl.sockets.values():
        fill, rx = ls.sock.fill, ls.sock.rx
        rows.append((ls.name, ls.node, ls.where, ls.mode, f"{ls.umem.chunks} x "
                     f"{ls.umem.chunk_size}", str(fill.occupancy if fill else 0),
                     str(rx.occupancy if rx else 0)))
    return TableResult(summary=f"{len(rows)} AF_XDP socket(s)", title="AF_XDP sockets",
                       columns=("name", "node", "bound to", "mode", "UMEM", "fill", "rx"),
                       rows=rows, data={"sockets": [r[0] for r in rows]})


_XSK: dict[str, Callable[[XdpLab, str, str, list[str]], Result]] = {
    "create": _create, "bind": _bind, "fill": _fill, "rings": _rings, "ownership": _ownership,
    "stats": _stats, "send": _send, "recv": _recv, "complete": _complete, "close": _close,
}


# ---- xdpsock ------------------------------------------------------------------------------
def _xdpsock(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    _need(words, 2, "DEV and a benchmark", _XDPSOCK_USAGE)
    dev, bench_word = words[0], words[1]
    benches = [b.value for b in Benchmark]
    if bench_word not in benches:
        raise BadArgument(f"unknown benchmark '{bench_word}'", valid=benches, value=bench_word)
    rest, mode = list(words[2:]), None
    if "mode" in rest:
        at = rest.index("mode")
        if at + 1 >= len(rest) or rest[at + 1] not in ATTACH_MODES:
            raise BadArgument("'mode' needs skb, native or zc", valid=list(ATTACH_MODES),
                              value=rest[at + 1] if at + 1 < len(rest) else None)
        mode = rest[at + 1]
        del rest[at : at + 2]
    opts, flags = _opts(rest, _XDPSOCK_USAGE, ("batch", "size", "packets", "queue"),
                        ("no-wakeup",))
    run = xsk.run_xdpsock(lab_xdp(session.lab), _node(session, inv), dev, Benchmark(bench_word),
                          mode=mode, batch=opts.get("batch", 64), size=opts.get("size", 64),
                          packets=opts.get("packets", 1024), queue=opts.get("queue", 0),
                          need_wakeup="no-wakeup" not in flags)
    r, pred = run.report, run.prediction
    lines = r.lines(extra_stats=True)
    missed = run.port_delta.get("rx_missed_errors", 0)
    if run.offered:
        lines.append(f"offered {run.offered} frames; the NIC missed {missed}"
                     + (" (no UMEM frame posted yet: xdpsock fills FILL after bind)"
                        if missed else ""))
    kpps = "not reproduced / bug (4.4)" if pred.kpps is None else f"{pred.kpps:.0f} Kpps"
    seed = "-" if run.seed_kpps is None else f"{run.seed_kpps} Kpps"
    lines.append(f"model rate {kpps}, limited by {pred.limited_by}; seed measured {seed}; "
                 f"journey {run.journey.id}")
    return TextResult(
        summary=f"xdpsock {bench_word} on {dev}: rx {r.rx_npkts} tx {r.tx_npkts} "
        f"({r.mode.value}; {_MODEL})",
        text="\n".join(lines),
        data={"benchmark": bench_word, "mode": r.mode.value, "zerocopy": "Zero" in r.mode.value,
              "rx": r.rx_npkts, "tx": r.tx_npkts, "offered": run.offered, "missed": missed,
              "size": opts.get("size", 64), "frames": NUM_FRAMES,
              "kpps": None if pred.kpps is None else round(pred.kpps),
              "seed_kpps": run.seed_kpps, "limited_by": pred.limited_by, "label": "model",
              "journey": run.journey.id, **dict(vars(r.stats))})


# ---- completion ---------------------------------------------------------------------------
def _devs(session: Session) -> list[str]:
    return list(session.lab.node().devs)


def _xdp_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return list(XDP_SUBCOMMANDS)
    sub, n = words[0], len(words)
    if sub in ("attach", "detach", "show", "driver") and n == 1:
        return _devs(session)
    if sub == "attach":
        return {2: list(ATTACH_MODES), 3: list(PROGRAMS)}.get(n, ["queue", "force"])
    if sub == "driver" and n == 2:
        return list(PROFILES)
    return ["params"] if sub == "costs" and n == 1 else []


def _xsk_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return list(XSK_SUBCOMMANDS)
    names = sorted(lab_xdp(session.lab).sockets)
    sub, n = words[0], len(words)
    if sub == "list":
        return []
    if n == 1:
        return [] if sub == "create" else names
    return {
        "create": ["frames", "frame-size", "headroom", "ring"],
        "bind": _devs(session) if n == 2 else ["0"] if n == 3 else ["copy", "zerocopy",
                                                                    "need-wakeup"],
        "send": ["size", "addr"],
    }.get(sub, [])


def _xdpsock_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return _devs(session)
    if len(words) == 1:
        return [b.value for b in Benchmark]
    if words[-1] == "mode":
        return list(ATTACH_MODES)
    return ["batch", "size", "packets", "mode", "queue", "no-wakeup"]


COMMANDS = (
    Command(
        name="xdp",
        summary="XDP programs on a device: attach, detach, show, driver profile, cost model",
        handler=_xdp,
        params=(Param("args", kind="rest", metavar="SUBCOMMAND"),),
        usage_text=f"[NODE] {_XDP_USAGE}",
        example="xdp attach wan native drop",
        details="MODE skb = generic hook, native = driver hook, zc = driver hook on a zero-copy "
        "capable driver; sockets bound later default to copy (skb, native) or zerocopy (zc). "
        f"PROG: {', '.join(PROGRAMS)}. Driver profiles: {', '.join(PROFILES)}. 'xdp costs' "
        "shows the cost model (a model, not a measurement) beside the seed's measured Kpps.",
        complete=_xdp_complete,
    ),
    Command(
        name="xsk",
        summary="AF_XDP sockets: UMEM and rings, bind, fill, send, recv, ownership, stats",
        handler=_xsk,
        params=(Param("args", kind="rest", optional=True, metavar="SUBCOMMAND"),),
        usage_text=f"[NODE] {_XSK_USAGE}",
        example="xsk create xsk0 frames 64; xsk bind xsk0 wan 0; xsk fill xsk0 32",
        details="send writes TX descriptors for free frames (addr A points them anywhere, to "
        "see the kernel's validation), kicks with sendto and follows each frame as a journey.",
        complete=_xsk_complete,
    ),
    Command(
        name="xdpsock",
        summary="xdpsock's rxdrop, txonly or l2fwd on a device, counted like xdpsock",
        handler=_xdpsock,
        params=(Param("args", kind="rest", metavar="DEV BENCHMARK"),),
        usage_text=f"[NODE] {_XDPSOCK_USAGE}",
        example="xdpsock wan rxdrop size 64 packets 1024 mode zc",
        details="mode skb = -S, native = -c, zc = -z, none = the kernel chooses. Counts come "
        "from the functional model; rates from the cost model (a model, not a measurement).",
        complete=_xdpsock_complete,
    ),
)
