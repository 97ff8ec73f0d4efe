"""The fidelity tag K: behaviour the differential suite checks against a real kernel.

Every stage carries a tag (``esplab.model.stages.FIDELITY``): C, D, U, M, and K for
what ``tests/kernel/`` compares with Linux on every CI run (software ESP output and
input, their drops and counters, the ``ip xfrm`` control plane). The kernel and
iproute2 checked are named here once.
"""

from __future__ import annotations

__all__ = ["KERNEL_CHECKED", "KERNEL_CHECKED_WHY"]

#: The kernel and iproute2 the differential suite runs against (Debian bookworm's).
KERNEL_CHECKED = "Linux 6.12.118 (Debian), iproute2 6.15"
KERNEL_CHECKED_WHY = f"checked against {KERNEL_CHECKED} in CI (tests/kernel, K)"
