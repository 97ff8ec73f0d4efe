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
from esplab.model.netdev import ETHTOOL_FEATURES
from esplab.model.node import Node

__all__ = ["COMMANDS"]


def _ethtool(session: Session, inv: Invocation) -> Result:
    node = session.lab.node(inv.node)
    words = list(inv.args["args"])
    if not words:
        raise BadArgument(
            "ethtool needs a device or an option", valid=["-k DEV", "-K DEV ...", "-S DEV", "DEV"]
        )
    opt = words.pop(0) if words[0].startswith("-") else ""
    if not words:
        raise BadArgument(f"ethtool {opt} needs a device", valid=list(node.devs))
    dev = node.dev(words.pop(0))
    if opt in ("-k", "--show-features", "--show-offload"):
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
    if opt in ("-K", "--features", "--offload"):
        if not words or len(words) % 2:
            raise BadArgument("ethtool -K DEV FEATURE on|off [FEATURE on|off ...]")
        pairs = list(zip(words[::2], words[1::2], strict=True))
        for name, value in pairs:
            if value not in ("on", "off"):
                raise BadArgument(f"'{value}' for {name}", valid=["on", "off"])
        states, policies = _offloaded(node, dev.name)
        request = {name: value == "on" for name, value in pairs}
        changed = dev.set_features(request, offloaded_states=states, offloaded_policies=policies)
        return MessageResult(summary=_changes(request, changed), data=dict(dev.features))
    if opt in ("-S", "--statistics"):
        stats = {**dev.counters.as_dict(), **dev.stats}
        text = "NIC statistics:\n" + "\n".join(f"     {k}: {v}" for k, v in stats.items())
        return TextResult(summary=f"statistics of {dev.name}", text=text, data=stats)
    if opt == "":
        text = f"Settings for {dev.name}:\n\tLink detected: {'yes' if dev.up else 'no'}"
        return TextResult(summary=dev.name, text=text, data={"up": dev.up})
    raise BadArgument(f"unknown ethtool option '{opt}'", valid=["-k", "-K", "-S"], value=opt)


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
        params=(Param("args", kind="rest", metavar="ARGS"),),
        usage_text="[NODE] ethtool [-k|-K|-S] DEV [FEATURE on|off ...]",
        example="ethtool -K wan esp-hw-offload off",
        complete=_ethtool_complete,
    ),
)
