"""The ESP anti-replay window (RFC 4303 3.4.3, Appendix A; Linux ``xfrm_replay.c``).

The window is kept in 64-bit sequence space: ``top`` is the highest sequence number
that has passed the ICV check, and bit *i* of ``bitmap`` says that ``top - i`` has been
received (bit 0 is ``top`` itself, as in the kernel's ``replay.bitmap``). Without ESN
the high half of ``top`` stays zero. With ESN, :meth:`ReplayWindow.infer` turns the
32 bits carried on the wire into the full number first (RFC 4303 A2.2).

Usage on receive: ``seq = w.infer(low)``; ``w.check(seq)``; verify the ICV; only then
``w.advance(seq)`` (RFC 4303 3.4.3: the window is updated only for packets that
authenticate).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from esplab.errors import InvalidValue

__all__ = [
    "MAX_REPLAY_WINDOW",
    "ReplayVerdict",
    "ReplayWindow",
    "circular_bitmap",
    "shifted_bitmap",
]

#: Largest window the kernel accepts: ``XFRMA_REPLAY_ESN_MAX`` (4096 bytes of netlink
#: attribute) caps ``bmp_len`` at 128 words of 32 bits.
MAX_REPLAY_WINDOW = 4096

_U32 = 0xFFFFFFFF


class ReplayVerdict(enum.Enum):
    """Outcome of :meth:`ReplayWindow.check`.

    Linux counts all three failures in ``XfrmInStateSeqError``; DUPLICATE also bumps
    the SA's ``replay`` statistic and TOO_OLD its ``replay_window`` statistic, while
    ZERO (sequence number 0, never sent, RFC 4303 3.3.3) bumps neither.
    """

    OK = "ok"
    DUPLICATE = "duplicate"
    TOO_OLD = "too-old"
    ZERO = "zero"


@dataclass
class ReplayWindow:
    """Anti-replay state for one inbound SA.

    ``size`` is the window in packets (``replay-window``); 0 disables the check
    entirely, as in the kernel (every sequence number, 0 included, is accepted).
    ESN needs a window on input: the kernel refuses ``flag esn`` with ``replay-window
    0`` (``xfrm_init_replay``: -EINVAL) unless the state is marked ``dir out``, since
    the high bits are inferred from it. ``outbound`` is that mark: an outbound ESN
    state keeps a window of 0 and sends 64-bit numbers (net/xfrm/xfrm_replay.c
    ``xfrm_init_replay``: ``replay_window == 0 && (!x->dir || x->dir ==
    XFRM_SA_DIR_IN)`` is EINVAL) [C].
    """

    size: int = 0
    esn: bool = False
    outbound: bool = False
    top: int = 0
    bitmap: int = 0
    _mask: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if not 0 <= self.size <= MAX_REPLAY_WINDOW:
            raise InvalidValue(
                f"replay window of {self.size} packets",
                valid=f"0 to {MAX_REPLAY_WINDOW} (0: no anti-replay check)",
            )
        if self.esn and self.size == 0 and not self.outbound:
            raise InvalidValue(
                "ESN with replay window 0",
                valid=f"1 to {MAX_REPLAY_WINDOW}, or a state marked dir out",
                hint="the kernel refuses flag esn without a window unless dir is out (EINVAL)",
            )
        self._mask = (1 << self.size) - 1

    @property
    def seq(self) -> int:
        """Low 32 bits of the highest authenticated number (kernel ``seq``)."""
        return self.top & _U32

    @property
    def seq_hi(self) -> int:
        """High 32 bits (kernel ``seq_hi``; always 0 without ESN)."""
        return self.top >> 32

    def infer(self, seq_lo: int) -> int:
        """The 64-bit sequence number for the 32 bits seen on the wire.

        Without ESN the number is the wire value. With ESN, RFC 4303 A2.2 (kernel
        ``xfrm_replay_seqhi``): with Tl, Th the halves of ``top`` and W the window,
        case A (Tl >= W - 1): a number below the window's bottom belongs to the next
        subspace (Th + 1); case B (the window straddles a 2^32 boundary): a number at
        or above the bottom belongs to the previous subspace (Th - 1). The high half
        wraps modulo 2^32 like the kernel's u32.
        """
        if not self.esn:
            return seq_lo
        top_lo = self.top & _U32
        hi = self.top >> 32
        bottom = (top_lo - self.size + 1) & _U32
        if top_lo >= self.size - 1:
            if seq_lo < bottom:
                hi = (hi + 1) & _U32
        elif seq_lo >= bottom:
            hi = (hi - 1) & _U32
        return (hi << 32) | seq_lo

    def check(self, seq: int) -> ReplayVerdict:
        """May a packet with this (full) sequence number be processed?

        Does not change the window. Kernel ``xfrm_replay_check_*``: numbers above
        ``top`` pass; numbers ``size`` or more below it are too old; the others pass
        unless their bit is set.
        """
        if not self.size:
            return ReplayVerdict.OK
        if seq == 0:
            # Legacy/bmp: a zero on the wire. ESN: the kernel rejects a zero low word
            # only while seq_hi is 0 and the window has not filled, i.e. exactly when
            # the inferred 64-bit number is 0.
            return ReplayVerdict.ZERO
        top = self.top
        if seq > top:
            return ReplayVerdict.OK
        diff = top - seq
        if diff >= self.size:
            return ReplayVerdict.TOO_OLD
        if (self.bitmap >> diff) & 1:
            return ReplayVerdict.DUPLICATE
        return ReplayVerdict.OK

    def advance(self, seq: int) -> None:
        """Record an authenticated packet (kernel ``xfrm_replay_advance*``)."""
        if not self.size:
            return
        top = self.top
        if seq > top:
            diff = seq - top
            self.bitmap = ((self.bitmap << diff) | 1) & self._mask if diff < self.size else 1
            self.top = seq
        else:
            diff = top - seq
            if diff < self.size:
                self.bitmap |= 1 << diff

    def received(self, seq: int) -> bool:
        """Whether ``seq`` is inside the window and marked as received."""
        diff = self.top - seq
        return 0 <= diff < self.size and bool((self.bitmap >> diff) & 1)

    def reset(self) -> None:
        """Forget everything (a new SA)."""
        self.top = 0
        self.bitmap = 0


def circular_bitmap(shifted: int, seq: int, window: int) -> int:
    """The bitmap of a window in its ESN form (``XFRMA_REPLAY_ESN_VAL``, used for ESN and
    for windows over 32) as Linux keeps and lists it: circular, sequence number ``s`` at
    bit ``(s - 1) % window`` (net/xfrm/xfrm_replay.c xfrm_replay_advance_bmp/_esn:
    ``bitnr = (pos + diff) % replay_window``, ``pos = (seq - 1) % replay_window``) [K].
    The model keeps it shifted (bit ``i`` is ``seq - i``, as the legacy 32-bit bitmap);
    ``seq`` is the low 32 bits of the highest number received. Numbers before it map
    back round the window (``pos - diff`` taken modulo the window), so the two forms
    hold the same bits. Exact for windows that divide 2^32 (a power of two): for
    another window the kernel's layout after the low half wraps depends on the order
    packets came in, which the model does not keep [D]."""
    out = 0
    for i in range(window):
        if shifted >> i & 1:
            out |= 1 << ((seq - 1 - i) % window)
    return out


def shifted_bitmap(circular: int, seq: int, window: int) -> int:
    """:func:`circular_bitmap` undone (a listed ESN bitmap read back)."""
    out = 0
    for i in range(window):
        if circular >> ((seq - 1 - i) % window) & 1:
            out |= 1 << i
    return out
