"""ethtool on a node's device: features (-k/-K), statistics (-S) and link state.

Output follows ethtool's layouts; the feature rules live in the device model
(:meth:`esplab.model.netdev.NetDev.set_feature`).
"""

from __future__ import annotations

from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.model.netdev import ETHTOOL_FEATURES, NetDev
from esplab.model.node import Node

__all__ = ["COMMANDS", "USAGE"]

USAGE = "ethtool [-k|-K|-S] DEV [FEATURE on|off ...]"
_SHOW = ("-k", "--show-features", "--show-offload")
_SET = ("-K", "--features", "--offload")
_STATS = ("-S", "--statistics")
_OPTIONS = (*_SHOW, *_SET, *_STATS)


def _ethtool(session: Session, inv: Invocation) -> Result:
    node = session.lab.node(inv.node)
    words = list(inv.args["args"])
    opt = words.pop(0) if words and words[0].startswith("-") else ""
    if opt and opt not in _OPTIONS:
        raise BadArgument(f"unknown ethtool option '{opt}'", valid=["-k", "-K", "-S"], value=opt)
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
        lines = [f"Features for {dev.name}:"]
        for name in ETHTOOL_FEATURES:
            if name in dev.features:
                fixed_esp = not dev.xfrmdev_ops and "esp" in name
                requested = dev.requested(name)
                if name in dev.fixed or fixed_esp:
                    suffix = " [fixed]"
                elif requested is not None:
                    suffix = f" [requested {_onoff(requested)}]"
                else:
                    suffix = ""
                lines.append(f"{name}: {_onoff(dev.features[name])}{suffix}")
        return TextResult(
            summary=f"features of {dev.name}", text="\n".join(lines), data=dict(dev.features)
        )
    if opt in _SET:
        request = _feature_request(dev, words)
        states, policies = _offloaded(node, dev.name)
        changed = dev.set_features(request, offloaded_states=states, offloaded_policies=policies)
        return MessageResult(summary=_changes(request, changed), data=dict(dev.features))
    if opt in _STATS:
        stats = {**dev.counters.as_dict(), **dev.stats}
        text = "NIC statistics:\n" + "\n".join(f"     {k}: {v}" for k, v in stats.items())
        return TextResult(summary=f"statistics of {dev.name}", text=text, data=stats)
    text = f"Settings for {dev.name}:\n\tLink detected: {'yes' if dev.up else 'no'}"
    return TextResult(summary=dev.name, text=text, data={"up": dev.up})


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
        name = words[at]
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


def _offloaded(node: Node, dev: str) -> tuple[int, int]:
    """The states and the policies of ``node`` offloaded to ``dev``, counted apart."""
    xfrm = node.xfrm
    states = sum(1 for x in xfrm.states if x.offload is not None and x.offload.dev == dev)
    policies = sum(1 for p in xfrm.policies if p.offload is not None and p.offload.dev == dev)
    return states, policies


def _ethtool_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return ["-k", "-K", "-S", *session.lab.node().devs]
    if len(words) == 1 and words[0].startswith("-"):
        return list(session.lab.node().devs)
    if words[0] == "-K" and len(words) >= 2:
        return ["on", "off"] if len(words) % 2 == 1 else list(ETHTOOL_FEATURES)
    return []


COMMANDS = (
    Command(
        name="ethtool",
        summary="device features (-k/-K), statistics (-S) and link state",
        handler=_ethtool,
        # Optional, so that a bare "ethtool" reaches the handler, which names the devices.
        params=(Param("args", kind="rest", optional=True, metavar="ARGS"),),
        usage_text=f"[NODE] {USAGE}",
        example="ethtool -K wan esp-hw-offload off",
        complete=_ethtool_complete,
    ),
)
