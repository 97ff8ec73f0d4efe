from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esplab.commands.hexinput import is_dump_line, parse_hex
from esplab.errors import DecodeError


def test_plain_hex_in_any_grouping() -> None:
    expect = bytes([0x10, 0x13, 0x3A, 0x13])
    assert parse_hex("10133a13") == expect
    assert parse_hex("10 13 3a 13") == expect
    assert parse_hex("10:13:3a:13") == expect
    # 0x + a string that is not exactly one word is bytes in order
    assert parse_hex("0x10133A1301\n") == expect + b"\x01"


def test_xxd_lines_drop_address_and_ascii() -> None:
    text = (
        '00000000: 1013 3a13 0111 0022 0001 0203 0405 0607  ..:...."........\n'
        "00000010: 0809                                     ..\n"
    )
    assert parse_hex(text) == bytes.fromhex("10133a13011100220001020304050607" + "0809")


def test_hexdump_c_lines() -> None:
    text = '00000000  10 13 3a 13 01 11 00 22  08 00 00 00 00 00 00 00  |..:...."........|\n'
    assert parse_hex(text) == bytes.fromhex("10133a13011100220800000000000000")


def test_word_dumps_are_little_endian() -> None:
    # u-boot `md.l` prints 32-bit words; the EN7581 is little-endian (eip93.md 5.2),
    # so the word 0x133A1310 (sa_cmd0, eip93.md 4.1) is the bytes 10 13 3a 13.
    text = '1fb70000: 133a1310 22001101 00000000 00000000    ..:..."........'
    assert parse_hex(text)[:8] == bytes.fromhex("10133a1301110022")
    assert parse_hex("0x133A1310 0x22001101") == bytes.fromhex("10133a1301110022")


def test_words_can_be_forced_either_way() -> None:
    assert parse_hex("133a1310", words=True) == bytes.fromhex("10133a13")
    assert parse_hex("1fb70000: 133a1310", words=False) == bytes.fromhex("133a1310")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "no hex digits"),
        ("10 1", "odd number of hex digits (3)"),
        ("10 zz", "'zz' is not hex"),
        ("0x", "has no digits"),
        ("123456789", "odd number"),
    ],
)
def test_bad_hex_names_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(DecodeError) as info:
        parse_hex(text)
    assert fragment in str(info.value)


def test_too_long_word_when_reading_words() -> None:
    with pytest.raises(DecodeError, match="longer than a 32-bit word"):
        parse_hex("1234567890", words=True)


@given(st.binary(max_size=64))
def test_any_bytes_round_trip_through_plain_hex(data: bytes) -> None:
    if data:
        assert parse_hex(data.hex()) == data
        assert parse_hex(" ".join(f"{b:02x}" for b in data)) == data


@pytest.mark.parametrize(
    ("line", "dump"),
    [
        ('08000000: 133a1310 22001101 03020100 07060504    ..:..";..#', True),  # u-boot md.l
        ('00000000: 1013 3a13 0111 0022  ..:...."', True),  # xxd
        (
            "00000000  10 13 3a 13 01 11 00 22  08 00 00 00 00 00 00 00  |..:....;#.......|",
            True,
        ),  # hexdump -C
        ("0x1000: 10 13", True),
        ("send ap wan IP()", False),
        ("ip xfrm state", False),
        ("decode sa 10133a13", False),
        ("ab: xyz", False),
    ],
)
def test_dump_lines_are_told_from_commands(line: str, dump: bool) -> None:
    assert is_dump_line(line) is dump
