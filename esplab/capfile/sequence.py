"""Sequence-number analysis for one SA: what the wire shows, and what the kernel would do.

Two views of the same numbers:

* the **wire view** follows every packet of the SA, authenticated or not: gaps
  (numbers never seen), duplicates, late arrivals that fill a gap, a 32-bit
  counter that wrapped without ESN, and sequence number 0 (never sent, RFC 4303
  3.3.3). It remembers the last :data:`TRACK_WINDOW` numbers below the highest.
* the **kernel view** is the SA's own anti-replay window
  (:class:`esplab.model.kernel.esp.replay.ReplayWindow`, RFC 4303 3.4.3, airoha-dsa-xfrm.md
  3.9): it infers the ESN high half (RFC 4303 A2.2) and advances only on packets
  that authenticate, so "too old" means the kernel would drop the packet
  (``XfrmInStateSeqError``). Without a window the kernel checks nothing.

An ESN rollover is the inferred high half going up (a new 2^32 subspace). The
kernel's window at the start of a capture is unknown: the high half of the first
packets is found by the decoder (``start_at``), the rest is inferred.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from esplab.model.kernel.esp.replay import ReplayVerdict, ReplayWindow

__all__ = [
    "DUPLICATE",
    "ESN_ROLLOVER",
    "EVENT_NAMES",
    "GAP",
    "LATE",
    "TOO_OLD",
    "TRACK_WINDOW",
    "WRAP",
    "ZERO",
    "SeqStats",
    "SeqTracker",
    "event_names",
]

GAP = 1  # numbers skipped before this one
DUPLICATE = 2  # this number was seen already (a replay on the wire)
LATE = 4  # below the highest, not seen before: reordered, fills a gap
TOO_OLD = 8  # left of the SA's replay window: the kernel drops it
ESN_ROLLOVER = 16  # the ESN high half moved up
WRAP = 32  # a 32-bit counter started again near 0 without ESN
ZERO = 64  # sequence number 0 is never sent

#: Event bit -> the word used in reports and JSON.
EVENT_NAMES: Mapping[int, str] = MappingProxyType(
    {
        GAP: "gap",
        DUPLICATE: "duplicate",
        LATE: "late",
        TOO_OLD: "out-of-window",
        ESN_ROLLOVER: "esn-rollover",
        WRAP: "wrapped-without-esn",
        ZERO: "seq-zero",
    }
)

#: How many numbers below the highest the wire view remembers.
TRACK_WINDOW = 4096
_TRACK_MASK = (1 << TRACK_WINDOW) - 1
_U32 = 0xFFFFFFFF
# A jump from the top of the 32-bit space to its bottom counts as a wrap.
_WRAP_HIGH, _WRAP_LOW = 0xFFFF0000, 0x10000


def event_names(events: int, gap: int = 0) -> list[str]:
    """``["gap:3", "late"]`` for an event mask (the gap size after ``gap:``)."""
    out: list[str] = []
    for bit, name in EVENT_NAMES.items():
        if events & bit:
            out.append(f"{name}:{gap}" if bit == GAP else name)
    return out


@dataclass
class SeqStats:
    """The totals of one SA's sequence numbers."""

    packets: int = 0
    first: int | None = None
    highest: int | None = None
    gaps: int = 0  # gap events
    missing: int = 0  # numbers below the highest never seen (late arrivals subtracted)
    duplicates: int = 0
    late: int = 0
    too_old: int = 0
    wraps: int = 0
    zeros: int = 0
    rollovers: list[tuple[int, int]] = field(default_factory=list)  # (frame, new high half)

    def as_dict(self) -> dict[str, object]:
        return {
            "first": self.first,
            "highest": self.highest,
            "gaps": self.gaps,
            "missing": self.missing,
            "duplicates": self.duplicates,
            "late": self.late,
            "out_of_window": self.too_old,
            "wraps_without_esn": self.wraps,
            "seq_zero": self.zeros,
            "esn_rollovers": [{"frame": f, "seq_hi": hi} for f, hi in self.rollovers],
        }


