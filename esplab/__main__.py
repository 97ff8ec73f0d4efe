"""``python -m esplab`` is the same as the ``esplab`` command."""

from __future__ import annotations

from esplab.cli import run

run()
