"""Where esplab keeps its files (XDG base directories), and how it logs.

History lives in ``$XDG_STATE_HOME/esplab/history`` (default
``~/.local/state/esplab/history``); unexpected errors are logged with their
traceback to ``esplab.log`` beside it. Nothing here runs at import time.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["history_path", "log_path", "setup_logging", "state_dir"]

LOG = logging.getLogger("esplab")


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "esplab"


def _ensure(path: Path) -> Path | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def history_path() -> Path | None:
    """The REPL history file, or None when the state directory cannot be created."""
    return _ensure(state_dir() / "history")


def log_path() -> Path | None:
    return _ensure(state_dir() / "esplab.log")


def setup_logging() -> None:
    """Send esplab's log to the log file (once); never to the terminal."""
    if LOG.handlers:
        return
    LOG.propagate = False
    path = log_path()
    handler: logging.Handler
    if path is None:
        handler = logging.NullHandler()
    else:
        try:
            handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        except OSError:
            handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
