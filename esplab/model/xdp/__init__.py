"""XDP and AF_XDP on emulated ports: UMEM, the four rings, sockets, built-in XDP
programs, xdpsock's benchmarks and a calibrated cost model.

Facts come from ``reference/af_xdp.md``; comments cite its sections with the
project's tags ([C] confirmed, [D] derived, [U] uncertain) and name the design
choices of :data:`~esplab.model.xdp.consts.DESIGN_CHOICES` where the reference is
silent.

Modules: ``consts`` (enums, flags, design choices), ``rings``, ``umem``, ``pool``
(the kernel's buffer pool), ``socket`` (setup, bind, syscalls), ``datapath`` (RX
delivery, copy-mode TX), ``program`` (built-in XDP programs, XSKMAP), ``driver``
and ``port`` (the emulated NIC), ``xdpsock`` (the benchmarks) and ``costmodel``.
"""

from __future__ import annotations

from esplab.model.xdp.consts import (
    AttachMode,
    Benchmark,
    BindFlag,
    DescOption,
    RingKind,
    UmemFlag,
    XdpAction,
    XskMode,
)
from esplab.model.xdp.costmodel import CostModel, CostParams, CostRow, Prediction, seed_table
from esplab.model.xdp.driver import DriverProfile
from esplab.model.xdp.port import Am65Cpsw, Port, PortStats
from esplab.model.xdp.program import SwapMacTx, XdpContext, XdpReturn, XskMap, XskRedirect
from esplab.model.xdp.rings import AddrRing, DescRing, Ring, XskDesc
from esplab.model.xdp.socket import PollMask, XdpStatistics, XskSocket
from esplab.model.xdp.umem import FrameState, Umem
from esplab.model.xdp.xdpsock import TrafficSource, XdpSock, XdpSockConfig, XdpSockReport

__all__ = [
    "AddrRing",
    "Am65Cpsw",
    "AttachMode",
    "Benchmark",
    "BindFlag",
    "CostModel",
    "CostParams",
    "CostRow",
    "DescOption",
    "DescRing",
    "DriverProfile",
    "FrameState",
    "PollMask",
    "Port",
    "PortStats",
    "Prediction",
    "Ring",
    "RingKind",
    "SwapMacTx",
    "TrafficSource",
    "Umem",
    "UmemFlag",
    "XdpAction",
    "XdpContext",
    "XdpReturn",
    "XdpSock",
    "XdpSockConfig",
    "XdpSockReport",
    "XdpStatistics",
    "XskDesc",
    "XskMap",
    "XskMode",
    "XskRedirect",
    "XskSocket",
    "seed_table",
]
