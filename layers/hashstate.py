"""Resumable MD5, SHA-1, SHA-224 and SHA-256 for the EIP-93 hash-state words.

The EIP-93 keeps HMAC and partial-hash state as raw chaining words: the SA record's
``sa_i_digest``/``sa_o_digest`` hold the state after one key-xor-pad block, and the
state record's ``state_i_digest`` holds an intermediate digest with its byte count
(eip93.md sections 3.1, 3.4 and 5). ``hashlib`` can neither expose nor resume such a
state, so this module implements the compression functions of RFC 1321 (MD5) and
FIPS 180-4 (SHA-1, SHA-224, SHA-256) directly, in pure Python.

A *state* is a tuple of 32-bit words: A..D for MD5, H0..H4 for SHA-1 and H0..H7 for
SHA-224/SHA-256 (SHA-224 keeps all eight words until it is finalised). Algorithms are
named as in ``hashlib``: ``"md5"``, ``"sha1"``, ``"sha224"``, ``"sha256"``.

In memory the engine stores every state word as a little-endian u32 (eip93.md 5.2);
:func:`state_to_record_bytes` and :func:`state_from_record_bytes` convert.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

__all__ = [
    "ALGORITHMS",
    "BLOCK_SIZE",
    "RECORD_DIGEST_SIZE",
    "State",
    "compress",
    "digest_bytes",
    "digest_size",
    "finalize",
    "finalize_words",
    "hash_from_state",
    "hmac_from_states",
    "hmac_pad_blocks",
    "hmac_precompute",
    "initial_state",
    "state_from_record_bytes",
    "state_to_record_bytes",
    "state_words",
    "update",
]

State = tuple[int, ...]

ALGORITHMS: tuple[str, ...] = ("md5", "sha1", "sha224", "sha256")
BLOCK_SIZE = 64  # bytes; the same for all four algorithms
RECORD_DIGEST_SIZE = 32  # sa_i_digest, sa_o_digest and state_i_digest are 8 words

_MASK = 0xFFFFFFFF


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & _MASK


def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & _MASK


def _primes(count: int) -> list[int]:
    found: list[int] = []
    candidate = 2
    while len(found) < count:
        if all(candidate % p for p in found if p * p <= candidate):
            found.append(candidate)
        candidate += 1
    return found


def _icbrt(n: int) -> int:
    """Largest integer whose cube does not exceed ``n``."""
    x = 1 << ((n.bit_length() + 2) // 3)
    while True:
        y = (2 * x + n // (x * x)) // 3
        if y >= x:
            break
        x = y
    while x * x * x > n:
        x -= 1
    while (x + 1) ** 3 <= n:
        x += 1
    return x


# --- MD5 (RFC 1321) ---------------------------------------------------------

_MD5_INIT: State = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
# RFC 1321 3.4: T[i] = floor(2**32 * abs(sin(i))), i = 1..64.
_MD5_T = [int(abs(math.sin(i)) * 2**32) & _MASK for i in range(1, 65)]
_MD5_SHIFTS = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4


def _md5_compress(state: State, block: bytes) -> State:
    x = struct.unpack("<16I", block)
    a, b, c, d = state
    for i in range(64):
        if i < 16:
            f = (b & c) | (~b & d)
            g = i
        elif i < 32:
            f = (d & b) | (~d & c)
            g = (5 * i + 1) % 16
        elif i < 48:
            f = b ^ c ^ d
            g = (3 * i + 5) % 16
        else:
            f = c ^ (b | (~d & _MASK))
            g = (7 * i) % 16
        f = (f + a + _MD5_T[i] + x[g]) & _MASK
        a, d, c = d, c, b
        b = (b + _rotl(f, _MD5_SHIFTS[i])) & _MASK
    return (
        (state[0] + a) & _MASK,
        (state[1] + b) & _MASK,
        (state[2] + c) & _MASK,
        (state[3] + d) & _MASK,
    )


# --- SHA-1 (FIPS 180-4 6.1) -------------------------------------------------

_SHA1_INIT: State = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)


def _sha1_compress(state: State, block: bytes) -> State:
    w = list(struct.unpack(">16I", block))
    for t in range(16, 80):
        w.append(_rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1))
    a, b, c, d, e = state
    for t in range(80):
        if t < 20:
            f, k = (b & c) | (~b & d), 0x5A827999
        elif t < 40:
            f, k = b ^ c ^ d, 0x6ED9EBA1
        elif t < 60:
            f, k = (b & c) | (b & d) | (c & d), 0x8F1BBCDC
        else:
            f, k = b ^ c ^ d, 0xCA62C1D6
        temp = (_rotl(a, 5) + (f & _MASK) + e + k + w[t]) & _MASK
        a, b, c, d, e = temp, a, _rotl(b, 30), c, d
    return tuple((s + v) & _MASK for s, v in zip(state, (a, b, c, d, e), strict=True))


# --- SHA-224 / SHA-256 (FIPS 180-4 6.2, 6.3) --------------------------------

_PRIMES = _primes(64)
# FIPS 180-4 4.2.2: first 32 bits of the fractional parts of the cube roots of the
# first 64 primes.
_SHA256_K = [_icbrt(p << 96) & _MASK for p in _PRIMES]
# FIPS 180-4 5.3.3: first 32 bits of the fractional parts of the square roots of the
# first 8 primes.
_SHA256_INIT: State = tuple(math.isqrt(p << 64) & _MASK for p in _PRIMES[:8])
# FIPS 180-4 5.3.2: second 32 bits of the fractional parts of the square roots of the
# 9th to 16th primes.
_SHA224_INIT: State = tuple(math.isqrt(p << 128) & _MASK for p in _PRIMES[8:16])


def _sha256_compress(state: State, block: bytes) -> State:
    w = list(struct.unpack(">16I", block))
    for t in range(16, 64):
        s0 = _rotr(w[t - 15], 7) ^ _rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
        s1 = _rotr(w[t - 2], 17) ^ _rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
        w.append((w[t - 16] + s0 + w[t - 7] + s1) & _MASK)
    a, b, c, d, e, f, g, h = state
    for t in range(64):
        big_s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        ch = (e & f) ^ (~e & g)
        t1 = (h + big_s1 + ch + _SHA256_K[t] + w[t]) & _MASK
        big_s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        maj = (a & b) ^ (a & c) ^ (b & c)
        t2 = (big_s0 + maj) & _MASK
        a, b, c, d, e, f, g, h = (t1 + t2) & _MASK, a, b, c, (d + t1) & _MASK, e, f, g
    return tuple((s + v) & _MASK for s, v in zip(state, (a, b, c, d, e, f, g, h), strict=True))


# --- table ------------------------------------------------------------------

# name -> (initial state, compression function, digest bytes, big-endian words?)
_ALGS: dict[str, tuple[State, Callable[[State, bytes], State], int, bool]] = {
    "md5": (_MD5_INIT, _md5_compress, 16, False),
    "sha1": (_SHA1_INIT, _sha1_compress, 20, True),
    "sha224": (_SHA224_INIT, _sha256_compress, 28, True),
    "sha256": (_SHA256_INIT, _sha256_compress, 32, True),
}


def _alg(alg: str) -> tuple[State, Callable[[State, bytes], State], int, bool]:
    try:
        return _ALGS[alg]
    except KeyError:
        raise ValueError(
            f"unknown hash algorithm {alg!r}; valid: {', '.join(ALGORITHMS)}"
        ) from None


def _check_state(alg: str, state: Sequence[int]) -> State:
    words = state_words(alg)
    if len(state) != words:
        raise ValueError(f"{alg} state of {len(state)} words; valid: {words} words")
    if any(not 0 <= w <= _MASK for w in state):
        raise ValueError(f"{alg} state word out of range; valid: 0..0xFFFFFFFF")
    return tuple(state)


def digest_size(alg: str) -> int:
    """Digest length in bytes: 16, 20, 28 or 32."""
    return _alg(alg)[2]


def state_words(alg: str) -> int:
    """Number of 32-bit chaining words: 4 (MD5), 5 (SHA-1) or 8 (SHA-224/256)."""
    return len(_alg(alg)[0])


def initial_state(alg: str) -> State:
    """The standard initial chaining value (MD5 A..D, SHA H0..Hn-1)."""
    return _alg(alg)[0]


def compress(alg: str, state: Sequence[int], block: bytes) -> State:
    """Run the compression function over one 64-byte block."""
    if len(block) != BLOCK_SIZE:
        raise ValueError(f"block of {len(block)} bytes; valid: {BLOCK_SIZE} bytes")
    return _alg(alg)[1](_check_state(alg, state), bytes(block))


def update(alg: str, state: Sequence[int], data: bytes) -> tuple[State, bytes]:
    """Compress every whole block of ``data``; return the new state and the remainder."""
    func = _alg(alg)[1]
    current = _check_state(alg, state)
    whole = len(data) - len(data) % BLOCK_SIZE
    for offset in range(0, whole, BLOCK_SIZE):
        current = func(current, bytes(data[offset : offset + BLOCK_SIZE]))
    return current, bytes(data[whole:])


def finalize_words(alg: str, state: Sequence[int], tail: bytes, total_len: int) -> State:
    """The chaining words after absorbing ``tail`` and the padding (every word, SHA-224's
    eighth included: what an engine saves as a state).

    ``state`` must already cover the first ``total_len - len(tail)`` bytes of the
    message, which must be a whole number of blocks; ``total_len`` is the length of
    the whole message in bytes (it goes into the padding).
    """
    done = total_len - len(tail)
    if done < 0 or done % BLOCK_SIZE:
        raise ValueError(
            f"{done} bytes before the tail; valid: a non-negative multiple of {BLOCK_SIZE}"
        )
    big_endian = _alg(alg)[3]
    bit_len = (total_len * 8) & 0xFFFFFFFFFFFFFFFF
    pad_len = (BLOCK_SIZE - 1 - 8 - len(tail)) % BLOCK_SIZE
    length = struct.pack(">Q" if big_endian else "<Q", bit_len)
    padded = bytes(tail) + b"\x80" + b"\x00" * pad_len + length
    final, rest = update(alg, state, padded)
    assert not rest
    return final


def digest_bytes(alg: str, words: Sequence[int]) -> bytes:
    """The standard digest serialisation of final chaining words."""
    _init, _func, size, big_endian = _alg(alg)
    word = ">I" if big_endian else "<I"
    return b"".join(struct.pack(word, w) for w in words)[:size]


def finalize(alg: str, state: Sequence[int], tail: bytes, total_len: int) -> bytes:
    """Finish a hash: absorb ``tail``, pad, and serialise the digest (see
    :func:`finalize_words` for what ``state`` and ``total_len`` are)."""
    return digest_bytes(alg, finalize_words(alg, state, tail, total_len))


def hash_from_state(alg: str, state: Sequence[int], done_len: int, data: bytes) -> bytes:
    """Digest of a message whose first ``done_len`` bytes are already in ``state``."""
    return finalize(alg, state, data, done_len + len(data))


def hmac_precompute(alg: str, key: bytes) -> tuple[State, State]:
    """HMAC inner and outer states: the chaining value after key^ipad and key^opad.

    This is what a driver writes into ``sa_i_digest``/``sa_o_digest`` (eip93.md 5.1):
    a key longer than the block is hashed first, then zero-padded to 64 bytes.
    """
    init = initial_state(alg)
    ipad, opad = hmac_pad_blocks(alg, key)
    return compress(alg, init, ipad), compress(alg, init, opad)


def hmac_pad_blocks(alg: str, key: bytes) -> tuple[bytes, bytes]:
    """The key-xor-ipad and key-xor-opad blocks of HMAC (RFC 2104; eip93.md 5.1 steps
    1-2): a key longer than the block is hashed first, then zero-padded to 64 bytes."""
    if len(key) > BLOCK_SIZE:
        key = finalize(alg, initial_state(alg), key, len(key))
    padded = bytes(key).ljust(BLOCK_SIZE, b"\x00")
    return bytes(b ^ 0x36 for b in padded), bytes(b ^ 0x5C for b in padded)


def hmac_from_states(alg: str, inner: Sequence[int], outer: Sequence[int], message: bytes) -> bytes:
    """Full (untruncated) HMAC of ``message`` from precomputed inner/outer states.

    Both states already cover one 64-byte block (eip93.md 5.1 step 5).
    """
    inner_digest = hash_from_state(alg, inner, BLOCK_SIZE, message)
    return hash_from_state(alg, outer, BLOCK_SIZE, inner_digest)


def state_to_record_bytes(alg: str, state: Sequence[int]) -> bytes:
    """The 32 bytes the engine keeps for a state: each word as u32 LE, zero-filled.

    eip93.md 5.2: for SHA this is the big-endian serialisation with every 4-byte
    group reversed; for MD5 it equals the normal byte layout.
    """
    words = _check_state(alg, state)
    return struct.pack(f"<{len(words)}I", *words).ljust(RECORD_DIGEST_SIZE, b"\x00")


def state_from_record_bytes(alg: str, data: bytes) -> State:
    """Inverse of :func:`state_to_record_bytes`; bytes past the state are ignored."""
    words = state_words(alg)
    if len(data) < 4 * words:
        raise ValueError(f"{alg} state needs {4 * words} bytes; got {len(data)}")
    return tuple(struct.unpack_from(f"<{words}I", data))
