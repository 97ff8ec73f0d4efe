"""Resumable MD5/SHA-1/SHA-224/SHA-256 against published vectors and hashlib/hmac."""

from __future__ import annotations

import hashlib
import hmac
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esplab.layers.hashstate import (
    ALGORITHMS,
    BLOCK_SIZE,
    compress,
    digest_size,
    finalize,
    hash_from_state,
    hmac_from_states,
    hmac_pad_blocks,
    hmac_precompute,
    initial_state,
    state_from_record_bytes,
    state_to_record_bytes,
    state_words,
    update,
)

LENGTHS = [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 1000]


def _message(n: int) -> bytes:
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


# --- known answers ----------------------------------------------------------


@pytest.mark.parametrize(
    ("alg", "expected"),
    [
        # RFC 1321 A.5
        ("md5", "900150983cd24fb0d6963f7d28e17f72"),
        # FIPS 180-4 examples (NIST CSRC "SHA_All.pdf"), message "abc"
        ("sha1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("sha224", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"),
        ("sha256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ],
)
def test_abc_vectors(alg: str, expected: str) -> None:
    assert finalize(alg, initial_state(alg), b"abc", 3).hex() == expected


@pytest.mark.parametrize(
    ("alg", "expected"),
    [
        # RFC 1321 3.3 (A..D as words)
        ("md5", (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)),
        # FIPS 180-4 5.3.1
        ("sha1", (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)),
        # FIPS 180-4 5.3.2
        (
            "sha224",
            (
                0xC1059ED8, 0x367CD507, 0x3070DD17, 0xF70E5939,
                0xFFC00B31, 0x68581511, 0x64F98FA7, 0xBEFA4FA4,
            ),
        ),
        # FIPS 180-4 5.3.3
        (
            "sha256",
            (
                0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
            ),
        ),
    ],
)  # fmt: skip
def test_initial_states(alg: str, expected: tuple[int, ...]) -> None:
    assert initial_state(alg) == expected
    assert state_words(alg) == len(expected)


@pytest.mark.parametrize(
    ("alg", "key", "data", "expected"),
    [
        # RFC 2202 test case 1
        ("md5", b"\x0b" * 16, b"Hi There", "9294727a3638bb1c13f48ef8158bfc9d"),
        ("sha1", b"\x0b" * 20, b"Hi There", "b617318655057264e28bc0b6fb378c8ef146be00"),
        # RFC 2202 test case 6: 80-byte key, longer than the block
        (
            "sha1",
            b"\xaa" * 80,
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "aa4ae5e15272d00e95705637ce8a3b55ed402112",
        ),
        # RFC 4231 test case 1
        (
            "sha224",
            b"\x0b" * 20,
            b"Hi There",
            "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22",
        ),
        (
            "sha256",
            b"\x0b" * 20,
            b"Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        ),
        # RFC 4231 test case 6: 131-byte key
        (
            "sha256",
            b"\xaa" * 131,
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        ),
    ],
)
def test_hmac_rfc_vectors(alg: str, key: bytes, data: bytes, expected: str) -> None:
    inner, outer = hmac_precompute(alg, key)
    assert hmac_from_states(alg, inner, outer, data).hex() == expected


def test_sha1_seed_in_record_format() -> None:
    # eip93.md 5.2: mainline seeds state_i_digest with the SHA constants copied as
    # u32 values, so H0 = 0x67452301 appears as 01 23 45 67.
    expected = bytes.fromhex("01234567 89abcdef fedcba98 76543210 f0e1d2c3") + bytes(12)
    assert state_to_record_bytes("sha1", initial_state("sha1")) == expected


# --- against hashlib / hmac ---------------------------------------------------


@pytest.mark.parametrize("alg", ALGORITHMS)
@pytest.mark.parametrize("length", LENGTHS)
def test_hash_matches_hashlib(alg: str, length: int) -> None:
    data = _message(length)
    assert finalize(alg, initial_state(alg), data, length) == hashlib.new(alg, data).digest()


@pytest.mark.parametrize("alg", ALGORITHMS)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("key_len", [0, 16, 20, 32, 64, 65, 100, 200])
def test_hmac_matches_hmac_module(alg: str, length: int, key_len: int) -> None:
    key = bytes((i * 13 + 1) & 0xFF for i in range(key_len))
    data = _message(length)
    inner, outer = hmac_precompute(alg, key)
    assert hmac_from_states(alg, inner, outer, data) == hmac.new(key, data, alg).digest()


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_resume_from_intermediate_state(alg: str) -> None:
    data = _message(300)
    state, rest = update(alg, initial_state(alg), data[:200])
    assert rest == data[192:200]
    assert finalize(alg, state, rest + data[200:], 300) == hashlib.new(alg, data).digest()
    assert hash_from_state(alg, state, 192, data[192:]) == hashlib.new(alg, data).digest()


@settings(max_examples=60, database=None, deadline=None)
@given(
    alg=st.sampled_from(ALGORITHMS),
    key=st.binary(max_size=200),
    data=st.binary(max_size=400),
)
def test_hmac_property(alg: str, key: bytes, data: bytes) -> None:
    inner, outer = hmac_precompute(alg, key)
    assert hmac_from_states(alg, inner, outer, data) == hmac.new(key, data, alg).digest()


@settings(max_examples=60, database=None, deadline=None)
@given(alg=st.sampled_from(ALGORITHMS), data=st.binary(max_size=400), cut=st.integers(0, 6))
def test_split_property(alg: str, data: bytes, cut: int) -> None:
    done = min(cut * BLOCK_SIZE, len(data) - len(data) % BLOCK_SIZE)
    state = initial_state(alg)
    for offset in range(0, done, BLOCK_SIZE):
        state = compress(alg, state, data[offset : offset + BLOCK_SIZE])
    assert finalize(alg, state, data[done:], len(data)) == hashlib.new(alg, data).digest()


# --- the engine's record format (eip93.md 5.2) ------------------------------


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_record_bytes_are_le_words(alg: str) -> None:
    inner, _outer = hmac_precompute(alg, b"key")
    record = state_to_record_bytes(alg, inner)
    n = state_words(alg)
    assert len(record) == 32
    assert record[: 4 * n] == struct.pack(f"<{n}I", *inner)
    assert record[4 * n :] == bytes(32 - 4 * n)
    # SHA: the big-endian serialisation with every 4-byte group reversed.
    big = struct.pack(f">{n}I", *inner)
    assert record[: 4 * n] == b"".join(big[i : i + 4][::-1] for i in range(0, 4 * n, 4))
    assert state_from_record_bytes(alg, record) == inner


def test_md5_record_is_normal_byte_layout() -> None:
    # eip93.md 5.2: for MD5 the LE words equal the usual serialisation, so a
    # finished MD5 digest read as a record gives back the state it came from.
    digest = hashlib.md5(b"abc").digest()
    state = state_from_record_bytes("md5", digest)
    assert state_to_record_bytes("md5", state)[:16] == digest


def test_digest_sizes() -> None:
    assert [digest_size(a) for a in ALGORITHMS] == [16, 20, 28, 32]


# --- errors ------------------------------------------------------------------


def test_unknown_algorithm() -> None:
    with pytest.raises(ValueError, match=r"unknown hash algorithm 'sha512'; valid: md5, sha1"):
        initial_state("sha512")


def test_bad_block_and_length() -> None:
    with pytest.raises(ValueError, match="block of 63 bytes"):
        compress("sha1", initial_state("sha1"), bytes(63))
    with pytest.raises(ValueError, match="before the tail"):
        finalize("sha1", initial_state("sha1"), b"abc", 10)
    with pytest.raises(ValueError, match="state of 4 words"):
        compress("sha1", initial_state("md5"), bytes(64))
    with pytest.raises(ValueError, match="needs 20 bytes"):
        state_from_record_bytes("sha1", bytes(16))


@pytest.mark.parametrize("alg", ALGORITHMS)
@pytest.mark.parametrize("key_len", [0, 20, 64, 65, 131])
def test_hmac_pad_blocks_are_rfc_2104(alg: str, key_len: int) -> None:
    # RFC 2104: a key longer than the block is hashed first; then zero-padded to 64 bytes
    # and xored with 0x36 / 0x5c.
    key = bytes(range(key_len))
    short = hashlib.new(alg, key).digest() if key_len > BLOCK_SIZE else key
    padded = short.ljust(BLOCK_SIZE, b"\x00")
    assert hmac_pad_blocks(alg, key) == (
        bytes(b ^ 0x36 for b in padded),
        bytes(b ^ 0x5C for b in padded),
    )
