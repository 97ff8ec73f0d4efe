"""ethtool on a node's device: features (-k/-K), statistics (-S) and link state.

Output follows ethtool's layouts; the feature rules live in the device model
(:meth:`esplab.model.kernel.stack.netdev.NetDev.set_feature`).

``ethtool -S`` prints the driver's ETH_SS_STATS strings, not the rtnl_link_stats64
counters of ``ip -s link`` (:func:`_nic_stats`):

* a DSA user port (lanN): ``tx_packets``, ``tx_bytes``, ``rx_packets``, ``rx_bytes``
  from the port's own software counters, then the switch driver's port MIB
  (net/dsa/user.c ``dsa_user_get_strings``, ``dsa_user_get_ethtool_stats``) [C];
* the DSA conduit (eth0): the Ethernet driver's own strings, then the CPU port's MIB
  with each name prefixed ``p06_`` (net/dsa/conduit.c ``dsa_conduit_get_strings``,
  prefix ``p%.2d`` + ``_``) [C]. airoha_eth's ethtool_ops have no ``get_strings`` or
  ``get_sset_count`` (only drvinfo, eth-mac and rmon stats, link), so the conduit
  shows the CPU port's MIB alone [C];
* a GDM netdev that is no conduit (wan): no strings at all, and ethtool says
  "no stats available" on stderr and exits 94 (ethtool.c ``do_gstats``) [C]. The
  command fails the same way, with a one-line error naming the devices that have
  stats; ``esplab -c`` then exits 1, not 94 [M].
"""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.errors import BadArgument, KernelError, NotFound
from esplab.model.hw.switch import MT7530_CPU_PORT
from esplab.model.kernel.drivers.airoha_eth import DSA_FEATURE_LOST, dsa_feature_change
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.features import feature_table
from esplab.model.kernel.stack.netdev import ETHTOOL_FEATURES, NetDev
from esplab.model.kernel.xfrm.objects import XfrmPolicy, XfrmState

__all__ = ["COMMANDS", "USAGE"]

USAGE = "ethtool [-i|-k|-K|-S] DEV [FEATURE on|off ...]"
_SHOW = ("-k", "--show-features", "--show-offload")
_SET = ("-K", "--features", "--offload")
_STATS = ("-S", "--statistics")
_INFO = ("-i", "--driver")
_OPTIONS = (*_SHOW, *_SET, *_STATS, *_INFO)


