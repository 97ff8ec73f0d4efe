"""The XDP receive hook of the lab's devices: the program runs on a received frame.

:func:`xdp_rx_hook` is called by the datapath for every
frame a device receives. Without an attached program it returns False at once
and appends nothing. With one, it steers the frame to the device's RX queue, runs
the NAPI work scheduled on that queue (the program sees the frame there), appends
the stages below to the journey, records their tap captures (when tracing is on)
and returns True when XDP consumed the frame (DROP, TX, REDIRECT, ABORTED, or a
drop in the NIC before the program) or False for PASS, after which the caller
carries on with the frame as it arrived:

* ``<dev>.nic``: the NIC dropped the frame before the program (zero copy with no
  UMEM frame posted, the other CPSW port owns the queue, device down);
* ``<dev>.xdp``: the action, the program, the hook (generic or native) and the
  per-action counter; snapshot: the frame as the program left it (``ether``);
* ``<dev>.wire``: XDP_TX only, the bounced frame (``ether``);
* ``<sock>.fill``: REDIRECT: the UMEM frame the kernel took from FILL (copy
  mode) or the NIC had been given (zero copy);
* ``<sock>.rx``: REDIRECT: the RX descriptor, 16 bytes followed by the frame it
  points at (``xdp``, decoded as ``XDPDesc/Ether``).

``<dev>`` is the device name on the ap and the node name on a peer, as in the
datapath's own taps. A failed redirect is a drop stage at the tap where it
failed, with the kernel's counter (rx_dropped, rx_ring_full, ...).

Design choices (fidelity M): scheduled NAPI work runs before the next frame
arrives and right after it (:func:`settle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from esplab.model.journey.l2 import count_conduit
from esplab.model.journey.xdp import XdpLab, XdpPort, counters, delta, record, sock_counters
from esplab.model.kernel.xdp.consts import AttachMode
from esplab.model.kernel.xdp.port import NetdevXdp
from esplab.model.kernel.xdp.program import XskRedirect
from esplab.model.kernel.xdp.socket import XskSocket
from esplab.model.stage import Journey, Stage

if TYPE_CHECKING:
    from esplab.model.journey.board import Board

__all__ = ["rx", "settle", "xdp_rx_hook"]

_ACTIONS = ("xdp_redirect", "xdp_tx", "xdp_drop", "xdp_aborted", "xdp_pass")
_WHY = {  # af_xdp.md 1.2 [C]
    "XDP_ABORTED": "program error: the frame is dropped and the xdp_exception tracepoint "
    "fires (af_xdp.md 1.2)",
    "XDP_DROP": "dropped at the hook: in native mode before any skb exists (af_xdp.md 1.2)",
    "XDP_PASS": "on into the normal stack; a zero-copy frame is first copied into a new "
    "skb (af_xdp.md 1.2, 4.2 patch 4)",
    "XDP_TX": "sent back out of the receiving interface as the program left it (1.2)",
    "XDP_REDIRECT": "bpf_redirect_map(&xsks_map, rx_queue_index, XDP_PASS): libxdp's "
    "default program looks the RX queue up in the XSKMAP (af_xdp.md 1.2)",
}


def settle(port: NetdevXdp, queue: int) -> None:
    """Run the NAPI work scheduled on ``queue`` until none is left or a pass does
    nothing (a driver without need_wakeup reschedules itself after a short refill)."""
    for _ in range(8):
        rq = port.rxq[queue] if queue < len(port.rxq) else None
        tq = port.txq[queue] if queue < len(port.txq) else None
        if not (rq is not None and rq.scheduled) and not (tq is not None and tq.scheduled):
            return
        done = port.poll(queue)
        if not (done.rx or done.tx or done.completed or done.refilled):
            return


def rx(xl: XdpLab, node: str, dev: str, frame: bytes, journey: Journey) -> bool:
    xp = xl.ports.get((node, dev))
    if xp is None or xp.port.program is None:
        return False
    port, queue = xp.port, xp.rx_queue
    settle(port, queue)
    prog = port.program
    target = prog.xsks_map.lookup(queue) if isinstance(prog, XskRedirect) else None
    before, sock_before = counters(port), sock_counters(target)
    mark = target.rx.producer if target is not None and target.rx is not None else 0
    if not port.receive(frame, queue):
        _nic_drop(xl, xp, journey, frame, delta(before, counters(port)))
        return True
    settle(port, queue)
    moved = delta(before, counters(port))
    action = next((a for a in _ACTIONS if moved.get(a)), "xdp_pass")
    name = f"XDP_{action[4:].upper()}"
    hook = (
        "generic hook, after the skb is built"
        if port.attach_mode is AttachMode.SKB
        else "native hook in the driver's NAPI poll"
    )
    pool = port.pools.get(queue)
    zc = pool is not None and pool.zc
    where = f"{hook}, queue {queue}" + (", zero copy" if zc else "")
    touched = {k: v for k, v in moved.items() if k.startswith("xdp_") or k == "zc_pass_copies"}
    out = frame
    if action == "xdp_tx" and port.wire:
        out = port.wire[-1]
    elif action == "xdp_pass" and port.stack:
        out = port.stack[-1]
    decision = f"{name} by {prog.name if prog else '-'} ({where})"
    if action in ("xdp_drop", "xdp_aborted"):
        reason = name + (" (unknown return code)" if moved.get("xdp_invalid_action") else "")
        record(
            xl.lab,
            journey,
            Stage(
                f"{xp.tap}.xdp",
                dev,
                f"drop: {decision}",
                why=_WHY[name],
                counters=touched,
                data=out,
                kind="ether",
                drop=reason,
                meta={"action": name}
                | ({"zc": "frame back to the pool's free list"} if zc else {}),
            ),
        )
        journey.verdict = f"dropped at {xp.tap}.xdp: {reason}"
        return True
    if action == "xdp_redirect" and target is not None:
        target_name = xl.name_of(target)
        decision = f"{decision}: XSKMAP[{queue}] -> {target_name}"
    record(
        xl.lab,
        journey,
        Stage(
            f"{xp.tap}.xdp",
            dev,
            decision,
            why=_WHY[name],
            counters=touched,
            data=out,
            kind="ether",
            meta={"action": name},
        ),
    )
    if action == "xdp_pass":
        return False
    if action == "xdp_tx":
        the_node = xl.lab.node(node)
        netdev = the_node.dev(dev)
        netdev.counters.tx_packets += 1
        netdev.counters.tx_bytes += len(out)
        count_conduit(the_node, netdev, out, tx=True)  # a user port's: through the switch
        record(
            xl.lab,
            journey,
            Stage(
                f"{xp.tap}.wire",
                dev,
                f"XDP_TX: {len(out)} bytes back out of {dev}",
                why="the driver queues the frame on its own TX ring (XDP_TX, af_xdp.md 1.2); "
                "the peer's receive is not walked",
                counters={"tx_packets": 1},
                data=out,
                kind="ether",
            ),
        )
        journey.verdict = f"bounced back out of {dev} by XDP_TX"
        return True
    _redirected(xl, xp, journey, target, moved, sock_before, mark)
    return True


def _nic_drop(
    xl: XdpLab, xp: XdpPort, journey: Journey, frame: bytes, delta: dict[str, int]
) -> None:
    port = xp.port
    if not port.up:
        reason, why = "device is down", f"{xp.dev} is administratively down"
    elif delta.get("rx_dropped"):
        reason = f"queue {xp.rx_queue} is zero copy on the other CPSW port"
        why = (
            "am65-cpsw shares RX flows between its ports; a zero-copy queue belongs to "
            "one port and the other port's frames are dropped (af_xdp.md 4.2 patch 3)"
        )
    elif delta.get("rx_length_errors"):
        reason = "frame longer than the XSK RX frame size"
        why = "a zero-copy driver without multi-buffer cannot place it (design choice zc-oversize)"
    else:
        reason = (
            "no RX buffer: no UMEM frame posted to the NIC"
            if port.pools.get(xp.rx_queue)
            else "RX queue full"
        )
        why = (
            "in zero copy the NIC receives only into frames the driver took from FILL; "
            "fill the FILL ring (xsk fill) and kick it (af_xdp.md 2.6, 6.24)"
        )
    record(
        xl.lab,
        journey,
        Stage(
            f"{xp.tap}.nic",
            xp.dev,
            f"drop: {reason}",
            why=why,
            fidelity="C",
            counters=delta,
            data=frame,
            kind="ether",
            drop=reason,
        ),
    )
    journey.verdict = f"dropped at {xp.tap}.nic: {reason}"


def _redirected(
    xl: XdpLab,
    xp: XdpPort,
    journey: Journey,
    target: XskSocket | None,
    moved: dict[str, int],
    sock_before: dict[str, int],
    mark: int,
) -> None:
    """The stages after XDP_REDIRECT: FILL, then the RX descriptor, or the failure."""
    if target is None or target.rx is None or target.umem is None:
        journey.verdict = "redirect failed: the XSKMAP slot is empty"
        return
    name = xl.name_of(target)
    fill = target.fill
    sd = delta(sock_before, sock_counters(target))
    if moved.get("xdp_redirect_err"):
        if sd.get("rx_fill_ring_empty_descs"):
            tap, reason = f"{name}.fill", "FILL ring empty: no frame to copy into"
        elif sd.get("rx_ring_full"):
            tap, reason = f"{name}.rx", "RX ring full: the application has not released it"
        elif sd.get("rx_dropped"):
            tap = f"{name}.rx"
            reason = f"frame longer than the RX frame size {target.umem.rx_frame_size}"
        else:
            tap = f"{xp.tap}.xdp"
            reason = f"{name} is not bound to {xp.dev} queue {xp.rx_queue} (xsk_rcv_check)"
        record(
            xl.lab,
            journey,
            Stage(
                tap,
                xp.dev,
                f"drop: {reason}",
                why="xsk_rcv counts and drops (af_xdp.md 2.7, 6.6-6.8)",
                counters={**sd, "xdp_redirect_err": 1},
                drop=reason,
            ),
        )
        journey.verdict = f"dropped at {tap}: {reason}"
        return
    ls = xl.sockets.get(name)
    for i, desc in enumerate(target.rx.entries(mark, target.rx.producer)):
        index = (mark + i) & 0xFFFF_FFFF
        base = target.umem.frame_base(desc.addr)
        left = "-" if fill is None else str(fill.occupancy)
        how = (
            "the NIC had been given it from FILL and wrote the frame there (zero copy)"
            if target.zc
            else "the kernel took it from FILL and copied the frame in"
        )
        record(
            xl.lab,
            journey,
            Stage(
                f"{name}.fill",
                xp.dev,
                f"frame {base:#x}: {how}; FILL holds {left}",
                why="RX data lands at chunk base + headroom + 256 (af_xdp.md 2.2, 6.9)",
                meta={"socket": name, "frame": f"{base:#x}"},
            ),
        )
        data = desc.pack() + target.umem.read(desc.addr, desc.len)
        record(
            xl.lab,
            journey,
            Stage(
                f"{name}.rx",
                xp.dev,
                f"RX descriptor #{index}: addr {desc.addr:#x} len {desc.len}",
                why="xsk_rcv posts the descriptor; xsk_flush publishes the producer (2.4)",
                data=data,
                kind="xdp",
                meta={"socket": name, "rx_index": index},
            ),
        )
        if ls is not None:
            ls.rx_journeys[index] = journey.id
    mode = "zero copy" if target.zc else "copy mode"
    journey.verdict = f"redirected to AF_XDP socket {name} ({mode})"


def xdp_rx_hook(lab: Board, node_name: str, dev_name: str, frame: bytes, journey: Journey) -> bool:
    """Run the device's XDP program on a received frame; True if XDP consumed it.

    No program attached: False, nothing recorded. Otherwise the stages of the module
    docstring are appended to ``journey`` (and captured); False means XDP_PASS and the
    caller delivers ``frame`` to the stack as usual.
    """
    state = lab.xdp_state
    if not isinstance(state, XdpLab):
        return False
    return rx(state, node_name, dev_name, frame, journey)
