"""A session with every command of the core: those a lab step may run
(:func:`esplab.commands.handlers.all_commands`). The command core knows no ``lab``
command, which runs labs over the lab runner: the front ends' sessions have it too
(:func:`esplab.lab.command.every_command`). Tests and the kernel check start here;
the session's state and its one way in (``execute``) are
:class:`esplab.commands.base.Session`'s. No module-level state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esplab.commands.base import DEFAULT_SEED, SessionOptions
from esplab.commands.base import Session as _Core
from esplab.commands.handlers import step_registry
from esplab.commands.registry import Registry

__all__ = ["DEFAULT_SEED", "Session", "SessionOptions"]


@dataclass
class Session(_Core):
    """A session over the core's commands (:func:`step_registry`), unless given others."""

    registry: Registry = field(default_factory=step_registry)
