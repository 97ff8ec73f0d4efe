"""The single entry point for ``ip xfrm``: parse, execute against a node, print.

``run_ip_xfrm(node, ["ip", "xfrm", "state", "add", ...])`` returns an
:class:`IpResult` with the exact text iproute2 would print (empty for commands
that print nothing) and the states or policies the command touched. Errors are
raised, typed: ``ToolUsageError`` for what iproute2 itself refuses, ``KernelError``
(``DuplicateSA`` for ``-EEXIST`` on an SA) for what the kernel refuses. A command
that raises leaves the node unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from esplab.errors import ToolUsageError
from esplab.model.kernel.xfrm.objects import XfrmPolicy, XfrmState
from esplab.model.kernel.xfrm.offload import DeviceResolver
from esplab.model.kernel.xfrm.tables import XfrmNode
from esplab.model.tools.iproute2.xfrm_grammar import IpXfrm, parse_ip_xfrm
from esplab.model.tools.iproute2.xfrm_monitor import XfrmMonitor, format_defaults
from esplab.model.tools.iproute2.xfrm_printer import (
    format_policy,
    format_sad_count,
    format_spd_count,
    format_state,
)

__all__ = ["IpResult", "execute_ip_xfrm", "run_ip_xfrm"]

# A restatement of the grammar (reference 5.1, 5.2), limited to what the lab models.
_USAGE = {
    "state": (
        "Usage: ip xfrm state { add | update } ID [ ALGO-LIST ] [ mode MODE ]\n"
        "        [ mark MARK [ mask MASK ] ] [ reqid REQID ] [ dir in|out ] [ seq SEQ ]\n"
        "        [ replay-window SIZE ] [ replay-seq SEQ ] [ replay-oseq SEQ ]\n"
        "        [ replay-seq-hi SEQ ] [ replay-oseq-hi SEQ ]\n"
        "        [ flag FLAG-LIST ] [ sel SELECTOR ] [ LIMIT-LIST ] [ encap ENCAP ]\n"
        "        [ extra-flag EXTRA-FLAG-LIST ] [ offload [ crypto | packet ] dev DEV dir DIR ]\n"
        "        [ if_id IF_ID ] [ tfcpad LENGTH ]\n"
        "Usage: ip xfrm state allocspi ID [ mode MODE ] [ mark MARK [ mask MASK ] ]\n"
        "        [ reqid REQID ] [ dir DIR ] [ seq SEQ ] [ min SPI max SPI ]\n"
        "Usage: ip xfrm state { delete | get } ID [ mark MARK [ mask MASK ] ]\n"
        "Usage: ip xfrm state { deleteall | list } [ nokeys ] [ ID ] [ mode MODE ]\n"
        "        [ reqid REQID ] [ flag FLAG-LIST ]\n"
        "Usage: ip xfrm state flush [ proto XFRM-PROTO ]\n"
        "Usage: ip xfrm state count\n"
        "ID := [ src ADDR ] [ dst ADDR ] [ proto XFRM-PROTO ] [ spi SPI ]\n"
        "XFRM-PROTO := esp | ah | comp\n"
        "ALGO := { enc | auth } ALGO-NAME ALGO-KEYMAT |\n"
        "        auth-trunc ALGO-NAME ALGO-KEYMAT ALGO-TRUNC-LEN |\n"
        "        aead ALGO-NAME ALGO-KEYMAT ALGO-ICV-LEN | comp ALGO-NAME\n"
        "MODE := transport | tunnel | beet\n"
        "FLAG := noecn | decap-dscp | nopmtudisc | wildrecv | icmp | af-unspec | align4 | esn\n"
        "EXTRA-FLAG := dont-encap-dscp | oseq-may-wrap\n"
        "SELECTOR := [ src ADDR[/PLEN] ] [ dst ADDR[/PLEN] ] [ dev DEV ] [ UPSPEC ]\n"
        "LIMIT-LIST := [ LIMIT-LIST ] limit LIMIT\n"
        "LIMIT := { time-soft | time-hard | time-use-soft | time-use-hard } SECONDS |\n"
        "         { byte-soft | byte-hard } SIZE | { packet-soft | packet-hard } COUNT\n"
        "ENCAP := { espinudp | espinudp-nonike | espintcp } SPORT DPORT OADDR\n"
        "DIR := in | out\n"
    ),
    "policy": (
        "Usage: ip xfrm policy { add | update } SELECTOR dir DIR\n"
        "        [ mark MARK [ mask MASK ] ] [ index INDEX ] [ ptype PTYPE ]\n"
        "        [ action ACTION ] [ priority PRIORITY ] [ flag FLAG-LIST ]\n"
        "        [ if_id IF_ID ] [ LIMIT-LIST ] [ TMPL-LIST ] [ offload packet dev DEV ]\n"
        "Usage: ip xfrm policy { delete | get } { SELECTOR | index INDEX } dir DIR\n"
        "        [ mark MARK [ mask MASK ] ] [ ptype PTYPE ] [ if_id IF_ID ]\n"
        "Usage: ip xfrm policy { deleteall | list } [ nosock ] [ SELECTOR ] [ dir DIR ]\n"
        "        [ index INDEX ] [ ptype PTYPE ] [ action ACTION ] [ priority PRIORITY ]\n"
        "        [ flag FLAG-LIST ]\n"
        "Usage: ip xfrm policy flush [ ptype PTYPE ]\n"
        "Usage: ip xfrm policy count\n"
        "Usage: ip xfrm policy setdefault DIR ACTION [ DIR ACTION ] [ DIR ACTION ]\n"
        "Usage: ip xfrm policy getdefault\n"
        "DIR := in | out | fwd\n"
        "PTYPE := main | sub\n"
        "ACTION := allow | block\n"
        "FLAG := localok | icmp\n"
        "TMPL := tmpl ID [ mode MODE ] [ reqid REQID ] [ level { required | use } ]\n"
    ),
}


@dataclass(frozen=True)
class IpResult:
    """What one ``ip xfrm`` command gives back: the printed text (exact), the parsed
    command, and the states or policies it added, changed, showed or removed."""

    text: str
    command: IpXfrm
    states: tuple[XfrmState, ...] = ()
    policies: tuple[XfrmPolicy, ...] = ()


def run_ip_xfrm(
    node: XfrmNode,
    argv: Sequence[str],
    *,
    stats: int = 0,
    resolve_dev: DeviceResolver | None = None,
) -> IpResult:
    """Parse and execute one ``ip [-s] xfrm ...`` token list on ``node``.

    ``stats`` adds ``-s`` levels to those in ``argv``; ``resolve_dev`` overrides the
    node's netdev resolver for this command.
    """
    return execute_ip_xfrm(node, parse_ip_xfrm(argv), stats=stats, resolve_dev=resolve_dev)


def execute_ip_xfrm(
    node: XfrmNode,
    cmd: IpXfrm,
    *,
    stats: int = 0,
    resolve_dev: DeviceResolver | None = None,
) -> IpResult:
    """Execute an already parsed command (see :func:`run_ip_xfrm`)."""
    level = stats + cmd.stats
    resolve = resolve_dev or node.resolve_dev
    for dev in cmd.devices:
        # ll_name_to_index fails in iproute2 before anything is sent.
        if resolve(dev) is None:
            raise ToolUsageError(
                f'argument "{dev}" is wrong: Invalid device name',
                hint=f"node {node.name} has no netdev {dev}",
            )
    if cmd.obj == "monitor":
        return _monitor(node, cmd)
    if cmd.verb == "help":
        return IpResult(_USAGE[cmd.obj], cmd)
    if cmd.obj == "state":
        return _state(node, cmd, level, resolve)
    return _policy(node, cmd, level, resolve)


def _state(node: XfrmNode, cmd: IpXfrm, level: int, resolve: DeviceResolver) -> IpResult:
    if cmd.verb in ("add", "update") and cmd.state is not None:
        if cmd.verb == "add":
            x = node.add_state(cmd.state, cmd.offload, resolve=resolve)
        else:
            x = node.update_state(cmd.state, cmd.offload, resolve=resolve)
        return IpResult("", cmd, states=(x,))
    if cmd.verb in ("get", "delete") and cmd.state_id is not None:
        if cmd.verb == "delete":
            return IpResult("", cmd, states=(node.delete_state(cmd.state_id),))
        x = node.get_state(cmd.state_id)
        return IpResult(format_state(x, stats=level), cmd, states=(x,))
    if cmd.verb in ("list", "deleteall") and cmd.state_filter is not None:
        filt = cmd.state_filter
        if cmd.verb == "deleteall":
            gone = node.delete_states(filt.matches, notify=True)
            return IpResult("", cmd, states=tuple(gone))
        shown = tuple(x for x in node.states if filt.matches(x))
        text = "".join(format_state(x, stats=level, nokeys=cmd.nokeys) for x in shown)
        return IpResult(text, cmd, states=shown)
    if cmd.verb == "flush":
        return IpResult("", cmd, states=tuple(node.flush_states(cmd.flush_proto)))
    if cmd.verb == "allocspi" and cmd.state is not None and cmd.spi_range is not None:
        from esplab.model.kernel.xfrm.allocspi import alloc_spi

        x = alloc_spi(node, cmd.state, *cmd.spi_range)
        # iproute2 prints the answer as a state (xfrm_state_print) [C].
        return IpResult(format_state(x), cmd, states=(x,))
    return IpResult(format_sad_count(len(node.states), stats=level), cmd)


def _policy(node: XfrmNode, cmd: IpXfrm, level: int, resolve: DeviceResolver) -> IpResult:
    ptype_attr = node.settings.sub_policy
    if cmd.verb in ("add", "update") and cmd.policy is not None:
        p = node.add_policy(cmd.policy, cmd.offload, update=cmd.verb == "update", resolve=resolve)
        return IpResult("", cmd, policies=(p,))
    if cmd.verb in ("get", "delete") and cmd.policy_id is not None:
        if cmd.verb == "delete":
            return IpResult("", cmd, policies=(node.delete_policy(cmd.policy_id),))
        p = node.get_policy(cmd.policy_id)
        return IpResult(format_policy(p, stats=level, ptype_attr=ptype_attr), cmd, policies=(p,))
    if cmd.verb in ("list", "deleteall") and cmd.policy_filter is not None:
        filt = cmd.policy_filter
        if cmd.verb == "deleteall":
            gone = node.delete_policies(filt.matches, notify=True)
            return IpResult("", cmd, policies=tuple(gone))
        shown = tuple(p for p in node.policies if filt.matches(p))
        text = "".join(format_policy(p, stats=level, ptype_attr=ptype_attr) for p in shown)
        return IpResult(text, cmd, policies=shown)
    if cmd.verb == "flush":
        return IpResult("", cmd, policies=tuple(node.flush_policies(cmd.flush_ptype)))
    if cmd.verb == "setdefault":
        node.set_defaults(dict(cmd.defaults))
        return IpResult("", cmd)
    if cmd.verb == "getdefault":
        return IpResult(format_defaults(node.defaults), cmd)
    return IpResult(format_spd_count(node.policy_counts(), stats=level), cmd)


def _monitor(node: XfrmNode, cmd: IpXfrm) -> IpResult:
    """``ip xfrm monitor ...`` turns a monitor on for the node (the events then print
    with each later command's result); ``ip xfrm monitor off`` (esplab's) ends it."""
    args = cmd.monitor
    if args is None or args.off:
        node.monitor = None
        return IpResult("", cmd)
    node.monitor = XfrmMonitor(args.groups, args.nokeys, args.all_nsid)
    return IpResult("", cmd)
