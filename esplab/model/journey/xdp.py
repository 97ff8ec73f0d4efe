"""XDP and AF_XDP on the lab's devices: the glue between the lab and ``esplab.model.kernel.xdp``.

Every lab ``NetDev`` gets its XDP side (:class:`~esplab.model.kernel.xdp.port.NetdevXdp`,
the device's ``xdp``) on first use, with a driver profile chosen by the device's kind
(a modelled design, [M]: the references say nothing about XDP in airoha_eth):

=============  ===========  ====================================================
device         profile      why
=============  ===========  ====================================================
GDM (eth0,     ``zc``       native XDP and XSK zero copy, 4 queue pairs [M]
wan), peers
DSA user       ``generic``  DSA user ports have no ndo_bpf: generic XDP and
(lanN), dummy               copy-mode AF_XDP only [U]
=============  ===========  ====================================================

``xdp driver DEV am65-cpsw`` swaps in the seed's driver (af_xdp.md 4.2).

**The receive hook** is :mod:`esplab.model.journey.xdp_rx`.

Design choices (fidelity M): scheduled NAPI work runs before the next frame
arrives and right after it; frames from the lab's datapath arrive on the queue
given with ``xdp attach ... queue N`` (as an ntuple steering rule would put them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esplab.errors import EsplabError, InvalidValue, KernelError, NotFound, StateConflict
from esplab.model.kernel.xdp.consts import AttachFlag, AttachMode, NetdevXdpAct, XdpAction
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.port import Am65Cpsw, NetdevXdp
from esplab.model.kernel.xdp.program import SwapMacTx, XdpProgram, XdpReturn, XskMap, XskRedirect
from esplab.model.kernel.xdp.socket import XskSocket
from esplab.model.kernel.xdp.umem import FrameState, Umem
from esplab.model.stage import Captured, Journey, Stage

if TYPE_CHECKING:
    from esplab.model.journey.board import Board, Recorder
    from esplab.model.kernel.stack.netdev import NetDev

__all__ = [
    "ATTACH_MODES",
    "PROFILES",
    "PROGRAMS",
    "PROG_COUNTS",
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
    "undone_on_failure",
    "with_errno",
]

PROFILES = {
    "generic": DriverProfile.generic,
    "native": DriverProfile.native,
    "zc": DriverProfile.zero_copy,
    "am65-cpsw": DriverProfile.am65_cpsw,
}
# Attach modes (af_xdp.md 1.1): skb = generic hook, native = driver hook, zc = driver hook
# on a driver with XSK zero-copy support (checked at attach). The attach mode plays no
# part in a later bind: without a mode flag the kernel tries zero copy where the driver
# supports it and falls back to copy if the driver refuses (2.6, xp_assign_dev) [C].
ATTACH_MODES = {
    "skb": AttachMode.SKB,
    "native": AttachMode.DRV,
    "zc": AttachMode.DRV,
}
PROGRAMS = ("pass", "drop", "tx", "aborted", "redirect", "swapmac")
# The action counts ``xdp show`` gives per program (design choice "prog-counts", [M]):
# they start at 0 when a program is attached, as a program's own counters would, and are
# the port's counters since then.
PROG_COUNTS = (
    "xdp_pass",
    "xdp_drop",
    "xdp_tx",
    "xdp_redirect",
    "xdp_redirect_err",
    "xdp_aborted",
)
_RETURNS = {
    "pass": XdpAction.PASS,
    "drop": XdpAction.DROP,
    "tx": XdpAction.TX,
    "aborted": XdpAction.ABORTED,
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


def record(lab: Recorder, journey: Journey, stage: Stage) -> Stage:
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


def tap_prefix(lab: Board, node: str, dev: str) -> str:
    """The datapath's tap names: the ap's devices by name, a peer's eth0 by its node."""
    if lab.node(node).role == "ap":
        return dev
    return node if dev == "eth0" else f"{node}.{dev}"


def counters(port: NetdevXdp) -> dict[str, int]:
    return dict(vars(port.stats))


def sock_counters(sock: XskSocket | None) -> dict[str, int]:
    return {} if sock is None else dict(vars(sock.statistics()))


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


