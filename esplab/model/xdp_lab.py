"""XDP and AF_XDP on the lab's devices: the glue between the lab and ``esplab.model.xdp``.

Every lab ``NetDev`` gets one emulated XDP :class:`~esplab.model.xdp.port.Port`,
created on first use with a driver profile chosen by the device's kind (a
modelled design, [M]: the references say nothing about XDP in airoha_eth):

=============  ===========  ====================================================
device         profile      why
=============  ===========  ====================================================
GDM (eth0,     ``zc``       native XDP and XSK zero copy, 4 queue pairs [M]
wan), peers
DSA user       ``generic``  DSA user ports have no ndo_bpf: generic XDP and
(lanN), dummy               copy-mode AF_XDP only [U]
=============  ===========  ====================================================

``xdp driver DEV am65-cpsw`` swaps in the seed's driver (af_xdp.md 4.2).

**The receive hook.** :func:`xdp_rx_hook` is called by the datapath for every
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
arrives and right after it; frames from the lab's datapath arrive on the queue
given with ``xdp attach ... queue N`` (as an ntuple steering rule would put them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esplab.errors import BadArgument, KernelError, NotFound
from esplab.model.journey import Captured, Journey, Stage
from esplab.model.xdp.consts import AttachFlag, AttachMode, BindFlag, NetdevXdpAct, XdpAction
from esplab.model.xdp.driver import DriverProfile
from esplab.model.xdp.port import Am65Cpsw, Port
from esplab.model.xdp.program import SwapMacTx, XdpProgram, XdpReturn, XskMap, XskRedirect
from esplab.model.xdp.socket import XskSocket
from esplab.model.xdp.umem import FrameState, Umem

if TYPE_CHECKING:
    from esplab.model.lab import Lab
    from esplab.model.netdev import NetDev

__all__ = [
    "ATTACH_MODES",
    "PROFILES",
    "PROGRAMS",
    "LabSocket",
    "XdpLab",
    "XdpPort",
    "counters",
    "default_profile",
    "delta",
    "kernel_errors",
    "lab_xdp",
    "record",
    "sock_counters",
    "tap_prefix",
    "with_errno",
    "xdp_rx_hook",
]

PROFILES = {
    "generic": DriverProfile.generic,
    "native": DriverProfile.native,
    "zc": DriverProfile.zero_copy,
    "am65-cpsw": DriverProfile.am65_cpsw,
}
# Attach modes as the seed table's columns (af_xdp.md 3.2 [D]): skb = generic hook and
# XDP_COPY (xdpsock -S), native = driver hook and XDP_COPY (-c), zc = driver hook and
# XDP_ZEROCOPY (-z). The bind flag is the default for sockets bound later.
ATTACH_MODES = {
    "skb": (AttachMode.SKB, BindFlag.COPY),
    "native": (AttachMode.DRV, BindFlag.COPY),
    "zc": (AttachMode.DRV, BindFlag.ZEROCOPY),
}
PROGRAMS = ("pass", "drop", "tx", "aborted", "redirect", "swapmac")
_RETURNS = {
    "pass": XdpAction.PASS,
    "drop": XdpAction.DROP,
    "tx": XdpAction.TX,
    "aborted": XdpAction.ABORTED,
}
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


def with_errno(exc: KernelError, why: str | None = None) -> KernelError:
    """Put the errno name next to its text and add why; the same exception, for ``raise``."""
    tag = f"[{exc.errno_name}]"
    if tag not in exc.what:
        text = KernelError.STRERROR.get(exc.errno_name, exc.errno_name)
        if text in exc.what:
            exc.what = exc.what.replace(text, f"{text} {tag}", 1)
        else:
            exc.what = f"{exc.what} {tag}"
    if why and (exc.hint is None or why not in exc.hint):
        exc.hint = why if exc.hint is None else f"{exc.hint}; why: {why}"
    return exc


@contextmanager
def kernel_errors(why: dict[str, str] | None = None) -> Iterator[None]:
    """Re-raise a model ``KernelError`` with its errno name and, per errno, why."""
    try:
        yield
    except KernelError as exc:
        raise with_errno(exc, (why or {}).get(exc.errno_name)) from None


def record(lab: Lab, journey: Journey, stage: Stage) -> Stage:
    """Append a stage and its tap capture, as the datapath does (no snapshot untraced)."""
    if not lab.settings.tracing:
        stage.data = None
    journey.stages.append(stage)
    if stage.data is not None:
        meta = {"decision": stage.decision, **stage.meta}
        lab.captures.add(
            Captured(journey.id, len(journey.stages) - 1, stage.tap, stage.kind, stage.data, meta)
        )
    return stage


def default_profile(dev: NetDev) -> str:
    """The XDP a device's driver offers: lo, DSA user ports and dummy have no ndo_bpf,
    so only generic (skb) XDP; the GDM ports the full set."""
    generic = dev.kind in ("dsa-user", "loopback") or dev.name.startswith("dummy")
    return "generic" if generic else "zc"


def tap_prefix(lab: Lab, node: str, dev: str) -> str:
    """The datapath's tap names: the ap's devices by name, a peer's eth0 by its node."""
    if lab.node(node).role == "ap":
        return dev
    return node if dev == "eth0" else f"{node}.{dev}"


