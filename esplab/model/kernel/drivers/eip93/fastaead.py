"""One-step ``authenc`` requests: :mod:`~esplab.model.kernel.drivers.eip93.fast` for :mod:`.aead`.

Mainline's AEAD programs basic mode (opgroup 0, opcode 1): the driver writes
``sa_cmd1`` with ``hash_crypt_offset`` = assoclen and the IV into the state record,
the engine hashes the associated data and the ciphertext, ciphers the rest, appends
the tag in hash-state words and saves the chaining value to the state record
(eip93.md 3.5, 5.3). :func:`encrypt` and :func:`decrypt` do that request, and for the
``sw+aead`` datapath the kernel's ESP around it, in one step under the rules of
:mod:`~esplab.model.kernel.drivers.eip93.fast`: exactly the memory, registers, counters, outcome and
(deferred) stages of the full protocol, or None, having changed nothing the full
protocol would not write again, so that the caller runs it.
"""

from __future__ import annotations

import hmac
import struct
from functools import partial
from typing import TYPE_CHECKING

from esplab.layers.crypto_desc import PE_READY
from esplab.model.hw.eip93.basic import cipher_job, tag_words
from esplab.model.hw.eip93.params import SAParams
from esplab.model.kernel.drivers.eip93.fast import AUTHENC, Plan, digest, plan, retire, stages
from esplab.model.kernel.drivers.eip93.iphead import fix_outer
from esplab.model.kernel.drivers.eip93.outcome import Outcome, defer_stages
from esplab.model.stages import Stage

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.aead import AeadTfm
    from esplab.model.kernel.drivers.eip93.driver import EIP93Driver

__all__ = ["DONE", "FIRST", "WHY", "decrypt", "encrypt"]

DONE = "{} done: {} bytes"
FIRST = "{} {}: assoclen {}, {} bytes"
WHY = (
    "mainline AEAD: opcode 1, IV from the state record, hash_crypt_offset = assoclen (eip93.md 3.5)"
)
_CTR_ONE = b"\x00\x00\x00\x01"
_DESC = struct.Struct("<8I")
_READY = PE_READY << 22  # result word 7: PE_READY in bits 23:22
_ZERO40 = bytes(40)


def _state_region(
    drv: EIP93Driver, pl: Plan, state_addr: int, state: bytes
) -> tuple[int, int, bytearray, int]:
    """Write the state record as the driver does before the request (a bus fault is the
    driver's, as in the full protocol) and remember where its bytes are in the plan;
    the requests then write its final value only (the state record is not read in
    between). The driver's ``sa_cmd1`` write comes first, in :func:`plan`."""
    memory = drv.memory
    memory.write(state_addr, state)
    region = memory.region(state_addr, len(state))
    assert region is not None
    pl.state = (state_addr, memory.frees, region.data, state_addr - region.base)
    return pl.state


