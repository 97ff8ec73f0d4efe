"""One node's XFRM tables: the SAD, the SPD and the XFRM MIB.

Kernel semantics from reference ``airoha-dsa-xfrm.md`` 3.5 (netlink results), 3.6
(HW-before-SW ordering and the priority rule), 3.7 (netdev down) and facts
6.10-6.14, 6.17, 6.23, 6.24, 6.26. Every change is checked completely before the
tables are touched, so a command that raises leaves them as they were; a device
``state_add``/``policy_add`` that succeeded is undone with its delete callback,
as ``xfrm_add_sa`` / ``xfrm_add_policy`` do on their error paths.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from esplab.errors import DuplicateSA, KernelError
from esplab.model.xfrm.lookup import find_output_state, find_policy, mark_ok
from esplab.model.xfrm.objects import (
    IPPROTO_AH,
    IPPROTO_COMP,
    IPPROTO_ESP,
    Address,
    Flow,
    PolicyId,
    StateId,
    XfrmOffload,
    XfrmPolicy,
    XfrmState,
    XfrmTemplate,
)
from esplab.model.xfrm.offload import (
    ESP_HW_OFFLOAD,
    DeviceResolver,
    OffloadDevice,
    no_devices,
    offload_policy,
    offload_state,
)
from esplab.model.xfrm.policy_rules import (
    check_priority_rule,
    check_ptype,
    gen_index,
    policy_by_id,
)
from esplab.model.xfrm.stats import XfrmMib
from esplab.model.xfrm.validate import construct_policy, construct_state

__all__ = [
    "DEFAULT_EPOCH",
    "OutputDecision",
    "PriorityRule",
    "XfrmNode",
    "XfrmSettings",
]

PriorityRule: TypeAlias = Literal["rfc", "mainline"]

# The lab clock's default: 2026-01-01 00:00:00 UTC, so listings are reproducible.
DEFAULT_EPOCH = 1767225600

_IPSEC_PROTOS = (IPPROTO_ESP, IPPROTO_AH, IPPROTO_COMP)

#: What the datapath asks about: (src, dst, proto, sport, dport, dev) of a flow with
#: no mark and no if_id, i.e. ``Flow(*key)``.
FlowKey: TypeAlias = tuple[Address, Address, int, int, int, "str | None"]

_MEMO_MAX = 4096  # remembered lookups before the memo starts again


@dataclass
class XfrmSettings:
    """Choices where kernels differ (DESIGN.md, Fidelity).

    ``policy_priority_rule``:
      * ``"mainline"`` (default; 6.2+, reference 3.6 and its emulator rule, fact 23):
        no check; packet-offload policies go to the head of their chain and win
        the exact chain whatever their priority.
      * ``"rfc"`` (the seed series as posted, seed 001 patch 6): in one direction,
        offloaded and software policies keep separate priority ranges, else
        ``-EINVAL`` (see :func:`~esplab.model.xfrm.policy_rules.check_priority_rule`
        for which way round); lookups order all policies by priority.
    ``sub_policy``: ``CONFIG_XFRM_SUB_POLICY``; the kernel then dumps the policy
    type and ``ip xfrm policy`` prints ``ptype main`` (reference 5.4 [U]).
    """

    policy_priority_rule: PriorityRule = "mainline"
    sub_policy: bool = False


@dataclass(frozen=True)
class OutputDecision:
    """What the SPD/SAD say about an outbound flow (``xfrm_lookup`` in short).

    ``verdict``: ``bypass`` (no policy), ``ipsec`` (``states`` in template order),
    ``block`` (``XfrmOutPolBlock``), ``no-state`` (a required template has no SA:
    ``XfrmOutNoStates``, the kernel would send an ACQUIRE) or ``error``
    (``counter`` names why).
    """

    verdict: Literal["bypass", "ipsec", "block", "no-state", "error"]
    policy: XfrmPolicy | None = None
    states: tuple[XfrmState, ...] = ()
    counter: str | None = None


class Epoch:
    """A count of changes, shared by the SADs and SPDs of a lab's nodes."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


