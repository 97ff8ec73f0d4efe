"""A session with every command: those a lab step may run
(:func:`esplab.commands.handlers.all_commands`) and ``lab``, which runs labs
(:mod:`esplab.commands.handlers.lab`, over the lab runner). The REPL, ``esplab -c``
and the tests start here; the session's state and its one way in (``execute``) are
:class:`esplab.commands.base.Session`'s. No module-level state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esplab.commands.base import DEFAULT_SEED, SessionOptions
from esplab.commands.base import Session as _Core
from esplab.commands.registry import Registry

__all__ = ["DEFAULT_SEED", "Session", "SessionOptions", "every_command"]


def every_command() -> Registry:
    """A registry of every command: a lab step's, then ``lab``."""
    from esplab.commands.handlers import all_commands
    from esplab.commands.handlers.lab import COMMANDS as LAB_COMMANDS

    return Registry([*all_commands(), *LAB_COMMANDS])


@dataclass
class Session(_Core):
    """A lab session over every command (:func:`every_command`), unless given others."""

    registry: Registry = field(default_factory=every_command)
