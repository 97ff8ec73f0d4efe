"""Every command module contributes a ``COMMANDS`` tuple; the registry gathers them."""

from __future__ import annotations

from esplab.commands.registry import Command

__all__ = ["all_commands"]


def all_commands() -> list[Command]:
    from esplab.commands.handlers import (
        capture,
        compare,
        core,
        decode,
        diff,
        eip93,
        ethtool,
        flows,
        journey,
        lab,
        net,
        node,
        peer,
        settings,
        trace,
        xdp,
        xfrm,
        xsk,
    )

    return [
        *core.COMMANDS,
        *decode.COMMANDS,
        *net.COMMANDS,
        *ethtool.COMMANDS,
        *node.COMMANDS,
        *peer.COMMANDS,
        *xfrm.COMMANDS,
        *journey.COMMANDS,
        *trace.COMMANDS,
        *flows.COMMANDS,
        *capture.COMMANDS,
        *diff.COMMANDS,
        *settings.COMMANDS,
        *eip93.COMMANDS,
        *compare.COMMANDS,
        *xdp.COMMANDS,
        *xsk.COMMANDS,
        *lab.COMMANDS,
    ]
