"""Every command module contributes a ``COMMANDS`` tuple; :func:`all_commands` gathers
those a lab step may run: every command of the core. ``lab``, which runs labs, is no
command of the core: it is declared over the lab runner (:mod:`esplab.lab.command`,
whose :func:`~esplab.lab.command.every_command` adds it for the front ends). A handler module
imports no other handler module: what two share lives beside the core
(``esplab.commands``: ``peers``, ``packetexpr``, ``complete``...)."""

from __future__ import annotations

from esplab.commands.registry import Command, Registry

__all__ = ["all_commands", "step_registry"]


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
    ]


def step_registry() -> Registry:
    """A registry of the commands a lab step may run (a lab's session has these)."""
    return Registry(all_commands())
