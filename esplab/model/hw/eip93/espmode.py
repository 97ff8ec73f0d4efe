"""ESP protocol mode: opgroup 1, opcode 0 (eip93.md 4.3, 4.4, 4.6).

Outbound takes the plaintext payload and builds the whole ESP packet: SPI and
sequence number from the SA record (the number pre-incremented and written back),
the IV, padding, pad length, the next header from the descriptor, encryption and
the ICV. Inbound checks SPI, replay window and ICV, decrypts, checks and strips the
trailer, and reports the next header and pad count in the result.
"""

from __future__ import annotations

import hmac
import struct

from esplab.model.hw.eip93.algos import HashResume, Prng
from esplab.model.hw.eip93.params import (
    AUTH_ERR,
    BLOCK_SIZE_ERR,
    INVALID_PK_LENGTH,
    PAD_ERR,
    SEQNUM_ERR,
    SPI,
    Job,
    SAParams,
    fail,
)

__all__ = [
    "esp_inbound",
    "esp_outbound",
    "inbound_job",
    "pad_align",
    "pad_boundary",
    "pad_bytes",
    "pad_count",
]

_U32 = 0xFFFFFFFF
_BE32, _LE32 = struct.Struct(">I"), struct.Struct("<I")
_SPI_SEQ = struct.Struct(">II")
_WINDOW = struct.Struct("<IIQ")  # sa_seqnum[0..1], sa_seqnum_mask[0..1] as one 64-bit mask
_MONOTONIC = bytes(range(1, 256))
_CTR_ONE = b"\x00\x00\x00\x01"
_OUT_CHOICES = ("esp-seq-pre-increment", "pad-boundary", "result-pad-count")
_OUT_PRNG = (*_OUT_CHOICES, "iv-prng")
_IN_CHOICES = ("replay-window", "result-pad-count")
_IN_CHOICES_NO_HEADER = (*_IN_CHOICES, "inbound-no-copy-header")
_REPLAY_CHOICES = (*_IN_CHOICES, "replay-before-icv")
_REPLAY_NO_HEADER = (*_REPLAY_CHOICES, "inbound-no-copy-header")
_REPLAY_AUTH = ("auth-error-alone", "replay-window", "replay-before-icv")


def pad_boundary(pad_ctrl: int) -> int:
    """Command word 0 bits 31:24 as a byte boundary: one-hot, 0x01 = 1, 0x02 = 4, 0x04 = 8,
    ... 0x80 = 256 (MTK-SDK, eip93.md 2.1); 0 means none [U] pad-boundary."""
    if not pad_ctrl:
        return 1
    top = pad_ctrl.bit_length() - 1
    return 1 if top == 0 else 2 << top


_BOUNDARY = tuple(pad_boundary(ctrl) for ctrl in range(256))
_OUT_DETAIL = "ESP out SPI {:#010x} seq {}: {} bytes + {} pad + 2 (next header {}), ICV {}"
_BYTES = tuple(bytes((n,)) for n in range(256))


def pad_align(block: int, pad_ctrl: int) -> int:
    """What the engine pads an outbound ESP payload to: the command word's boundary
    (:func:`pad_boundary` of bits 31:24), or the cipher's block when larger [U]
    pad-boundary. The engine's own rule, kept here beside its hardware: it shares RFC
    4303 2.4's arithmetic (:func:`pad_count`) with Linux's software ESP
    (esplab.model.kernel.esp.layout), but the boundary comes from the command word,
    not ``ALIGN(blocksize, 4)``, and the pad bytes from ``pad_type``."""
    align = _BOUNDARY[pad_ctrl & 0xFF]
    return block if block > align else align


def pad_count(length: int, align: int) -> int:
    """Padding after ``length`` payload bytes: the least that brings payload, padding,
    pad length and next header to a multiple of ``align`` (RFC 4303 2.4) [D]."""
    return -(length + 2) % align


def pad_bytes(pad_type: int, count: int) -> bytes:
    """Padding of ``count`` bytes for ``pad_type`` [U] pad-types."""
    if pad_type == 0:
        return _MONOTONIC[:count]
    if pad_type == 3:
        return bytes(count)
    return bytes((count,)) * count


#: Padding of each pad type and length, then the pad length byte (see pad_bytes).
_TAILS = tuple(tuple(pad_bytes(kind, n) + _BYTES[n] for n in range(256)) for kind in range(4))


def _iv(p: SAParams, size: int, prng: Prng, state: bytes | None, at: int) -> bytes:
    if not size:
        return b""
    if p.iv_source == 3:
        return prng.take(size, at)  # [U] iv-prng
    if p.iv_source == 2:
        return (state or bytes(56))[:size]  # [U] state-addr-zero
    return bytes(size)  # [U] esp-iv-source