def counters(port: Port) -> dict[str, int]:
    return dict(vars(port.stats))


def sock_counters(sock: XskSocket | None) -> dict[str, int]:
    return {} if sock is None else dict(vars(sock.statistics()))


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


@dataclass(eq=False)
class XdpPort:
    """One lab device's emulated XDP port and what the lab attached to it."""

    node: str
    dev: str
    tap: str
    port: Port
    profile: str
    rx_queue: int = 0  # where frames from the lab's datapath arrive
    mode: str | None = None  # skb | native | zc, as attached
    program: str | None = None  # one of PROGRAMS
    xsks_map: XskMap = field(default_factory=XskMap)
    loaded_by_bind: bool = False  # libxdp's default program, released with the last socket

    @property
    def bind_default(self) -> BindFlag:
        return ATTACH_MODES[self.mode][1] if self.mode is not None else BindFlag.NONE

    def describe(self) -> dict[str, Any]:
        s = self.port.stats
        attach = self.port.attach_mode
        return {
            "node": self.node,
            "dev": self.dev,
            "driver": self.profile,
            "mode": self.mode,
            "attach": None
            if attach is None
            else ("xdpgeneric" if attach is AttachMode.SKB else "xdpdrv"),
            "program": self.program,
            "prog_name": None if self.port.program is None else self.port.program.name,
            "queue": self.rx_queue,
            "xdp_pass": s.xdp_pass,
            "xdp_drop": s.xdp_drop,
            "xdp_tx": s.xdp_tx,
            "xdp_redirect": s.xdp_redirect,
            "xdp_redirect_err": s.xdp_redirect_err,
            "xdp_aborted": s.xdp_aborted,
            "rx_packets": s.rx_packets,
            "tx_packets": s.tx_packets,
            "rx_missed_errors": s.rx_missed_errors,
        }


@dataclass(eq=False)
class LabSocket:
    """An AF_XDP socket of the lab, by name, with its UMEM."""

    name: str
    node: str
    sock: XskSocket
    umem: Umem
    ring: int
    dev: str | None = None
    rx_journeys: dict[int, int] = field(default_factory=dict)  # RX index -> journey id

    @property
    def where(self) -> str:
        return "unbound" if self.dev is None else f"{self.dev} queue {self.sock.queue_id}"

    @property
    def mode(self) -> str:
        if not self.sock.is_bound:
            return "unbound"
        return "zerocopy" if self.sock.zc else "copy"

    def free_frames(self) -> list[int]:
        """Frame bases user space owns and has not posted anywhere (af_xdp.md 2.6)."""
        fill = self.sock.fill
        posted = set() if fill is None else {self.umem.frame_base(a) for a in fill.in_flight()}
        return [
            base
            for base, state in sorted(self.umem.ownership().items())
            if state is FrameState.USER and base not in posted
        ]


