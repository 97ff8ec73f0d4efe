"""A student's progress through each lab, kept in the XDG state directory.

``$XDG_STATE_HOME/esplab/progress/<lab file stem>.json`` (by default under
``~/.local/state``) holds, after every step of step mode, which steps are done and
how, the points scored and the faults seeded, so ``lab status`` can show it and a
student sees where they stopped. Writing is best effort: a read-only home never
stops a lab.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from esplab.config import state_dir

if TYPE_CHECKING:
    from esplab.lab.runner import LabRun

__all__ = ["load_progress", "progress_dir", "save_progress"]


def progress_dir() -> Path:
    return state_dir() / "progress"


def _name(stem: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) or "lab"


def save_progress(run: LabRun) -> Path | None:
    """Write the run's progress; the file, or None when it cannot be written."""
    data: dict[str, Any] = {
        "lab": run.lab.name,
        "file": str(run.lab.path.resolve()),
        "student": run.course.student,
        "steps": len(run.lab.steps),
        "next": len(run.reports) + 1,
        "done": [
            {"number": r.index + 1, "name": r.name, "status": r.status, "note": r.note}
            for r in run.reports
        ],
        "score": sum(run.course.scores.values()),
        "points": run.lab.points,
        "faults": {str(k): v for k, v in run.course.faults.items()},
    }
    target = progress_dir() / f"{_name(run.lab.stem)}.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        temp.replace(target)
    except OSError:
        return None
    return target


def load_progress() -> list[dict[str, Any]]:
    """Every lab's saved progress (unreadable files are left out)."""
    found = []
    for path in sorted(progress_dir().glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found.append(data)
    return found
