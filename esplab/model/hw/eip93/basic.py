"""Basic mode: opgroup 0, as the mainline driver uses it (eip93.md 1.2, 3.5).

Opcodes: 0 encrypt/decrypt (skcipher), 1 encrypt-then-hash / hash-then-decrypt
(``authenc`` AEAD), 3 hash (hash and HMAC, possibly over several descriptors that
share a state record). ``hash_crypt_offset`` leading bytes are hashed but not
encrypted (the AEAD associated data); the output tag is in hash-state word format
(eip93.md 5.3); ``save_iv``/``save_hash`` write the chaining values back to the
state record; CTR counts in the low 32 bits only (eip93.md 3.4, 7.16).
"""

from __future__ import annotations

import hmac
import struct
from functools import lru_cache

from esplab.layers.hashstate import BLOCK_SIZE, digest_bytes, state_to_record_bytes, update
from esplab.model.hw.eip93.algos import HashResume, Prng
from esplab.model.hw.eip93.params import (
    AUTH_ERR,
    BLOCK_SIZE_ERR,
    INVALID_CRYPTO_OP,
    INVALID_PK_LENGTH,
    ZERO_LENGTH,
    Job,
    SAParams,
    fail,
)

__all__ = ["basic", "cipher_job", "tag_words"]


def tag_words(alg: str, digest: bytes) -> bytes:
    """A digest in hash-state word format: each SHA word byte-reversed, MD5 as is (5.3)."""
    if alg == "md5":
        return digest
    n = len(digest) // 4
    big, little = _word_formats(n)
    return little.pack(*big.unpack(digest[: 4 * n]))


@lru_cache(maxsize=16)
def _word_formats(words: int) -> tuple[struct.Struct, struct.Struct]:
    """The big- and little-endian formats of ``words`` 32-bit words (an SHA-1 digest
    is 5 words, SHA-224 7, SHA-256 8)."""
    return struct.Struct(f">{words}I"), struct.Struct(f"<{words}I")


def _iv_size(p: SAParams) -> int:
    if p.engine is None or p.cipher_mode == 0:
        return 0
    return 16 if p.cipher_mode == 2 else p.block  # CTR: the whole counter block (3.4)


def _load_iv(
    p: SAParams, data: bytes, state: bytes | None, prng: Prng, src: int
) -> tuple[bytes, bytes]:
    """(IV, remaining input) per iv_source (eip93.md 3.2)."""
    size = _iv_size(p)
    if not size:
        return b"", data
    if p.iv_source == 1:
        return data[:size], data[size:]  # [U] basic-iv-from-input
    if p.iv_source == 2:
        return (state or bytes(56))[:size], data  # [U] state-addr-zero
    if p.iv_source == 3:
        return prng.take(size, src), data
    return bytes(size), data


def _crypt(p: SAParams, iv: bytes, data: bytes, encrypt: bool) -> tuple[bytes, bytes]:
    """(output, chaining value for save_iv)."""
    engine = p.engine
    if engine is None:
        return data, b""
    if p.cipher_mode == 2:
        return engine.ctr(iv, data)
    if p.cipher_mode == 0:
        return (engine.ecb_encrypt(data) if encrypt else engine.ecb_decrypt(data)), b""
    if encrypt:
        out = engine.cbc_encrypt(iv, data)
        return out, out[-p.block :]
    return engine.cbc_decrypt(iv, data), data[-p.block :]


def _with_iv(state: bytes | None, p: SAParams, chain: bytes) -> bytes | None:
    """The state record to write back, or None when there is nothing to save."""
    if not p.save_iv or state is None or not chain:
        return None
    return chain.ljust(16, b"\x00") + state[16:]


