"""The one-step ESP requests (:mod:`~esplab.model.kernel.drivers.eip93.fast`): the engine
builds an ESP packet from the driver's skb (``esp_tx``) or checks, decrypts and strips one
(``esp_rx``), and the driver finishes it, all in one step, leaving exactly what the
full protocol through the rings leaves. Each returns None whenever the full protocol
could end differently; the caller then runs that.
"""

from __future__ import annotations

import hmac
import struct
from functools import partial
from typing import TYPE_CHECKING

from esplab.layers.crypto_desc import PE_READY
from esplab.model.hw.eip93.espmode import inbound_job, outbound_job, pad_bytes, pad_count
from esplab.model.hw.eip93.params import SAParams
from esplab.model.kernel.drivers.eip93.fast import (
    BYTES,
    DESC,
    ESP_CTRL,
    KIND_IN,
    KIND_OUT,
    Plan,
    digest,
    plan,
    retire,
    stages,
)
from esplab.model.kernel.drivers.eip93.iphead import decapsulate, fix_ipv4, fix_outer
from esplab.model.kernel.drivers.eip93.outcome import OffloadedSA, Outcome, defer_stages
from esplab.model.stages import Stage

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.driver import EIP93Driver, Opening

__all__ = [
    "RX_CRYPTO_DONE",
    "RX_CRYPTO_SEQ_IGNORED",
    "RX_CRYPTO_SEQ_WHY",
    "RX_CRYPTO_WHY",
    "RX_PACKET_DONE",
    "RX_PACKET_WHY",
    "TX_DONE",
    "TX_DONE_WHY",
    "esp_rx",
    "esp_tx",
]

_U32 = 0xFFFFFFFF
_U64 = (1 << 64) - 1
_WINDOW = struct.Struct("<4I")  # sa_seqnum[0..1], sa_seqnum_mask[0..1] (eip93.md 3.1)
_WORD = struct.Struct("<I")
_READY = PE_READY << 22  # result word 7: PE_READY in bits 23:22


TX_DONE = "TX done: ESP seq {}, {} bytes; IP length set to {}"
TX_DONE_WHY = "the driver sets the IP length from the result length and resumes xfrm (eip93.md 4.3)"


def _esp_plan(drv: EIP93Driver, ring: object, sa: OffloadedSA, kind: int) -> Plan | None:
    """The plan of ``sa``'s record when an ESP request of ``kind`` may run in one step: the
    rings ready (``ring``), snapshots off, no state record, a record of that kind."""
    if ring is None or drv.device.snapshots or sa.state_addr:
        return None
    pl = plan(drv, sa.sa_addr)
    return pl if pl is not None and pl.kind == kind else None


def esp_tx(
    drv: EIP93Driver,
    sa: OffloadedSA,
    skb: bytes,
    off: int,
    start: int,
    proto: int,
    sync: bool,
    first: Opening,
) -> Outcome | None:
    """``xmit.esp_tx`` from the slot on, in one step: the engine builds the ESP packet from
    the header at ``off`` (with ``sync``, crypto offload, the kernel's sequence number
    goes to the record first), the driver sets the IP length (``_tx_finish``)."""
    dev = drv.device
    ring = drv.ready_ring()
    pl = _esp_plan(drv, ring, sa, KIND_OUT)
    if pl is None or ring is None or pl.iv_size != sa.iv_size:
        # (a record whose IV differs from the room the driver left: the ESP packet does
        # not cover the whole skb, and the full protocol leaves its end in the buffer)
        return None
    sa_addr = sa.sa_addr
    rec, at = pl.rec, pl.at
    if sync:
        sa_seq = (int.from_bytes(skb[off + 4 : off + 8], "big") - 1) & _U32
    else:
        sa_seq = int.from_bytes(rec[at + 0x6C : at + 0x70], "little")
    if sa_seq >= _U32:
        return None  # SEQNUM_ERR
    engine = dev.engine
    slot = drv.head
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    src = buf + start
    seq = sa_seq + 1
    length = len(skb) - start
    next_header = proto & 0xFF
    iv = engine.prng.take(pl.iv_size, src) if pl.prng_iv else pl.zero_iv  # [U] iv-prng
    pad = pad_count(length, pl.align)
    esp = pl.p.spi_bytes + seq.to_bytes(4, "big") + iv
    esp += pl.seal(iv, skb[start:] + (pl.tails[pad] + BYTES[next_header]))
    if pl.tx_icv:
        esp += digest(pl, engine, esp, None)[: pl.tx_icv]
    # The buffer as the engine leaves it: the skb, then the ESP from the header on (which
    # covers the rest of the skb); the record with the number written back.
    head = skb[:off]
    mem[:off] = head
    out_len = len(esp)
    mem[off : off + out_len] = esp
    _WORD.pack_into(rec, at + 0x6C, seq)  # sa_seqnum[0]
    ctrl = ESP_CTRL | next_header << 8
    dst = buf + off
    user = 0x50000 | sa.handle & 0xFFFF
    result = DESC.pack(
        ctrl & 0xFC | PE_READY | next_header << 8 | pad << 24,
        src,
        dst,
        sa_addr,
        0,
        0,
        user,
        _READY | out_len,
    )
    retire(drv, ring, slot, result, src, dst, sa_addr, 0, user, length, out_len).esp_out += 1
    # _tx_finish
    if off == 20 and head[0] == 0x45:  # fix_outer for an IPv4 header without options
        packet = fix_ipv4(head, 20 + out_len, head[9]) + esp
    else:
        packet = fix_outer(head, out_len) + esp
    stats = sa.stats
    stats.packets += 1
    stats.bytes += length
    drv.stats.tx_packets += 1
    outcome = Outcome(True, packet, [], seq=seq, status="CRYPTO_SUCCESS", slot=slot, result=result)
    defer_stages(
        outcome,
        partial(
            _tx_stages,
            drv,
            first,
            slot,
            result,
            ctrl,
            skb,
            start,
            pl.p,
            pad,
            esp,
            pl.prng_iv,
            len(packet),
        ),
    )
    return outcome


