"""Trials for mistakes in what a driver writes into each packet: a sequence number
written after the ICV was computed (the ICV covers the ESP header, RFC 4303 2.2 and
3.3.4: it verifies for a neighbouring number), and an IV used twice in one SA
(CBC needs unpredictable IVs, RFC 3602 2.3; counter modes unique ones, RFC 3686
2.1). Rows of :data:`esplab.capfile.hypotheses.HYPOTHESES`."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from esplab.capfile.opener import GOOD
from esplab.capfile.safile import SaSpec
from esplab.capfile.trials import Suspect, Trial, TrialContext

__all__ = ["IV_SIZES", "iv_of", "iv_reuse_trials", "seq_trials"]


def seq_trials(ctx: TrialContext, spec: SaSpec | None, _: Sequence[Suspect]) -> Iterator[Trial]:
    if spec is None:
        return
    opener = ctx.opener(spec)
    if opener is None:
        return
    for delta in (-1, 1, -2, 2):

        def check(s: Suspect, delta: int = delta) -> bool:
            seq = (s.seq + delta) & 0xFFFFFFFFFFFFFFFF
            esp = s.esp[:4] + struct.pack("!I", seq & 0xFFFFFFFF) + s.esp[8:]
            return opener(esp, seq >> 32)[0] == GOOD

        yield Trial(
            f"the ICV computed for the header's sequence number {delta:+d} (the number "
            "in the header was written after the ICV)",
            check,
        )


#: IV bytes on the wire per cipher (RFC 3602 3, RFC 3686 3, RFC 4106 3.1, RFC 2451).
IV_SIZES: Mapping[str, int] = MappingProxyType(
    {
        "cbc(aes)": 16,
        "rfc3686(ctr(aes))": 8,
        "cbc(des3_ede)": 8,
        "cbc(des)": 8,
        "rfc4106(gcm(aes))": 8,
        "rfc4309(ccm(aes))": 8,
        "rfc7539esp(chacha20,poly1305)": 8,
    }
)


def iv_of(spec: SaSpec, esp: bytes) -> bytes:
    """The IV field of an ESP packet of ``spec`` (empty for a cipher without one)."""
    n = IV_SIZES.get(spec.aead or spec.enc or "", 0)
    return esp[8 : 8 + n] if len(esp) >= 8 + n else b""


def iv_reuse_trials(
    ctx: TrialContext, spec: SaSpec | None, _: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is None:
        return
    yield Trial(
        "an all-zero IV (the engine's IV source is not the PRNG: sa_cmd0 iv_source 0)",
        lambda s: not any(iv_of(spec, s.esp)),
    )
    yield Trial("an IV that an earlier packet of the SA carried", lambda s: True)
