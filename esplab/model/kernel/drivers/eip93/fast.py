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
(:meth:`~esplab.model.hw.eip93.core.Engine.params`), reads the sequence number or
window from the record, and uses the engine's own cipher, hash and IV state. Each
function returns None whenever the full protocol could end differently: the engine
paused or busy, results waiting, snapshots on, a state record (ESP), a record the
engine would refuse or whose IV differs from the room the driver left, an output
larger than the buffer, or any error status (a pinned IV is kept from these functions
by their callers). The caller then runs the full
protocol, which starts from the same state: a function that returns None has changed
nothing but what the full protocol writes again the same way (the driver's own
writes before the command) or cannot tell apart (a cipher's running context).
``EIP93Driver.fast_path = False`` forces the full protocol. This module holds what
every one-step request shares (the SA record's :class:`Plan`, the ring slots a job
leaves, its stages); :mod:`.fastesp` has the ESP requests and :mod:`.fastaead` the
basic-mode ``authenc`` ones.
"""

from __future__ import annotations

import struct
from functools import partial
from typing import TYPE_CHECKING, Any

from esplab.layers.sa_record import SA_RECORD_SIZE
from esplab.model.hw.eip93 import regs as R
from esplab.model.hw.eip93.algos import BlockCipher
from esplab.model.hw.eip93.core import Engine, EngineStats, job_stages
from esplab.model.hw.eip93.espmode import pad_align, pad_bytes
from esplab.model.hw.eip93.params import Job, SAParams
from esplab.model.stages import Stage
from esplab.model.stages_lazy import LazyStage

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.driver import EIP93Driver, Opening

__all__ = [
    "AUTHENC",
    "BYTES",
    "DESC",
    "ESP_CTRL",
    "KIND_IN",
    "KIND_OUT",
    "Plan",
    "digest",
    "plan",
    "retire",
    "stages",
]

DESC = struct.Struct("<8I")
_CTR_ONE = b"\x00\x00\x00\x01"
_DONE = R.INT_OPERATION_DONE
_THRESH = R.INT_RDR_THRESH
ESP_CTRL = 0x02000011  # command word 0 of an ESP job as xmit.esp_tx/esp_rx build it
BYTES = tuple(bytes((n,)) for n in range(256))
KIND_OUT, KIND_IN = 1, 2
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
        self.align = pad_align(p.block, ESP_CTRL >> 24)
        self.pads = tuple(pad_bytes(p.pad_type, n) for n in range(self.align))
        self.tails = tuple(pad + BYTES[len(pad)] for pad in self.pads)  # + pad length
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
        return KIND_IN if p.direction else KIND_OUT
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
    DESC.pack_into(cdr, at, 0, src, dst, sa_addr, state_addr, 0, user, 0)
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
    _, src, dst, sa_addr, state_addr, arc4, user, _ = DESC.unpack(result)
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
