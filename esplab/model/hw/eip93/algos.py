"""The EIP-93ies algorithm blocks: DES/3DES/AES in ECB, CBC and CTR, and the hash unit.

Ciphers run on ``cryptography``. A :class:`BlockCipher` is keyed once and keeps
running contexts; a CBC packet with its own IV is fed to the running context by
folding ``iv ^ last block`` into the first block, which gives exactly the bytes a
fresh context would (building a context costs far more than running one).

The hash unit continues MD5/SHA-1/SHA-224/SHA-256 from the raw chaining words it
finds in an SA or state record (eip93.md 5). ``hashlib`` cannot be started from
arbitrary words, so the reference computation is :mod:`esplab.layers.hashstate`
(pure Python). :class:`HashResume` is a speed cache on top: chaining states whose
one-block preimage is known (the HMAC ipad/opad blocks a driver programs, or the
standard initial value) map to a ``hashlib`` object in exactly that state. Lookups
are by the words read from memory, so a record with other words (byte-swapped, say)
misses the cache and runs through ``hashstate``: the results are identical either way.
"""

from __future__ import annotations

import hashlib
import random
import struct
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from esplab.layers import hashstate

try:
    from cryptography.hazmat.decrepit.ciphers import algorithms as _legacy
except ImportError:  # pragma: no cover - cryptography < 43 keeps TripleDES in primitives
    _legacy = algorithms  # type: ignore[assignment,misc,unused-ignore]

__all__ = [
    "DIGEST_WORDS",
    "BlockCipher",
    "HashResume",
    "Prng",
]

_U32 = 0xFFFFFFFF