def _ethtool(session: Session, inv: Invocation) -> Result:
    node = session.lab.node(inv.node)
    words = list(inv.args["args"])
    opt = words.pop(0) if words and words[0].startswith("-") else ""
    if opt and opt not in _OPTIONS:
        raise BadArgument(
            f"unknown ethtool option '{opt}'", valid=["-i", "-k", "-K", "-S"], value=opt
        )
    if not words:
        command = f"ethtool {opt}" if opt else "ethtool"
        raise BadArgument(
            f"{command} needs a device name", valid=list(node.devs), hint=f"usage: {USAGE}"
        )
    dev = node.dev(words.pop(0))
    if words and opt not in _SET:
        raise BadArgument(
            f"ethtool {opt + ' ' if opt else ''}{dev.name} takes nothing after the device, "
            f"not '{words[0]}'",
            hint=f"usage: {USAGE}",
        )
    if opt in _SHOW:
        # Every feature, as ethtool 6.1 prints it on Linux 6.12 (feature_table).
        return TextResult(
            summary=f"features of {dev.name}", text=feature_table(dev), data=dict(dev.features)
        )
    if opt in _SET:
        request = _feature_request(dev, words)
        # The JM driver counts SAs per GDM port, and a DSA user port's count on its
        # conduit's (airoha_xfrm_dev_port) [C]: the conduit is held by its own SAs and
        # its user ports', a user port by its conduit's whole count.
        gdm = dev.conduit if dev.conduit is not None else dev.name
        users = [d.name for d in node.devs.values() if d.conduit == gdm]
        states, policies = _offloaded(node, gdm, *users)
        held_on = f"{dev.name} and its DSA user ports" if users and gdm == dev.name else None
        changed = dev.set_features(
            request, offloaded_states=states, offloaded_policies=policies, held_on=held_on
        )
        summary = _changes(request, changed)
        # NETDEV_FEAT_CHANGE only when the active features changed (ethnl_set_features:
        # "if (mod) netdev_features_change(dev)") [C].
        flushed = dsa_feature_change(node.xfrm, dev, states + policies) if changed else None
        if flushed is not None:
            gone = _flushed(*flushed)
            summary += f"\n{dev.name}: {DSA_FEATURE_LOST}" + (f" ({gone})" if gone else "")
        return MessageResult(summary=summary, data=dict(dev.features))
    if opt in _INFO:
        info = _drvinfo(node, dev)
        text = "\n".join(f"{k}: {v}" for k, v in info.items())
        return TextResult(summary=f"driver of {dev.name}", text=text, data=info)
    if opt in _STATS:
        stats = _nic_stats(node, dev)
        if not stats:
            raise NotFound(
                f"{NO_STATS} on {dev.name}: its driver has no ETH_SS_STATS strings",
                valid=[name for name in node.devs if _nic_stats(node, node.devs[name])],
            )
        text = "NIC statistics:\n" + "\n".join(f"     {k}: {v}" for k, v in stats.items())
        return TextResult(summary=f"statistics of {dev.name}", text=text, data=stats)
    text = f"Settings for {dev.name}:\n\tLink detected: {'yes' if dev.up else 'no'}"
    return TextResult(summary=dev.name, text=text, data={"up": dev.up})


#: What ethtool prints when the device has no ETH_SS_STATS strings (do_gstats) [C].
NO_STATS = "no stats available"

#: ``mt7530_mib[]`` of drivers/net/dsa/mt7530.c, in its order: the strings
#: ``mt7530_get_strings`` gives for every port, the EN7581 switch included (same
#: driver, ``ID_EN7581``) [C] (the newest torvalds/linux version read). A 2025 series
#: (Christian Marangi, "modernize MIB handling") moves the packet, size, pause and
#: error counters to the standard eth-mac/rmon/ctrl stats and leaves nine names here;
#: whether the target kernel has it was not confirmed [U].
MT7530_MIB = (
    "TxDrop",
    "TxCrcErr",
    "TxUnicast",
    "TxMulticast",
    "TxBroadcast",
    "TxCollision",
    "TxSingleCollision",
    "TxMultipleCollision",
    "TxDeferred",
    "TxLateCollision",
    "TxExcessiveCollistion",
    "TxPause",
    "TxPktSz64",
    "TxPktSz65To127",
    "TxPktSz128To255",
    "TxPktSz256To511",
    "TxPktSz512To1023",
    "Tx1024ToMax",
    "TxBytes",
    "RxDrop",
    "RxFiltering",
    "RxUnicast",
    "RxMulticast",
    "RxBroadcast",
    "RxAlignErr",
    "RxCrcErr",
    "RxUnderSizeErr",
    "RxFragErr",
    "RxOverSzErr",
    "RxJabberErr",
    "RxPause",
    "RxPktSz64",
    "RxPktSz65To127",
    "RxPktSz128To255",
    "RxPktSz256To511",
    "RxPktSz512To1023",
    "RxPktSz1024ToMax",
    "RxBytes",
    "RxCtrlDrop",
    "RxIngressDrop",
    "RxArlDrop",
)


