"""Basic-mode ``authenc`` on the EIP-93, as the mainline driver offers it to the crypto
API, and the ``sw+aead`` datapath that uses it (DESIGN.md).

:func:`setkey` programs two SA records (encrypt and decrypt) and a state record the
way mainline's AEAD setkey does (eip93.md 3.5: for AES-128 + HMAC-SHA1 with
authsize 12 and assoclen 8, ``0x123013C1``/``0x0202110B`` and
``0x123013C9``/``0x02021102``). Each request sets ``hash_crypt_offset`` to the
associated data's length and the IV in ``state_iv``; the engine hashes the
associated data and ciphertext and appends the tag in hash-state word format, which
the driver turns into the standard tag (eip93.md 5.3).

In ``sw+aead`` the kernel's software ESP builds header, IV, padding and trailer,
and the engine encrypts and authenticates: :func:`esp_output` and :func:`esp_input`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.errors import InvalidValue, KernelError, RingFull
from esplab.layers.hashstate import hmac_pad_blocks, hmac_precompute, state_to_record_bytes
from esplab.layers.sa_record import SA_RECORD_SIZE, STATE_RECORD_SIZE, EIP93SARecord
from esplab.model.hw.eip93.basic import tag_words
from esplab.model.hw.eip93.params import status_names
from esplab.model.kernel.drivers.eip93.outcome import DMA_BUFFER_SIZE, AeadTfm, Outcome, Ticket
from esplab.model.kernel.drivers.eip93.xmit import fix_outer, locate_esp
from esplab.model.kernel.esp.layout import esp_align, esp_head_len, min_esp_len, pad_len

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.rings import EIP93Rings

__all__ = [
    "AUTHENC_AUTH",
    "AUTHENC_ENC",
    "LONG_KEY_WHY",
    "decrypt",
    "driver_hmac_key",
    "encrypt",
    "esp_input",
    "esp_output",
    "setkey",
]

#: Kernel cipher name -> (sa_cmd0 cipher, cipher_mode, key sizes, IV size, crypto blocksize).
AUTHENC_ENC = {
    "cbc(aes)": (3, 1, (16, 24, 32), 16, 16),
    "rfc3686(ctr(aes))": (3, 2, (20, 28, 36), 8, 1),
    "cbc(des3_ede)": (1, 1, (24,), 8, 8),
    "cbc(des)": (0, 1, (8,), 8, 8),
}
#: Kernel hash name -> (sa_cmd0 hash, hashstate name, digest bytes).
AUTHENC_AUTH = {
    "hmac(md5)": (0, "md5", 16),
    "hmac(sha1)": (1, "sha1", 20),
    "hmac(sha224)": (2, "sha224", 28),
    "hmac(sha256)": (3, "sha256", 32),
}

# Mainline's errno for each engine error (eip93.md 2.2, L-common).
_ERRNO = {
    "AUTH_ERR": "EBADMSG",
    "PAD_ERR": "EBADMSG",
    "BUS": "EIO",
    "DESC_OWNER": "EACCES",
    "INVALID_CRYPTO_OP": "EINVAL",
    "INVALID_CRYPTO_ALGO": "EINVAL",
    "SPI": "EINVAL",
    "ZERO_LENGTH": "EBADMSG",
    "INVALID_PK_LENGTH": "EBADMSG",
    "BLOCK_SIZE_ERR": "EBADMSG",
    "PROCESSING": "EIO",
}
_MONOTONIC = bytes(range(1, 256))
_TRAILERS = tuple(_MONOTONIC[:n] + bytes((n,)) for n in range(256))  # padding, pad length
_BYTES = tuple(bytes((n,)) for n in range(256))
_STATE_REST = bytes(40)  # the state record after its 16-byte IV/counter, zeroed per request
_DONE = "{} done: {} bytes"
_FIRST = "{} {}: assoclen {}, {} bytes"
_WHY = (
    "mainline AEAD: opcode 1, IV from the state record, hash_crypt_offset = assoclen (eip93.md 3.5)"
)


#: mainline eip93_hmac_setkey (drivers/crypto/inside-secure/eip93/eip93-common.c) for a
#: key over SHA256_BLOCK_SIZE: the key's digest into ipad, then ``keylen = hashlen`` with
#: hashlen the ``ctx->authsize`` eip93_aead_setkey passes, and ``memset(ipad + keylen,
#: 0, ...)``: the digest is cut to the ICV length. RFC 2104 keys HMAC with the whole
#: digest, so a peer's ICV differs [C].
LONG_KEY_WHY = (
    "mainline eip93_hmac_setkey hashes an HMAC key longer than 64 bytes and keeps "
    "ctx->authsize bytes of the digest (keylen = hashlen, eip93_aead_setkey passes "
    "ctx->authsize), where RFC 2104 keeps the whole digest: the engine's ICV does not "
    "verify at a peer; set hmac-long-key fixed for the RFC behaviour (a labelled fix)"
)


def driver_hmac_key(alg: str, key: bytes, authsize: int, rule: str) -> tuple[bytes, str]:
    """The HMAC key the driver's precompute effectively uses, and a note when it is not
    the key as given (``rule``: ``mainline`` or ``fixed``; see :data:`LONG_KEY_WHY`)."""
    if len(key) <= 64:
        return key, ""
    import hashlib

    digest = hashlib.new(alg, key).digest()
    if rule == "fixed":
        return digest, (
            f"{len(key)}-byte HMAC key hashed to its {len(digest)}-byte {alg} digest "
            "(RFC 2104; hmac-long-key fixed, not mainline's code)"
        )
    return digest[:authsize], (
        f"{len(key)}-byte HMAC key: mainline keeps {authsize} of the {len(digest)} "
        f"digest bytes (eip93_hmac_setkey truncates to ctx->authsize); a peer's ICV differs"
    )


def setkey(
    drv: EIP93Rings,
    *,
    enc: str,
    enc_key: bytes,
    auth: str,
    auth_key: bytes,
    authsize: int = 12,
    spi: int | None = None,
) -> AeadTfm:
    """``crypto_aead_setkey`` + ``setauthsize`` for ``authenc(auth,enc)`` on the engine.

    Raises KernelError ENOENT for a combination mainline does not register (e.g.
    ``ecb(cipher_null)``), EINVAL for a bad key or authsize. ``spi`` labels the
    transform for ``eip93 sa``/``eip93 state`` when an ESP SA uses it.
    """
    if enc not in AUTHENC_ENC or auth not in AUTHENC_AUTH:
        raise KernelError(
            "ENOENT",
            f"no EIP-93 authenc({auth},{enc})",
            hint=f"ciphers: {', '.join(AUTHENC_ENC)}; hashes: " + ", ".join(AUTHENC_AUTH),
            prefix="crypto_alloc_aead",
        )
    cipher, mode, sizes, iv_size, blocksize = AUTHENC_ENC[enc]
    hash_code, alg, digest = AUTHENC_AUTH[auth]
    if len(enc_key) not in sizes:
        raise KernelError(
            "EINVAL",
            f"{enc} key of {len(enc_key)} bytes; valid: " + ", ".join(map(str, sizes)),
            prefix="crypto_aead_setkey",
        )
    if authsize % 4 or not 4 <= authsize <= digest:
        raise KernelError(
            "EINVAL",
            f"authsize {authsize}; valid: multiples of 4 up to {digest}",
            prefix="crypto_aead_setauthsize",
        )
    ctr = mode == 2
    key, nonce = (enc_key[:-4], enc_key[-4:]) if ctr else (enc_key, b"\x00" * 4)
    auth_key, key_note = driver_hmac_key(alg, auth_key, authsize, drv.settings.hmac_long_key)
    inner, outer = hmac_precompute(alg, auth_key)
    common: dict[str, Any] = dict(
        opcode=1,
        opgroup=0,
        pad_type=3,
        cipher=cipher,
        hash=hash_code,
        digest_length=authsize // 4,
        iv_source=2,
        save_iv=1,
        hash_source=0,
        cipher_mode=mode,
        hmac=1,
        aes_key_length=len(key) >> 3 if cipher == 3 else 0,
        sa_key=key.ljust(32, b"\x00"),
        sa_i_digest=state_to_record_bytes(alg, inner),
        sa_o_digest=state_to_record_bytes(alg, outer),
        sa_seqnum_mask_0=0xFFFFFFFF,
        sa_nonce=nonce,
    )
    out = EIP93SARecord(direction=0, copy_digest=1, copy_header=1, copy_pad=1, **common)
    inb = EIP93SARecord(direction=1, copy_header=1, **common)
    memory = drv.memory
    handle = drv.new_handle()
    label = f"authenc {handle}"
    sa_out = memory.allocate(SA_RECORD_SIZE, label=f"{label} out", pool="sa", align=128)
    sa_in = memory.allocate(SA_RECORD_SIZE, label=f"{label} in", pool="sa", align=128)
    state = memory.allocate(STATE_RECORD_SIZE, label=label, pool="state")
    memory.write(sa_out, bytes(out))
    memory.write(sa_in, bytes(inb))
    drv.device.engine.learn_hmac_blocks(alg, *hmac_pad_blocks(alg, auth_key))
    tfm = AeadTfm(
        handle,
        f"authenc({auth},{enc})",
        alg,
        authsize,
        iv_size,
        blocksize,
        ctr,
        nonce,
        sa_out,
        sa_in,
        state,
        out.sa_cmd1,
        inb.sa_cmd1,
        spi,
        key_note,
    )
    drv.tfms[handle] = tfm
    return tfm


def _request(
    drv: EIP93Rings,
    tfm: AeadTfm,
    assoc: bytes,
    iv: bytes,
    data: bytes,
    length: int,
    encrypt_: bool,
) -> Outcome:
    if len(assoc) % 4 or len(assoc) > 0xFF * 4:
        raise InvalidValue(f"assoclen {len(assoc)}", valid="a multiple of 4 up to 1020 bytes")
    if len(iv) != tfm.iv_size:
        raise InvalidValue(f"IV of {len(iv)} bytes", valid=f"{tfm.iv_size} bytes for {tfm.name}")
    first = (
        _FIRST,
        _WHY,
        "D",
        (tfm.name, "encrypt" if encrypt_ else "decrypt", len(assoc), length - len(assoc)),
    )
    if len(data) > DMA_BUFFER_SIZE:
        stages = drv.opening(first)
        stages.append(
            drv.stage(f"{len(data)} bytes do not fit a DMA buffer", _WHY, "M", drop="EMSGSIZE")
        )
        return Outcome(False, stages=stages, errno="EMSGSIZE", reason="EMSGSIZE")
    sa = tfm.sa_out if encrypt_ else tfm.sa_in
    cmd1 = (tfm.cmd1_out if encrypt_ else tfm.cmd1_in) | (len(assoc) // 4) << 16
    counter = tfm.nonce + iv + b"\x00\x00\x00\x01" if tfm.ctr else iv
    if len(drv._inflight) < drv.entries and drv.probed:
        slot = drv.head  # (next_slot's answer while a slot is free)
    else:
        try:
            slot = drv.next_slot()
        except RingFull as exc:
            stages = drv.opening(first)
            stages.append(drv.stage(str(exc), "the request is refused (EBUSY)", drop="ring-full"))
            return Outcome(False, stages=stages, errno="EBUSY", reason="ring-full")
    memory = drv.memory
    memory.write(sa + 4, cmd1.to_bytes(4, "little"))
    memory.write(tfm.state, counter.ljust(16, b"\x00") + _STATE_REST)
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    mem[: len(data)] = data
    words = (
        0x00000001,
        buf,
        buf,
        sa,
        tfm.state,
        0,
        0x80000 | tfm.handle & 0xFFFF,
        0x00400000 | length,
    )
    return drv.transact(words, _finish, first, (tfm, encrypt_, mem))  # the context _finish unpacks


def _finish(drv: EIP93Rings, words: tuple[int, ...], ticket: Ticket) -> Outcome:
    tfm: AeadTfm
    tfm, encrypt_, mem = ticket.context  # as _request packed it
    status = words[0] >> 16 & 0xFF
    if status:
        names = status_names(status)
        errno = _ERRNO.get(names[-1], "EINVAL")
        ticket.stages.append(
            drv.stage(
                f"{', '.join(names)} -> -{errno}",
                "mainline maps the engine status to an errno (eip93.md 2.2)",
                "C",
                drop=errno,
            )
        )
        return Outcome(False, stages=ticket.stages, errors=names, errno=errno, reason=errno)
    out = bytes(mem[: words[7] & 0xFFFFF])  # in place in the driver's buffer
    if encrypt_:
        # The tag arrives as hash-state words: swap each SHA word back (eip93.md 5.3) [U].
        cut = len(out) - tfm.authsize
        out = out[:cut] + tag_words(tfm.alg, out[cut:])
    drv.closing(ticket, _DONE, _WHY, "D", (tfm.name, len(out)), out)
    return Outcome(True, out, ticket.stages)


def encrypt(drv: EIP93Rings, tfm: AeadTfm, assoc: bytes, iv: bytes, plain: bytes) -> Outcome:
    """``crypto_aead_encrypt``: ``data`` = assoc || ciphertext || tag (standard order)."""
    data = assoc + plain
    return _request(drv, tfm, assoc, iv, data, len(data), True)


def decrypt(drv: EIP93Rings, tfm: AeadTfm, assoc: bytes, iv: bytes, sealed: bytes) -> Outcome:
    """``crypto_aead_decrypt`` of ciphertext || tag: ``data`` = assoc || plaintext, or
    ``errno`` EBADMSG when the tag does not verify. The tag is not counted in the
    length (eip93.md 2.3)."""
    if len(sealed) < tfm.authsize:
        raise InvalidValue(f"{len(sealed)} bytes", valid=f"at least the {tfm.authsize}-byte tag")
    data = assoc + sealed
    return _request(drv, tfm, assoc, iv, data, len(data) - tfm.authsize, False)


# --- the sw+aead datapath ---------------------------------------------------------------


def esp_output(
    drv: EIP93Rings,
    tfm: AeadTfm,
    skb: bytes,
    *,
    proto: int,
    esp_offset: int | None = None,
    iv: bytes | None = None,
) -> Outcome:
    """Kernel ``esp_output_tail`` with the engine as the AEAD: ``skb`` as in crypto offload
    (headers, ESP header with SPI and sequence number, IV room, payload). The software
    pads to ALIGN(blocksize, 4) with 1, 2, 3... and adds pad length and ``proto``."""
    off = locate_esp(skb)[0] if esp_offset is None else esp_offset
    start = off + esp_head_len(tfm.iv_size)
    if len(skb) < start:
        raise InvalidValue(f"{len(skb)}-byte skb: no room for ESP header and IV at {off}")
    if iv is None:
        iv = drv.sw_rng.randbytes(tfm.iv_size)  # [M] sw-aead-iv
    pad = pad_len(len(skb) - start, esp_align(tfm.blocksize))
    plain = skb[start:] + (_TRAILERS[pad] + _BYTES[proto & 0xFF])  # pad 1, 2, 3...
    assoc = skb[off : off + 8] + iv
    outcome = encrypt(drv, tfm, assoc, iv, plain)
    if outcome.ok:
        outcome.data = fix_outer(skb[:off], len(outcome.data)) + outcome.data
        outcome.seq = int.from_bytes(skb[off + 4 : off + 8], "big")
    else:
        outcome.mib = "XfrmOutStateProtoError"
        drv.stats.mib[outcome.mib] += 1
    return outcome


def esp_input(
    drv: EIP93Rings, tfm: AeadTfm, skb: bytes, *, esp_offset: int | None = None
) -> Outcome:
    """Kernel ``esp_input`` with the engine as the AEAD: ``data`` is the payload with the
    trailer removed and ``next_header`` set; an ICV failure is XfrmInStateProtoError."""
    off = locate_esp(skb)[0] if esp_offset is None else esp_offset
    esp = skb[off:]
    head = esp_head_len(tfm.iv_size)
    if len(esp) < min_esp_len(tfm.iv_size, tfm.authsize):
        raise InvalidValue(f"{len(esp)} bytes of ESP", valid="header, IV, trailer and ICV")
    outcome = decrypt(drv, tfm, esp[:head], esp[8:head], esp[head:])
    if not outcome.ok:
        outcome.mib = "XfrmInStateProtoError" if outcome.errno == "EBADMSG" else "XfrmInError"
        drv.stats.mib[outcome.mib] += 1
        return outcome
    plain = outcome.data[head:]
    pad, next_header = plain[-2], plain[-1]
    if pad + 2 >= len(plain):
        # Kernel esp_remove_trailer: padlen + 2 + alen >= elen is "ipsec esp packet is
        # garbage" (-EINVAL), whichever AEAD provider ran: no payload is no packet [C].
        outcome.ok, outcome.reason, outcome.mib = False, "bad-padding", "XfrmInStateProtoError"
        drv.stats.mib[outcome.mib] += 1
        return outcome
    outcome.data = plain[: len(plain) - 2 - pad]
    outcome.next_header = next_header
    outcome.seq = int.from_bytes(esp[4:8], "big")
    return outcome
