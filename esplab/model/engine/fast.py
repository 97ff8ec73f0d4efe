"""One request from the driver's call to its outcome in a single step, when that is exact.

With nothing in the rings, a running engine and snapshots off, a request through the
rings (eip93.md 1.5) is a pure function of memory: the driver writes the skb and the
command, the engine runs it at once, the driver reads the result back. Nothing can
look in between, so these functions compute the result straight from the SA and the
packet and leave exactly what the full protocol leaves: the buffer, both ring slots,
the SA record's sequence number or replay window, the state record, registers and
interrupt status, the engine's, driver's and SA's counters, and the outcome. Its
stages are built when first read, from the same stage code (``defer_stages``).

The engine still behaves as if driven only by its memory: every request compares the
SA record's static bytes with those its decoded form was cached under
(:meth:`~esplab.model.engine.core.Engine.params`), reads the sequence number or
window from the record, and uses the engine's own cipher, hash and IV state. Each
function returns None, having changed nothing, whenever the full protocol could end
differently: the engine paused or busy, results waiting, snapshots on, a state record
(ESP), a pinned IV, a record the engine would refuse, or any error status. The
caller then runs the full protocol; ``EIP93Driver.fast_path = False`` forces it.
"""

from __future__ import annotations

import hmac
import struct
from functools import partial
from typing import TYPE_CHECKING, Any

from esplab.layers.crypto_desc import PE_READY
from esplab.layers.sa_record import SA_RECORD_SIZE
from esplab.model.engine import regs as R
from esplab.model.engine.basic import cipher_job, tag_words
from esplab.model.engine.core import Engine, job_stages
from esplab.model.engine.espmode import (
    _BOUNDARY,
    _advance,
    _window,
    inbound_job,
    outbound_job,
    pad_bytes,
)
from esplab.model.engine.outcome import OffloadedSA, Outcome, defer_stages
from esplab.model.engine.params import SAParams
from esplab.model.engine.stages import LazyStage
from esplab.model.journey import Stage

if TYPE_CHECKING:
    from esplab.model.engine.driver import EIP93Driver, Opening

__all__ = ["Plan", "Ran", "authenc", "defer", "esp_in", "esp_out", "plan"]

_U32 = 0xFFFFFFFF
_DESC = struct.Struct("<8I")
_CTR_ONE = b"\x00\x00\x00\x01"
_DONE = R.INT_OPERATION_DONE
_THRESH = R.INT_RDR_THRESH
_ESP_CTRL = 0x02000011  # command word 0 of an ESP job as esp_tx/esp_rx build it
_OUT, _IN, _AUTHENC = 1, 2, 3

#: What a fast job hands its caller: (slot, result descriptor, the bytes the engine wrote
#: at ``dst_addr``, what the stages are built from).
Ran = tuple[int, bytes, bytes, tuple[Any, ...]]


class Plan:
    """One SA record as the fast path uses it: where its bytes are, the static bytes the
    engine cached its decoded form under, and what one job needs from it."""

    __slots__ = ("align", "at", "block", "frees", "head", "icv_len", "inner", "iv_size",
                 "key", "kind", "nonce", "outer", "p", "pads", "prng_iv", "rec")

    def __init__(self, rec: bytearray, at: int, key: bytes, p: SAParams, frees: int) -> None:
        self.rec, self.at, self.key, self.p, self.frees = rec, at, key, p, frees
        self.head, self.nonce = key[:0x6C], key[0x6C:]
        self.kind = _kind(p)
        self.block = p.block
        self.iv_size = 0 if p.cipher == 15 else 8 if p.cipher_mode == 2 else p.block
        self.icv_len = p.icv_len if p.alg is not None else 0
        self.prng_iv = bool(p.iv_source == 3 and self.iv_size)
        # The HMAC states as hashlib objects when the engine has them (else p.mac).
        simple = p.alg is not None and p.hash_source == 0 and p.hmac
        self.inner = p.inner if simple and p.outer is not None else None
        self.outer = p.outer if self.inner is not None else None
        self.align = max(p.block, _BOUNDARY[_ESP_CTRL >> 24])
        self.pads = tuple(pad_bytes(p.pad_type, n) for n in range(self.align))


def _kind(p: SAParams) -> int:
    """What the fast path runs on this record: ESP out, ESP in, authenc, or 0 (nothing)."""
    if p.error is not None or (p.engine is not None and p.cipher_mode not in (1, 2)):
        return 0
    if p.opgroup == 1:
        return _IN if p.direction else _OUT
    if (p.opcode == 1 and p.alg is not None and p.engine is not None and p.iv_source == 2
            and p.save_iv):
        return _AUTHENC
    return 0


