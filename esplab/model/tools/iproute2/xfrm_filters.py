"""The filters of ``ip xfrm state|policy list|deleteall`` (iproute2
``xfrm_state_filter_match`` / ``xfrm_policy_filter_match``): only what was given
is compared; addresses match on the filter's prefix length."""

from __future__ import annotations

from dataclasses import dataclass

from esplab.model.kernel.xfrm.objects import Address, Prefix, XfrmPolicy, XfrmState

__all__ = ["PolicyFilter", "StateFilter"]


def _addr_match(addr: Address, want: Prefix | None) -> bool:
    """``xfrm_addr_match`` over the filter's prefix length (0 bits: anything)."""
    if want is None or want.network.prefixlen == 0:
        return True
    return addr.version == want.version and addr in want.network


@dataclass(frozen=True)
class StateFilter:
    """``[ID] [mode MODE] [reqid REQID] [flag FLAG-LIST]`` (+ ``-4``/``-6``)."""

    family: int = 0
    src: Prefix | None = None
    dst: Prefix | None = None
    proto: int | None = None
    spi: int | None = None
    mode: str | None = None
    reqid: int | None = None
    flags: frozenset[str] = frozenset()

    def matches(self, x: XfrmState) -> bool:
        return (
            (not self.family or x.family == self.family)
            and _addr_match(x.src, self.src)
            and _addr_match(x.dst, self.dst)
            and (self.proto is None or x.proto == self.proto)
            and (self.spi is None or x.spi == self.spi)
            and (self.mode is None or x.mode == self.mode)
            and (self.reqid is None or x.reqid == self.reqid)
            and (not self.flags or bool(self.flags & x.flags))
        )


@dataclass(frozen=True)
class PolicyFilter:
    """``[nosock] [SELECTOR] [dir DIR] [index INDEX] [ptype PTYPE] [action ACTION]
    [priority PRIORITY] [flag FLAG-LIST]`` (+ ``-4``/``-6``)."""

    family: int = 0
    src: Prefix | None = None
    dst: Prefix | None = None
    dev: str | None = None
    proto: int | None = None
    sport: int | None = None
    dport: int | None = None
    dir: str | None = None
    index: int | None = None
    ptype: str | None = None
    action: str | None = None
    priority: int | None = None
    flags: frozenset[str] = frozenset()
    nosock: bool = False

    def matches(self, p: XfrmPolicy) -> bool:
        return (
            (not self.family or p.family == self.family)
            and (self.dir is None or p.dir == self.dir)
            and not (self.nosock and p.socket)
            and (self.ptype is None or p.ptype == self.ptype)
            and _addr_match(p.sel.src.ip, self.src)
            and _addr_match(p.sel.dst.ip, self.dst)
            and (self.dev is None or p.sel.dev == self.dev)
            and (self.proto is None or p.sel.proto == self.proto)
            and (self.sport is None or p.sel.sport == self.sport)
            and (self.dport is None or p.sel.dport == self.dport)
            and (self.index is None or p.index == self.index)
            and (self.action is None or p.action == self.action)
            and (self.priority is None or p.priority == self.priority)
            and (not self.flags or bool(self.flags & p.flags))
        )