@dataclass
class XfrmNode:
    """The XFRM side of one emulated node (``ap``, ``host``...)."""

    name: str = "ap"
    settings: XfrmSettings = field(default_factory=XfrmSettings)
    resolve_dev: DeviceResolver = no_devices
    clock: Callable[[], int] = lambda: DEFAULT_EPOCH
    mib: XfrmMib = field(default_factory=XfrmMib)
    # Oldest first; the kernel's *_all lists have the newest first (list_add).
    _states: list[XfrmState] = field(default_factory=list, init=False, repr=False)
    _policies: list[XfrmPolicy] = field(default_factory=list, init=False, repr=False)
    _index_gen: int = field(default=0, init=False, repr=False)
    _pos_gen: int = field(default=0, init=False, repr=False)
    # The device each offloaded object is bound to (the kernel's xso.dev / xdo.dev).
    _bound: dict[int, OffloadDevice] = field(default_factory=dict, init=False, repr=False)
    # Told of a state that changed under its users (update: False) or left the SAD
    # (True), so what was built for it (software SA, engine transform) is rebuilt or freed.
    on_state: Callable[[XfrmState, bool], None] = field(
        default=lambda x, gone: None, repr=False, compare=False
    )
    # Remembered lookups, valid while the SAD, the SPD and the settings they were made
    # under stay as they are (every change below calls _changed).
    _memo: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _memo_settings: tuple[str, bool] = field(
        default=("", False), init=False, repr=False, compare=False
    )

    # Counts the changes to the SAD and the SPD (of every node that shares it): what was
    # learnt of a walk (the flow cache's plans) holds while it stays the same.
    epoch: Epoch = field(default_factory=lambda: Epoch(), repr=False, compare=False)

    def _changed(self) -> None:
        """The SAD or the SPD changed: forget remembered lookups."""
        self._memo.clear()
        self.epoch.value += 1

    def _lookups(self) -> dict[Hashable, Any]:
        """The memo of lookups, emptied first when the settings changed."""
        rule = self.settings.policy_priority_rule, self.settings.sub_policy
        memo = self._memo
        if rule != self._memo_settings or len(memo) >= _MEMO_MAX:
            memo.clear()
            self._memo_settings = rule
        return memo

    # ------------------------------------------------------------------ SAD

    @property
    def states(self) -> tuple[XfrmState, ...]:
        """In dump order: newest first (``__xfrm_state_insert`` uses ``list_add``)."""
        return tuple(reversed(self._states))

    def _locate(self, dst: Address, spi: int, proto: int, mark: int) -> XfrmState | None:
        """``__xfrm_state_lookup``: (daddr, spi, proto) and ``mark & x.mark.m == x.mark.v``."""
        for x in self._states:
            if x.dst == dst and x.spi == spi and x.proto == proto and mark_ok(x.mark, mark):
                return x
        return None

    def _construct(
        self, req: XfrmState, offload: XfrmOffload | None, resolve: DeviceResolver | None
    ) -> tuple[XfrmState, OffloadDevice | None]:
        state = construct_state(req, now=self.clock())
        dev = offload_state(state, offload, resolve or self.resolve_dev) if offload else None
        return state, dev

    def add_state(
        self,
        req: XfrmState,
        offload: XfrmOffload | None = None,
        *,
        resolve: DeviceResolver | None = None,
    ) -> XfrmState:
        """``XFRM_MSG_NEWSA``: construct, offload, then insert (``-EEXIST`` on a duplicate).

        ``resolve`` overrides the node's device resolver for this call.

        The offload's own checks come first, as in Linux; for a duplicate the driver
        is then not asked (offload_state ``duplicate``, [M]) and the answer is the
        kernel's File exists, with no journey.
        """
        state = construct_state(req, now=self.clock())
        mark = state.mark.value if state.mark else 0
        duplicate = self._locate(state.dst, state.spi, state.proto, mark) is not None
        resolver = resolve or self.resolve_dev
        dev = offload_state(state, offload, resolver, duplicate=duplicate) if offload else None
        if duplicate:
            raise DuplicateSA(
                f"SA {state.dst} spi 0x{state.spi:08x} proto {state.proto} exists",
                hint="use 'ip xfrm state update' or delete it first",
            )
        self._states.append(state)
        self._changed()
        if dev is not None:
            self._bound[id(state)] = dev
        return state

    def update_state(
        self,
        req: XfrmState,
        offload: XfrmOffload | None = None,
        *,
        resolve: DeviceResolver | None = None,
    ) -> XfrmState:
        """``XFRM_MSG_UPDSA`` (``xfrm_state_update``): a missing SA is ``-ESRCH``.

        On a valid SA the kernel copies only the encap ports/address (same encap
        type, else ``-EINVAL``), the lifetime limits and a non-zero if_id; keys,
        algorithms and the rest stay as they were. The temporary state built for
        the request is then destroyed, so a device binding it got is released.
        """
        state, dev = self._construct(req, offload, resolve)
        mark = state.mark.value if state.mark else 0
        old = self._locate(state.dst, state.spi, state.proto, mark)
        try:
            if old is None:
                raise KernelError("ESRCH", f"no SA {state.dst} spi 0x{state.spi:08x} to update")
            if (state.encap is None) != (old.encap is None) or (
                state.encap and old.encap and state.encap.type != old.encap.type
            ):
                raise KernelError("EINVAL", "update cannot add, remove or retype encapsulation")
        finally:
            if dev is not None:
                dev.state_delete(state)
        old.encap = state.encap
        old.lifetime = state.lifetime
        if state.if_id:
            old.if_id = state.if_id
        self._changed()
        self.on_state(old, False)
        return old

    def find_state(self, sid: StateId) -> XfrmState | None:
        """``xfrm_user_state_lookup`` for ESP/AH/IPComp: (daddr, spi, proto, mark)."""
        return self._locate(sid.dst, sid.spi, sid.proto, sid.mark)

    def get_state(self, sid: StateId) -> XfrmState:
        """``XFRM_MSG_GETSA``: ``-ESRCH`` when missing (fact 6.26)."""
        x = self.find_state(sid)
        if x is None:
            raise KernelError("ESRCH", f"no SA {sid.dst} spi 0x{sid.spi:08x}")
        return x

    def delete_state(self, sid: StateId) -> XfrmState:
        """``XFRM_MSG_DELSA``: ``-ESRCH`` when missing; an offloaded SA leaves its device."""
        x = self.get_state(sid)
        self._unlink_state(x)
        return x

    def _unlink_state(self, x: XfrmState) -> None:
        self._states.remove(x)
        self._changed()
        dev = self._bound.pop(id(x), None)
        if dev is not None:
            dev.state_delete(x)
        self.on_state(x, True)

    def delete_states(self, which: Callable[[XfrmState], bool]) -> list[XfrmState]:
        """Delete every SA ``which`` selects (``ip xfrm state deleteall``); newest first."""
        gone = [x for x in self.states if which(x)]
        for x in gone:
            self._unlink_state(x)
        return gone

    def flush_states(self, proto: int | None = None) -> list[XfrmState]:
        """``XFRM_MSG_FLUSHSA``; None is ``IPSEC_PROTO_ANY`` (ESP, AH, IPComp). Flushing
        nothing succeeds (fact 6.26: ``xfrm_flush_sa`` turns ``-ESRCH`` into 0)."""
        if proto is None:
            return self.delete_states(lambda x: x.proto in _IPSEC_PROTOS)
        return self.delete_states(lambda x: x.proto == proto)

    # ------------------------------------------------------------------ SPD

    @property
    def policies(self) -> tuple[XfrmPolicy, ...]:
        """In dump order: newest first (``__xfrm_policy_link`` uses ``list_add``)."""
        return tuple(reversed(self._policies))

    def add_policy(
        self,
        req: XfrmPolicy,
        offload: XfrmOffload | None = None,
        *,
        update: bool = False,
        resolve: DeviceResolver | None = None,
    ) -> XfrmPolicy:
        """``XFRM_MSG_NEWPOLICY`` (``-EEXIST`` on the same selector+dir+mark+if_id+type)
        or, with ``update``, ``XFRM_MSG_UPDPOLICY`` (replaces it, keeping its index)."""
        check_ptype(req.ptype, sub_policy=self.settings.sub_policy)
        pol = construct_policy(req, now=self.clock())
        dev = offload_policy(pol, offload, resolve or self.resolve_dev) if offload else None
        old = next((p for p in self._policies if p.key() == pol.key()), None)
        try:
            if old is not None and not update:
                raise KernelError(
                    "EEXIST",
                    f"policy dir {pol.dir} for this selector exists (index {old.index})",
                    hint="use 'ip xfrm policy update' or delete it first",
                )
            check_priority_rule(self._policies, pol, old, rule=self.settings.policy_priority_rule)
        except KernelError:
            if dev is not None:
                dev.policy_delete(pol)
            raise
        if old is not None:
            pol.index = old.index
            self._unlink_policy(old)
        else:
            pol.index, self._index_gen = gen_index(self._policies, pol, self._index_gen)
        self._pos_gen += 1
        pol.pos = self._pos_gen
        self._policies.append(pol)
        self._changed()
        if dev is not None:
            self._bound[id(pol)] = dev
        return pol

    def find_policy(self, pid: PolicyId) -> XfrmPolicy | None:
        """The policy ``pid`` names, if any (see
        :func:`~esplab.model.xfrm.policy_rules.policy_by_id`)."""
        check_ptype(pid.ptype, sub_policy=self.settings.sub_policy)
        return policy_by_id(self._policies, pid)

    def get_policy(self, pid: PolicyId) -> XfrmPolicy:
        """``XFRM_MSG_GETPOLICY``: ``-ENOENT`` when missing (fact 6.26)."""
        p = self.find_policy(pid)
        if p is None:
            raise KernelError("ENOENT", f"no policy dir {pid.dir} matches")
        return p

    def delete_policy(self, pid: PolicyId) -> XfrmPolicy:
        """``XFRM_MSG_DELPOLICY``: ``-ENOENT`` when missing."""
        p = self.get_policy(pid)
        self._unlink_policy(p)
        return p

    def _unlink_policy(self, p: XfrmPolicy) -> None:
        self._policies.remove(p)
        self._changed()
        dev = self._bound.pop(id(p), None)
        if dev is not None:
            dev.policy_delete(p)

    def delete_policies(self, which: Callable[[XfrmPolicy], bool]) -> list[XfrmPolicy]:
        """Delete the non-socket policies ``which`` selects; newest first."""
        gone = [p for p in self.policies if not p.socket and which(p)]
        for p in gone:
            self._unlink_policy(p)
        return gone

    def flush_policies(self, ptype: str = "main") -> list[XfrmPolicy]:
        """``XFRM_MSG_FLUSHPOLICY``: every non-socket policy of the type."""
        check_ptype(ptype, sub_policy=self.settings.sub_policy)
        return self.delete_policies(lambda p: p.ptype == ptype)

    def policy_counts(self) -> dict[str, int]:
        """``XFRM_MSG_GETSPDINFO``: per direction, then socket policies per direction."""
        counts = {d: 0 for d in ("in", "out", "fwd", "sock-in", "sock-out", "sock-fwd")}
        for p in self._policies:
            counts[("sock-" if p.socket else "") + p.dir] += 1
        return counts

    # ------------------------------------------------------------------ lookups

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
        :func:`~esplab.model.xfrm.lookup.find_output_state`). Pure: counts nothing."""
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

    # ------------------------------------------------------------------ devices

    def device_down(self, dev: OffloadDevice) -> tuple[list[XfrmState], list[XfrmPolicy]]:
        """``NETDEV_DOWN``/``UNREGISTER`` (``xfrm_dev_down``, fact 6.17): with
        ``esp-hw-offload`` on, every SA and policy bound to the device is deleted
        (delete callback, then gone); without it nothing changes."""
        if ESP_HW_OFFLOAD not in dev.features:
            return [], []
        return self.flush_dev(dev.name)

    def flush_dev(self, name: str) -> tuple[list[XfrmState], list[XfrmPolicy]]:
        """Delete every SA, then every policy, offloaded to the device ``name``
        (``xfrm_dev_state_flush``, ``xfrm_dev_policy_flush``); what went, newest first."""
        states = self.delete_states(lambda x: x.offload is not None and x.offload.dev == name)
        pols = self.delete_policies(lambda p: p.offload is not None and p.offload.dev == name)
        return states, pols