class SeqTracker:
    """Both views for one SA (module docstring). ``infer`` first, then ``observe``."""

    __slots__ = ("_bitmap", "_esn", "_kernel", "_max_hi", "_top", "stats")

    def __init__(self, esn: bool, window: int, seq_hi: int = 0) -> None:
        self._esn = esn
        if esn:
            self._kernel: ReplayWindow | None = ReplayWindow(window or 32, True)
            # An ip -s xfrm state dump gave the high half; the low half is unknown.
            self._kernel.top = seq_hi << 32
        else:
            self._kernel = ReplayWindow(window, False) if window else None
        self._max_hi = seq_hi
        self._top = -1
        self._bitmap = 0
        self.stats = SeqStats()

    def start_at(self, seq: int) -> None:
        """Place an ESN window just below ``seq`` (decode found the high half of the
        first packet by trial); the next :meth:`observe` of ``seq`` then moves it."""
        if self._kernel is not None:
            self._kernel.top = max(seq - 1, 0)
            self._kernel.bitmap = 0
        self._max_hi = seq >> 32

    def infer(self, seq_lo: int) -> int:
        """The full (64-bit with ESN) sequence number of a 32-bit wire value."""
        if self._kernel is None or not self._esn:
            return seq_lo
        return self._kernel.infer(seq_lo)

    def observe(self, seq: int, frame: int, authenticated: bool) -> tuple[int, int]:
        """Account one packet; returns (event mask, gap size)."""
        st = self.stats
        st.packets += 1
        kernel = self._kernel
        if kernel is None and seq == self._top + 1 and seq >> 32 <= self._max_hi and seq:
            # The common case: the next number, no window to keep. Once the last
            # TRACK_WINDOW numbers were all seen, the bitmap stays _TRACK_MASK itself
            # (shifting and masking a 4096-bit number costs 0.2 us a packet).
            self._top = seq
            bitmap = self._bitmap
            if bitmap is not _TRACK_MASK:
                bitmap = ((bitmap << 1) | 1) & _TRACK_MASK
                self._bitmap = _TRACK_MASK if bitmap == _TRACK_MASK else bitmap
            if st.highest is None or seq > st.highest:
                st.highest = seq
            if st.first is None:
                st.first = seq
            return 0, 0
        return self._observe(seq, frame, authenticated)

    def _observe(self, seq: int, frame: int, authenticated: bool) -> tuple[int, int]:
        st = self.stats
        events, gap = 0, 0
        kernel = self._kernel
        if kernel is not None and kernel.check(seq) is ReplayVerdict.TOO_OLD:
            events |= TOO_OLD
            st.too_old += 1
        if authenticated and kernel is not None:
            kernel.advance(seq)
        if seq == 0:
            events |= ZERO
            st.zeros += 1
        top = self._top
        if top < 0:
            st.first = seq
            self._top, self._bitmap = seq, 1
        elif seq == top + 1:
            self._top, self._bitmap = seq, ((self._bitmap << 1) | 1) & _TRACK_MASK
        elif seq > top:
            gap = seq - top - 1
            events |= GAP
            st.gaps += 1
            st.missing += gap
            self._top = seq
            if gap < TRACK_WINDOW:
                self._bitmap = ((self._bitmap << (gap + 1)) | 1) & _TRACK_MASK
            else:
                self._bitmap = 1
        elif not self._esn and top >= _WRAP_HIGH and seq < _WRAP_LOW:
            events |= WRAP
            st.wraps += 1
            self._top, self._bitmap = seq, 1
        else:
            diff = top - seq
            if diff < TRACK_WINDOW and (self._bitmap >> diff) & 1:
                events |= DUPLICATE
                st.duplicates += 1
            else:
                events |= LATE
                st.late += 1
                if diff < TRACK_WINDOW:
                    self._bitmap |= 1 << diff
                if st.missing:
                    st.missing -= 1
        if st.highest is None or self._top > st.highest:
            st.highest = self._top
        hi = seq >> 32
        if hi > self._max_hi:
            self._max_hi = hi
            events |= ESN_ROLLOVER
            st.rollovers.append((frame, hi))
        return events, gap
