"""The ESN form of the replay bitmap, as Linux keeps and lists it."""

from __future__ import annotations

from esplab.model.kernel.esp.replay import circular_bitmap, shifted_bitmap


def test_the_listed_esn_bitmap_is_linuxs_circular_one() -> None:
    # Received 1, 40, 0xfffffff0, 0xffffffff, 0x1_00000001, 0x1_00000002 with an ESN
    # window of 32: Linux 6.12 lists "seq-hi 0x1, seq 0x2" and the word 40008003
    # (tests/kernel/ esn-wrap-running); the model's shifted bitmap is bits 0, 1, 3, 18.
    assert circular_bitmap(0x0004000B, 2, 32) == 0x40008003
    assert shifted_bitmap(0x40008003, 2, 32) == 0x0004000B


def test_both_forms_hold_the_same_bits_for_any_window() -> None:
    for window, seq, bits in ((64, 70, 0xF0F0_0000_0F0F), (300, 9, 0x1_0000_0003), (32, 0, 1)):
        assert shifted_bitmap(circular_bitmap(bits, seq, window), seq, window) == bits
