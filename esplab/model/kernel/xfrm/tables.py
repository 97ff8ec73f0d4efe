"""One node's XFRM tables: the SAD, the SPD and the XFRM MIB.

Kernel semantics from reference ``airoha-dsa-xfrm.md`` 3.5 (netlink results), 3.6
(HW-before-SW ordering and the priority rule), 3.7 (netdev down) and facts
6.10-6.14, 6.17, 6.23, 6.24, 6.26. Every change is checked completely before the
tables are touched, so a command that raises leaves them as they were; a device
``state_add``/``policy_add`` that succeeded is undone with its delete callback,
as ``xfrm_add_sa`` / ``xfrm_add_policy`` do on their error paths.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from esplab.errors import DuplicateSA, KernelError
from esplab.model.kernel.xfrm.events import Listener, XfrmEvent
from esplab.model.kernel.xfrm.lookup import mark_ok
from esplab.model.kernel.xfrm.objects import (
    IPPROTO_AH,
    IPPROTO_COMP,
    IPPROTO_ESP,
    Address,
    PolicyId,
    StateId,
    XfrmOffload,
    XfrmPolicy,
    XfrmState,
)
from esplab.model.kernel.xfrm.offload import (
    ESP_HW_OFFLOAD,
    DeviceResolver,
    OffloadDevice,
    no_devices,
    offload_policy,
    offload_state,
)
from esplab.model.kernel.xfrm.policy_rules import (
    check_priority_rule,
    check_ptype,
    gen_index,
    policy_by_id,
)
from esplab.model.kernel.xfrm.stats import XfrmMib
from esplab.model.kernel.xfrm.tables_lookup import FlowKey, OutputDecision, XfrmLookups
from esplab.model.kernel.xfrm.validate import construct_policy, construct_state

__all__ = [
    "DEFAULT_EPOCH",
    "IPSEC_PROTO_ANY",
    "FlowKey",
    "OutputDecision",
    "PriorityRule",
    "XfrmNode",
    "XfrmSettings",
]

PriorityRule: TypeAlias = Literal["rfc", "mainline"]

# The lab clock's default: 2026-01-01 00:00:00 UTC, so listings are reproducible.
DEFAULT_EPOCH = 1767225600

_IPSEC_PROTOS = (IPPROTO_ESP, IPPROTO_AH, IPPROTO_COMP)
IPSEC_PROTO_ANY = 255  # include/uapi/linux/ipsec.h: ip xfrm state flush proto ipsec-any

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
        ``-EINVAL`` (see :func:`~esplab.model.kernel.xfrm.policy_rules.check_priority_rule`
        for which way round); lookups order all policies by priority.
    ``sub_policy``: ``CONFIG_XFRM_SUB_POLICY``; the kernel then dumps the policy
    type and ``ip xfrm policy`` prints ``ptype main`` (reference 5.4 [U]).
    """

    policy_priority_rule: PriorityRule = "mainline"
    sub_policy: bool = False