def encrypt(
    drv: EIP93Driver,
    tfm: AeadTfm,
    assoc: bytes,
    iv: bytes,
    plain: bytes,
    skb: bytes | None = None,
    off: int = 0,
) -> Outcome | None:
    """``aead._request`` for ``crypto_aead_encrypt`` from the slot on. With ``skb``, also
    the rest of ``aead.esp_output``: the output goes behind the skb's ``off`` bytes of
    headers, the ESP sequence number is the skb's."""
    ring = drv.ready_ring()
    if ring is None or drv.device.snapshots:
        return None
    assoc_len = len(assoc)
    pl = plan(drv, tfm.sa_out, tfm.cmd1_out | assoc_len >> 2 << 16)
    if pl is None or pl.kind != AUTHENC or pl.p.direction:  # the record must say encrypt
        return None
    counter = tfm.nonce + iv + _CTR_ONE if tfm.ctr else iv  # state_iv (zero-padded)
    where = pl.state
    if where is None or where[0] != tfm.state or where[1] != drv.memory.frees:
        where = _state_region(drv, pl, tfm.state, counter.ljust(16, b"\x00") + _ZERO40)
    offset = pl.offset
    length = assoc_len + len(plain)
    block = pl.block
    ctr = pl.ctr
    if not length or offset > length or (not ctr and (length - offset) % block):
        return None  # ZERO_LENGTH, INVALID_PK_LENGTH, BLOCK_SIZE_ERR
    p = pl.p
    cipher, alg = p.engine, p.alg
    assert cipher is not None and alg is not None
    if offset == assoc_len:
        header, text = assoc, plain
    else:
        data = assoc + plain
        header, text = data[:offset], data[offset:]
    slot = drv.head
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    if length + p.icv_len > len(mem):
        return None  # the output would not fit the buffer: the engine's BUS error
    if ctr:
        sealed, chain = cipher.ctr(counter.ljust(16, b"\x00")[:16], text)  # [U]
    else:
        sealed = cipher.cbc_encrypt(
            counter if len(counter) == block else counter.ljust(16, b"\x00")[:block], text
        )
        chain = sealed[-block:]
    if p.copy_digest:
        icv_std = digest(
            pl, drv.device.engine, header + sealed, counter.ljust(16, b"\x00") + _ZERO40
        )[: p.icv_len]
        # The tag in hash-state words (eip93.md 5.3) [U]: tag_words.
        icv = icv_std if pl.words is None else pl.words[1](*pl.words[0](icv_std))
    else:
        icv_std = icv = b""
    # The buffer: the request's bytes, then the output over them.
    if not p.copy_header:
        header = b""
    out = header + sealed + icv
    out_len = len(out)
    if out_len < length:  # the input's end stays behind a shorter output
        mem[out_len:length] = (assoc + plain)[out_len:]
    mem[:out_len] = out
    # The state record with the chaining value saved; the rings and counters.
    where[2][where[3] : where[3] + 56] = (
        chain.ljust(16, b"\x00") if chain else counter.ljust(16, b"\x00")
    ) + _ZERO40
    sa_addr, state_addr = tfm.sa_out, tfm.state
    user = 0x80000 | tfm.handle & 0xFFFF
    result = _DESC.pack(PE_READY, buf, buf, sa_addr, state_addr, 0, user, _READY | out_len)
    retire(drv, ring, slot, result, buf, buf, sa_addr, state_addr, user, length, out_len).basic += 1
    # _finish: the tag's words swapped back.
    if len(icv) == tfm.authsize and tfm.alg == alg:
        parts: tuple[bytes, ...] = (header, sealed, icv_std)
    else:
        back = out_len - tfm.authsize
        parts = (out[:back], tag_words(tfm.alg, out[back:]))
    if skb is None:
        outcome = Outcome(True, b"".join(parts), [], slot=slot, result=result)
    else:  # esp_output: the headers in front, the skb's sequence number
        outcome = Outcome(
            True,
            b"".join((fix_outer(skb[:off], out_len), *parts)),
            [],
            seq=int.from_bytes(skb[off + 4 : off + 8], "big"),
            slot=slot,
            result=result,
        )
    defer_stages(
        outcome,
        partial(
            _sealed_stages,
            drv,
            tfm.name,
            assoc,
            plain,
            slot,
            result,
            p,
            counter,
            len(text),
            out,
            len(icv),
            chain,
        ),
    )
    return outcome


def _sealed_stages(
    drv: EIP93Driver,
    name: str,
    assoc: bytes,
    plain: bytes,
    slot: int,
    result: bytes,
    p: SAParams,
    counter: bytes,
    text: int,
    out: bytes,
    tag: int,
    chain: bytes,
) -> list[Stage]:
    """:func:`encrypt`'s stages (see
    :func:`~esplab.model.kernel.drivers.eip93.fast.stages`), its job as ``basic`` makes it."""
    state = counter.ljust(16, b"\x00") + _ZERO40
    job = cipher_job(
        p,
        p.hash_crypt_offset * (1 if p.byte_offset else 4),
        text,
        out,
        chain.ljust(16, b"\x00") + state[16:] if chain else None,
        tag,
    )
    body = assoc + plain
    return stages(
        drv,
        (FIRST, WHY, "D", (name, "encrypt", len(assoc), len(plain))),
        (DONE, WHY, "D", (name, len(out)), "raw"),
        slot,
        result,
        0x00000001,
        len(body),
        p,
        state,
        body,
        job,
    )