def _tx_stages(
    drv: EIP93Driver,
    first: Opening,
    slot: int,
    result: bytes,
    ctrl: int,
    skb: bytes,
    start: int,
    p: SAParams,
    pad: int,
    esp: bytes,
    prng_iv: bool,
    packet_len: int,
) -> list[Stage]:
    """:func:`esp_tx`'s stages (see :func:`stages`)."""
    length = len(skb) - start
    seq = int.from_bytes(esp[4:8], "big")
    job = outbound_job(p, seq, length, pad, ctrl >> 8 & 0xFF, esp, None, prng_iv)
    return stages(
        drv,
        first,
        (TX_DONE, TX_DONE_WHY, "D", (seq, len(esp), packet_len), "ip"),
        slot,
        result,
        ctrl,
        length,
        p,
        None,
        skb[start:],
        job,
    )


RX_CRYPTO_DONE = (
    "RX done: seq {}, next header {}, {} bytes; CRYPTO_DONE, CRYPTO_SUCCESS, trailer removed"
)
RX_CRYPTO_SEQ_IGNORED = (
    "RX done: seq {}, next header {}, {} bytes; SEQNUM_ERR ignored: CRYPTO_DONE, "
    "CRYPTO_SUCCESS, trailer removed"
)
RX_PACKET_DONE = "RX done: seq {}, next header {}; decapsulated, {} bytes"
RX_CRYPTO_WHY = (
    "crypto offload: the kernel does the replay check, strips header and IV and "
    "decapsulates (airoha-dsa-xfrm.md 3.2; eip93.md 4.4)"
)
RX_CRYPTO_SEQ_WHY = (
    "crypto offload: the driver ignores SEQNUM_ERR as the vschagen ESP path does; the "
    "kernel's own replay check after CRYPTO_DONE decides (eip93.md 2.2, 4.6; "
    "airoha-dsa-xfrm.md 3.2, 3.9)"
)
RX_PACKET_WHY = (
    "packet offload: the hardware checks replay and decapsulates; the policy check "
    "sees CRYPTO_DONE only (airoha-dsa-xfrm.md 3.2) [M] packet-offload"
)