def _save_iv(p: SAParams, state: bytes | None, chain: bytes) -> bytes | None:
    """State record with ``state_iv`` replaced, when save_iv asks and there is one."""
    if not p.save_iv or state is None or not chain:
        return None
    return chain.ljust(16, b"\x00") + state[16:]


def esp_outbound(
    p: SAParams,
    ctrl: int,
    data: bytes,
    sa_seq: int,
    state: bytes | None,
    prng: Prng,
    resume: HashResume,
    src: int = 0,
) -> Job:
    """``data`` is the plaintext payload read at ``src``; ``ctrl`` is command word 0 (next
    header in 15:8, pad boundary in 31:24); ``sa_seq`` is ``sa_seqnum[0]``."""
    if sa_seq >= _U32:
        return Job(
            status=SEQNUM_ERR,
            detail="sa_seqnum 0xffffffff: sequence numbers exhausted",
            choices=("esp-seq-overflow", "esn-ignored"),
            fidelity="U",
        )
    seq = sa_seq + 1  # [U] esp-seq-pre-increment
    next_header = ctrl >> 8 & 0xFF
    iv_size = p.esp_iv
    prng_iv = p.iv_source == 3 and iv_size
    if not iv_size:
        iv = b""
    elif prng_iv:
        iv = prng.take(iv_size, src)  # [U] iv-prng
    else:
        iv = _iv(p, iv_size, prng, state, src)
    length = len(data)
    align = _BOUNDARY[ctrl >> 24 & 0xFF]  # pad_align
    if p.block > align:
        align = p.block
    pad = -(length + 2) % align  # pad_count
    plain = data + _TAILS[p.pad_type][pad] + _BYTES[next_header]
    engine = p.engine
    chain = b""
    if engine is None:
        cipher_text = plain
    elif p.cipher_mode == 2:
        cipher_text, chain = engine.ctr(p.nonce + iv + _CTR_ONE, plain)  # [U] ctr-counter-block
    else:
        cipher_text = engine.cbc_encrypt(iv, plain)
        chain = cipher_text[-p.block :]
    esp = p.spi_bytes + _BE32.pack(seq) + iv + cipher_text
    icv = p.icv_len if p.copy_digest else 0
    if icv and p.alg is not None:
        pair = p.hmac_states
        if pair is not None:  # HMAC from the SA's digests (eip93.md 5.1)
            h = pair[0].copy()
            h.update(esp)
            o = pair[1].copy()
            o.update(h.digest())
            esp += o.digest()[:icv]  # wire order (5.3)
        else:
            esp += p.mac(resume, esp, state)[:icv]  # wire order (5.3)
    return Job(
        0,
        esp,
        next_header,
        pad,
        (0x6C, _LE32.pack(seq)),
        _save_iv(p, state, chain) if state is not None else None,
        _OUT_DETAIL,
        _OUT_PRNG if prng_iv else _OUT_CHOICES,
        "U" if prng_iv else "D",
        {"seq": seq, "pad": pad, "next_header": next_header},
        (p.spi, seq, length, pad, next_header, icv),
    )


def _window(seq: int, window: bytes) -> str | None:
    """Replay verdict for ``seq`` against sa_seqnum[0] and the 64-bit mask [U] replay-window."""
    top, _, bitmap = _WINDOW.unpack(window)
    if seq > top:
        return None
    diff = top - seq
    if diff >= 64:
        return f"sequence number {seq} is left of the window (highest {top})"
    if bitmap >> diff & 1:
        return f"sequence number {seq} was already received (highest {top})"
    return None


def _advance(seq: int, window: bytes) -> bytes:
    """The window words after authenticating ``seq``: sa_seqnum[0..1], mask[0..1]."""
    top, high, bitmap = _WINDOW.unpack(window)
    if seq > top:
        shift = seq - top
        bitmap = ((bitmap << shift) | 1) & (1 << 64) - 1 if shift < 64 else 1
        top = seq
    else:
        bitmap |= 1 << (top - seq)
    return _WINDOW.pack(top, high, bitmap)


