"""xdp and xdpsock: XDP programs and the AF_XDP benchmark on the lab's devices.

* ``xdp attach|detach|show|driver|costs``: a program per device (as ``ip link set
  DEV xdpgeneric|xdpdrv``), the device's driver profile, and the cost model beside
  the seed's measured table;
* ``xdpsock DEV rxdrop|txonly|l2fwd ...``: the benchmark on a device's port.

The sockets themselves are ``xsk`` (:mod:`.xsk`), which reads its words with the
helpers here (``word_options``, ``need_words``, ``subcommand``, ``target_node``).

A node name in front addresses another node (``host xdp attach eth0 native drop``).
The kernel's refusals come back as its errno name and why; packets leave journeys
and tap captures (see :mod:`esplab.model.journey.xdp`).
"""

from __future__ import annotations

from dataclasses import fields

from esplab.commands.base import Session
from esplab.commands.handlers.xdp_args import (
    need_words,
    node_devices,
    subcommand,
    target_node,
    undone_on_failure_handler,
    word_options,
)
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import MessageResult, Result, TableResult, TextResult
from esplab.errors import BadArgument
from esplab.model.journey.xdp import (
    ATTACH_MODES,
    PROFILES,
    PROG_COUNTS,
    PROGRAMS,
    XdpLab,
    default_profile,
    lab_xdp,
)
from esplab.model.journey.xdpsock_run import run_xdpsock
from esplab.model.kernel.xdp.consts import Benchmark, NetdevXdpAct
from esplab.model.tools.xdp_costmodel import CostModel, line_rate_pps, seed_table
from esplab.model.tools.xdpsock import MAX_PKT_SIZE, MIN_PKT_SIZE, NUM_FRAMES

__all__ = ["COMMANDS", "XDP_SUBCOMMANDS"]

XDP_SUBCOMMANDS = ("attach", "detach", "show", "driver", "costs")
_XDP_USAGE = (
    "xdp attach DEV skb|native|zc PROG [queue N] [force] | detach DEV | show [DEV] | "
    "driver DEV [PROFILE] | costs [params]"
)
_XDPSOCK_USAGE = (
    "xdpsock DEV rxdrop|txonly|l2fwd [batch N] [size N] [packets N] "
    "[mode skb|native|zc] [queue N] [no-wakeup]"
)
_MODEL = "model: rates come from the cost model, not from a measurement"


