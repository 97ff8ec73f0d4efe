"""Shared paths and helpers of the lab tests."""

from __future__ import annotations

from pathlib import Path

from esplab.commands.session import Session
from esplab.lab.command import every_command

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
BAD = ROOT / "tests" / "labs" / "bad"
SHIPPED = sorted(LABS.glob("*.yaml"))
BAD_LABS = sorted(BAD.glob("*.yaml"))

HEADER = "name: a lab\ndescription: for a test\n"


def write_lab(directory: Path, steps: str, *, name: str = "lab.yaml", head: str = HEADER) -> Path:
    """A lab file in ``directory`` with ``steps`` (YAML text of the steps list)."""
    path = directory / name
    path.write_text(head + "steps:\n" + steps, encoding="utf-8")
    return path


def repl_session() -> Session:
    """A session over the REPL's commands: every command, ``lab`` too."""
    return Session(registry=every_command())
