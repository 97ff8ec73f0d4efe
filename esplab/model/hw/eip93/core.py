"""Processing one command descriptor, from memory to memory (eip93.md 1.5 step 3).

The engine reads only memory: the descriptor, then the SA record at ``sa_addr``,
the state record at ``state_addr`` (skipped when it is 0, eip93.md 8.5), and the
input at ``src_addr``. It writes the output at ``dst_addr``, the sequence number or
replay window back into the SA record, the chaining values into the state record,
and returns the 32-byte result descriptor for the RDR. A bus fault anywhere ends
the job with ext error BUS, as on the hardware. Each step is a journey stage.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field

from esplab.layers.crypto_desc import HOST_READY, PE_READY
from esplab.layers.sa_record import SA_RECORD_SIZE, STATE_RECORD_SIZE
from esplab.model.hw.eip93.algos import HashResume, Prng
from esplab.model.hw.eip93.basic import basic
from esplab.model.hw.eip93.espmode import esp_inbound, esp_outbound
from esplab.model.hw.eip93.jobstages import job_stages
from esplab.model.hw.eip93.memory import BusFault, DmaMemory, Region
from esplab.model.hw.eip93.params import (
    BUS,
    DESC_OWNER,
    INVALID_PK_LENGTH,
    Job,
    SAParams,
    decode_sa,
    fail,
    status_names,
)
from esplab.model.stage import Later

__all__ = ["Engine", "EngineStats"]

_DESC = struct.Struct("<8I")
_WORD = struct.Struct("<I")
_SA_CACHE_MAX = 4096


@dataclass
class EngineStats:
    """What the engine has done since probe (``eip93 stats``)."""

    processed: int = 0
    succeeded: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    esp_out: int = 0
    esp_in: int = 0
    basic: int = 0
    errors: Counter[str] = field(default_factory=Counter)


@dataclass
class Engine:
    """The processing half of the EIP-93: one descriptor in, one result out."""

    memory: DmaMemory
    prng: Prng
    resume: HashResume = field(default_factory=HashResume)
    node: str = "ap"
    snapshots: bool = True
    stats: EngineStats = field(default_factory=EngineStats)
    last_error: str = ""
    _records: dict[bytes, SAParams] = field(default_factory=dict, repr=False)
    #: sa_addr -> (record bytes 0..0x6B, bytes 0x7C..0x7F, the SA decoded from them, the
    #: region holding the record, its offset there, memory.frees then): the last record
    #: seen there, used only while no region was freed and memory still holds those bytes.
    _at: dict[int, tuple[bytes, bytes, SAParams, Region, int, int]] = field(
        default_factory=dict, repr=False
    )
    _shown: Job | None = field(default=None, init=False, repr=False, compare=False)

    def learn_hmac_blocks(self, alg: str, *blocks: bytes) -> None:
        """Speed path: remember key-xor-pad blocks so hashlib can continue their states
        (see :class:`~esplab.model.hw.eip93.algos.HashResume`). Results do not change."""
        for block in blocks:
            self.resume.learn(alg, block)
        self._records.clear()
        self._at.clear()

    def params(self, record: bytes) -> SAParams:
        """The decoded SA, cached by the record's static bytes (all but 0x6C..0x7B)."""
        key = record[:0x6C] + record[0x7C:]
        p = self._records.get(key)
        if p is None:
            if len(self._records) >= _SA_CACHE_MAX:
                self._records.clear()
            p = self._records[key] = decode_sa(record, self.resume)
        return p

    def _remember_at(self, sa_addr: int, region: Region, off: int) -> SAParams:
        """:meth:`params` of the record at ``sa_addr`` (at ``off`` in ``region``),
        remembered for that address with its static bytes and its region (see ``_run``)."""
        record = bytes(region.data[off : off + SA_RECORD_SIZE])
        p = self.params(record)
        if len(self._at) >= _SA_CACHE_MAX:
            self._at.clear()
        self._at[sa_addr] = (record[:0x6C], record[0x7C:], p, region, off, self.memory.frees)
        return p

    def process(
        self,
        words: tuple[int, ...],
        slot: int,
        cmd: bytes | None,
        rdr: bytearray,
        rdr_at: int,
    ) -> Later:
        """Run the command of CDR slot ``slot`` (its eight words; ``cmd`` its 32 bytes
        while snapshots are on), write the result descriptor into ``rdr`` at ``rdr_at``,
        and return the job's stages, built when someone reads them (what they show is
        fixed now)."""
        w0, src, dst, sa_addr, state_addr, arc4, user, w7 = words
        length = w7 & 0xFFFFF
        self._shown = None
        job, p, level, record, state, body = self._run(
            w0, src, dst, sa_addr, state_addr, length, (w7 >> 24) * 4, w7
        )
        status = job.status
        out = job.out
        out_len = (w7 >> 24) * 4 + len(out) if out or not status else 0
        _DESC.pack_into(
            rdr,
            rdr_at,
            (w0 & 0xFC)
            | PE_READY
            | (job.pad_value & 0xFF) << 8
            | status << 16
            | (job.pad_count & 0xFF) << 24,
            src,
            dst,
            sa_addr,
            state_addr,
            arc4,
            user,
            (w7 & 0xFF000000) | PE_READY << 22 | (out_len & 0xFFFFF),
        )
        # Counters (eip93 stats).
        st = self.stats
        st.processed += 1
        st.bytes_in += length
        if p is not None:
            kind = p.kind
            if kind == 1:
                st.esp_out += 1
            elif kind == 2:
                st.esp_in += 1
            elif kind == 0:
                st.basic += 1
        if status:
            names = status_names(status)
            st.errors.update(n for n in names if n != "EXT_ERR")
            self.last_error = f"{', '.join(names)}: {job.text}"
        else:
            st.succeeded += 1
            st.bytes_out += len(out)
        snap = cmd is not None
        return Later(
            job_stages,
            (  # (the bytes only snapshots show are kept only while they are on)
                self.node,
                snap,
                slot,
                cmd,
                bytes(rdr[rdr_at : rdr_at + 32]) if snap else None,
                words,
                length,
                out_len,
                job,
                p,
                level,
                record if snap else None,
                state,
                body,
                self._shown or job,
            ),
            True,
            slot,
        )

    def _run(
        self,
        w0: int,
        src: int,
        dst: int,
        sa_addr: int,
        state_addr: int,
        length: int,
        bypass: int,
        w7: int,
    ) -> tuple[Job, SAParams | None, int, bytes | None, bytes | None, bytes]:
        """The job and what its stages show: (job, SA, how far it got, record, state,
        input). How far: 0 nothing read, 1 an SA record it refuses, 2 inputs read,
        3 output written."""
        if w0 & 3 != HOST_READY or w7 >> 22 & 3 != HOST_READY:
            return (
                fail(
                    DESC_OWNER,
                    f"ownership bits {w0 & 3}/{w7 >> 22 & 3}, expected "
                    f"HOST_READY (1) in word 0 and word 7",
                    "desc-owner",
                ),
                None,
                0,
                None,
                None,
                b"",
            )
        memory = self.memory
        seen = self._at.get(sa_addr)
        if seen is not None and seen[5] == memory.frees:  # its region is still there
            sa_region, sa_off = seen[3], seen[4]
        else:
            seen = None
            try:
                sa_region, sa_off = memory.span(sa_addr, SA_RECORD_SIZE)
            except BusFault:
                return (
                    fail(BUS, f"sa_addr {sa_addr:#010x} is outside DMA memory"),
                    None,
                    0,
                    None,
                    None,
                    b"",
                )
        sa_data = sa_region.data
        # The static bytes are compared with the ones last decoded at this address.
        if (
            seen is not None
            and sa_data.startswith(seen[0], sa_off)
            and sa_data.startswith(seen[1], sa_off + 0x7C)
        ):
            p = seen[2]
        else:
            p = self._remember_at(sa_addr, sa_region, sa_off)
        # The record's bytes, for the stages' snapshots only.
        record = bytes(sa_data[sa_off : sa_off + SA_RECORD_SIZE]) if self.snapshots else None
        if p.error is not None:
            return fail(*p.error), p, 1, record, None, b""
        state: bytes | None = None
        if state_addr:
            try:
                st_region, st_off = memory.span(state_addr, STATE_RECORD_SIZE)
            except BusFault:
                return (
                    fail(BUS, f"state_addr {state_addr:#010x} is outside DMA memory"),
                    p,
                    0,
                    None,
                    None,
                    b"",
                )
            state = bytes(st_region.view[st_off : st_off + STATE_RECORD_SIZE])
        if bypass > length:
            return (
                fail(INVALID_PK_LENGTH, f"bypass {bypass} bytes exceeds length {length}", "bypass"),
                p,
                0,
                None,
                None,
                b"",
            )
        tag_len = p.tag_len
        try:
            src_region, src_off = memory.span(src, length + tag_len)
        except BusFault:
            return (
                fail(BUS, f"src_addr {src:#010x} + {length + tag_len} bytes is outside DMA memory"),
                p,
                0,
                None,
                None,
                b"",
            )
        data = bytes(src_region.view[src_off : src_off + length + tag_len])
        body = data[bypass:length] if bypass or tag_len else data
        kind = p.kind
        if kind == 1:
            job = esp_outbound(
                p,
                w0,
                body,
                _WORD.unpack_from(sa_data, sa_off + 0x6C)[0],  # sa_seqnum[0]
                state,
                self.prng,
                self.resume,
                src + bypass,
            )
        elif kind == 2:
            job = esp_inbound(
                p, body, bytes(sa_data[sa_off + 0x6C : sa_off + 0x7C]), state, self.resume
            )
        else:
            job = basic(p, w0, body, data[length:], state, self.prng, self.resume, src + bypass)
        if job.status and not job.out:
            return job, p, 2, record, state, body
        try:
            out = data[:bypass] + job.out if bypass else job.out  # [U] bypass
            at = dst - src_region.base
            if at >= 0 and at + len(out) <= len(src_region.data):
                src_region.data[at : at + len(out)] = out  # in the input's region
            else:
                memory.write(dst, out)
            # The SA and state records were read whole: write back into the same regions.
            if job.sa_write is not None:
                offset, value = job.sa_write
                if offset + len(value) <= SA_RECORD_SIZE:
                    at = sa_off + offset
                    sa_region.data[at : at + len(value)] = value
                else:
                    memory.write(sa_addr + offset, value)
            saved = job.state
            if saved is not None and state_addr:
                if len(saved) <= STATE_RECORD_SIZE:
                    st_region.data[st_off : st_off + len(saved)] = saved
                else:
                    memory.write(state_addr, saved)
        except BusFault as exc:
            self._shown = job  # the inputs' stages show the job that ran
            return (
                fail(BUS, f"write of {exc.size} bytes at {exc.addr:#010x} is outside DMA memory"),
                p,
                2,
                record,
                state,
                body,
            )
        job.meta["choices"] = job.choices
        return job, p, 3, record, state, body
