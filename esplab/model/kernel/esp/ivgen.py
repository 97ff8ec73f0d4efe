"""The kernel's IV generators for software ESP (``geniv``), seeded for reproducibility.

Linux never takes ESP IVs from a plain RNG: ``esp_output_tail`` (net/ipv4/esp4.c)
puts the packet's 64-bit sequence number, big-endian and right-aligned, in the
request IV, and the algorithm's IV generator turns it into the IV on the wire
(net/xfrm/xfrm_algo.c names one per algorithm):

* ``seqiv`` (crypto/seqiv.c; ``rfc4106(gcm(aes))``, ``rfc4543(gmac(aes))``,
  ``rfc3686(ctr(aes))``, ``rfc7539esp(chacha20,poly1305)``): IV = sequence number
  XOR salt.
* ``echainiv`` (crypto/echainiv.c; the CBC ciphers): for each 8-byte chunk of the IV
  from the end, ``a = (salt chunk as a native u64 | 1) * seqno``, stored native
  (little-endian on the EN7581's arm64 and on x86); a zero block is encrypted ahead
  of the payload with that IV, so the IV on the wire is ``E_K(info)`` and chains the
  payload ("encrypted chain IV").

The salt is random per transform in the kernel (``crypto_get_default_rng``); here it
comes from the session seed, so labs and pcaps stay byte-identical. The formulas are
the kernel's [C]; the salt's value is ours [D].
"""

from __future__ import annotations

import random
from collections.abc import Callable

from esplab.model.kernel.esp.algos import AeadSuite, EncSuite

__all__ = ["generator_name", "kernel_iv_source"]

_U64 = (1 << 64) - 1


def generator_name(suite: EncSuite | AeadSuite) -> str:
    """``echainiv`` for a CBC cipher, ``seqiv`` for counter modes and AEADs, ``none``
    without an IV (``ecb(cipher_null)``)."""
    if not suite.iv_size:
        return "none"
    return "echainiv" if suite.name.startswith("cbc(") else "seqiv"


def kernel_iv_source(suite: EncSuite | AeadSuite, seed: str) -> Callable[[int], bytes] | None:
    """``seq -> IV`` as the kernel's generator for ``suite`` makes it, with a salt drawn
    from ``seed``; None for a suite without an IV."""
    size = suite.iv_size
    kind = generator_name(suite)
    if kind == "none":
        return None
    salt = random.Random(seed).randbytes(size)
    if kind == "seqiv":
        salt_int = int.from_bytes(salt, "big")

        def seqiv(seq: int) -> bytes:
            return ((seq & _U64) ^ salt_int).to_bytes(size, "big") if size >= 8 else b""

        return seqiv
    assert isinstance(suite, EncSuite) and size % 8 == 0
    chunks = [int.from_bytes(salt[i : i + 8], "little") | 1 for i in range(0, size, 8)]
    zero = bytes(size)

    def echainiv(seq: int) -> bytes:
        info = b"".join(((a * (seq & _U64)) & _U64).to_bytes(8, "little") for a in chunks)
        return suite.encrypt(zero, info)  # the zero block ahead of the payload: E_K(info)

    return echainiv