def plan(drv: EIP93Driver, sa_addr: int) -> Plan | None:
    """The plan for the SA record at ``sa_addr`` as memory holds it now, or None.

    The decoded SA is the engine's own cached one: what the full protocol would use,
    decoded and cached now if the record is not (as the engine would).
    """
    memory = drv.memory
    engine = drv.device.engine
    pl = drv.plans.get(sa_addr)
    if pl is not None and pl.frees == memory.frees:
        rec, at = pl.rec, pl.at
        if (engine._records.get(pl.key) is pl.p and rec[at : at + 0x6C] == pl.head
                and rec[at + 0x7C : at + SA_RECORD_SIZE] == pl.nonce):
            return pl
    region = memory.region(sa_addr, SA_RECORD_SIZE)
    if region is None:
        return None
    at = sa_addr - region.base
    record = bytes(region.data[at : at + SA_RECORD_SIZE])
    key = record[:0x6C] + record[0x7C:]
    p = engine._records.get(key) or engine.params(record)
    pl = drv.plans[sa_addr] = Plan(region.data, at, key, p, memory.frees)
    return pl


def _retire(drv: EIP93Driver, ring: tuple[bytearray, bytearray, int, bool, int], slot: int,
            cmd: bytes, result: bytes) -> None:
    """The ring slot, indexes, interrupt status and driver counters as one command run
    through the rings and consumed leaves them (``EIP93Driver.transact``)."""
    cdr, rdr, entries, rdr_irq, _ = ring
    at = slot * 32
    cdr[at : at + 32] = cmd  # words 0 and 7 cleared by the driver after reading the result
    rdr[at : at + 32] = result
    dev = drv.device
    drv.head = drv.tail = dev.index = (slot + 1) % entries
    raw = dev.raw_int | (_DONE | _THRESH if rdr_irq else _DONE)
    if raw & _THRESH:  # tasklet end: INT_CLR, then MASK_ENABLE
        raw &= ~_THRESH
        dev.int_mask |= _THRESH
    dev.raw_int = raw
    stats = drv.stats
    stats.submitted += 1
    stats.completed += 1


def defer(drv: EIP93Driver, outcome: Outcome, first: Opening, ran: Ran,
          last: tuple[Any, ...]) -> Outcome:
    """``outcome`` with its stages built when first read: the driver's ``first``, the
    engine's and the driver's ``last`` (template, why, fidelity, args, kind)."""
    defer_stages(outcome, 0, partial(_stages, drv, first, ran[3], last))
    return outcome


def _stages(drv: EIP93Driver, first: Opening, trace: tuple[Any, ...],
            last: tuple[Any, ...]) -> list[Stage]:
    """The stages the full protocol gives the request, its engine job made as the
    engine made it (``make(*made)``)."""
    slot, result, words, length, out_len, p, state, body, make, made = trace
    job = make(*made)
    job.meta["choices"] = job.choices
    stages = drv.opening(first)
    stages += job_stages((drv.node, False, slot, None, result, words, length, out_len, job, p,
                          3, None, state, body, job))
    decision, why, fidelity, args, kind = last
    stages.append(LazyStage("eip93.driver", drv.node, decision, why, fidelity, None, None,
                            kind, None, {}, args))
    return stages


def _count(engine: Engine, length: int, out_len: int) -> None:
    """The engine's counters for one successful job (``Engine.run_command``)."""
    st = engine.stats
    st.processed += 1
    st.bytes_in += length
    st.succeeded += 1
    st.bytes_out += out_len
    engine._shown = None