@dataclass(eq=False)
class XdpLab:
    """The lab's XDP ports and AF_XDP sockets (one per Lab, see :func:`lab_xdp`)."""

    lab: Lab
    ports: dict[tuple[str, str], XdpPort] = field(default_factory=dict)
    sockets: dict[str, LabSocket] = field(default_factory=dict)
    cpsw: dict[str, Am65Cpsw] = field(default_factory=dict)  # one switch per node

    # ---- ports ---------------------------------------------------------------------
    def port(self, node: str, dev: str) -> XdpPort:
        """The device's XDP port, created on first use; NoSuchPort for a bad name."""
        netdev = self.lab.node(node).dev(dev)
        xp = self.ports.get((node, dev))
        if xp is None:
            profile = default_profile(netdev)
            xp = XdpPort(
                node,
                dev,
                tap_prefix(self.lab, node, dev),
                self._new_port(node, netdev, profile),
                profile,
            )
            self.ports[(node, dev)] = xp
        xp.port.up = netdev.up
        return xp

    def _new_port(self, node: str, netdev: NetDev, profile: str) -> Port:
        driver = PROFILES[profile]()
        cpsw = self.cpsw.setdefault(node, Am65Cpsw()) if driver.shared_zc_queues else None
        return Port(netdev.name, ifindex=netdev.ifindex, driver=driver, cpsw=cpsw)

    def set_driver(self, node: str, dev: str, profile: str) -> XdpPort:
        if profile not in PROFILES:
            raise BadArgument(
                f"unknown driver profile '{profile}'", valid=list(PROFILES), value=profile
            )
        xp = self.port(node, dev)
        if xp.port.program is not None or xp.port.pools:
            raise BadArgument(
                f"{dev} is in use by XDP (program {xp.program or '-'}, "
                f"{len(xp.port.pools)} bound queue(s))",
                hint=f"xdp detach {dev} and xsk close its sockets first",
            )
        xp.port = self._new_port(node, self.lab.node(node).dev(dev), profile)
        xp.profile, xp.rx_queue, xp.mode, xp.program = profile, 0, None, None
        return xp

    def attach(
        self, node: str, dev: str, mode: str, program: str, queue: int = 0, *, force: bool = False
    ) -> XdpPort:
        """``ip link set DEV xdpgeneric|xdpdrv ...``; ``force`` replaces (``ip -force``)."""
        if mode not in ATTACH_MODES:
            raise BadArgument(f"unknown XDP mode '{mode}'", valid=list(ATTACH_MODES), value=mode)
        if program not in PROGRAMS:
            raise BadArgument(f"unknown XDP program '{program}'", valid=PROGRAMS, value=program)
        xp = self.port(node, dev)
        driver = xp.port.driver
        if not 0 <= queue < driver.rx_queues:
            raise BadArgument(
                f"{dev} has no RX queue {queue} ({driver.name})", valid=f"0..{driver.rx_queues - 1}"
            )
        want = NetdevXdpAct.zc_required()
        if mode == "zc" and driver.xdp_features & want != want:
            raise with_errno(
                KernelError(
                    "EOPNOTSUPP",
                    f"{driver.name} on {dev} has no XSK zero-copy support",
                    prefix="xdp attach",
                    hint="a zero-copy bind needs BASIC|REDIRECT|XSK_ZEROCOPY (af_xdp.md 1.1); "
                    f"attach native and bind in copy mode, or xdp driver {dev} zc",
                )
            )
        prog: XdpProgram = (
            XskRedirect(xp.xsks_map)
            if program == "redirect"
            else SwapMacTx()
            if program == "swapmac"
            else XdpReturn(_RETURNS[program])
        )
        flags = AttachFlag.NONE if force else AttachFlag.UPDATE_IF_NOEXIST
        with kernel_errors(
            {
                "EBUSY": f"replace it with force, or xdp detach {dev} first",
                "EEXIST": "one attach mode per device (dev_xdp_attach)",
                "EOPNOTSUPP": f"{driver.name} has no ndo_bpf: attach {dev} with "
                "mode skb (af_xdp.md 1.1)",
            }
        ):
            xp.port.attach(prog, ATTACH_MODES[mode][0], flags)
        if program == "redirect":
            for ls in self.sockets.values():
                if ls.sock.port is xp.port:
                    xp.xsks_map.update(ls.sock.queue_id, ls.sock)
        xp.mode, xp.program, xp.rx_queue, xp.loaded_by_bind = mode, program, queue, False
        return xp

    def detach(self, node: str, dev: str) -> XdpPort:
        xp = self.port(node, dev)
        if xp.port.program is None:
            raise with_errno(KernelError("ENOENT", f"no XDP program on {dev}", prefix="xdp detach"))
        xp.port.detach()
        xp.mode = xp.program = None
        xp.loaded_by_bind = False
        return xp

    def sockets_on(self, xp: XdpPort) -> list[LabSocket]:
        return [s for s in self.sockets.values() if s.sock.port is xp.port]

    def name_of(self, sock: XskSocket) -> str:
        return next((s.name for s in self.sockets.values() if s.sock is sock), "xsk")

    # ---- the receive hook ------------------------------------------------------------
    @staticmethod
    def settle(port: Port, queue: int) -> None:
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

    def rx(self, node: str, dev: str, frame: bytes, journey: Journey) -> bool:
        xp = self.ports.get((node, dev))
        if xp is None or xp.port.program is None:
            return False
        port, queue = xp.port, xp.rx_queue
        port.up = self.lab.node(node).dev(dev).up
        self.settle(port, queue)
        prog = port.program
        target = prog.xsks_map.lookup(queue) if isinstance(prog, XskRedirect) else None
        before, sock_before = counters(port), sock_counters(target)
        mark = target.rx.producer if target is not None and target.rx is not None else 0
        if not port.receive(frame, queue):
            self._nic_drop(xp, journey, frame, delta(before, counters(port)))
            return True
        self.settle(port, queue)
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
                self.lab,
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
            target_name = self.name_of(target)
            decision = f"{decision}: XSKMAP[{queue}] -> {target_name}"
        record(
            self.lab,
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
            netdev = self.lab.node(node).dev(dev)
            netdev.counters.tx_packets += 1
            netdev.counters.tx_bytes += len(out)
            record(
                self.lab,
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
        self._redirected(xp, journey, target, moved, sock_before, mark)
        return True

    def _nic_drop(self, xp: XdpPort, journey: Journey, frame: bytes, delta: dict[str, int]) -> None:
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
            why = (
                "a zero-copy driver without multi-buffer cannot place it (design choice "
                "zc-oversize)"
            )
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
            self.lab,
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
        self,
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
        name = self.name_of(target)
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
                self.lab,
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
        ls = self.sockets.get(name)
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
                self.lab,
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
                self.lab,
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

    # ---- sockets -----------------------------------------------------------------------
    def socket(self, name: str) -> LabSocket:
        try:
            return self.sockets[name]
        except KeyError:
            raise NotFound(
                f"no AF_XDP socket '{name}'",
                valid=sorted(self.sockets),
                value=name,
                hint=None if self.sockets else "xsk create NAME",
            ) from None


def lab_xdp(lab: Lab) -> XdpLab:
    """The lab's XDP state, created on first use (kept on the Lab object)."""
    if lab.xdp_state is None:
        lab.xdp_state = XdpLab(lab)
    state: XdpLab = lab.xdp_state
    return state


def xdp_rx_hook(lab: Lab, node_name: str, dev_name: str, frame: bytes, journey: Journey) -> bool:
    """Run the device's XDP program on a received frame; True if XDP consumed it.

    No program attached: False, nothing recorded. Otherwise the stages of the module
    docstring are appended to ``journey`` (and captured); False means XDP_PASS and the
    caller delivers ``frame`` to the stack as usual.
    """
    state = lab.xdp_state
    if not isinstance(state, XdpLab):
        return False
    return state.rx(node_name, dev_name, frame, journey)