#: Digest size in 32-bit words per hashstate name (eip93.md 3.2 digest_length).
DIGEST_WORDS = {alg: hashstate.digest_size(alg) // 4 for alg in hashstate.ALGORITHMS}


class BlockCipher:
    """DES, 3DES or AES keyed once, with running ECB and CBC contexts.

    ``cipher`` is the sa_cmd0 code (0 DES, 1 3DES, 3 AES). DES runs as EDE triple
    DES with one key three times, which is DES by construction.
    """

    __slots__ = (
        "_algo",
        "_cbc_dec",
        "_cbc_enc",
        "_ecb_dec",
        "_ecb_enc",
        "_last_dec",
        "_last_enc",
        "block",
    )

    def __init__(self, cipher: int, key: bytes) -> None:
        algo: Any
        if cipher == 3:
            algo = algorithms.AES(key)
        elif cipher == 1:
            algo = _legacy.TripleDES(key)
        else:
            algo = _legacy.TripleDES(key * 3)
        self._algo = algo
        self.block = 16 if cipher == 3 else 8
        zero = bytes(self.block)
        self._cbc_enc: CipherContext = Cipher(algo, modes.CBC(zero)).encryptor()
        self._cbc_dec: CipherContext = Cipher(algo, modes.CBC(zero)).decryptor()
        self._ecb_enc: CipherContext = Cipher(algo, modes.ECB()).encryptor()
        self._ecb_dec: CipherContext = Cipher(algo, modes.ECB()).decryptor()
        self._last_enc = 0
        self._last_dec = 0

    def ecb_encrypt(self, data: bytes) -> bytes:
        return self._ecb_enc.update(data)

    def ecb_decrypt(self, data: bytes) -> bytes:
        return self._ecb_dec.update(data)

    def cbc_encrypt(self, iv: bytes, data: bytes) -> bytes:
        """CBC with ``iv`` over whole blocks (the caller checked the length); no blocks in,
        none out, and the running context stays as it was."""
        if not data:
            return b""
        bs = self.block
        first = int.from_bytes(data[:bs], "big") ^ int.from_bytes(iv, "big") ^ self._last_enc
        out = self._cbc_enc.update(first.to_bytes(bs, "big") + data[bs:])
        self._last_enc = int.from_bytes(out[-bs:], "big")
        return out

    def cbc_decrypt(self, iv: bytes, data: bytes) -> bytes:
        if not data:
            return b""
        bs = self.block
        out = self._cbc_dec.update(data)
        fix = int.from_bytes(iv, "big") ^ self._last_dec
        self._last_dec = int.from_bytes(data[-bs:], "big")
        if not fix:
            return out
        return (int.from_bytes(out[:bs], "big") ^ fix).to_bytes(bs, "big") + out[bs:]

    def ctr(self, counter: bytes, data: bytes) -> tuple[bytes, bytes]:
        """CTR from the counter block ``counter``; returns (output, next counter block).

        Only the low 32-bit big-endian word counts, and it wraps without carry into
        the rest of the block (eip93.md 3.4, 7.16): a run across the wrap restarts
        from the same upper bytes.
        """
        bs = self.block
        blocks = -(-len(data) // bs)
        low = int.from_bytes(counter[-4:], "big")
        upper = counter[:-4]
        room = (1 << 32) - low
        if blocks <= room:
            out = Cipher(self._algo, modes.CTR(counter)).encryptor().update(data)
        else:
            cut = room * bs
            first = Cipher(self._algo, modes.CTR(counter)).encryptor().update(data[:cut])
            rest, _ = self.ctr(upper + bytes(4), data[cut:])
            out = first + rest
        return out, upper + ((low + blocks) & _U32).to_bytes(4, "big")


@dataclass
class HashResume:
    """Chaining states ``hashlib`` can continue: a speed cache for the hash unit.

    Keys are (algorithm, state words, bytes already hashed); values are hashlib
    objects in exactly that state. :meth:`learn` adds the state after one 64-byte
    block, computing it with ``hashstate`` so the cache can never disagree with it.
    """

    _known: dict[tuple[str, tuple[int, ...], int], Any] = field(default_factory=dict)

    def learn(self, alg: str, block: bytes) -> tuple[int, ...]:
        """Remember the state after ``block``; returns its words."""
        state = hashstate.compress(alg, hashstate.initial_state(alg), block)
        self._known.setdefault((alg, state, hashstate.BLOCK_SIZE), hashlib.new(alg, block))
        return state

    def resume(self, alg: str, state: tuple[int, ...], count: int) -> Any | None:
        """A hashlib object in this state (a fresh copy is the caller's), or None."""
        known = self._known.get((alg, state, count))
        if known is not None:
            return known
        if count == 0 and state == hashstate.initial_state(alg):
            return hashlib.new(alg)
        return None

    def digest(self, alg: str, state: tuple[int, ...], count: int, data: bytes) -> bytes:
        """Standard digest of a message whose first ``count`` bytes are in ``state``."""
        known = self.resume(alg, state, count)
        if known is not None:
            h = known.copy()
            h.update(data)
            return bytes(h.digest())
        return hashstate.finalize(alg, state, data, count + len(data))

    def final_words(
        self, alg: str, state: tuple[int, ...], count: int, data: bytes
    ) -> tuple[int, ...]:
        """Final chaining words (what the engine saves to ``state_i_digest``)."""
        if alg != "sha224":
            known = self.resume(alg, state, count)
            if known is not None:
                h = known.copy()
                h.update(data)
                out = h.digest()
                return struct.unpack(f"{'<' if alg == 'md5' else '>'}{len(out) // 4}I", out)
        return hashstate.finalize_words(alg, state, data, count + len(data))


@dataclass
class Prng:
    """The engine's IV source (``iv_source`` 3).

    The real PRNG (ANSI X9.31-like, eip93.md 8.10) cannot be reproduced, so IVs come
    from a generator seeded by the session [U] iv-prng. ``pin`` sets the exact IV of
    the job whose input starts at bus address ``at``, so a lab can match another
    datapath byte for byte; a pin is used once.
    """

    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _pinned: dict[int, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def pin(self, iv: bytes, at: int) -> None:
        self._pinned[at] = bytes(iv)

    def unpin(self, at: int) -> None:
        self._pinned.pop(at, None)

    def take(self, size: int, at: int) -> bytes:
        """``size`` bytes for the job reading input at ``at``: its pin, else generated."""
        iv = self._pinned.pop(at, None) if self._pinned else None
        if iv is not None:
            return iv[:size].ljust(size, b"\x00")
        return self._rng.randbytes(size)