def esp_rx(
    drv: EIP93Driver, sa: OffloadedSA, skb: bytes, off: int, nh_off: int, esp: bytes, first: Opening
) -> Outcome | None:
    """``xmit.esp_rx`` from the slot on, in one step: the engine checks and opens ``esp``
    (the skb from ``off``) in place, the driver maps the result (``_rx_finish``)."""
    dev = drv.device
    ring = drv.ready_ring()
    pl = _esp_plan(drv, ring, sa, KIND_IN)
    if pl is None or ring is None:
        return None
    sa_addr = sa.sa_addr
    p = pl.p
    icv_len = pl.icv_len
    head = 8 + pl.iv_size
    length = len(esp)
    end = length - icv_len
    if end - head < 2 or (end - head) % pl.block or not esp.startswith(p.spi_bytes):
        return None  # INVALID_PK_LENGTH, BLOCK_SIZE_ERR, SPI
    rec, at = pl.rec, pl.at
    seq = int.from_bytes(esp[4:8], "big")
    top, high, low_mask, high_mask = _WINDOW.unpack_from(rec, at + 0x6C)
    bitmap = low_mask | high_mask << 32
    if seq > top:  # the window moves on (espmode._advance) [U] replay-window
        shift = seq - top
        bitmap = (bitmap << shift | 1) & _U64 if shift < 64 else 1
        top = seq
    elif top - seq >= 64 or bitmap >> (top - seq) & 1:
        if p.en_seqnum_chk:
            # SEQNUM_ERR: crypto offload ignores it (xmit.rx_failures), packet offload
            # drops; either way the full protocol shows the engine's status.
            return None
    else:
        bitmap |= 1 << (top - seq)
    engine = dev.engine
    if icv_len and not hmac.compare_digest(
        digest(pl, engine, esp[:end], None)[:icv_len], esp[end:]
    ):
        return None  # AUTH_ERR
    # Decrypting moves only the cipher's running context, which the full protocol's run
    # of the same bytes leaves the same: a padding error may still fall back.
    plain = pl.open(esp[8:head], esp[head:end])
    pad, next_header = plain[-2], plain[-1]
    cut = len(plain) - 2 - pad
    if cut < 0 or plain[cut:-2] != (pl.pads[pad] if pad < pl.align else pad_bytes(p.pad_type, pad)):
        return None  # PAD_ERR
    out = esp[:head] + plain[:cut] if p.copy_header else plain[:cut]
    slot = drv.head
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    out_len = len(out)
    mem[:length] = esp
    mem[:out_len] = out
    sa_write = None
    if p.en_seqnum_chk:
        advanced = _WINDOW.pack(top, high, bitmap & _U32, bitmap >> 32)
        rec[at + 0x6C : at + 0x7C] = advanced
        sa_write = (0x6C, advanced)
    user = 0x60000 | sa.handle & 0xFFFF
    result = DESC.pack(
        ESP_CTRL & 0xFC | PE_READY | next_header << 8 | pad << 24,
        buf,
        buf,
        sa_addr,
        0,
        0,
        user,
        _READY | out_len,
    )
    retire(drv, ring, slot, result, buf, buf, sa_addr, 0, user, length, out_len).esp_in += 1
    # _rx_finish: the result in place, in the driver's buffer
    seq = int.from_bytes(out[4:8], "big")
    payload = out[8 + sa.iv_size :]
    stats = sa.stats
    stats.packets += 1
    stats.bytes += len(payload)
    drv.stats.rx_packets += 1
    crypto = sa.offload == "crypto"
    if crypto:
        data = skb[:off] + out
    else:
        data = decapsulate(skb[:off], nh_off, payload, next_header, sa.mode == "tunnel")
    outcome = Outcome(
        True,
        data,
        [],
        status="CRYPTO_SUCCESS",
        seq=seq,
        next_header=next_header,
        slot=slot,
        result=result,
    )
    defer_stages(
        outcome,
        partial(
            _rx_stages,
            drv,
            first,
            slot,
            result,
            esp,
            p,
            out,
            pad,
            sa_write,
            seq,
            crypto,
            len(payload if crypto else data),
        ),
    )
    return outcome


def _rx_stages(
    drv: EIP93Driver,
    first: Opening,
    slot: int,
    result: bytes,
    esp: bytes,
    p: SAParams,
    out: bytes,
    pad: int,
    sa_write: tuple[int, bytes] | None,
    seq: int,
    crypto: bool,
    count: int,
) -> list[Stage]:
    """:func:`esp_rx`'s stages (see :func:`stages`); ``count`` is the payload's length on
    crypto offload, the decapsulated packet's on packet offload."""
    next_header = result[1]  # result word 0 bits 15:8
    job = inbound_job(
        p, p.spi, int.from_bytes(esp[4:8], "big"), out, next_header, pad, sa_write, None
    )
    last = (
        (RX_CRYPTO_DONE, RX_CRYPTO_WHY, "D", (seq, next_header, count), "ip")
        if crypto
        else (RX_PACKET_DONE, RX_PACKET_WHY, "M", (seq, next_header, count), "ip")
    )
    return stages(drv, first, last, slot, result, ESP_CTRL, len(esp), p, None, esp, job)