def _port_mib(dev: NetDev) -> dict[str, int]:
    """One switch port's MIB (``dev``: the user device of the front port, or the
    conduit for the CPU port), as the frames that crossed the switch were counted
    (``l2.count_switch_ports``): by destination class (unicast, multicast,
    broadcast), size bucket and bytes [D]. Everything else reads 0 [M]: the model has
    no collisions, pause frames, CRC errors or switch-internal drops (the switch
    forwards every frame it is given; a port that is down takes none, see
    ``receive.py``)."""
    mib = dict.fromkeys(MT7530_MIB, 0)
    mib.update((name, n) for name, n in dev.port_mib.items() if name in mib)
    return mib


def _nic_stats(node: Node, dev: NetDev) -> dict[str, int]:
    """``ethtool -S DEV``: each ETH_SS_STATS string with its value; empty when the
    driver has none (see the module docstring)."""
    counters = dev.counters
    if dev.kind == "dsa-user":
        # dsa_user_get_ethtool_stats: the four from the user netdev's tstats (what
        # ``ip -s link`` shows for lanN), then the front port's MIB [C]. The port
        # sends what lanN transmits and receives what lanN takes in [D].
        return {
            "tx_packets": counters.tx_packets,
            "tx_bytes": counters.tx_bytes,
            "rx_packets": counters.rx_packets,
            "rx_bytes": counters.rx_bytes,
            **_port_mib(dev),
        }
    if dev.kind == "gdm":
        if not any(d.conduit == dev.name for d in node.devs.values()):
            return {}
        # The CPU port faces the conduit: what GDM1 transmits, the port receives, and
        # the other way round [D], with the special tag (l2.count_switch_ports).
        mib = _port_mib(dev)
        return {f"p{MT7530_CPU_PORT:02d}_{name}": value for name, value in mib.items()}
    if dev.kind == "loopback" or (dev.kind == "ether" and dev.name != "eth0"):
        # lo and dummy (the peers' devices beside eth0) have no ETH_SS_STATS strings:
        # "no stats available" (Linux 6.12) [C].
        return {}
    # The peers' NICs: a generic driver whose strings are the rtnl counters and the
    # device's extra counters, a labelled design choice [M].
    return {**counters.as_dict(), **dev.stats}


#: What the kernel version string reads in ``ethtool -i`` where a driver leaves the
#: version to the core (ethtool_get_drvinfo: UTS_RELEASE); the lab's kernel [M].
KERNEL_RELEASE = "6.12.0"


def _drvinfo(node: Node, dev: NetDev) -> dict[str, str]:
    """``ethtool -i DEV`` (ethtool.c ``dump_drvinfo``). lo has no get_drvinfo:
    "Cannot get driver information: Operation not supported" [C, Linux 6.12]. A DSA
    user port: driver "dsa", firmware "N/A", bus "platform" (net/dsa/user.c
    ``dsa_user_get_drvinfo``), with statistics [C]. A GDM port: airoha_eth's
    ``airoha_ethtool_get_drvinfo`` gives its driver's name and its platform device's
    name as bus [C]; the device name "1fb50000.ethernet" is the EN7581 device tree's
    [U], and no statistics (no get_sset_count) [C]. The peers are the veth and dummy
    devices the real-kernel peer makes (esplab.peer), printed as Linux 6.12 does [C]."""
    if dev.kind == "loopback":
        raise KernelError(
            "EOPNOTSUPP",
            f"{dev.name} has no driver information",
            prefix="Cannot get driver information",
        )
    if dev.kind == "dsa-user":
        driver, version, fw, bus, stats = "dsa", KERNEL_RELEASE, "N/A", "platform", "yes"
    elif dev.kind == "gdm":
        driver, version, fw, bus, stats = (
            "airoha_eth",
            KERNEL_RELEASE,
            "",
            "1fb50000.ethernet",
            "no",
        )
    elif dev.name == "eth0":
        driver, version, fw, bus, stats = "veth", "1.0", "", "", "yes"
    else:
        driver, version, fw, bus, stats = "dummy", KERNEL_RELEASE, "", "", "no"
    return {
        "driver": driver,
        "version": version,
        "firmware-version": fw,
        "expansion-rom-version": "",
        "bus-info": bus,
        "supports-statistics": stats,
        "supports-test": "no",
        "supports-eeprom-access": "no",
        "supports-register-dump": "no",
        "supports-priv-flags": "no",
    }