# ---- xdp ----------------------------------------------------------------------------------
@undone_on_failure_handler
def _xdp(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    sub = subcommand(words, XDP_SUBCOMMANDS, "xdp", _XDP_USAGE)
    xl, node, rest = lab_xdp(session.lab), target_node(session, inv), words[1:]
    if sub == "attach":
        usage = "xdp attach DEV skb|native|zc PROG [queue N] [force]"
        need_words(rest, 3, "DEV, MODE and PROG", usage)
        opts, flags = word_options(rest[3:], usage, ("queue",), ("force",))
        xp = xl.attach(
            node, rest[0], rest[1], rest[2], opts.get("queue", 0), force="force" in flags
        )
        # A bind without a mode flag: zero copy where the driver supports it, else copy;
        # the attach mode plays no part (af_xdp.md 2.6) [C].
        zc = bool(xp.port.driver.xdp_features & NetdevXdpAct.XSK_ZEROCOPY)
        binds = "zero copy unless the driver refuses" if zc else "copy mode"
        return MessageResult(
            summary=f"{xp.dev}: {xp.port.program} attached ({xp.describe()['attach']}, "
            f"{rest[1]}); lab frames arrive on queue {xp.rx_queue}; sockets bound here without "
            f"copy|zerocopy get {binds}",
            data=xp.describe(),
        )
    if sub == "detach":
        need_words(rest, 1, "DEV", "xdp detach DEV")
        word_options(rest[1:], "xdp detach DEV")
        xp = xl.detach(node, rest[0])
        return MessageResult(summary=f"{xp.dev}: XDP program detached", data=xp.describe())
    if sub == "show":
        word_options(rest[1:], "xdp show [DEV]")
        return _show(xl, node, rest[0] if rest else None)
    if sub == "driver":
        usage = f"xdp driver DEV [{'|'.join(PROFILES)}]"
        need_words(rest, 1, "DEV", usage)
        word_options(rest[2:], usage)
        xp = xl.set_driver(node, rest[0], rest[1]) if len(rest) > 1 else xl.port(node, rest[0])
        d = xp.port.driver
        return MessageResult(
            summary=f"{xp.dev}: driver {xp.profile} ({d.name}): native XDP "
            f"{'yes' if d.native_xdp else 'no'}, features {_features(d.xdp_features)}, "
            f"{d.rx_queues} RX / {d.tx_queues} TX queue(s), ring {d.hw_ring_size}",
            data={
                "dev": xp.dev,
                "driver": xp.profile,
                "name": d.name,
                "native_xdp": d.native_xdp,
                "rx_queues": d.rx_queues,
                "tx_queues": d.tx_queues,
                "features": _features(d.xdp_features),
                "zerocopy": bool(d.xdp_features & NetdevXdpAct.XSK_ZEROCOPY),
            },
        )
    word_options(rest[1:], "xdp costs [params]")
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
            d = {
                "node": node,
                "dev": name,
                "driver": default_profile(the_node.dev(name)),
                "mode": None,
                "attach": None,
                "program": None,
                "prog_name": None,
                "queue": 0,
                "xdp_pass": 0,
                "xdp_drop": 0,
                "xdp_tx": 0,
                "xdp_redirect": 0,
                "xdp_redirect_err": 0,
                "xdp_aborted": 0,
                "sockets": [],
            }
        data[name] = d
        rows.append(
            (
                name,
                str(d["driver"]),
                d["attach"] or "-",
                d["prog_name"] or "-",
                str(d["queue"]),
                *(str(d[k]) for k in PROG_COUNTS),
                ",".join(d["sockets"]) or "-",
            )
        )
    one = data[devs[0]] if dev is not None else {"devs": data}
    attached = sum(1 for d in data.values() if d["program"])
    return TableResult(
        summary=f"{node}: {attached} device(s) with an XDP program",
        title=f"XDP on {node}",
        columns=(
            "dev",
            "driver",
            "mode",
            "program",
            "q",
            "pass",
            "drop",
            "tx",
            "redir",
            "err",
            "abort",
            "sockets",
        ),
        rows=rows,
        data=one,
    )


def _costs() -> Result:
    rows, cells = [], {}
    for r in seed_table():
        model = "-" if r.model_kpps is None else f"{r.model_kpps:.0f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        rows.append(
            (
                r.benchmark.value,
                str(r.frame_size),
                r.mode.value,
                model,
                str(r.seed_kpps),
                ratio,
                r.limited_by,
                r.status,
            )
        )
        cells[f"{r.benchmark.value}/{r.frame_size}/{r.mode.value}"] = {
            "model_kpps": None if r.model_kpps is None else round(r.model_kpps, 1),
            "seed_kpps": r.seed_kpps,
            "limited_by": r.limited_by,
            "status": r.status,
        }
    bugs = sum(1 for r in seed_table() if r.model_kpps is None)
    return TableResult(
        summary=f"{len(rows)} cells; the model column is a MODEL, the seed column was measured "
        "(am65-cpsw v2 cover letter, AM62x-sk, 1 Gbit/s)",
        title="xdpsock Kpps: cost MODEL (not a measurement) beside the seed's measured numbers",
        columns=(
            "benchmark",
            "size",
            "mode",
            "model Kpps",
            "seed Kpps (measured)",
            "model/seed",
            "limited by",
            "status",
        ),
        rows=rows,
        data={
            "label": "model",
            "rows": len(rows),
            "bugs": bugs,
            "cells": cells,
            "link_bps": CostModel().link_bps,
        },
    )


