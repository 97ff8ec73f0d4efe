"""The command core shared by the REPL, the lab runner and the CLI."""

from __future__ import annotations

from esplab.commands.parser import Invocation, parse
from esplab.commands.registry import Command, Param, Registry
from esplab.commands.session import Session

__all__ = ["Command", "Invocation", "Param", "Registry", "Session", "parse"]
