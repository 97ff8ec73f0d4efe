"""``ip xfrm monitor``: the SAD/SPD events the kernel multicasts, as iproute2 prints them.

The kernel sends one netlink message per change (net/xfrm/xfrm_user.c
``xfrm_send_state_notify``, ``xfrm_send_policy_notify``, ``xfrm_notify_userpolicy``,
``xfrm_send_acquire``) to a multicast group: ``XFRMNLGRP_SA`` (new, updated, deleted,
flushed states), ``XFRMNLGRP_POLICY`` (the same for policies, and the default
policies), ``XFRMNLGRP_EXPIRE`` and ``XFRMNLGRP_ACQUIRE``. iproute2's
``ip/xfrm_monitor.c`` prints each (``xfrm_accept_msg``). The texts here were checked
against iproute2 6.15 on Linux 6.12 [C] except where a function says otherwise.

A monitor is a listener of the node's tables: :class:`XfrmNode` hands every change it
makes to :meth:`XfrmMonitor.record` from the one place that counts changes
(``XfrmNode._changed``); what was recorded is read with :meth:`XfrmMonitor.drain`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from esplab.model.kernel.xfrm.events import GROUP, XfrmEvent
from esplab.model.kernel.xfrm.objects import XFRM_PROTOS, XfrmPolicy, XfrmState
from esplab.model.tools.iproute2.xfrm_printer import format_policy, format_selector, format_state

__all__ = [
    "MONITOR_GROUPS",
    "MONITOR_USAGE",
    "XfrmMonitor",
    "format_defaults",
]

#: The OBJECTS of ``ip xfrm monitor`` (do_xfrm_monitor) in iproute2's order.
MONITOR_GROUPS = ("acquire", "expire", "SA", "aevent", "policy", "report")

#: ip xfrm monitor help (usage() of ip/xfrm_monitor.c) [C].
MONITOR_USAGE = (
    "Usage: ip xfrm monitor [ nokeys ] [ all-nsid ] [ all | OBJECTS | help ]\n"
    "OBJECTS := { acquire | expire | SA | aevent | policy | report }"
)


_PREFIX: Mapping[str, str] = {
    "updsa": "Updated ",
    "delsa": "Deleted ",
    "expire": "Expired ",
    "updpolicy": "Updated ",
    "delpolicy": "Deleted ",
}


def format_defaults(defaults: Mapping[str, str]) -> str:
    """``ip xfrm policy getdefault`` (xfrm_policy_default_print), in, fwd, out [C]."""
    return (
        "Default policies:\n"
        f" in:  {defaults['in']}\n"
        f" fwd: {defaults['fwd']}\n"
        f" out: {defaults['out']}\n"
    )


def _acquire(x: XfrmState, policy: XfrmPolicy | None, ptype_attr: bool) -> str:
    """xfrm_acquire_print: ``acquire proto P `` (with ``spi`` when it has one), the
    flow's selector, then the policy indented (xfrm_policy_info_print with the
    prefixes "    " and "  policy ") [D: ip/xfrm_monitor.c]."""
    name = next((n for n, v in XFRM_PROTOS.items() if v == x.proto), str(x.proto))
    out = f"acquire proto {name} " + (f"spi 0x{x.spi:08x} " if x.spi else "") + "\n"
    out += "  sel " + format_selector(x.sel)
    if policy is not None:
        lines = format_policy(policy, ptype_attr=ptype_attr).splitlines(keepends=True)
        out += "  policy " + lines[0]
        out += "".join("    " + line for line in lines[1:])
    return out + "\n"


@dataclass
class XfrmMonitor:
    """A running ``ip xfrm monitor`` on one node: which groups it listens to, its
    options, and the events printed since the last :meth:`drain`."""

    groups: frozenset[str] = frozenset(MONITOR_GROUPS)
    nokeys: bool = False
    all_nsid: bool = False
    _text: list[str] = field(default_factory=list, repr=False)

    def record(self, event: XfrmEvent, *, ptype_attr: bool) -> None:
        """Print ``event`` if the monitor listens to its group (xfrm_accept_msg)."""
        if GROUP[event.kind] not in self.groups:
            return
        text = self.format(event, ptype_attr=ptype_attr)
        self._text.append(("[nsid current]" if self.all_nsid else "") + text)

    def format(self, event: XfrmEvent, *, ptype_attr: bool) -> str:
        """The text iproute2 prints for ``event``."""
        kind = event.kind
        prefix = _PREFIX.get(kind, "")
        if kind == "flushsa":
            proto = event.proto or 0
            names = {**XFRM_PROTOS, "ipsec-any": 255}  # strxf_xfrmproto
            name = next((n for n, v in names.items() if v == proto and proto), None)
            return f"Flushed state proto {name or proto}\n"
        if kind == "flushpolicy":
            return "Flushed policy " + (f"ptype {event.ptype} " if ptype_attr else "") + "\n"
        if kind == "default":
            return format_defaults(event.defaults)
        if kind == "acquire" and event.state is not None:
            return _acquire(event.state, event.policy, ptype_attr)
        if kind == "expire" and event.state is not None:
            # build_expire sends the state's info with its mark, if_id and dir, and no
            # algorithms, encap or replay state; xfrm_state_print ends with "\thard N"
            # [C: Linux 6.12, limit time-hard / time-soft].
            x = replace(
                event.state,
                auth=None,
                enc=None,
                aead=None,
                comp=None,
                encap=None,
                lastused=0,
                offload=None,
                tfcpad=0,
            )
            body = format_state(x, nokeys=self.nokeys, replay_attr=False)
            return prefix + body + f"\thard {int(event.hard)}\n"
        if event.state is not None:
            return prefix + format_state(event.state, nokeys=self.nokeys)
        assert event.policy is not None
        return prefix + format_policy(event.policy, ptype_attr=ptype_attr)

    def drain(self) -> str:
        """What was printed since the last call."""
        text = "".join(self._text)
        self._text.clear()
        return text