@dataclass(eq=False)
class XdpPort:
    """One lab device whose XDP side the lab uses, and what the lab attached to it."""

    node: str
    dev: str
    tap: str
    netdev: NetDev
    profile: str
    rx_queue: int = 0  # where frames from the lab's datapath arrive
    mode: str | None = None  # skb | native | zc, as attached
    program: str | None = None  # one of PROGRAMS
    xsks_map: XskMap = field(default_factory=XskMap)
    loaded_by_bind: bool = False  # libxdp's default program, released with the last socket
    prog_base: dict[str, int] = field(default_factory=dict)  # port counts at attach

    @property
    def port(self) -> NetdevXdp:
        """The device's XDP side."""
        assert self.netdev.xdp is not None, "XdpLab.port gives every device its XDP side"
        return self.netdev.xdp

    def program_counts(self) -> dict[str, int]:
        """The attached program's action counts (design choice "prog-counts", [M])."""
        s = counters(self.port)
        return {k: s[k] - self.prog_base.get(k, 0) for k in PROG_COUNTS}

    def counts_from(self, counts: dict[str, int] | None = None) -> None:
        """Start the program's counts at ``counts`` (0 for a program just attached)."""
        s, counts = counters(self.port), counts or {}
        self.prog_base = {k: s[k] - counts.get(k, 0) for k in PROG_COUNTS}

    def describe(self) -> dict[str, Any]:
        s = self.port.stats
        attach = self.port.attach_mode
        prog = self.program_counts()
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
            "xdp_pass": prog["xdp_pass"],
            "xdp_drop": prog["xdp_drop"],
            "xdp_tx": prog["xdp_tx"],
            "xdp_redirect": prog["xdp_redirect"],
            "xdp_redirect_err": prog["xdp_redirect_err"],
            "xdp_aborted": prog["xdp_aborted"],
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

    lab: Board
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
            self._enable(node, netdev, profile)
            xp = XdpPort(node, dev, tap_prefix(self.lab, node, dev), netdev, profile)
            self.ports[(node, dev)] = xp
        return xp

    def _enable(self, node: str, netdev: NetDev, profile: str) -> None:
        """A fresh XDP side for ``netdev`` with the driver of ``profile``."""
        driver = PROFILES[profile]()
        cpsw = self.cpsw.setdefault(node, Am65Cpsw()) if driver.shared_zc_queues else None
        netdev.enable_xdp(driver, cpsw)

    def set_driver(self, node: str, dev: str, profile: str) -> XdpPort:
        if profile not in PROFILES:
            raise NotFound(
                f"unknown driver profile '{profile}'", valid=list(PROFILES), value=profile
            )
        xp = self.port(node, dev)
        if xp.port.program is not None or xp.port.pools:
            raise StateConflict(
                f"{dev} is in use by XDP (program {xp.program or '-'}, "
                f"{len(xp.port.pools)} bound queue(s))",
                hint=f"xdp detach {dev} and xsk close its sockets first",
            )
        self._enable(node, xp.netdev, profile)
        xp.profile, xp.rx_queue, xp.mode, xp.program = profile, 0, None, None
        xp.prog_base = {}
        return xp

    def attach(
        self, node: str, dev: str, mode: str, program: str, queue: int = 0, *, force: bool = False
    ) -> XdpPort:
        """``ip link set DEV xdpgeneric|xdpdrv ...``; ``force`` replaces (``ip -force``)."""
        if mode not in ATTACH_MODES:
            raise InvalidValue(f"unknown XDP mode '{mode}'", valid=list(ATTACH_MODES), value=mode)
        if program not in PROGRAMS:
            raise NotFound(f"unknown XDP program '{program}'", valid=PROGRAMS, value=program)
        xp = self.port(node, dev)
        driver = xp.port.driver
        if not 0 <= queue < driver.rx_queues:
            raise InvalidValue(
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
            xp.port.attach(prog, ATTACH_MODES[mode], flags)
        if program == "redirect":
            for ls in self.sockets.values():
                if ls.sock.port is xp.port:
                    xp.xsks_map.update(ls.sock.queue_id, ls.sock)
        xp.mode, xp.program, xp.rx_queue, xp.loaded_by_bind = mode, program, queue, False
        xp.counts_from()
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


@contextmanager
def undone_on_failure(lab: Board) -> Iterator[XdpLab]:
    """The lab's XDP state for one command. What the command made on first use (the
    state itself, a device's port, a node's switch) is forgotten again when it fails
    with an EsplabError: a refused ``xdp detach lan1`` or ``xsk bind ... 99`` leaves
    the lab as it was (M)."""
    fresh = lab.xdp_state is None
    xl = lab_xdp(lab)
    ports, switches = set(xl.ports), set(xl.cpsw)
    try:
        yield xl
    except EsplabError:
        if fresh:
            lab.xdp_state = None
        for key in set(xl.ports) - ports:
            xl.ports.pop(key).netdev.xdp = None
        for node in set(xl.cpsw) - switches:
            del xl.cpsw[node]
        raise


def lab_xdp(lab: Board) -> XdpLab:
    """The lab's XDP state, created on first use (kept on the Lab object)."""
    if lab.xdp_state is None:
        lab.xdp_state = XdpLab(lab)
    state: XdpLab = lab.xdp_state
    return state