#: ethtool's short names for the features it has long ones for (ethtool.c
#: ``off_flag_def``: rx, tx, sg, tso) [C].
SHORT_NAMES = {
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
    "sg": "scatter-gather",
    "tso": "tcp-segmentation-offload",
}


def _feature_request(dev: NetDev, words: list[str]) -> dict[str, bool]:
    """``FEATURE on|off ...`` after ``ethtool -K DEV``: each feature must be the device's
    and be followed by on or off."""
    if not words:
        raise BadArgument(
            f"ethtool -K {dev.name} needs a feature and on or off",
            valid=[name for name in ETHTOOL_FEATURES if name in dev.features],
        )
    request: dict[str, bool] = {}
    for at in range(0, len(words), 2):
        name = SHORT_NAMES.get(words[at], words[at])
        dev.check_feature(name)
        value = words[at + 1] if at + 1 < len(words) else None
        if value not in ("on", "off"):
            got = "" if value is None else f", not '{value}'"
            raise BadArgument(f"ethtool -K {dev.name} {name} needs on or off{got}")
        request[name] = value == "on"
    return request


def _onoff(on: bool) -> str:
    return "on" if on else "off"


def _changes(request: dict[str, bool], changed: dict[str, bool]) -> str:
    """The confirmation of ``ethtool -K``: the request, or, when a feature changed that
    was not asked for, ethtool's "Actual changes:" list, each changed feature with its
    new value and "[not requested]" on the others (ethtool netlink/features.c
    ``show_feature_changes``)."""
    extra = [name for name in changed if name not in request]
    if not extra:
        return ", ".join(f"{name} {_onoff(on)}" for name, on in request.items())
    lines = ["Actual changes:"]
    for name in ETHTOOL_FEATURES:
        if name in changed:
            note = " [not requested]" if name in extra else ""
            lines.append(f"{name}: {_onoff(changed[name])}{note}")
    return "\n".join(lines)


def _offloaded(node: Node, *devs: str) -> tuple[int, int]:
    """The states and the policies of ``node`` offloaded to any of ``devs``, counted
    apart."""
    xfrm = node.xfrm
    states = sum(1 for x in xfrm.states if x.offload is not None and x.offload.dev in devs)
    policies = sum(1 for p in xfrm.policies if p.offload is not None and p.offload.dev in devs)
    return states, policies


def _flushed(states: list[XfrmState], policies: list[XfrmPolicy]) -> str:
    """What a flush deleted, e.g. "flushed 2 states and 1 policy"; "" for nothing."""
    parts = [f"{len(states)} state{'s' if len(states) != 1 else ''}"] if states else []
    if policies:
        parts.append(f"{len(policies)} polic{'ies' if len(policies) != 1 else 'y'}")
    return f"flushed {' and '.join(parts)}" if parts else ""


def _ethtool_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return ["-i", "-k", "-K", "-S", *session.lab.node().devs]
    if len(words) == 1 and words[0].startswith("-"):
        return list(session.lab.node().devs)
    if words[0] == "-K" and len(words) >= 2:
        return ["on", "off"] if len(words) % 2 == 1 else list(ETHTOOL_FEATURES)
    return []


COMMANDS = (
    Command(
        name="ethtool",
        summary="driver (-i), device features (-k/-K), statistics (-S) and link state",
        handler=_ethtool,
        # Optional, so that a bare "ethtool" reaches the handler, which names the devices.
        params=(Param("args", kind="rest", optional=True, metavar="ARGS"),),
        usage_text=f"[NODE] {USAGE}",
        example="ethtool -K wan esp-hw-offload off",
        complete=_ethtool_complete,
        complete_on_node=True,
    ),
)
