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
function returns None whenever the full protocol could end differently: the engine
paused or busy, results waiting, snapshots on, a state record (ESP), a record the
engine would refuse or whose IV differs from the room the driver left, an output
larger than the buffer, or any error status (a pinned IV is kept from these functions
by their callers). The caller then runs the full
protocol, which starts from the same state: a function that returns None has changed
nothing but what the full protocol writes again the same way (the driver's own
writes before the command) or cannot tell apart (a cipher's running context).
``EIP93Driver.fast_path = False`` forces the full protocol. :mod:`.fastaead` does the
same for basic-mode ``authenc``.
"""

from __future__ import annotations

import hmac
import struct
from functools import partial
from typing import TYPE_CHECKING, Any

from esplab.layers.crypto_desc import PE_READY
from esplab.layers.sa_record import SA_RECORD_SIZE
from esplab.model.engine import regs as R
from esplab.model.engine.algos import BlockCipher
from esplab.model.engine.core import Engine, EngineStats, job_stages
from esplab.model.engine.espmode import _BOUNDARY, inbound_job, outbound_job, pad_bytes
from esplab.model.engine.iphead import decapsulate, fix_ipv4, fix_outer
from esplab.model.engine.outcome import OffloadedSA, Outcome, defer_stages
from esplab.model.engine.params import Job, SAParams
from esplab.model.engine.stages import LazyStage
from esplab.model.journey import Stage

if TYPE_CHECKING:
    from esplab.model.engine.driver import EIP93Driver, Opening

__all__ = [
    "AUTHENC",
    "RX_CRYPTO_DONE",
    "RX_CRYPTO_WHY",
    "RX_PACKET_DONE",
    "RX_PACKET_WHY",
    "TX_DONE",
    "TX_DONE_WHY",
    "Plan",
    "digest",
    "esp_rx",
    "esp_tx",
    "plan",
    "retire",
    "stages",
]

_U32 = 0xFFFFFFFF
_U64 = (1 << 64) - 1
_WINDOW = struct.Struct("<4I")  # sa_seqnum[0..1], sa_seqnum_mask[0..1] (eip93.md 3.1)
_WORD = struct.Struct("<I")
_DESC = struct.Struct("<8I")
_CTR_ONE = b"\x00\x00\x00\x01"
_DONE = R.INT_OPERATION_DONE
_THRESH = R.INT_RDR_THRESH
_ESP_CTRL = 0x02000011  # command word 0 of an ESP job as xmit.esp_tx/esp_rx build it
_READY = PE_READY << 22  # result word 7: PE_READY in bits 23:22
_BYTES = tuple(bytes((n,)) for n in range(256))
_OUT, _IN = 1, 2
AUTHENC = 3  # Plan.kind of a basic-mode authenc record (fastaead.py)


class Plan:
    """One SA record as the fast path uses it: where its bytes are, the static bytes the
    engine cached its decoded form under, and what one job needs from it."""

    __slots__ = (
        "align",
        "at",
        "block",
        "cmd1",
        "ctr",
        "frees",
        "head",
        "icv_len",
        "inner",
        "iv_size",
        "key",
        "kind",
        "nonce",
        "offset",
        "open",
        "outer",
        "p",
        "pads",
        "prng_iv",
        "rec",
        "rec_addr",
        "seal",
        "state",
        "tails",
        "tx_icv",
        "words",
        "zero_iv",
    )

    def __init__(
        self, rec: bytearray, at: int, key: bytes, p: SAParams, frees: int, rec_addr: int
    ) -> None:
        self.rec, self.at, self.key, self.p, self.frees = rec, at, key, p, frees
        self.rec_addr = rec_addr
        self.head, self.nonce = key[:0x6C], key[0x6C:]
        self.cmd1 = int.from_bytes(key[4:8], "little")  # sa_cmd1 (eip93.md 3.3)
        self.kind = _kind(p)
        self.block = p.block
        self.iv_size = p.esp_iv
        self.zero_iv = bytes(self.iv_size)  # iv_source 0, 1 and 2 without a state record
        self.icv_len = p.icv_len if p.alg is not None else 0
        self.tx_icv = self.icv_len if p.copy_digest else 0
        #: ``basic.tag_words`` for an ICV of ``icv_len``: (unpack, pack), None for MD5.
        self.words: tuple[Any, Any] | None = None
        if p.alg not in (None, "md5"):
            count = self.icv_len // 4
            self.words = (struct.Struct(f">{count}I").unpack, struct.Struct(f"<{count}I").pack)
        self.prng_iv = bool(p.iv_source == 3 and self.iv_size)
        # The HMAC states as hashlib objects when the engine has them (else p.mac).
        simple = p.alg is not None and p.hash_source == 0 and p.hmac
        self.inner: Any = p.inner if simple and p.outer is not None else None
        self.outer: Any = p.outer if self.inner is not None else None
        self.align = max(p.block, _BOUNDARY[_ESP_CTRL >> 24])
        self.pads = tuple(pad_bytes(p.pad_type, n) for n in range(self.align))
        self.tails = tuple(pad + _BYTES[len(pad)] for pad in self.pads)  # + pad length
        # ESP encryption and decryption of (IV, bytes) as espmode does them.
        cipher = p.engine
        self.seal: Any = _same
        self.open: Any = _same
        if cipher is not None and p.cipher_mode == 2:  # [U] ctr-counter-block
            self.seal = self.open = partial(_ctr, cipher, p.nonce)
        elif cipher is not None:
            self.seal, self.open = cipher.cbc_encrypt, cipher.cbc_decrypt
        # authenc: the bytes only hashed (hash_crypt_offset), CTR or CBC.
        self.offset = p.hash_crypt_offset * (1 if p.byte_offset else 4)
        self.ctr = p.cipher_mode == 2
        #: A state record's region as (address, memory.frees, bytes, offset), once known.
        self.state: tuple[int, int, bytearray, int] | None = None


def _same(iv: bytes, data: bytes) -> bytes:
    return data


def _ctr(cipher: BlockCipher, nonce: bytes, iv: bytes, data: bytes) -> bytes:
    return cipher.ctr(nonce + iv + _CTR_ONE, data)[0]


def _kind(p: SAParams) -> int:
    """What the fast path runs on this record: ESP out, ESP in, authenc, or 0 (nothing)."""
    if p.error is not None or (p.engine is not None and p.cipher_mode not in (1, 2)):
        return 0
    if p.opgroup == 1:
        return _IN if p.direction else _OUT
    if (
        p.opcode == 1
        and p.alg is not None
        and p.engine is not None
        and p.iv_source == 2
        and p.save_iv
    ):
        return AUTHENC
    return 0


def plan(drv: EIP93Driver, sa_addr: int, cmd1: int | None = None) -> Plan | None:
    """The plan for the SA record at ``sa_addr`` as memory holds it now, or None; with
    ``cmd1``, after the driver wrote that ``sa_cmd1`` to the record (a bus fault there is
    raised as the driver's write raises it).

    The decoded SA is the engine's own cached one: what the full protocol would use,
    decoded and cached now if the record is not (as the engine would).
    """
    memory = drv.memory
    pl = drv.plans.get(sa_addr)
    if pl is not None and pl.frees == memory.frees:
        rec, at = pl.rec, pl.at
        if cmd1 is not None and cmd1 != pl.cmd1:  # else the comparison below covers it
            rec[at + 4 : at + 8] = cmd1.to_bytes(4, "little")
        if (
            drv.device.engine._records.get(pl.key) is pl.p
            and rec.startswith(pl.head, at)
            and rec.startswith(pl.nonce, at + 0x7C)
        ):
            return pl
    if cmd1 is not None:
        memory.write(sa_addr + 4, cmd1.to_bytes(4, "little"))
    region = memory.region(sa_addr, SA_RECORD_SIZE)
    if region is None:
        return None
    at = sa_addr - region.base
    record = bytes(region.data[at : at + SA_RECORD_SIZE])
    key = record[:0x6C] + record[0x7C:]
    engine = drv.device.engine
    p = engine._records.get(key) or engine.params(record)
    pl = drv.plans[sa_addr] = Plan(region.data, at, key, p, memory.frees, sa_addr)
    return pl


def retire(
    drv: EIP93Driver,
    ring: tuple[bytearray, bytearray, int, bool, int],
    slot: int,
    result: bytes,
    src: int,
    dst: int,
    sa_addr: int,
    state_addr: int,
    user: int,
    length: int,
    out_len: int,
) -> EngineStats:
    """The ring slots, indexes, interrupt status and the driver's and engine's counters as
    one successful command run through the rings and consumed leaves them
    (``EIP93Driver.transact``, ``Engine.run_command``); returns the engine's counters for
    the caller to count the job's kind."""
    cdr, rdr, entries, rdr_irq, _ = ring
    at = slot << 5
    # The command with words 0 and 7 cleared by the driver once it read the result.
    _DESC.pack_into(cdr, at, 0, src, dst, sa_addr, state_addr, 0, user, 0)
    rdr[at : at + 32] = result
    dev = drv.device
    slot += 1
    drv.head = drv.tail = dev.index = 0 if slot == entries else slot
    raw = dev.raw_int
    if rdr_irq or raw & _THRESH:  # latched, then the tasklet's INT_CLR and MASK_ENABLE
        dev.raw_int = (raw | _DONE) & ~_THRESH
        dev.int_mask |= _THRESH
    else:
        dev.raw_int = raw | _DONE
    stats = drv.stats
    stats.submitted += 1
    stats.completed += 1
    engine = dev.engine
    engine._shown = None
    st = engine.stats
    st.processed += 1
    st.bytes_in += length
    st.succeeded += 1
    st.bytes_out += out_len
    return st


def stages(
    drv: EIP93Driver,
    first: Opening,
    last: tuple[Any, ...],
    slot: int,
    result: bytes,
    w0: int,
    length: int,
    p: SAParams,
    state: bytes | None,
    body: bytes,
    job: Job,
) -> list[Stage]:
    """The stages the full protocol gives a one-step request, built when someone reads
    them: the driver's ``first`` (template, why, fidelity, args), the engine's for the
    command (word 0 ``w0``, ``length`` input bytes, ``body`` read) that ran ``job`` and
    wrote ``result`` to the RDR, and the driver's ``last`` (... and snapshot kind)."""
    job.meta["choices"] = job.choices
    _, src, dst, sa_addr, state_addr, arc4, user, _ = _DESC.unpack(result)
    words = (w0, src, dst, sa_addr, state_addr, arc4, user, 0x00400000 | length)
    built = drv.opening(first)
    built += job_stages(
        (
            drv.node,
            False,
            slot,
            None,
            result,
            words,
            length,
            len(job.out),
            job,
            p,
            3,
            None,
            state,
            body,
            job,
        )
    )
    decision, why, fidelity, args, kind = last
    built.append(
        LazyStage(
            "eip93.driver", drv.node, decision, why, fidelity, None, None, kind, None, {}, args
        )
    )
    return built


def digest(pl: Plan, engine: Engine, data: bytes, state: bytes | None) -> bytes:
    """``SAParams.mac`` of ``data``: from hashlib's HMAC states when the plan has them."""
    inner = pl.inner
    if inner is None:
        return pl.p.mac(engine.resume, data, state)
    h = inner.copy()
    h.update(data)
    outer = pl.outer.copy()
    outer.update(h.digest())
    return outer.digest()  # type: ignore[no-any-return]


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
    pl = _esp_plan(drv, ring, sa, _OUT)
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
    pad = -(length + 2) % pl.align
    esp = pl.p.spi_bytes + seq.to_bytes(4, "big") + iv
    esp += pl.seal(iv, skb[start:] + (pl.tails[pad] + _BYTES[next_header]))
    if pl.tx_icv:
        esp += digest(pl, engine, esp, None)[: pl.tx_icv]
    # The buffer as the engine leaves it: the skb, then the ESP from the header on (which
    # covers the rest of the skb); the record with the number written back.
    head = skb[:off]
    mem[:off] = head
    out_len = len(esp)
    mem[off : off + out_len] = esp
    _WORD.pack_into(rec, at + 0x6C, seq)  # sa_seqnum[0]
    ctrl = _ESP_CTRL | next_header << 8
    dst = buf + off
    user = 0x50000 | sa.handle & 0xFFFF
    result = _DESC.pack(
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
RX_PACKET_DONE = "RX done: seq {}, next header {}; decapsulated, {} bytes"
RX_CRYPTO_WHY = (
    "crypto offload: the kernel does the replay check, strips header and IV and "
    "decapsulates (airoha-dsa-xfrm.md 3.2; eip93.md 4.4)"
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
    pl = _esp_plan(drv, ring, sa, _IN)
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
            return None  # SEQNUM_ERR
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
    result = _DESC.pack(
        _ESP_CTRL & 0xFC | PE_READY | next_header << 8 | pad << 24,
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
    return stages(drv, first, last, slot, result, _ESP_CTRL, len(esp), p, None, esp, job)
