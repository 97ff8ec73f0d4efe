"""ICV check and decryption for one SA, specialised once: the crypto of ``decode``.

:func:`make_opener` keys the software ESP core's suites once per SA
(``SaSpec.build`` gives one :class:`~esplab.model.kernel.esp.sa.EspSA`) and returns a
closure that, for one packet's ESP bytes and sequence high half, checks the ICV
and decrypts: ``(verdict, plaintext or None)``. The ICV covers SPI, sequence
number, IV and ciphertext, with the ESN high half appended (RFC 4303 2.2.1); for
AES-GCM it is the tag over the AAD SPI || [seq-hi ||] seq (RFC 4106 5). As the
kernel does, the ICV is checked before anything is decrypted (RFC 4303 3.4.4.1).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from hmac import compare_digest

from esplab.capfile.safile import SaSpec
from esplab.model.kernel.esp.layout import min_esp_len

__all__ = ["BAD", "GOOD", "NONE", "SHORT", "UNCHECKED", "Opener", "make_opener"]

# ICV verdicts of an opener.
GOOD, BAD, NONE, UNCHECKED, SHORT = "good", "bad", "none", "unchecked", "short"

#: (packed ESP bytes, sequence high half) -> (ICV verdict, plaintext or None).
Opener = Callable[[bytes, int], tuple[str, bytes | None]]


_U32 = struct.Struct("!I")


def make_opener(spec: SaSpec) -> Opener:
    """ICV check and decryption for one SA, specialised once (module docstring)."""
    sa = spec.build()
    ivs, icv_len = sa.iv_size, sa.icv_len
    esn = spec.esn
    if sa.aead is not None:
        aead_open = sa.aead.open
        minimum = min_esp_len(ivs, icv_len)

        def open_aead(esp: bytes, hi: int) -> tuple[str, bytes | None]:
            if len(esp) < minimum:
                return SHORT, None
            aad = esp[:4] + _U32.pack(hi) + esp[4:8] if esn else esp[:8]
            plain = aead_open(esp[8 : 8 + ivs], esp[8 + ivs :], aad)
            return (BAD, None) if plain is None else (GOOD, plain)

        return open_aead
    assert sa.enc is not None
    decrypt = sa.enc.decrypt_joined  # IV and ciphertext in one slice
    block = sa.block_size
    if spec.unchecked_icv:
        icv_len = spec.icv_len
    auth = sa.auth if sa.auth is not None and sa.icv_len else None
    icv = None if auth is None else auth.icv  # AuthSuite.verify without its call
    verdict = UNCHECKED if spec.unchecked_icv else NONE
    minimum = min_esp_len(ivs, icv_len)

    def open_cbc(esp: bytes, hi: int) -> tuple[str, bytes | None]:
        n = len(esp)
        if n < minimum:
            return SHORT, None
        end = n - icv_len
        if icv is None:
            state = verdict
        elif compare_digest(icv(esp[:end], _U32.pack(hi) if esn else b""), esp[end:]):
            state = GOOD
        else:
            return BAD, None
        if (end - 8 - ivs) % block:
            return state, None
        return state, decrypt(esp[8:end])

    return open_cbc
