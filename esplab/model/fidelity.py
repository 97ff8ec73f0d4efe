"""The kernel the K tag is checked against: see :mod:`esplab.model.stage`, where every
fidelity tag is described; these names stay importable from here."""

from __future__ import annotations

from esplab.model.stage import KERNEL_CHECKED, KERNEL_CHECKED_WHY

__all__ = ["KERNEL_CHECKED", "KERNEL_CHECKED_WHY"]
