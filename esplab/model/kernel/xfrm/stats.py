"""The XFRM MIB, as ``/proc/net/xfrm_stat`` shows it.

Reference ``airoha-dsa-xfrm.md`` 3.8 [C] (kernel ``net/xfrm/xfrm_proc.c``,
``include/uapi/linux/snmp.h``): one line per counter, ``%-24s\\t%lu``, in a fixed
order. The file exists only with ``CONFIG_XFRM_STATISTICS``; the lab always has it.
"""

from __future__ import annotations

from collections.abc import Iterator

from esplab.errors import NotFound

__all__ = ["XFRM_MIB", "XfrmMib"]

# The order of LINUX_MIB_XFRM* in snmp.h, which xfrm_proc.c prints.
XFRM_MIB: tuple[str, ...] = (
    "XfrmInError",
    "XfrmInBufferError",
    "XfrmInHdrError",
    "XfrmInNoStates",
    "XfrmInStateProtoError",
    "XfrmInStateModeError",
    "XfrmInStateSeqError",
    "XfrmInStateExpired",
    "XfrmInStateMismatch",
    "XfrmInStateInvalid",
    "XfrmInTmplMismatch",
    "XfrmInNoPols",
    "XfrmInPolBlock",
    "XfrmInPolError",
    "XfrmOutError",
    "XfrmOutBundleGenError",
    "XfrmOutBundleCheckError",
    "XfrmOutNoStates",
    "XfrmOutStateProtoError",
    "XfrmOutStateModeError",
    "XfrmOutStateSeqError",
    "XfrmOutStateExpired",
    "XfrmOutPolBlock",
    "XfrmOutPolDead",
    "XfrmOutPolError",
    "XfrmFwdHdrError",
    "XfrmOutStateInvalid",
    "XfrmAcquireError",
    "XfrmOutStateDirError",
    "XfrmInStateDirError",
    "XfrmInIptfsError",
    "XfrmOutNoQueueSpace",
)


class XfrmMib:
    """The per-namespace XFRM counters of one node."""

    def __init__(self) -> None:
        self._values = dict.fromkeys(XFRM_MIB, 0)

    def _check(self, name: str) -> None:
        if name not in self._values:
            raise NotFound(f"unknown XFRM counter '{name}'", valid=XFRM_MIB, value=name)

    def bump(self, name: str, by: int = 1) -> None:
        """Add ``by`` to a counter (``XFRM_INC_STATS`` / ``XFRM_ADD_STATS``)."""
        self._check(name)
        self._values[name] += by

    def __getitem__(self, name: str) -> int:
        self._check(name)
        return self._values[name]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self._values.items())

    def snapshot(self) -> dict[str, int]:
        return dict(self._values)

    def render(self) -> str:
        """``cat /proc/net/xfrm_stat``."""
        return "".join(f"{name:<24}\t{value}\n" for name, value in self._values.items())
