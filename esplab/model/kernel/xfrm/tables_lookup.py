"""The lookups of one node's XFRM tables (the datapath's questions), with the
default policies (``ip xfrm policy setdefault``) applied where no policy matches.

:class:`XfrmLookups` is a base of :class:`~esplab.model.kernel.xfrm.tables.XfrmNode`: it
reads the tables and the memo that class keeps.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from ipaddress import ip_interface
from typing import Any, Literal, TypeAlias

from esplab.model.kernel.xfrm.events import Listener, XfrmEvent
from esplab.model.kernel.xfrm.lookup import find_output_state, find_policy
from esplab.model.kernel.xfrm.objects import (
    Address,
    Flow,
    Selector,
    XfrmPolicy,
    XfrmState,
    XfrmTemplate,
)
from esplab.model.kernel.xfrm.stats import XfrmMib

__all__ = ["FlowKey", "OutputDecision", "XfrmLookups"]

#: What the datapath asks about: (src, dst, proto, sport, dport, dev) of a flow with
#: no mark and no if_id, i.e. ``Flow(*key)``.
FlowKey: TypeAlias = tuple[Address, Address, int, int, int, "str | None"]


@dataclass(frozen=True)
class OutputDecision:
    """What the SPD/SAD say about an outbound flow (``xfrm_lookup`` in short).

    ``verdict``: ``bypass`` (no policy), ``ipsec`` (``states`` in template order),
    ``block`` (``XfrmOutPolBlock``), ``no-state`` (a required template has no SA:
    ``XfrmOutNoStates``, the kernel would send an ACQUIRE), ``default-block`` (no
    policy, and the default for dir out is block: ``-EPERM`` and no counter) or
    ``error`` (``counter`` names why).
    """

    verdict: Literal["bypass", "ipsec", "block", "no-state", "default-block", "error"]
    policy: XfrmPolicy | None = None
    states: tuple[XfrmState, ...] = ()
    counter: str | None = None


class XfrmLookups:
    """The lookups; the tables, settings and memo are :class:`XfrmNode`'s."""

    mib: XfrmMib
    defaults: dict[str, str]
    _policies: list[XfrmPolicy]
    settings: Any

    @property
    def states(self) -> tuple[XfrmState, ...]:
        raise NotImplementedError

    def _lookups(self) -> dict[Hashable, Any]:
        raise NotImplementedError

    def _locate(self, dst: Address, spi: int, proto: int, mark: int) -> XfrmState | None:
        raise NotImplementedError

    monitor: Listener | None

    def insert_larval(self, x: XfrmState) -> None:
        raise NotImplementedError

    def _changed(self, event: XfrmEvent | None = None) -> None:
        raise NotImplementedError

    def _acquire(self, flow: Flow, pol: XfrmPolicy, tmpl: XfrmTemplate) -> None:
        """xfrm_state_find found no SA for a required template: the kernel asks the key
        managers (``km_query``); with a listener on ``XFRMNLGRP_ACQUIRE`` (here an
        ``ip xfrm monitor`` of ``acquire``) that succeeds, and a larval state (dir
        out, SPI 0, the flow's own selector) joins the SAD until an SA replaces it;
        with none, nothing is kept. One larval state per addresses, reqid, mode and
        protocol: while it exists no new ACQUIRE is sent [C: Linux 6.12, ping through a
        policy with no SA under ip xfrm monitor]."""
        if self.monitor is None or "acquire" not in self.monitor.groups:
            return
        tunnel = tmpl.mode in ("tunnel", "beet")
        daddr = tmpl.dst if tunnel else flow.dst
        saddr = tmpl.src if tunnel and not tmpl.src.is_unspecified else flow.src
        for x in self.states:
            if x.larval and (x.dst, x.src, x.reqid, x.mode, x.proto) == (
                daddr,
                saddr,
                tmpl.reqid,
                tmpl.mode,
                tmpl.proto,
            ):
                return  # acquire_in_progress
        plen = 32 if flow.dst.version == 4 else 128
        sel = Selector(
            ip_interface(f"{flow.src}/{plen}"),
            ip_interface(f"{flow.dst}/{plen}"),
            proto=flow.proto,
            sport=flow.sport,
            sport_mask=0xFFFF,  # __xfrm4_init_tempsel / __xfrm6_init_tempsel
            dport=flow.dport,
            dport_mask=0xFFFF,
            dev=flow.dev,
            family=flow.dst.version,
        )
        x = XfrmState(
            src=saddr,
            dst=daddr,
            proto=tmpl.proto,
            spi=tmpl.spi,
            reqid=tmpl.reqid,
            mode=tmpl.mode,
            sel=sel,
            sa_dir="out",
            mark=pol.mark,
        )
        self.insert_larval(x)
        self._changed(XfrmEvent("acquire", x, policy=pol))

    def lookup_policy(self, flow: Flow, dir: Literal["in", "out", "fwd"]) -> XfrmPolicy | None:
        """The policy that applies to ``flow`` in ``dir`` (sub policies first when
        ``CONFIG_XFRM_SUB_POLICY`` is on). Pure: counts nothing."""
        mainline = self.settings.policy_priority_rule == "mainline"
        if self.settings.sub_policy:
            sub = find_policy(self._policies, flow, dir, "sub", mainline=mainline)
            if sub is not None:
                return sub
        return find_policy(self._policies, flow, dir, "main", mainline=mainline)

    def lookup_policy_key(
        self, key: FlowKey, dir: Literal["in", "out", "fwd"]
    ) -> XfrmPolicy | None:
        """:meth:`lookup_policy` for ``Flow(*key)``, remembered until the tables or
        the settings change."""
        memo = self._lookups()
        mkey = (dir, key)
        try:
            hit: XfrmPolicy | None = memo[mkey]
        except KeyError:
            hit = memo[mkey] = self.lookup_policy(Flow(*key), dir)
        return hit

    def lookup_state_output(
        self, flow: Flow, policy: XfrmPolicy, tmpl: XfrmTemplate
    ) -> XfrmState | None:
        """The SA ``xfrm_state_find`` picks for one template (see
        :func:`~esplab.model.kernel.xfrm.lookup.find_output_state`). Pure: counts nothing."""
        return find_output_state(self.states, flow, policy, tmpl)

    def lookup_state_input(
        self, dst: Address, spi: int, proto: int, *, mark: int = 0
    ) -> XfrmState | None:
        """``xfrm_state_lookup`` by (daddr, spi, proto, mark) for received IPsec.
        Pure: the caller counts ``XfrmInNoStates`` on a miss."""
        memo = self._lookups()
        mkey = ("sa", dst, spi, proto, mark)
        try:
            hit: XfrmState | None = memo[mkey]
        except KeyError:
            hit = memo[mkey] = self._locate(dst, spi, proto, mark)
        return hit

    def resolve_output(self, flow: Flow) -> OutputDecision:
        """Policy lookup plus template resolution for an outbound flow, with the MIB
        counters ``xfrm_lookup`` bumps (reference 3.8, fact 6.24)."""
        pol = self.lookup_policy(flow, "out")
        if pol is None:
            # xfrm_lookup_with_ifid, nopol: with the default for dir out set to block,
            # a flow no policy matches gets -EPERM, and no MIB counter moves [C:
            # net/xfrm/xfrm_policy.c]. The loopback exception is the caller's.
            if self.defaults["out"] == "block":
                return OutputDecision("default-block")
            return OutputDecision("bypass")
        if pol.action == "block":
            self.mib.bump("XfrmOutPolBlock")
            return OutputDecision("block", pol, counter="XfrmOutPolBlock")
        states: list[XfrmState] = []
        for tmpl in pol.templates:
            x = self.lookup_state_output(flow, pol, tmpl)
            if x is None:
                if tmpl.level == "use":
                    continue
                self.mib.bump("XfrmOutNoStates")
                self._acquire(flow, pol, tmpl)
                return OutputDecision("no-state", pol, tuple(states), "XfrmOutNoStates")
            if x.sa_dir == "in":
                # 6.10+: an SA with dir in found on the output path.
                self.mib.bump("XfrmOutStateDirError")
                return OutputDecision("error", pol, tuple(states), "XfrmOutStateDirError")
            states.append(x)
        return OutputDecision("ipsec", pol, tuple(states))

    def resolve_output_key(self, key: FlowKey) -> OutputDecision:
        """:meth:`resolve_output` for ``Flow(*key)``: the decision is remembered until
        the tables or the settings change; the MIB counter a refusal bumps is bumped
        on every call, as ``resolve_output`` does."""
        memo = self._lookups()
        mkey = ("out", key)
        hit: OutputDecision | None = memo.get(mkey)
        if hit is None:
            hit = memo[mkey] = self.resolve_output(Flow(*key))
        elif hit.counter is not None:
            self.mib.bump(hit.counter)
        return hit