def esp_out(drv: EIP93Driver, sa: OffloadedSA, skb: bytes, off: int, start: int, proto: int,
            sync: bool) -> Ran | None:
    """The engine's half of ``esp_tx`` from the slot on: ``out`` is the ESP packet. With
    ``sync`` (crypto offload) the kernel's sequence number goes to the record first."""
    dev = drv.device
    ring = drv.ready_ring()
    if ring is None or dev.snapshots or sa.state_addr:
        return None
    sa_addr = sa.sa_addr
    pl = plan(drv, sa_addr)
    if pl is None or pl.kind != _OUT:
        return None
    rec, at = pl.rec, pl.at
    if sync:
        sa_seq = (int.from_bytes(skb[off + 4 : off + 8], "big") - 1) & _U32
    else:
        sa_seq = int.from_bytes(rec[at + 0x6C : at + 0x70], "little")
    if sa_seq >= _U32:
        return None  # SEQNUM_ERR
    p = pl.p
    engine = dev.engine
    slot = drv.head
    buf, mem = drv.buffer(slot)
    src = buf + start
    seq = sa_seq + 1
    length = len(skb) - start
    next_header = proto & 0xFF
    iv = engine.prng.take(pl.iv_size, src) if pl.prng_iv else bytes(pl.iv_size)
    pad = -(length + 2) % pl.align
    body = skb[start:]
    plain = body + pl.pads[pad] + bytes((pad, next_header))
    cipher = p.engine
    if cipher is None:
        sealed = plain
    elif p.cipher_mode == 2:
        sealed = cipher.ctr(p.nonce + iv + _CTR_ONE, plain)[0]  # [U] ctr-counter-block
    else:
        sealed = cipher.cbc_encrypt(iv, plain)
    esp = p.spi_bytes + seq.to_bytes(4, "big") + iv + sealed
    if p.alg is not None and p.copy_digest:
        esp += _mac(pl, engine, esp)
    # The buffer as the engine leaves it: the skb, then the ESP from the header on (which
    # covers the rest of the skb); the record with the number written back.
    mem[:off] = skb[:off]
    mem[off : off + len(esp)] = esp
    rec[at + 0x6C : at + 0x70] = seq.to_bytes(4, "little")
    out_len = len(esp)
    _count(engine, length, out_len)
    engine.stats.esp_out += 1
    ctrl = _ESP_CTRL | next_header << 8
    dst = buf + off
    user = 0x50000 | sa.handle & 0xFFFF
    result = _DESC.pack(ctrl & 0xFC | PE_READY | next_header << 8 | pad << 24, src, dst,
                        sa_addr, 0, 0, user, PE_READY << 22 | out_len)
    _retire(drv, ring, slot, _DESC.pack(0, src, dst, sa_addr, 0, 0, user, 0), result)
    words = (ctrl, src, dst, sa_addr, 0, 0, user, 0x00400000 | length)
    return slot, result, esp, (slot, result, words, length, out_len, p, None, body,
                               outbound_job,
                               (p, seq, length, pad, next_header, esp, None, pl.prng_iv))


def _mac(pl: Plan, engine: Engine, data: bytes) -> bytes:
    """The ICV of ``data`` (``SAParams.mac`` truncated, without a state record)."""
    inner = pl.inner
    if inner is None:
        return pl.p.mac(engine.resume, data, None)[: pl.icv_len]
    h = inner.copy()
    h.update(data)
    outer: Any = pl.outer
    outer = outer.copy()
    outer.update(h.digest())
    return bytes(outer.digest()[: pl.icv_len])


def esp_in(drv: EIP93Driver, sa: OffloadedSA, esp: bytes) -> Ran | None:
    """The engine's half of ``esp_rx`` for ``esp`` (SPI to ICV) from the slot on: ``out``
    is what the engine wrote in place (header, IV and payload)."""
    dev = drv.device
    ring = drv.ready_ring()
    if ring is None or dev.snapshots or sa.state_addr:
        return None
    sa_addr = sa.sa_addr
    pl = plan(drv, sa_addr)
    if pl is None or pl.kind != _IN:
        return None
    p = pl.p
    icv_len = pl.icv_len
    head = 8 + pl.iv_size
    end = len(esp) - icv_len
    if end - head < 2 or esp[0:4] != p.spi_bytes:
        return None
    rec, at = pl.rec, pl.at
    seq = int.from_bytes(esp[4:8], "big")
    window = bytes(rec[at + 0x6C : at + 0x7C])
    if p.en_seqnum_chk and _window(seq, window) is not None:
        return None
    engine = dev.engine
    if icv_len and not hmac.compare_digest(_mac(pl, engine, esp[:end]), esp[end:]):
        return None
    cipher = p.engine
    if cipher is None:
        plain = esp[head:end]
    elif p.cipher_mode == 2:
        plain = cipher.ctr(p.nonce + esp[8:head] + _CTR_ONE, esp[head:end])[0]
    else:
        if (end - head) % pl.block:
            return None
        # Decrypting moves only the context's running state, and a repeat in the full
        # protocol leaves it the same: a padding error below may still fall back.
        plain = cipher.cbc_decrypt(esp[8:head], esp[head:end])
    pad, next_header = plain[-2], plain[-1]
    cut = len(plain) - 2 - pad
    if cut < 0 or plain[cut:-2] != (pl.pads[pad] if pad < pl.align
                                    else pad_bytes(p.pad_type, pad)):
        return None
    payload = plain[:cut]
    out = esp[:head] + payload if p.copy_header else payload
    slot = drv.head
    buf, mem = drv.buffer(slot)
    mem[: len(esp)] = esp
    mem[: len(out)] = out
    sa_write = None
    if p.en_seqnum_chk:
        advanced = _advance(seq, window)
        rec[at + 0x6C : at + 0x7C] = advanced
        sa_write = (0x6C, advanced)
    out_len = len(out)
    length = len(esp)
    _count(engine, length, out_len)
    engine.stats.esp_in += 1
    user = 0x60000 | sa.handle & 0xFFFF
    result = _DESC.pack(_ESP_CTRL & 0xFC | PE_READY | next_header << 8 | pad << 24, buf, buf,
                        sa_addr, 0, 0, user, PE_READY << 22 | out_len)
    _retire(drv, ring, slot, _DESC.pack(0, buf, buf, sa_addr, 0, 0, user, 0), result)
    words = (_ESP_CTRL, buf, buf, sa_addr, 0, 0, user, 0x00400000 | length)
    return slot, result, out, (slot, result, words, length, out_len, p, None, esp,
                               inbound_job,
                               (p, p.spi, seq, out, next_header, pad, sa_write, None))