def _params() -> Result:
    model = CostModel()
    params = {f.name: float(getattr(model.params, f.name)) for f in fields(model.params)}
    rows = [
        (name, f"{value:g}", "ns/byte" if "per_byte" in name else "ns/packet")
        for name, value in params.items()
    ]
    rates = {size: line_rate_pps(size, model.link_bps) for size in (64, 512, 1500)}
    rows += [("link", f"{model.link_bps / 1e9:g} Gbit/s", "the seed's link")]
    rows += [
        (f"line rate {size} B", f"{pps / 1e3:.1f} Kpps", "link / ((L + 20) x 8)")
        for size, pps in rates.items()
    ]
    rows += [
        (
            "cores",
            "one" if model.same_core else "two",
            "kernel and application work on separate cores; the busier one sets the rate",
        )
    ]
    return TableResult(
        summary="cost model parameters (a MODEL calibrated to the seed, not measured)",
        title="cost model parameters (model)",
        columns=("parameter", "value", "unit"),
        rows=rows,
        data={
            "label": "model",
            "params": params,
            "link_bps": model.link_bps,
            "same_core": model.same_core,
            "line_rate_kpps": {str(k): round(v / 1e3, 1) for k, v in rates.items()},
        },
    )


# ---- xdpsock ------------------------------------------------------------------------------
@undone_on_failure_handler
def _xdpsock(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    need_words(words, 2, "DEV and a benchmark", _XDPSOCK_USAGE)
    dev, bench_word = words[0], words[1]
    benches = [b.value for b in Benchmark]
    if bench_word not in benches:
        raise BadArgument(f"unknown benchmark '{bench_word}'", valid=benches, value=bench_word)
    rest, mode = list(words[2:]), None
    if "mode" in rest:
        at = rest.index("mode")
        if at + 1 >= len(rest) or rest[at + 1] not in ATTACH_MODES:
            raise BadArgument(
                "'mode' needs skb, native or zc",
                valid=list(ATTACH_MODES),
                value=rest[at + 1] if at + 1 < len(rest) else None,
            )
        mode = rest[at + 1]
        del rest[at : at + 2]
    opts, flags = word_options(
        rest, _XDPSOCK_USAGE, ("batch", "size", "packets", "queue"), ("no-wakeup",)
    )
    # As typed, before xdpsock's own -s/-b checks would name its options.
    for key, low, high, what in (
        ("size", MIN_PKT_SIZE, MAX_PKT_SIZE, "bytes of each frame, FCS included (xdpsock -s)"),
        ("batch", 1, None, "frames a batch (xdpsock -b)"),
    ):
        if key in opts and not (low <= opts[key] and (high is None or opts[key] <= high)):
            typed = rest[rest.index(key) + 1]
            valid = f"{low}..{high}" if high is not None else f"{low} or more"
            raise BadArgument(f"{key} {typed} is out of range: {what}", valid=valid)
    run = run_xdpsock(
        lab_xdp(session.lab),
        target_node(session, inv),
        dev,
        Benchmark(bench_word),
        mode=mode,
        batch=opts.get("batch", 64),
        size=opts.get("size", 64),
        packets=opts.get("packets", 1024),
        queue=opts.get("queue", 0),
        need_wakeup="no-wakeup" not in flags,
    )
    r, pred = run.report, run.prediction
    lines = r.lines(extra_stats=True)
    missed = run.port_delta.get("rx_missed_errors", 0)
    if run.offered:
        lines.append(
            f"offered {run.offered} frames; the NIC missed {missed}"
            + (" (no UMEM frame posted to the NIC)" if missed else "")
        )
    kpps = "not reproduced / bug (4.4)" if pred.kpps is None else f"{pred.kpps:.0f} Kpps"
    seed = "-" if run.seed_kpps is None else f"{run.seed_kpps} Kpps"
    if run.no_rate:  # nothing to set beside the seed's measured rate
        lines.append(f"{run.no_rate}; journey {run.journey.id}")
    else:
        lines.append(
            f"model rate {kpps}, limited by {pred.limited_by}; seed measured {seed}; "
            f"journey {run.journey.id}"
        )
    return TextResult(
        summary=f"xdpsock {bench_word} on {dev}: rx {r.rx_npkts} tx {r.tx_npkts} "
        f"({r.mode.value}; {_MODEL})",
        text="\n".join(lines),
        data={
            "benchmark": bench_word,
            "mode": r.mode.value,
            "zerocopy": "Zero" in r.mode.value,
            "rx": r.rx_npkts,
            "tx": r.tx_npkts,
            "offered": run.offered,
            "missed": missed,
            "size": opts.get("size", 64),
            "frames": NUM_FRAMES,
            "kpps": None if pred.kpps is None or run.no_rate else round(pred.kpps),
            "no_rate": run.no_rate,
            "seed_kpps": run.seed_kpps,
            "limited_by": pred.limited_by,
            "label": "model",
            "journey": run.journey.id,
            **dict(vars(r.stats)),
        },
    )


# ---- completion ---------------------------------------------------------------------------
def _xdp_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return list(XDP_SUBCOMMANDS)
    sub, n = words[0], len(words)
    if sub in ("attach", "detach", "show", "driver") and n == 1:
        return node_devices(session)
    if sub == "attach":
        return {2: list(ATTACH_MODES), 3: list(PROGRAMS)}.get(n, ["queue", "force"])
    if sub == "driver" and n == 2:
        return list(PROFILES)
    return ["params"] if sub == "costs" and n == 1 else []


def _xdpsock_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return node_devices(session)
    if len(words) == 1:
        return [b.value for b in Benchmark]
    if words[-1] == "mode":
        return list(ATTACH_MODES)
    return ["batch", "size", "packets", "mode", "queue", "no-wakeup"]


def _xdp_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: the subcommand."""
    subcommand(list(inv.args["args"]), XDP_SUBCOMMANDS, "xdp", "")  # args are required


COMMANDS = (
    Command(
        name="xdp",
        summary="XDP programs on a device: attach, detach, show, driver profile, cost model",
        handler=_xdp,
        check=_xdp_check,
        params=(Param("args", kind="rest", metavar="SUBCOMMAND"),),
        usage_text=f"[NODE] {_XDP_USAGE}",
        example="xdp attach wan native drop",
        details="MODE skb = generic hook, native = driver hook, zc = driver hook on a zero-copy "
        "capable driver. The attach mode plays no part in a later xsk bind: without copy or "
        "zerocopy the kernel gives zero copy where the driver supports it and falls back to "
        "copy if the driver refuses (af_xdp.md 2.6). "
        f"PROG: {', '.join(PROGRAMS)}. 'xdp show' counts each action since the program was "
        "attached (xdpsock's runs count in their own journeys). "
        f"Driver profiles: {', '.join(PROFILES)}. 'xdp costs' "
        "shows the cost model (a model, not a measurement) beside the seed's measured Kpps.",
        complete=_xdp_complete,
        complete_on_node=True,
    ),
    Command(
        name="xdpsock",
        summary="xdpsock's rxdrop, txonly or l2fwd on a device, counted like xdpsock",
        handler=_xdpsock,
        params=(Param("args", kind="rest", metavar="DEV BENCHMARK"),),
        usage_text=f"[NODE] {_XDPSOCK_USAGE}",
        example="xdpsock wan rxdrop size 64 packets 1024 mode zc",
        details="mode skb = -S, native = -c, zc = -z, none = the kernel chooses. packets N: "
        "rxdrop and l2fwd are offered N frames, txonly sends exactly N (-C). Counts come "
        "from the functional model; rates from the cost model (a model, not a measurement).",
        complete=_xdpsock_complete,
        complete_on_node=True,
    ),
)