@dataclass
class XfrmNode(XfrmLookups):
    """The XFRM side of one emulated node (``ap``, ``host``...)."""

    name: str = "ap"
    settings: XfrmSettings = field(default_factory=XfrmSettings)
    resolve_dev: DeviceResolver = no_devices
    clock: Callable[[], int] = lambda: DEFAULT_EPOCH
    mib: XfrmMib = field(default_factory=XfrmMib)
    # net->xfrm.policy_default per direction: accept (the kernel's initial value) or
    # block (ip xfrm policy setdefault).
    defaults: dict[str, str] = field(
        default_factory=lambda: dict.fromkeys(("in", "fwd", "out"), "accept")
    )
    # A running ip xfrm monitor, told of every change (see _changed).
    monitor: Listener | None = field(default=None, repr=False, compare=False)
    # Where the kernel draws at random (allocspi's SPI): the lab passes one seeded
    # from its seed, so a run is reproducible.
    rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False, compare=False)
    # Oldest first; the kernel's *_all lists have the newest first (list_add).
    _states: list[XfrmState] = field(default_factory=list, init=False, repr=False)
    _policies: list[XfrmPolicy] = field(default_factory=list, init=False, repr=False)
    _index_gen: int = field(default=0, init=False, repr=False)
    _pos_gen: int = field(default=0, init=False, repr=False)
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

    def _changed(self, event: XfrmEvent | None = None) -> None:
        """The SAD or the SPD changed: forget remembered lookups, and tell a monitor
        what the kernel would multicast (``event``; None: nothing is sent)."""
        self._memo.clear()
        if event is not None and self.monitor is not None:
            self.monitor.record(event, ptype_attr=self.settings.sub_policy)

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
        larval = self._larval_for(state)
        if larval is not None:
            self._unlink_state(larval)
        self._states.append(state)
        self._changed(XfrmEvent("newsa", state))
        if dev is not None:
            state.runtime.dev = dev
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
        if old is not None and old.larval:
            # xfrm_state_update: a larval state (XFRM_STATE_ACQ) is replaced whole by
            # the new one, keys and all [C: Linux 6.12, allocspi then update].
            if dev is not None:
                state.runtime.dev = dev
            self._unlink_state(old)
            self._states.append(state)
            self._changed(XfrmEvent("updsa", state))
            return state
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
        self._changed(XfrmEvent("updsa", old))
        self.on_state(old, False)
        return old

    def _larval_for(self, x: XfrmState) -> XfrmState | None:
        """The larval state an added SA takes the place of (xfrm_state_add): the one
        with its ``seq``, else one with no SPI yet for the same addresses, protocol,
        mode, reqid and mark (``__find_acq_core`` with create 0) [D:
        net/xfrm/xfrm_state.c]."""
        mark = x.mark.value & x.mark.mask if x.mark else 0
        for old in self._states:
            if not old.larval or old.dst != x.dst:
                continue
            if x.seq and old.seq == x.seq and mark_ok(old.mark, mark):
                return old
            if (
                old.spi == 0
                and old.src == x.src
                and (old.proto, old.mode, old.reqid) == (x.proto, x.mode, x.reqid)
                and old.mark == x.mark
            ):
                return old
        return None

    def insert_larval(self, x: XfrmState) -> None:
        """A larval state joins the SAD (``__find_acq_core``'s insert); the kernel
        sends no notification for it."""
        x.larval = True
        self._states.append(x)
        self._changed()

    def set_larval_spi(self, x: XfrmState, spi: int) -> None:
        """``xfrm_alloc_spi`` gave the larval state ``x`` its SPI (no notification)."""
        x.spi = spi
        self._changed()

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
        self._changed(XfrmEvent("delsa", x))
        return x

    def _unlink_state(self, x: XfrmState) -> None:
        self._states.remove(x)
        self._changed()
        runtime = x.runtime
        dev, runtime.dev = runtime.dev, None
        if dev is not None:
            dev.state_delete(x)
        self.on_state(x, True)

    def delete_states(
        self, which: Callable[[XfrmState], bool], *, notify: bool = False
    ) -> list[XfrmState]:
        """Delete every SA ``which`` selects, newest first; ``notify``: each is an
        ``XFRM_MSG_DELSA`` of its own (``ip xfrm state deleteall`` sends one per SA)."""
        gone = [x for x in self.states if which(x)]
        for x in gone:
            self._unlink_state(x)
            if notify:
                self._changed(XfrmEvent("delsa", x))
        return gone

    def expire_state(self, x: XfrmState, *, hard: bool = True) -> None:
        """``km_state_expired``: a soft expiry is only told; a hard one is told, then
        the state is gone (xfrm_timer_handler, ``__xfrm_state_delete``, which sends no
        DELSA) [C: net/xfrm/xfrm_state.c]."""
        if hard and x in self._states:
            self._unlink_state(x)
        self._changed(XfrmEvent("expire", x, hard=hard))

    def flush_states(self, proto: int | None = None) -> list[XfrmState]:
        """``XFRM_MSG_FLUSHSA``; None is ``ip xfrm state flush`` with no proto (sent as
        0: every SA), ``IPSEC_PROTO_ANY`` ESP, AH and IPComp. Flushing nothing
        succeeds (fact 6.26: ``xfrm_flush_sa`` turns ``-ESRCH`` into 0) and tells no
        one."""
        if proto is None or proto == IPSEC_PROTO_ANY:
            gone = self.delete_states(lambda x: x.proto in _IPSEC_PROTOS)
        else:
            gone = self.delete_states(lambda x: x.proto == proto)
        if gone:
            self._changed(XfrmEvent("flushsa", proto=proto))
        return gone

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
        # xfrm_add_policy: the event is the message's type, so update tells "Updated"
        # even for a policy that was new [D: net/xfrm/xfrm_user.c].
        self._changed(XfrmEvent("updpolicy" if update else "newpolicy", policy=pol))
        if dev is not None:
            pol.runtime.dev = dev
        return pol

    def find_policy(self, pid: PolicyId) -> XfrmPolicy | None:
        """The policy ``pid`` names, if any (see
        :func:`~esplab.model.kernel.xfrm.policy_rules.policy_by_id`)."""
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
        self._changed(XfrmEvent("delpolicy", policy=p))
        return p

    def _unlink_policy(self, p: XfrmPolicy) -> None:
        self._policies.remove(p)
        self._changed()
        runtime = p.runtime
        dev, runtime.dev = runtime.dev, None
        if dev is not None:
            dev.policy_delete(p)

    def delete_policies(
        self, which: Callable[[XfrmPolicy], bool], *, notify: bool = False
    ) -> list[XfrmPolicy]:
        """Delete the non-socket policies ``which`` selects; newest first; ``notify``:
        each is an ``XFRM_MSG_DELPOLICY`` of its own (``ip xfrm policy deleteall``)."""
        gone = [p for p in self.policies if not p.socket and which(p)]
        for p in gone:
            self._unlink_policy(p)
            if notify:
                self._changed(XfrmEvent("delpolicy", policy=p))
        return gone

    def flush_policies(self, ptype: str = "main") -> list[XfrmPolicy]:
        """``XFRM_MSG_FLUSHPOLICY``: every non-socket policy of the type; flushing
        nothing tells no one (``xfrm_policy_flush`` returns -ESRCH, turned into 0)."""
        check_ptype(ptype, sub_policy=self.settings.sub_policy)
        gone = self.delete_policies(lambda p: p.ptype == ptype)
        if gone:
            self._changed(XfrmEvent("flushpolicy", ptype=ptype))
        return gone

    def set_defaults(self, changes: Mapping[str, str]) -> dict[str, str]:
        """``XFRM_MSG_SETDEFAULT`` (xfrm_set_default): each direction given takes its
        action, the rest keep theirs; the new defaults are multicast whatever changed
        (xfrm_notify_userpolicy) [C]. Returns the defaults."""
        self.defaults.update(changes)
        self._changed(XfrmEvent("default", defaults=dict(self.defaults)))
        return dict(self.defaults)

    def policy_counts(self) -> dict[str, int]:
        """``XFRM_MSG_GETSPDINFO``: per direction, then socket policies per direction."""
        counts = {d: 0 for d in ("in", "out", "fwd", "sock-in", "sock-out", "sock-fwd")}
        for p in self._policies:
            counts[("sock-" if p.socket else "") + p.dir] += 1
        return counts

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