def authenc(drv: EIP93Driver, sa_addr: int, cmd1: bytes, state_addr: int, counter: bytes,
            handle: int, data: bytes, length: int) -> Ran | None:
    """The engine's half of one ``authenc`` request (``aead._request`` from the slot on):
    ``out`` is what the engine wrote in place (the tag in hash-state words)."""
    dev = drv.device
    ring = drv.ready_ring()
    if ring is None or dev.snapshots:
        return None
    # The driver's writes, in its order (the full protocol repeats them on a fallback).
    memory = drv.memory
    memory.write(sa_addr + 4, cmd1)
    state = counter.ljust(16, b"\x00") + bytes(40)
    memory.write(state_addr, state)
    pl = plan(drv, sa_addr)
    if pl is None or pl.kind != _AUTHENC:
        return None
    p = pl.p
    cipher = p.engine
    alg = p.alg
    assert cipher is not None and alg is not None
    offset = p.hash_crypt_offset * (1 if p.byte_offset else 4)
    if not length or offset > length:
        return None
    block = pl.block
    if p.cipher_mode != 2 and (length - offset) % block:
        return None
    slot = drv.head
    buf, mem = drv.buffer(slot)
    mem[: len(data)] = data
    engine = dev.engine
    iv = state[: 16 if p.cipher_mode == 2 else block]
    body = data[:length]
    header, text = body[:offset], body[offset:]
    if p.direction:
        if len(mem) < length + p.icv_len:
            return None  # BUS: the tag is read from beyond the buffer
        expected = p.mac(engine.resume, body, state)[: p.icv_len]
        if not hmac.compare_digest(expected, bytes(mem[length : length + p.icv_len])):
            return None
        if p.cipher_mode == 2:
            plain, chain = cipher.ctr(iv, text)
        else:
            plain, chain = cipher.cbc_decrypt(iv, text), text[-block:]
        out = header + plain if p.copy_header else plain
        tag: int | None = None
    else:
        if p.cipher_mode == 2:
            sealed, chain = cipher.ctr(iv, text)
        else:
            sealed = cipher.cbc_encrypt(iv, text)
            chain = sealed[-block:]
        icv = b""
        if p.copy_digest:
            icv = tag_words(alg, p.mac(engine.resume, header + sealed, state))[: p.icv_len]
        out = (header + sealed if p.copy_header else sealed) + icv
        tag = len(icv)
    saved = chain.ljust(16, b"\x00") + state[16:] if chain else None
    if saved is not None:
        memory.write(state_addr, saved)
    mem[: len(out)] = out
    out_len = len(out)
    _count(engine, length, out_len)
    engine.stats.basic += 1
    user = 0x80000 | handle & 0xFFFF
    result = _DESC.pack(PE_READY, buf, buf, sa_addr, state_addr, 0, user,
                        PE_READY << 22 | out_len)
    _retire(drv, ring, slot, _DESC.pack(0, buf, buf, sa_addr, state_addr, 0, user, 0), result)
    words = (0x00000001, buf, buf, sa_addr, state_addr, 0, user, 0x00400000 | length)
    return slot, result, out, (slot, result, words, length, out_len, p, state, body,
                               cipher_job, (p, len(header), len(text), out, saved, tag))
