"""xdpsock on a lab port: setup, a number of frames, its counts, exit.

The benchmark of the seed's xdpsock table run on the functional model: the socket
is created and bound as :mod:`esplab.model.journey.xsk` does, driven in batches
until the frames asked for have moved (or nothing moves any more), and closed, with
the device's own program put back with its counts as they were (the redirects
of xsk_def_prog are the run's, not the program's). One journey per run keeps the first
descriptors it saw (``xdpsock.rx``/``xdpsock.tx``), the wire and XDP counts, and the
report; rates come from the cost model, never from a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from esplab.errors import InvalidValue, KernelError
from esplab.model.journey.xdp import (
    XdpLab,
    XdpPort,
    counters,
    delta,
    kernel_errors,
    record,
    with_errno,
)
from esplab.model.kernel.xdp.consts import AttachMode, Benchmark
from esplab.model.stage import Journey, Stage
from esplab.model.tools.xdp_costmodel import SEED_KPPS, CostModel, Prediction
from esplab.model.tools.xdpsock import TrafficSource, XdpSock, XdpSockConfig, XdpSockReport

__all__ = ["XdpSockRun", "run_xdpsock"]

_MODES = ("XDP-SKB", "XDP-Native", "XDP-Native (ZeroCopy)")


@dataclass
class XdpSockRun:
    report: XdpSockReport
    journey: Journey
    offered: int
    port_delta: dict[str, int]
    prediction: Prediction
    seed_kpps: int | None
    steps: int
    no_rate: str | None = None  # why the run gives no rate (XdpSock.steady)


def run_xdpsock(
    xl: XdpLab,
    node: str,
    dev: str,
    bench: Benchmark,
    *,
    mode: str | None,
    batch: int = 64,
    size: int = 64,
    packets: int = 1024,
    queue: int = 0,
    need_wakeup: bool = True,
) -> XdpSockRun:
    """xdpsock on the device's port: setup, ``packets`` frames, its counts, exit.

    ``mode`` skb = ``-S``, native = ``-c``, zc = ``-z``, None = the kernel chooses.
    On exit the socket is closed and the device's own program is put back.
    """
    if not 1 <= packets <= 100_000:
        raise InvalidValue(f"packets {packets}", valid="1..100000")
    xp = xl.port(node, dev)
    port = xp.port
    if not port.up:
        raise with_errno(KernelError("ENETDOWN", f"{dev} is down", prefix="xdpsock"))
    cfg = XdpSockConfig(
        benchmark=bench,
        xdp_skb=mode == "skb",
        force_copy=mode == "native",
        force_zerocopy=mode == "zc",
        need_wakeup=need_wakeup,
        batch_size=batch,
        pkt_size=size,
        queue=queue,
        pkt_count=packets if bench is Benchmark.TXONLY else 0,
    )
    source = TrafficSource(size, batch, packets) if bench is not Benchmark.TXONLY else None
    prior, prior_mode, had_pool = port.program, port.attach_mode, queue in port.pools
    prior_counts = xp.program_counts()
    try:
        with kernel_errors(
            {
                "EBUSY": f"{dev} queue {queue} has a socket (xsk close it first)",
                "EOPNOTSUPP": "xdpsock attaches natively unless mode skb (-S), and mode zc (-z) "
                "needs XSK zero-copy support (af_xdp.md 1.1, 2.6)",
                "EEXIST": "xdpsock attaches in its own mode; xdp detach the device's program",
            }
        ):
            xsk = XdpSock(port, cfg, source)
    except KernelError:
        if not had_pool and queue in port.pools:  # bound, then the attach failed
            for sock in list(port.pools[queue].sockets):
                sock.close()
        raise
    journey = xl.lab.journeys.new(f"xdpsock {dev} {bench.value}")
    own_prog = port.program is not prior  # libxdp loaded xsk_def_prog for the run
    try:
        return _drive(xl, xp, xsk, journey, packets)
    finally:
        xsk.sock.close()
        port.detach()
        if prior is not None and prior_mode is not None:
            port.attach(prior, prior_mode)
        if own_prog:  # xsk_def_prog's actions are the run's (its journey), not the program's
            xp.counts_from(prior_counts)


def _drive(xl: XdpLab, xp: XdpPort, xsk: XdpSock, journey: Journey, packets: int) -> XdpSockRun:
    cfg, port, sock, umem = xsk.config, xp.port, xsk.sock, xsk.umem
    bench, source, lab = cfg.benchmark, xsk.source, xl.lab
    attach = "xdp-skb" if cfg.attach_mode is AttachMode.SKB else "xdp-drv"
    record(
        lab,
        journey,
        Stage(
            "xdpsock.setup",
            xp.dev,
            f"sock0@{xp.dev}:{cfg.queue} {bench.value} {attach}: UMEM 4096 x {cfg.frame_size}, "
            f"{'zero copy' if sock.zc else 'copy mode'}, batch {cfg.batch_size}",
            why=f"zero copy refused ({sock.fallback_reason}): copy mode"
            if sock.fallback_reason
            else "xdpsock's defaults: RX/TX/COMPLETION 2048, FILL 4096 (af_xdp.md 3.1)",
        ),
    )
    xsk.source = None
    if bench is not Benchmark.TXONLY:
        # xdpsock's loop runs before the peer's traffic: its first empty RX peek kicks the
        # RX wakeup (recvfrom, FILL needs_wakeup), and that NAPI pass posts the FILL frames
        # xsk_populate_fill_ring put there after bind to the NIC (3.2, 2.5, 6.24) [C].
        xsk.step()
        port.poll(cfg.queue, budget=cfg.batch_size)
    before = counters(port)
    tx_start, sent0 = (sock.tx.prod_head if sock.tx else 0), port.stats.tx_packets
    rx_cap: Stage | None = None
    tx_cap: Stage | None = None
    wire_out: bytes | None = None
    first = source.next_burst() if source is not None else []
    for frame in first:
        port.receive(frame, cfg.queue)
    if first:
        port.poll(cfg.queue, budget=cfg.batch_size)
        rx = sock.rx
        assert rx is not None
        pending = rx.entries(rx.cons_head, rx.producer)
        if pending:
            d = pending[0]
            rx_cap = Stage(
                "xdpsock.rx",
                xp.dev,
                f"first RX descriptor #{rx.cons_head}: addr {d.addr:#x} len {d.len}",
                data=d.pack() + umem.read(d.addr, d.len),
                kind="xdp",
            )
    steps, idle, limit = 0, 0, (packets // cfg.batch_size + 2) * 16
    while steps < limit:
        count = xsk.rx_npkts if bench is Benchmark.RXDROP else xsk.tx_npkts
        if count >= packets and (bench is not Benchmark.TXONLY or not xsk.outstanding_tx):
            break  # txonly with -C then completes what is outstanding (complete_tx_only_all) [C]
        mark = (xsk.rx_npkts, xsk.tx_npkts, xsk.outstanding_tx, source and source.sent)
        xsk.step()
        xsk.source = source
        steps += 1
        if tx_cap is None and sock.tx is not None and sock.tx.producer != tx_start:
            d = sock.tx.entries(tx_start, tx_start + 1)[0]
            tx_cap = Stage(
                "xdpsock.tx",
                xp.dev,
                f"first TX descriptor #{tx_start}: addr {d.addr:#x} len {d.len}",
                data=d.pack() + umem.read(d.addr, d.len),
                kind="xdp",
            )
        new = port.stats.tx_packets - sent0
        if wire_out is None and new:
            wire_out = port.wire[-min(new, len(port.wire))]
        changed = mark != (xsk.rx_npkts, xsk.tx_npkts, xsk.outstanding_tx, source and source.sent)
        idle = 0 if changed else idle + 1
        if idle >= 4:
            break
    model = CostModel()
    report = xsk.report(model)
    pred = model.predict(bench, report.mode, cfg.pkt_size)
    seed = SEED_KPPS.get((bench, cfg.pkt_size))
    seed_kpps = None if seed is None else seed[_MODES.index(report.mode.value)]
    offered = source.sent if source is not None else 0
    moved = delta(before, counters(port))
    if first:
        record(
            lab,
            journey,
            Stage(
                f"{xp.tap}.wire",
                xp.dev,
                f"traffic source: {offered} frames of {cfg.pkt_size} "
                "bytes (xdpsock's UDP frame); first one",
                why="a deterministic peer on the wire (modelled design)",
                fidelity="M",
                data=first[0],
                kind="ether",
            ),
        )
        record(
            lab,
            journey,
            Stage(
                f"{xp.tap}.xdp",
                xp.dev,
                f"xsk_def_prog: XDP_REDIRECT x {moved.get('xdp_redirect', 0)}",
                why="libxdp's default program (af_xdp.md 1.2)",
                counters={k: v for k, v in moved.items() if k.startswith(("xdp_", "rx_missed"))},
            ),
        )
    for stage in (rx_cap, tx_cap):
        if stage is not None:
            stage.meta = {"socket": "xdpsock"}
            record(lab, journey, stage)
    if wire_out is not None:
        sent = moved.get("tx_packets", 0)
        record(
            lab,
            journey,
            Stage(
                f"{xp.tap}.wire",
                xp.dev,
                f"{sent} frames out of {xp.dev}; first one",
                why="the benchmark's frames stay in the port model",
                data=wire_out,
                kind="ether",
            ),
        )
    no_rate = None
    if not xsk.steady and pred.kpps is not None:  # a bug cell says so instead (4.4)
        no_rate = (
            f"counted {xsk.counted} packet(s), less than one batch of {cfg.batch_size}: "
            "not a steady stream, so no rate"
        )
    rate = (
        "no rate"
        if no_rate
        else "not reproduced / bug"
        if pred.kpps is None
        else f"{pred.kpps:.0f} Kpps"
    )
    stats = {k: v for k, v in vars(report.stats).items() if v}
    record(
        lab,
        journey,
        Stage(
            "xdpsock.report",
            xp.dev,
            f"rx {report.rx_npkts} tx {report.tx_npkts}; {report.mode.value}: "
            + (no_rate if no_rate else f"{rate} (model, limited by {pred.limited_by})"),
            fidelity="M",
            counters=stats,
            why="counts come from the functional model; rates from the cost model, not a "
            "measurement",
        ),
    )
    journey.verdict = f"xdpsock {bench.value}: rx {report.rx_npkts} tx {report.tx_npkts}"
    return XdpSockRun(report, journey, offered, moved, pred, seed_kpps, steps, no_rate)