def esp_inbound(
    p: SAParams, data: bytes, window: bytes, state: bytes | None, resume: HashResume
) -> Job:
    """``data`` is the ESP packet from SPI to the end of the ICV; ``window`` is SA bytes
    0x6C..0x7B (sa_seqnum[0..1], sa_seqnum_mask[0..1])."""
    iv_size = p.esp_iv
    icv_len = p.icv_len if p.alg is not None else 0
    head = 8 + iv_size
    end = len(data) - icv_len
    if end - head < 2:
        return fail(
            INVALID_PK_LENGTH,
            f"ESP of {len(data)} bytes has no room for header, "
            f"{iv_size}-byte IV, trailer and {icv_len}-byte ICV",
            "short-esp",
        )
    spi, seq = _SPI_SEQ.unpack_from(data)
    if spi != p.spi:
        return fail(SPI, f"packet SPI {spi:#010x} differs from sa_spi {p.spi:#010x}", "spi-check")
    # A replay sets SEQNUM_ERR, yet the packet is authenticated, decrypted and written
    # as any other; only the window stays as it was [U] replay-before-icv.
    replay = _window(seq, window) if p.en_seqnum_chk else None
    seq_err = 0 if replay is None else SEQNUM_ERR
    if icv_len:
        pair = p.hmac_states
        if pair is not None:  # HMAC from the SA's digests (eip93.md 5.1), as p.mac does
            h = pair[0].copy()
            h.update(data[:end])
            o = pair[1].copy()
            o.update(h.digest())
            expected = o.digest()[:icv_len]
        else:
            expected = p.mac(resume, data[:end], state)[:icv_len]
        if not hmac.compare_digest(expected, data[end:]):
            return Job(
                status=AUTH_ERR | seq_err,
                fidelity="U",
                choices=("auth-error-alone",) if replay is None else _REPLAY_AUTH,
                detail=f"ICV mismatch for seq {seq}: got {data[end:].hex()}, "
                f"computed {expected.hex()}" + ("" if replay is None else f"; {replay}"),
                meta={"seq": seq},
            )
    cipher_text = data[head:end]
    iv = data[8:head]
    engine = p.engine
    chain = b""
    if engine is None:
        plain = cipher_text
    elif p.cipher_mode == 2:
        plain, chain = engine.ctr(p.nonce + iv + _CTR_ONE, cipher_text)
    else:
        if len(cipher_text) % p.block:
            return fail(
                BLOCK_SIZE_ERR,
                f"{len(cipher_text)} bytes of ciphertext are not whole {p.block}-byte blocks",
            )
        plain = engine.cbc_decrypt(iv, cipher_text)
        chain = cipher_text[-p.block :]
    pad, next_header = plain[-2], plain[-1]
    if pad + 2 > len(plain):
        payload = b""
        detail = f"pad length {pad} is longer than the {len(plain) - 2} decrypted bytes"
    else:
        payload = plain[: len(plain) - 2 - pad]
        # The padding and the pad length byte against what pad_type makes (pad_bytes).
        if plain[len(payload) : -1] == _TAILS[p.pad_type][pad]:
            out = (data[:head] if p.copy_header else b"") + payload
            if replay is not None:
                return _replayed(p, seq, out, next_header, pad, _save_iv(p, state, chain), replay)
            sa_write = (0x6C, _advance(seq, window)) if p.en_seqnum_chk else None
            return inbound_job(
                p, spi, seq, out, next_header, pad, sa_write, _save_iv(p, state, chain)
            )
        found = plain[len(payload) : -2].hex()
        detail = f"padding {found} is not what pad_type {p.pad_type} makes"
    choices: tuple[str, ...] = (
        "replay-window",
        "result-pad-count",
        "pad-error-output",
        "pad-types",
    )
    if replay is not None:
        choices += ("replay-before-icv",)
        detail += f"; {replay}"
    if not p.copy_header:
        choices += ("inbound-no-copy-header",)
    return Job(
        status=PAD_ERR | seq_err,
        out=(data[:head] if p.copy_header else b"") + payload,
        pad_value=next_header,
        pad_count=pad,
        state=_save_iv(p, state, chain),
        detail=detail,
        choices=choices,
        fidelity="U",
        meta={"seq": seq, "next_header": next_header, "pad": pad},
    )


def _replayed(
    p: SAParams,
    seq: int,
    out: bytes,
    next_header: int,
    pad: int,
    state: bytes | None,
    replay: str,
) -> Job:
    """The job of a replayed packet that authenticates and decrypts: SEQNUM_ERR with the
    output of a good packet, the window not written [U] replay-before-icv."""
    return Job(
        status=SEQNUM_ERR,
        out=out,
        pad_value=next_header,
        pad_count=pad,
        state=state,
        detail=f"{replay}; still authenticated and decrypted: next header {next_header}, {pad} pad",
        choices=_REPLAY_CHOICES if p.copy_header else _REPLAY_NO_HEADER,
        fidelity="U",
        meta={"seq": seq, "next_header": next_header, "pad": pad},
    )


def inbound_job(
    p: SAParams,
    spi: int,
    seq: int,
    out: bytes,
    next_header: int,
    pad: int,
    sa_write: tuple[int, bytes] | None,
    state: bytes | None,
) -> Job:
    """The job of a successful inbound packet: ``out`` for ``dst_addr``, the window words
    (``sa_write``) and state record (``state``) to write back."""
    return Job(
        0,
        out,
        next_header,
        pad,
        sa_write,
        state,
        "ESP in SPI {:#010x} seq {}: next header {}, {} pad",
        _IN_CHOICES if p.copy_header else _IN_CHOICES_NO_HEADER,
        "D",
        {"seq": seq, "next_header": next_header, "pad": pad},
        (spi, seq, next_header, pad),
    )
