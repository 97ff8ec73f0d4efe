"""Where esplab knowingly differs from the real kernel, and why.

The differential suite (tests/kernel/) runs every scenario on the emulated host and on
Linux; a difference it finds is either fixed in the model or listed here, with what
each side does and why esplab keeps its behaviour. ``explain`` and ``kernel-check``
show the entry beside the difference. An entry the suite no longer sees fails the
suite, so the list cannot go stale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatch

from esplab.model.stage import KERNEL_CHECKED

__all__ = ["KERNEL_CHECKED", "KNOWN", "KnownDifference", "known_for"]


@dataclass(frozen=True)
class KnownDifference:
    """A difference the suite expects: in scenarios named like ``cases``, a finding whose
    item matches ``item``."""

    key: str
    cases: tuple[str, ...]
    item: str
    ours: str
    kernel: str
    why: str

    def matches(self, case: str, item: str) -> bool:
        return any(fnmatch(case, pattern) for pattern in self.cases) and bool(
            re.search(self.item, item)
        )


KNOWN: tuple[KnownDifference, ...] = ()


def known_for(case: str, item: str) -> KnownDifference | None:
    """The entry that explains this finding, if any."""
    return next((k for k in KNOWN if k.matches(case, item)), None)
