"""The known mistakes ``esplab diagnose`` tries, in one table: :data:`HYPOTHESES`.

Each :class:`Hypothesis` names a driver or configuration mistake, the problems it
can explain (``icv-bad``, ``no-sa``, ``encap-mismatch``, and ``bad-decrypt`` for
packets that authenticate but decrypt to a bad trailer or padding), and makes
*trials*: for a group of failing packets of one SA (or one unknown SPI), what-if
checks that recompute the ICV, or decrypt, the way the mistaken side did. A trial
that authenticates the packets (for ``bad-decrypt``: decrypts them to a plausible
plaintext, :func:`~esplab.capfile.trials.plausible`) is evidence for its mistake.
The types the trials share are in ``trials``. To add a mistake, write a trial maker
and add a row; order matters only to break ties (specific before generic).

Sources: EIP-93 SA record byte order (eip93.md 5.2, 5.3), RFC 4303 2.2.1 (ESN
high bits in the ICV), RFC 4106 (AES-GCM nonce and AAD), RFC 8750 (implicit IV),
RFC 3948 (UDP encapsulation), RFC 4868 (HMAC-SHA-256-128 vs the kernel's 96-bit
default, airoha-dsa-xfrm.md 5.3).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from esplab.capfile.safile import SaSpec
from esplab.capfile.trials import (
    DECRYPT_PROBLEMS,
    Suspect,
    Trial,
    TrialContext,
    decrypting,
    labelled,
    plausible,
)
from esplab.capfile.trials_driver import IV_SIZES, iv_of, iv_reuse_trials, seq_trials
from esplab.citations import cite

__all__ = [
    "DECRYPT_PROBLEMS",
    "HYPOTHESES",
    "IV_SIZES",
    "Hypothesis",
    "Suspect",
    "Trial",
    "TrialContext",
    "TrialMaker",
    "iv_of",
    "plausible",
]


TrialMaker = Callable[[TrialContext, "SaSpec | None", Sequence[Suspect]], Iterator[Trial]]


@dataclass(frozen=True)
class Hypothesis:
    """One known mistake (module docstring)."""

    key: str
    mistake: str
    fix: str
    problems: frozenset[str]
    trials: TrialMaker

    def __post_init__(self) -> None:
        # What the report prints cites public sources, never the reference notes.
        object.__setattr__(self, "mistake", cite(self.mistake))
        object.__setattr__(self, "fix", cite(self.fix))


def _hi_bytes(spec: SaSpec, s: Suspect) -> bytes:
    return struct.pack("!I", s.seq >> 32) if spec.esn else b""


_HASHES: Mapping[str, str] = MappingProxyType(
    {
        "hmac(md5)": "md5",
        "hmac(sha1)": "sha1",
        "hmac(sha256)": "sha256",
        "hmac(sha384)": "sha384",
        "hmac(sha512)": "sha512",
    }
)


# -- EIP-93: hash-state words and digest words in the wrong byte order ---------------


State = tuple[int, ...]


def _swap_words(state: State, alg: str) -> State:
    """The state the engine uses when a driver writes the words big-endian: it reads
    each 4-byte group as a little-endian u32 (eip93.md 5.2)."""
    from esplab.layers.hashstate import state_from_record_bytes

    return state_from_record_bytes(alg, b"".join(struct.pack(">I", w) for w in state))


def _state_trials(ctx: TrialContext, spec: SaSpec | None, _: Sequence[Suspect]) -> Iterator[Trial]:
    if (
        spec is None
        or spec.auth is None
        or spec.auth not in ("hmac(md5)", "hmac(sha1)", "hmac(sha256)")
    ):
        return
    from esplab.layers.hashstate import hmac_from_states, hmac_precompute

    alg = _HASHES[spec.auth]
    inner, outer = hmac_precompute(alg, spec.auth_key)
    sin, sout = _swap_words(inner, alg), _swap_words(outer, alg)
    n = spec.icv_len
    for what, i, o in (
        ("the inner and outer HMAC digest words", sin, sout),
        ("the inner HMAC digest words", sin, outer),
        ("the outer HMAC digest words", inner, sout),
    ):

        def check(s: Suspect, i: State = i, o: State = o) -> bool:
            end = len(s.esp) - n
            if end < 8:
                return False
            mac = hmac_from_states(alg, i, o, s.esp[:end] + _hi_bytes(spec, s))
            return hmac.compare_digest(mac[:n], s.esp[end:])

        yield Trial(f"{what} byte-swapped per 32-bit word", check)


def _icv_word_trials(
    ctx: TrialContext, spec: SaSpec | None, _: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is None or spec.auth is None or spec.auth not in _HASHES:
        return
    name, key, n = _HASHES[spec.auth], spec.auth_key, spec.icv_len

    def check(s: Suspect) -> bool:
        end = len(s.esp) - n
        if end < 8:
            return False
        digest = hmac.new(key, s.esp[:end] + _hi_bytes(spec, s), name).digest()
        swapped = b"".join(digest[i : i + 4][::-1] for i in range(0, len(digest), 4))
        return hmac.compare_digest(swapped[:n], s.esp[end:])

    yield Trial("the ICV's 32-bit words byte-swapped", check)


# -- configuration: ICV length, ESN, keys, SA mapping ------------------------------


def _length_trials(ctx: TrialContext, spec: SaSpec | None, _: Sequence[Suspect]) -> Iterator[Trial]:
    if spec is None or spec.unchecked_icv:
        return
    if spec.aead is not None:
        candidates = [64, 96, 128]
    elif spec.auth is not None:
        digest = hashlib.new(_HASHES[spec.auth]).digest_size * 8 if spec.auth in _HASHES else 0
        candidates = [b for b in (64, 96, 128, 160, 192, 256) if b <= digest]
    else:
        return
    for bits in candidates:
        if bits != spec.icv_bits:
            body = ctx.authenticates(spec.variant(icv_bits=bits))
            yield labelled(f"a {bits}-bit ICV instead of the SA's {spec.icv_bits}", body)


def _esn_trials(
    ctx: TrialContext, spec: SaSpec | None, sample: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is None:
        return
    if spec.esn:
        body = ctx.authenticates(spec.variant(esn=False), lambda s: 0)
        yield labelled("the ESN high bits left out of the ICV (the SA has flag esn)", body)
        for delta, word in ((1, "one more"), (-1, "one less")):
            body = ctx.authenticates(spec, _shifted_hi(delta))
            yield labelled(f"ESN high bits {word} than inferred", body)
        return
    with_esn = spec.variant(esn=True, replay_window=spec.replay_window or 32)
    for hi in range(4):
        body = ctx.authenticates(with_esn, _fixed_hi(hi))
        yield labelled(f"ESN high bits {hi:#x} added to the ICV (the SA has no flag esn)", body)


def _shifted_hi(delta: int) -> Callable[[Suspect], int]:
    return lambda s: ((s.seq >> 32) + delta) & 0xFFFFFFFF


def _fixed_hi(hi: int) -> Callable[[Suspect], int]:
    return lambda s: hi


def _swapped_key_trials(
    ctx: TrialContext, spec: SaSpec | None, sample: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is None or spec.auth is None or not spec.enc_key:
        return
    if decrypting(sample):  # the ICV is good: only the cipher got the wrong key
        n = len(spec.enc_key)
        if len(spec.auth_key) >= n and spec.auth_key[:n] != spec.enc_key:
            body = ctx.decrypts(spec.variant(enc_key=spec.auth_key[:n]))
            yield labelled(
                f"the authentication key (its first {n} bytes) as the encryption key", body
            )
        return
    body = ctx.authenticates(spec.variant(auth_key=spec.enc_key))
    yield labelled("the encryption key as the authentication key", body)


def _word_swap(key: bytes) -> bytes:
    return b"".join(key[i : i + 4][::-1] for i in range(0, len(key), 4))


def _reversed_key_trials(
    ctx: TrialContext, spec: SaSpec | None, sample: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is None:
        return
    if decrypting(sample):
        enc_key = spec.enc_key
        cut = len(enc_key) - (4 if spec.enc == "rfc3686(ctr(aes))" else 0)  # RFC 3686 5.1
        body, nonce = enc_key[:cut], enc_key[cut:]
        for label, k in (
            ("the encryption key bytes reversed", body[::-1] + nonce),
            ("each 32-bit word of the encryption key byte-swapped", _word_swap(body) + nonce),
        ):
            if k != enc_key:
                yield labelled(label, ctx.decrypts(spec.variant(enc_key=k)))
        return
    if spec.aead is not None:
        key, salt = spec.aead_key[:-4], spec.aead_key[-4:]
        variants = [
            ("the key bytes reversed (salt kept)", key[::-1] + salt),
            ("the key and salt bytes reversed", spec.aead_key[::-1]),
            ("each 32-bit word of the key byte-swapped", _word_swap(key) + salt),
            ("each 32-bit word of key and salt byte-swapped", _word_swap(spec.aead_key)),
        ]
        for label, k in variants:
            if k != spec.aead_key:
                yield labelled(label, ctx.authenticates(spec.variant(aead_key=k)))
        return
    if spec.auth is None:
        return
    key = spec.auth_key
    for label, k in (
        ("the authentication key bytes reversed", key[::-1]),
        ("each 32-bit word of the authentication key byte-swapped", _word_swap(key)),
    ):
        if k != key:
            yield labelled(label, ctx.authenticates(spec.variant(auth_key=k)))


def _wrong_sa_trials(
    ctx: TrialContext, spec: SaSpec | None, sample: Sequence[Suspect]
) -> Iterator[Trial]:
    decrypts = decrypting(sample)
    for other in ctx.sas:
        if spec is not None and other.index == spec.index:
            continue
        if decrypts:
            if spec is None or other.aead is not None or not other.enc_key:
                continue
            if (other.enc, other.enc_key) == (spec.enc, spec.enc_key):
                continue
            body = ctx.decrypts(spec.variant(enc=other.enc, enc_key=other.enc_key))
            yield labelled(f"the cipher and encryption key of {other.label}", body)
            continue
        body = ctx.authenticates(other)
        yield labelled(f"the keys of {other.label}", body)


def _bswap32(value: int) -> int:
    return int.from_bytes(value.to_bytes(4, "big"), "little")


def _spi_order_trials(
    ctx: TrialContext, spec: SaSpec | None, sample: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is not None or not sample:
        return
    swapped = _bswap32(sample[0].spi)
    for other in ctx.sas:
        if other.spi == swapped:
            yield labelled(
                f"{other.label}, whose SPI is this one byte-swapped", ctx.authenticates(other)
            )


# -- IV handling (AES-GCM: the IV is part of the nonce) ----------------------------


def _gcm_open(key: bytes, nonce: bytes, sealed: bytes, aad: bytes, icv: int) -> bool:
    if len(sealed) < icv:
        return False
    cut = len(sealed) - icv
    try:
        ctx = Cipher(
            algorithms.AES(key), modes.GCM(nonce, sealed[cut:], min_tag_length=icv)
        ).decryptor()
        ctx.authenticate_additional_data(aad)
        ctx.update(sealed[:cut])
        ctx.finalize()
    except (InvalidTag, ValueError):
        return False
    return True


def _iv_trials(ctx: TrialContext, spec: SaSpec | None, _: Sequence[Suspect]) -> Iterator[Trial]:
    if spec is None or spec.aead is None:
        return
    key, salt, n = spec.aead_key[:-4], spec.aead_key[-4:], spec.icv_len

    def aad(s: Suspect) -> bytes:
        if spec.esn:
            return s.esp[:4] + struct.pack("!I", s.seq >> 32) + s.esp[4:8]
        return s.esp[:8]

    def implicit(s: Suspect) -> bool:
        # RFC 8750 2: nonce = salt || the 64-bit sequence number; no IV on the wire.
        seq64 = s.seq if spec.esn else s.seq & 0xFFFFFFFF
        return _gcm_open(key, salt + seq64.to_bytes(8, "big"), s.esp[8:], aad(s), n)

    def iv16(s: Suspect) -> bool:
        return _gcm_open(key, salt + s.esp[8:16], s.esp[24:], aad(s), n)

    yield Trial("no IV in the packet (implicit IV, RFC 8750: nonce = salt || seq)", implicit)
    yield Trial("a 16-byte IV field (the CBC IV size) in front of the ciphertext", iv16)


# -- NAT-T -----------------------------------------------------------------------


def _natt_trials(
    ctx: TrialContext, spec: SaSpec | None, sample: Sequence[Suspect]
) -> Iterator[Trial]:
    if spec is None or not sample:
        return
    body = ctx.authenticates(spec)
    first = sample[0]
    if spec.encap is not None and first.encap is None:
        label = (
            f"the encapsulation ignored: the packets are plain ESP, the SA expects ESP in "
            f"UDP {spec.encap[0]}>{spec.encap[1]}"
        )
    elif first.encap is not None and spec.encap is None:
        label = (
            f"the encapsulation ignored: the packets are ESP in UDP {first.encap[0]}>"
            f"{first.encap[1]}, the SA has no encap"
        )
    else:
        label = "the encapsulation ignored"
    yield labelled(label, body)


def _problems(*names: str) -> frozenset[str]:
    return frozenset(names)


#: The known mistakes, in the order ties are broken (specific first).
HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis(
        "hmac-state-byte-order",
        "HMAC inner/outer digests in the EIP-93 SA record (sa_i_digest/sa_o_digest) written "
        "in the wrong byte order (eip93.md 5.2)",
        "store each hash-state word as a little-endian u32 "
        "(esplab.layers.hashstate.state_to_record_bytes)",
        _problems("icv-bad"),
        _state_trials,
    ),
    Hypothesis(
        "icv-word-order",
        "ICV copied in hash-state word order, each 32-bit word byte-swapped (eip93.md 5.3)",
        "in ESP protocol mode the engine's ICV is already in wire order: do not swap it",
        _problems("icv-bad"),
        _icv_word_trials,
    ),
    Hypothesis(
        "seq-after-icv",
        "the sequence number in the ESP header rewritten after the engine computed the "
        "ICV (a stale or recounted number: the ICV covers the header, RFC 4303 2.2, 3.3.4)",
        "let the engine write the sequence number (packet offload), or write it before the "
        "ICV is computed; never patch the header afterwards",
        _problems("icv-bad"),
        seq_trials,
    ),
    Hypothesis(
        "iv-reuse",
        "the same IV in more than one packet of an SA: the IV is not generated per packet "
        "(CBC needs an unpredictable IV, RFC 3602 2.3; a counter mode a unique one, "
        "RFC 3686 2.1)",
        "program the engine's IV source as the PRNG (sa_cmd0 iv_source 3) or give every "
        "packet a fresh IV",
        _problems("iv-reused"),
        iv_reuse_trials,
    ),
    Hypothesis(
        "spi-byte-order",
        "SPI written to the SA record in the wrong byte order (sa_spi is a little-endian "
        "u32, eip93.md 5.2)",
        "write sa_spi as the numeric SPI in little-endian, not the wire bytes",
        _problems("no-sa"),
        _spi_order_trials,
    ),
    Hypothesis(
        "icv-length",
        "wrong ICV truncation length (e.g. hmac(sha256) at the kernel's 96-bit default on "
        "one side, RFC 4868's 128 on the other)",
        "use the same length on both ends: auth-trunc NAME KEY BITS, or aead NAME KEY BITS",
        _problems("icv-bad"),
        _length_trials,
    ),
    Hypothesis(
        "esn",
        "ESN high bits missing from or added to the ICV, or out of step (RFC 4303 2.2.1)",
        "set flag esn (with a replay-window) on both ends or on neither; an offloading "
        "driver must implement xdo_dev_state_advance_esn",
        _problems("icv-bad"),
        _esn_trials,
    ),
    Hypothesis(
        "keys-swapped",
        "encryption and authentication keys swapped",
        "pass the authentication key to the HMAC and the encryption key to the cipher",
        _problems("icv-bad", *DECRYPT_PROBLEMS),
        _swapped_key_trials,
    ),
    Hypothesis(
        "key-byte-order",
        "key bytes reversed, or copied as 32-bit words in the wrong byte order",
        "copy keys byte for byte (sa_key is raw key bytes, eip93.md 5.2)",
        _problems("icv-bad", *DECRYPT_PROBLEMS),
        _reversed_key_trials,
    ),
    Hypothesis(
        "iv-handling",
        "IV counted wrongly: not carried in the packet, or of the wrong size",
        "carry the 8-byte IV after the sequence number (RFC 4106 3.1), or configure "
        "implicit IV on both ends",
        _problems("icv-bad"),
        _iv_trials,
    ),
    Hypothesis(
        "nat-t",
        "NAT-T mismatch: the SA expects UDP encapsulation and the packets are plain ESP, "
        "or the reverse (the kernel drops them: XfrmInStateMismatch)",
        "give both ends the same encap (encap espinudp SPORT DPORT OADDR) or none",
        _problems("encap-mismatch"),
        _natt_trials,
    ),
    Hypothesis(
        "wrong-sa",
        "wrong SPI-to-SA mapping: another SA's keys authenticate these packets",
        "program the SA whose keys these are under this SPI (or fix the SPI)",
        _problems("icv-bad", "no-sa", *DECRYPT_PROBLEMS),
        _wrong_sa_trials,
    ),
)