def basic(
    p: SAParams,
    ctrl: int,
    data: bytes,
    tag_in: bytes,
    state: bytes | None,
    prng: Prng,
    resume: HashResume,
    src: int = 0,
) -> Job:
    """Run one basic-mode descriptor over ``data`` (``length`` input bytes).

    ``tag_in`` is the ICV that follows the input on hash-then-decrypt (eip93.md 2.3).
    """
    if not data:
        return fail(ZERO_LENGTH, "length 0: the engine has no zero-length jobs", "zero-length")
    if p.opcode == 3:
        return _hash(p, ctrl, data, state, resume)
    iv, data = _load_iv(p, data, state, prng, src)
    offset = p.hash_crypt_offset * (1 if p.byte_offset else 4)
    if offset > len(data):
        return fail(
            INVALID_PK_LENGTH,
            f"hash_crypt_offset {offset} bytes exceeds the {len(data)}-byte input",
        )
    header, body = data[:offset], data[offset:]
    if p.engine is not None and p.cipher_mode != 2 and len(body) % p.block:
        return fail(
            BLOCK_SIZE_ERR,
            f"{len(body)} bytes to {'de' if p.direction else 'en'}crypt "
            f"are not whole {p.block}-byte blocks",
        )
    hashing = p.opcode == 1 and p.alg is not None
    if p.direction:
        if hashing:
            expected = p.mac(resume, header + body, state)[: p.icv_len]
            if not hmac.compare_digest(expected, tag_in):
                return Job(
                    status=AUTH_ERR,
                    fidelity="U",
                    choices=("auth-error-alone",),
                    detail=f"tag mismatch: got {tag_in.hex()}, computed {expected.hex()}",
                )
        out, chain = _crypt(p, iv, body, encrypt=False)
        return cipher_job(
            p,
            len(header),
            len(body),
            (header if p.copy_header else b"") + out,
            _with_iv(state, p, chain),
            None,
        )
    out, chain = _crypt(p, iv, body, encrypt=True)
    tag = b""
    if hashing and p.copy_digest:
        assert p.alg is not None
        tag = tag_words(p.alg, p.mac(resume, header + out, state))[: p.icv_len]
    return cipher_job(
        p,
        len(header),
        len(body),
        (header if p.copy_header else b"") + out + tag,
        _with_iv(state, p, chain),
        len(tag),
    )


def cipher_job(
    p: SAParams, header: int, body: int, out: bytes, state: bytes | None, tag: int | None
) -> Job:
    """The job of a successful cipher (opcode 0) or authenc (opcode 1) descriptor over
    ``header`` hashed-only and ``body`` ciphered bytes; ``tag`` is the tag's length
    on the encrypt side, None on the decrypt side."""
    choices = _TAG_FORMAT if p.opcode == 1 and p.alg is not None else ()
    if tag is None:
        return Job(
            out=out,
            state=state,
            detail="{}: {} header + {} bytes",
            args=(p, header, body),
            choices=choices,
        )
    return Job(
        out=out,
        state=state,
        choices=choices,
        detail="{}: {} header + {} bytes + {}-byte tag",
        args=(p, header, body, tag),
    )


_TAG_FORMAT = ("basic-tag-format",)


def _hash(p: SAParams, ctrl: int, data: bytes, state: bytes | None, resume: HashResume) -> Job:
    """Opcode 3: hash ``data`` from ``hash_source``; finalise on hash_final (ctrl bit 4),
    then the outer HMAC hash when the hmac bit is set (eip93.md 3.3, 3.5)."""
    alg = p.alg
    if alg is None:
        return fail(
            INVALID_CRYPTO_OP,
            "sa_cmd0.opcode = 3 (HASH) with sa_cmd0.hash = 15 (NULL)",
            "reserved-codes",
        )
    words, count = p.hash_start(state)
    final = bool(ctrl >> 4 & 1)
    if final:
        if p.hmac:
            inner = resume.digest(alg, words, count, data)
            new = resume.final_words(alg, p.o_state, BLOCK_SIZE, inner)
        else:
            new = resume.final_words(alg, words, count, data)
    else:
        if len(data) % BLOCK_SIZE:
            return fail(
                BLOCK_SIZE_ERR,
                f"{len(data)} bytes without hash_final are not whole {BLOCK_SIZE}-byte blocks",
                "hash-partial-blocks",
            )
        new, _ = update(alg, words, data)
    saved = None
    if p.save_hash and state is not None:
        total = (count + len(data)) & 0xFFFFFFFFFFFFFFFF
        saved = state[:0x10] + total.to_bytes(8, "little") + state_to_record_bytes(alg, new)
    out = tag_words(alg, digest_bytes(alg, new))[: p.icv_len] if final and p.copy_digest else b""
    return Job(
        out=out,
        state=saved,
        choices=_TAG_FORMAT + (() if final else ("hash-partial-blocks",)),
        detail="{}: {} bytes from count {}{}",
        args=(p.label, len(data), count, ", final" if final else ""),
        meta={"count": count + len(data)},
    )