def decrypt(
    drv: EIP93Driver,
    tfm: AeadTfm,
    assoc_len: int,
    iv: bytes,
    data: bytes,
    length: int,
    esp: bool = False,
) -> Outcome | None:
    """``aead._request`` for ``crypto_aead_decrypt`` of ``data`` (associated data,
    ciphertext, tag; ``length`` without the tag) from the slot on. With ``esp``, also the
    rest of ``aead.esp_input``: the payload without the trailer, or a bad pad length."""
    ring = drv.ready_ring()
    if ring is None or drv.device.snapshots:
        return None
    pl = plan(drv, tfm.sa_in, tfm.cmd1_in | assoc_len >> 2 << 16)
    if pl is None or pl.kind != AUTHENC or not pl.p.direction:  # the record must say decrypt
        return None
    state = (tfm.nonce + iv + _CTR_ONE if tfm.ctr else iv).ljust(16, b"\x00") + _ZERO40
    where = pl.state
    if where is None or where[0] != tfm.state or where[1] != drv.memory.frees:
        where = _state_region(drv, pl, tfm.state, state)
    offset = pl.offset
    block = pl.block
    ctr = pl.ctr
    if not length or offset > length or (not ctr and (length - offset) % block):
        return None  # ZERO_LENGTH, INVALID_PK_LENGTH, BLOCK_SIZE_ERR
    p = pl.p
    cipher = p.engine
    assert cipher is not None
    slot = drv.head
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    icv_len = p.icv_len
    tag_in = data[length : length + icv_len]
    if len(tag_in) < icv_len:  # the tag read from the buffer beyond the data
        if len(mem) < length + icv_len:
            return None  # BUS
        mem[: len(data)] = data
        tag_in = bytes(mem[length : length + icv_len])
    body = data[:length]
    expected = digest(pl, drv.device.engine, body, state)[:icv_len]
    if not hmac.compare_digest(expected, tag_in):
        return None  # AUTH_ERR
    header, text = body[:offset], body[offset:]
    if ctr:
        plain, chain = cipher.ctr(state[:16], text)
    else:
        plain, chain = cipher.cbc_decrypt(state[:block], text), text[-block:]
    out = header + plain if p.copy_header else plain
    out_len = len(out)
    mem[: len(data)] = data
    mem[:out_len] = out
    saved = chain.ljust(16, b"\x00") + _ZERO40 if chain else None
    where[2][where[3] : where[3] + 56] = saved or state
    sa_addr, state_addr = tfm.sa_in, tfm.state
    user = 0x80000 | tfm.handle & 0xFFFF
    result = _DESC.pack(PE_READY, buf, buf, sa_addr, state_addr, 0, user, _READY | out_len)
    retire(drv, ring, slot, result, buf, buf, sa_addr, state_addr, user, length, out_len).basic += 1
    outcome = Outcome(True, out, [], slot=slot, result=result)
    defer_stages(
        outcome,
        partial(
            _opened_stages,
            drv,
            tfm.name,
            assoc_len,
            slot,
            result,
            p,
            state,
            body,
            len(header),
            out,
            saved,
        ),
    )
    if esp:  # esp_input: the trailer off, or a bad pad length
        plain = out[assoc_len:]
        pad, next_header = plain[-2], plain[-1]
        if pad + 2 >= len(plain):  # as aead.esp_input: no payload is garbage
            outcome.ok, outcome.reason = False, "bad-padding"
            outcome.mib = "XfrmInStateProtoError"
            drv.stats.mib["XfrmInStateProtoError"] += 1
            return outcome
        outcome.data = plain[: len(plain) - 2 - pad]
        outcome.next_header = next_header
        outcome.seq = int.from_bytes(data[4:8], "big")
    return outcome


def _opened_stages(
    drv: EIP93Driver,
    name: str,
    assoc_len: int,
    slot: int,
    result: bytes,
    p: SAParams,
    state: bytes,
    body: bytes,
    header: int,
    out: bytes,
    saved: bytes | None,
) -> list[Stage]:
    """:func:`decrypt`'s stages (see :func:`~esplab.model.kernel.drivers.eip93.fast.stages`)."""
    job = cipher_job(p, header, len(body) - header, out, saved, None)
    return stages(
        drv,
        (FIRST, WHY, "D", (name, "decrypt", assoc_len, len(body) - assoc_len)),
        (DONE, WHY, "D", (name, len(out)), "raw"),
        slot,
        result,
        0x00000001,
        len(body),
        p,
        state,
        body,
        job,
    )
