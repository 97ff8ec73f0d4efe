"""The hex-paste reader's bounds: its size limits and their messages, and a cost
linear in the paste (a dump of many lines after ``decode`` is joined once)."""

from __future__ import annotations

import time

import pytest

from esplab.batch import command_pieces
from esplab.commands.hexinput import MAX_PASTE_BYTES, MAX_PASTE_CHARS, parse_hex
from esplab.commands.session import Session
from esplab.errors import DecodeError


def test_the_largest_ip_packet_is_read() -> None:
    assert parse_hex("45" * MAX_PASTE_BYTES) == b"\x45" * MAX_PASTE_BYTES


def test_one_byte_more_is_refused_with_the_limit() -> None:
    with pytest.raises(DecodeError) as info:
        parse_hex("00" * (MAX_PASTE_BYTES + 1))
    assert str(info.value) == (
        "the paste gives 65,536 bytes; valid: up to 65,535 bytes (the largest IP packet); "
        "decode one record or packet at a time"
    )


def test_words_count_against_the_limit_too() -> None:
    words = " ".join(["0x00000000"] * (MAX_PASTE_BYTES // 4 + 1))
    with pytest.raises(DecodeError, match="the paste gives 65,536 bytes"):
        parse_hex(words)


def test_a_paste_past_the_character_limit_is_refused_before_it_is_read() -> None:
    with pytest.raises(DecodeError) as info:
        parse_hex(" " * (MAX_PASTE_CHARS + 1))
    assert str(info.value).startswith("the paste is 1,048,577 characters long; valid: up to")


def test_a_long_bad_group_is_shown_shortened() -> None:
    with pytest.raises(DecodeError) as info:
        parse_hex("zz" * 5000)
    message = str(info.value)
    assert len(message) < 200
    assert "(10000 characters)' is not hex (bad character 'z')" in message


def _joining(lines: int) -> float:
    text = "decode sa\n" + "\n".join(
        f"{16 * i:08x}: 00000000 00000000 00000000 00000000" for i in range(lines)
    )
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        pieces = command_pieces(text, ["ap"], ["decode"])
        best = min(best, time.perf_counter() - start)
    assert len(pieces) == 1 and pieces[0][1] is True and pieces[0][0].count("\n") == lines
    return best


def test_joining_a_long_dump_costs_time_linear_in_it() -> None:
    # Found by fuzzing: decode followed by a dump of 20,000 lines took 1.2 s, of 80,000
    # lines 13 s (each line copied the piece so far: 4 times the lines, 10 times the
    # time); now 4 times the lines take about 4 times as long.
    assert _joining(80_000) < 6 * _joining(20_000)


def test_decode_of_the_largest_paste_ends_in_bounded_time() -> None:
    session = Session()
    start = time.perf_counter()
    result = session.execute("decode IP 4500ffff" + "00" * (MAX_PASTE_BYTES - 4))
    assert time.perf_counter() - start < 5.0
    assert result.data["length"] == MAX_PASTE_BYTES
