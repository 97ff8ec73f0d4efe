"""Anti-replay window: RFC 4303 3.4.3 and Appendix A, as Linux xfrm_replay.c does it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esplab.errors import InvalidValue
from esplab.model.kernel.esp.replay import MAX_REPLAY_WINDOW, ReplayVerdict, ReplayWindow

OK, DUP, OLD, ZERO = (
    ReplayVerdict.OK,
    ReplayVerdict.DUPLICATE,
    ReplayVerdict.TOO_OLD,
    ReplayVerdict.ZERO,
)


def receive(w: ReplayWindow, seq: int) -> ReplayVerdict:
    verdict = w.check(seq)
    if verdict is OK:
        w.advance(seq)
    return verdict


def test_window_zero_checks_nothing():
    # Kernel: replay_window 0 returns before the seq == 0 test.
    w = ReplayWindow(0)
    assert [receive(w, s) for s in (5, 5, 1, 0, 0)] == [OK] * 5
    assert (w.top, w.bitmap) == (0, 0)


def test_sequence_zero_is_rejected():
    w = ReplayWindow(32)
    assert w.check(0) is ZERO
    receive(w, 100)
    assert w.check(0) is ZERO


def test_duplicate_too_old_and_out_of_order():
    w = ReplayWindow(32)
    assert receive(w, 1) is OK
    assert receive(w, 1) is DUP
    assert receive(w, 40) is OK
    assert receive(w, 9) is OK  # 40 - 9 = 31 < 32: inside, not yet seen
    assert receive(w, 9) is DUP
    assert receive(w, 8) is OLD  # 40 - 8 = 32: left of the window
    assert receive(w, 39) is OK
    assert w.top == 40
    assert w.bitmap == (1 << 0) | (1 << 1) | (1 << 31)
    assert w.received(39) and w.received(9) and not w.received(10) and not w.received(8)


def test_check_does_not_change_the_window():
    w = ReplayWindow(8)
    receive(w, 3)
    before = (w.top, w.bitmap)
    for s in (1, 2, 3, 4, 100, 0):
        w.check(s)
    assert (w.top, w.bitmap) == before


def test_jump_beyond_the_window_resets_the_bitmap():
    w = ReplayWindow(16)
    for s in range(1, 17):
        receive(w, s)
    assert w.bitmap == 0xFFFF
    receive(w, 100)
    assert (w.top, w.bitmap) == (100, 1)
    assert receive(w, 84) is OLD
    assert receive(w, 85) is OK


def test_largest_window():
    w = ReplayWindow(MAX_REPLAY_WINDOW)
    receive(w, 5000)
    assert receive(w, 5000 - 4095) is OK
    assert receive(w, 5000 - 4096) is OLD
    assert MAX_REPLAY_WINDOW == 4096


@pytest.mark.parametrize("size", [-1, 4097, 1 << 20])
def test_window_size_limits(size):
    with pytest.raises(InvalidValue, match=f"replay window of {size} packets"):
        ReplayWindow(size)


def test_esn_needs_a_window():
    with pytest.raises(InvalidValue, match="ESN with replay window 0"):
        ReplayWindow(0, esn=True)


def test_without_esn_the_wire_value_is_the_number():
    w = ReplayWindow(32)
    w.top = 0xFFFFFFF0
    assert w.infer(3) == 3
    assert w.seq_hi == 0 and w.seq == 0xFFFFFFF0


# --------------------------------------------------------------------------- ESN


def test_esn_case_a_next_subspace():
    # RFC 4303 A2.2 case A: Tl >= W - 1; a number below the bottom is in Th + 1.
    w = ReplayWindow(64, esn=True, top=(7 << 32) | 0xFFFFFFF0)
    assert w.infer(0xFFFFFFF0 - 63) == (7 << 32) | (0xFFFFFFF0 - 63)  # the bottom itself
    assert w.infer(0xFFFFFFF0 - 64) == (8 << 32) | (0xFFFFFFF0 - 64)
    assert w.infer(2) == (8 << 32) | 2
    assert w.infer(0xFFFFFFFF) == (7 << 32) | 0xFFFFFFFF


def test_esn_case_b_previous_subspace():
    # Case B: Tl < W - 1, the window straddles 2^32; a number at or above the
    # (wrapped) bottom is in Th - 1.
    w = ReplayWindow(64, esn=True, top=(8 << 32) | 10)
    assert w.infer(0xFFFFFFFF) == (7 << 32) | 0xFFFFFFFF
    assert w.infer(0xFFFFFFCB) == (7 << 32) | 0xFFFFFFCB  # bottom = 10 - 63 (mod 2^32)
    assert w.infer(0xFFFFFFCA) == (8 << 32) | 0xFFFFFFCA
    assert w.infer(11) == (8 << 32) | 11


def test_esn_rollover_receive():
    w = ReplayWindow(32, esn=True)
    w.top = 0xFFFFFFFD
    seqs = [w.infer(lo) for lo in (0xFFFFFFFE, 0xFFFFFFFF, 0, 1, 2)]
    assert seqs == [0xFFFFFFFE, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, (1 << 32) + 2]
    for s in seqs:
        assert receive(w, w.infer(s & 0xFFFFFFFF)) is OK
    assert (w.seq_hi, w.seq) == (1, 2)
    # A late packet from before the boundary is still placed in the old subspace.
    assert w.infer(0xFFFFFFFE) == 0xFFFFFFFE
    assert receive(w, w.infer(0xFFFFFFFE)) is DUP
    assert receive(w, w.infer(0xFFFFFFF0)) is OK
    # Below the window's bottom a number is read as belonging to the current round
    # (far ahead), never as too old: RFC 4303 A2.2; its ICV check then fails.
    assert w.infer(0xFFFFFFE0) == (1 << 32) | 0xFFFFFFE0


def test_esn_zero_rejected_only_as_the_64_bit_zero():
    w = ReplayWindow(32, esn=True)
    assert w.check(w.infer(0)) is ZERO  # Th = 0 and the window has not filled
    w.top = 0xFFFFFFF0
    assert w.infer(0) == 1 << 32
    assert w.check(w.infer(0)) is OK


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(1, 200),
    top=st.integers(0, (1 << 64) - 1),
    ahead=st.integers(0, (1 << 32) - 1),
)
def test_esn_inference_recovers_any_number_it_can(size, top, ahead):
    # The inference is exact for every number in [top - W + 1, top - W + 2^32].
    seq = top - size + 1 + ahead
    if not 0 < seq < 1 << 64 or (top >> 32) == 0xFFFFFFFF:
        return
    w = ReplayWindow(size, esn=True, top=top)
    assert w.infer(seq & 0xFFFFFFFF) == seq


# --------------------------------------------------------------------------- reference model


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 96),
    steps=st.lists(st.tuples(st.integers(0, 300), st.booleans()), max_size=120),
)
def test_window_matches_a_set_model(size, steps):
    """The window agrees with the plain definition: a set of received numbers."""
    w = ReplayWindow(size)
    seen: set[int] = set()
    top = 0
    for seq, authentic in steps:
        if size == 0:
            expected = OK
        elif seq == 0:
            expected = ZERO
        elif seq > top:
            expected = OK
        elif top - seq >= size:
            expected = OLD
        elif seq in seen:
            expected = DUP
        else:
            expected = OK
        assert w.check(seq) is expected
        if expected is OK and authentic:  # advance only after the ICV verified
            w.advance(seq)
            if size:
                seen.add(seq)
                top = max(top, seq)
    assert w.top == top
    assert w.bitmap == sum(1 << (top - s) for s in seen if top - s < size)


def test_reset():
    w = ReplayWindow(8)
    receive(w, 5)
    w.reset()
    assert (w.top, w.bitmap) == (0, 0)
    assert w.check(5) is OK
