"""The EIP-93 driver's probe and ring protocol (eip93.md 1.5, 6.2).

:class:`EIP93Rings` probes the engine and sets up its rings, writes commands into the
CDR, kicks the engine and drains the RDR, handing each result to its ticket's
``finish``. It also holds what every request path shares: the table of offloaded SAs
(and their flush), the ``sw+aead`` transforms, handles and the kernel's IVs; the paths
(:mod:`.xmit`, :mod:`.aead`, :mod:`.sa_add`, :mod:`.faults`) take an :class:`EIP93Rings`,
so none of them imports the driver.
:class:`~esplab.model.kernel.drivers.eip93.driver.EIP93Driver` builds on it with the
per-packet entry points, SA programming and reset.
"""

from __future__ import annotations

import random
import struct
from typing import Any

from esplab.errors import EngineError, KernelError, RingFull
from esplab.layers.crypto_desc import DESCRIPTOR_SIZE, PE_READY
from esplab.layers.sa_record import SA_RECORD_SIZE, STATE_RECORD_SIZE
from esplab.model.hw.eip93 import regs as R
from esplab.model.hw.eip93.choices import DriverSettings
from esplab.model.hw.eip93.device import (
    MAX_RING_ENTRIES,
    EIP93Device,
)
from esplab.model.kernel.drivers.eip93.outcome import (
    DMA_BUFFER_SIZE,
    AeadTfm,
    DriverStats,
    Finish,
    OffloadedSA,
    Outcome,
    Ticket,
    defer_stages,
)
from esplab.model.stage import Later, LazyStage, Stage

__all__ = ["EIP93Rings", "Opening"]

_DESC = struct.Struct("<8I")
#: A request's first driver stage, unbuilt: (decision template, why, fidelity, args).
Opening = tuple[str, str, Any, tuple[Any, ...]]
_ZERO_WORD = bytes(4)
_CD_COUNT, _RD_COUNT, _INT_CLR, _MASK_ENABLE = R.CD_COUNT, R.RD_COUNT, R.INT_CLR, R.MASK_ENABLE
_RDR_THRESH = R.INT_RDR_THRESH


class EIP93Rings:
    """The EIP-93 driver's rings on the EN7581, with its device.

    ``probe`` runs the init sequence and sets up the rings (eip93.md 6.2); the
    :class:`~esplab.model.kernel.drivers.eip93.driver.EIP93Driver` built on it is the
    driver the lab gets (a probed one from
    :func:`esplab.model.kernel.drivers.eip93.new_eip93`).
    """

    def __init__(
        self, device: EIP93Device, settings: DriverSettings | None = None, seed: int = 0
    ) -> None:
        self.device = device
        self.memory = device.memory
        self.settings = settings or DriverSettings()
        self.node = device.node
        self.stats = DriverStats()
        self.entries = 0
        self.cdr = self.rdr = 0
        self.head = 0  # next CDR slot the driver fills
        self.tail = 0  # next RDR slot the driver reads
        self.probed = False
        self._inflight: dict[int, Ticket] = {}
        self._buffers: dict[int, tuple[int, bytearray]] = {}
        self._cdr_mem = self._rdr_mem = bytearray()  # the rings' bytes (the driver owns them)
        self._done: list[Outcome] = []
        # What the request paths share: the offloaded SAs, the sw+aead transforms by
        # handle, and the kernel's IVs in sw+aead [M] sw-aead-iv.
        self.seed = seed
        self.sw_rng = random.Random(seed ^ 0x5A1F)
        self.sas: dict[tuple[int, str], OffloadedSA] = {}
        self.tfms: dict[int, AeadTfm] = {}
        self._next_handle = 1

    def new_handle(self) -> int:
        handle = self._next_handle
        self._next_handle += 1
        return handle

    def _release(self, sa: OffloadedSA) -> None:
        """Zero and free the SA's records (whatever of them is still allocated)."""
        self._free_records((sa.sa_addr, SA_RECORD_SIZE), (sa.state_addr, STATE_RECORD_SIZE))

    def _free_records(self, *records: tuple[int, int]) -> None:
        """Zero and free each (address, size) record still allocated."""
        for addr, size in records:
            region = self.memory.region(addr, size) if addr else None
            if region is not None and region.base == addr:
                self.memory.write(addr, bytes(size))
                self.memory.free(addr)

    def flush(self, why: str) -> tuple[list[OffloadedSA], list[Stage]]:
        """Drop every offloaded SA (JM: EIP-93 reset or a DMA error flushes the port's SAs,
        airoha-dsa-xfrm.md 3.10). Returns the flushed SAs and the stage saying so."""
        flushed = list(self.sas.values())
        self.sas.clear()
        for sa in flushed:
            self._release(sa)
        self.stats.flushes += 1
        names = ", ".join(f"{s.spi:#x} ({s.direction})" for s in flushed) or "none"
        return flushed, [
            self.stage(
                f"flush after {why}: {len(flushed)} offloaded SA(s): {names}",
                "the JM series flushes all SAs of the port on an EIP-93 reset or a DMA error "
                "(airoha-dsa-xfrm.md 3.10)",
                "C",
                flushed=[s.key for s in flushed],
            )
        ]

    # --- stages ------------------------------------------------------------------

    def stage(
        self,
        decision: str,
        why: str,
        fidelity: Any = "D",
        *,
        args: tuple[Any, ...] = (),
        drop: str | None = None,
        data: bytes | None = None,
        kind: str = "raw",
        **meta: Any,
    ) -> Stage:
        """A stage on the driver's tap ``eip93.driver``; ``decision`` is a ``str.format``
        template when ``args`` are given (formatted when read)."""
        keep = data if self.device.snapshots else None
        return LazyStage(
            "eip93.driver", self.node, decision, why, fidelity, None, keep, kind, drop, meta, args
        )

    @property
    def snapshots(self) -> bool:
        return self.device.snapshots

    @snapshots.setter
    def snapshots(self, on: bool) -> None:
        self.device.set_snapshots(on)

    # --- probe -------------------------------------------------------------------

    def probe(self) -> list[Stage]:
        """The mainline init sequence (eip93.md 6.2), then ring setup."""
        dev = self.device
        entries = self.settings.ring_entries
        if not 1 <= entries <= MAX_RING_ENTRIES:
            raise EngineError(
                f"ring size {entries}: PE_RING_CONFIG (0x088) holds entries - 1 in bits 9:0",
                valid=f"1..{MAX_RING_ENTRIES} entries",
            )
        revision = dev.read_reg(R.REVISION)
        if revision & 0xFF != 0x5D:
            raise KernelError(
                "ENODEV", f"PE_REVISION {revision:#010x} is not an EIP-93", prefix="eip93 probe"
            )
        option1 = dev.read_reg(R.OPTION_1)
        mode = R.CONFIG_MODE_ARM << 8 | R.CONFIG_EN_CDR_UPDATE
        # Mainline resets with bits 0 and 2 (VND/vschagen: 0 and 1) [U] reset-ring-bit.
        dev.write_reg(R.PE_CONFIG, mode | R.CONFIG_RESET_PE | 1 << 2)
        dev.write_reg(R.PE_CONFIG, mode)
        dev.write_reg(R.INT_CFG, 0)  # level, manual clear
        clock = 1  # PE; the rest follow OPTION_1 as in mainline
        clock |= 2 if option1 & 1 else 0  # DES
        clock |= 4 if option1 & 4 else 0  # AES
        clock |= 16 if option1 & 0xF0000 else 0  # hash
        dev.write_reg(R.CLOCK_CTRL, clock)
        dev.write_reg(R.BUF_THRESH, 128 | 128 << 16)
        dev.write_reg(R.INT_CLR, 0xFFFFFFFF)
        dev.write_reg(R.MASK_DISABLE, 0xFFFFFFFF)
        # CDR threshold N - 32, RDR threshold 0, RD timeout 5 with TIMEOUT_EN (1.5 step 6).
        dev.write_reg(R.RING_THRESH, max(entries - 32, 0) | 5 << 26 | 1 << 31)
        size = entries * DESCRIPTOR_SIZE
        if self.entries != entries:
            for addr in (self.cdr, self.rdr):
                if addr:
                    self.memory.free(addr)
            self.cdr = self.memory.allocate(size, label="CDR", pool="ring", align=4096)
            self.rdr = self.memory.allocate(size, label="RDR", pool="ring", align=4096)
        else:
            self.memory.write(self.cdr, bytes(size))
            self.memory.write(self.rdr, bytes(size))
        self._cdr_mem = self._owned(self.cdr)
        self._rdr_mem = self._owned(self.rdr)
        dev.write_reg(R.CDR_BASE, self.cdr)
        dev.write_reg(R.RDR_BASE, self.rdr)
        dev.write_reg(R.RING_CONFIG, entries - 1)  # mainline writes no spacing
        dev.write_reg(R.MASK_ENABLE, R.INT_RDR_THRESH)  # only the RDR threshold (1.5 step 6)
        self.entries = entries
        self.head = self.tail = 0
        self._inflight.clear()
        self._done.clear()
        self.probed = True
        major, minor, patch = revision >> 24 & 0xF, revision >> 20 & 0xF, revision >> 16 & 0xF
        return [
            self.stage(
                f"probe: EIP-93 {major}.{minor}.{patch}, OPTION_1 {option1:#010x}; CDR at "
                f"{self.cdr:#010x}, RDR at {self.rdr:#010x}, {entries} entries",
                "mainline init: reset, ring mode with CDR update, clocks from OPTION_1, buffer "
                "thresholds 128/128, RDR-threshold interrupt only (eip93.md 6.2)",
                "C",
            )
        ]

    # --- the ring protocol (eip93.md 1.5) -------------------------------------------

    def _owned(self, addr: int) -> bytearray:
        """The bytes of a region the driver allocated: it writes its own DMA memory."""
        region = self.memory.region(addr)
        assert region is not None and region.base == addr
        return region.data

    def buffer(self, slot: int) -> tuple[int, bytearray]:
        """The DMA buffer of ring slot ``slot``: bus address and bytes [M] dma-buffer."""
        buf = self._buffers.get(slot)
        if buf is None:
            addr = self.memory.allocate(
                DMA_BUFFER_SIZE, label=f"buffer {slot}", pool="buf", align=64
            )
            buf = self._buffers[slot] = (addr, self._owned(addr))
        return buf

    @property
    def in_flight(self) -> int:
        """Descriptors submitted whose results the driver has not consumed."""
        return len(self._inflight)

    def next_slot(self) -> int:
        """The slot the next submission takes; RingFull (counted) when none is free."""
        if len(self._inflight) < self.entries and self.probed:
            return self.head
        if not self.probed:
            raise EngineError("the EIP-93 driver is not probed", hint="call probe() first")
        if len(self._inflight) >= self.entries:
            self.stats.ring_full += 1
            raise RingFull(
                f"CDR full: {self.entries} descriptors in flight, the request is refused",
                hint="drain the ring (poll) or resume the engine",
            )
        return self.head

    def submit(
        self, words: tuple[int, ...], finish: Finish, stages: list[Stage], **context: Any
    ) -> Ticket:
        """Write one command into the next CDR slot and kick the engine (1.5 step 2)."""
        return self._submit(words, finish, stages, context)

    def _submit(
        self, words: tuple[int, ...], finish: Finish, stages: list[Stage], context: Any
    ) -> Ticket:
        inflight = self._inflight
        slot = self.head if len(inflight) < self.entries else self.next_slot()
        offset = slot * DESCRIPTOR_SIZE
        rdr = self._rdr_mem
        # Zero words 0 and 7 of the RDR slot first: no stale ready bits.
        rdr[offset : offset + 4] = _ZERO_WORD
        rdr[offset + 28 : offset + 32] = _ZERO_WORD
        _DESC.pack_into(self._cdr_mem, offset, *words)
        ticket = Ticket(slot, finish, stages, context)
        inflight[slot] = ticket
        self.head = (slot + 1) % self.entries
        try:
            kicked = self.device.write_reg(_CD_COUNT, 1)
        except EngineError:
            # The engine refused the kick (its rings are misprogrammed): take it back.
            del inflight[slot]
            self.head = slot
            self._cdr_mem[offset : offset + DESCRIPTOR_SIZE] = bytes(DESCRIPTOR_SIZE)
            raise
        self.stats.submitted += 1
        for job in kicked:  # each job's stages (built when read) to the ticket of its slot
            owner = inflight.get(job.slot)
            if owner is not None:
                owner.stages.append(job)  # type: ignore[arg-type]
        return ticket

    def opening(self, first: Opening) -> list[Stage]:
        """The stages of a request so far: its first, from (template, why, fidelity, args)."""
        return [self.stage(first[0], first[1], first[2], args=first[3])]

    def closing(
        self,
        ticket: Ticket,
        decision: str,
        why: str,
        fidelity: Any,
        args: tuple[Any, ...],
        data: bytes,
        kind: str = "raw",
    ) -> None:
        """Append the driver's last stage of a completed request to ``ticket.stages``
        (as its arguments, built when read, while snapshots are off)."""
        node = self.node
        if self.device.snapshots:
            ticket.stages.append(
                LazyStage(
                    "eip93.driver",
                    node,
                    decision,
                    why,
                    fidelity,
                    None,
                    data,
                    kind,
                    None,
                    None,
                    args,
                )
            )
        else:
            ticket.stages.append(
                ("eip93.driver", node, decision, why, fidelity, None, None, kind, None, None, args)  # type: ignore[arg-type]
            )

    def transact(
        self, words: tuple[int, ...], finish: Finish, first: Opening, context: Any
    ) -> Outcome:
        """``complete(submit(words, finish, opening(first)))`` with ``context`` (what
        ``finish`` reads back from the ticket, as its datapath packed it): one command
        through the rings (submit, the engine's run, poll) and its outcome."""
        decision, why, fidelity, args = first
        # (as its arguments, built when read, while snapshots are off)
        fields: tuple[Any, ...] = (
            "eip93.driver",
            self.node,
            decision,
            why,
            fidelity,
            None,
            None,
            "raw",
            None,
            None,
            args,
        )
        stage: Any = LazyStage(*fields) if self.device.snapshots else fields
        return self.complete(self._submit(words, finish, [stage], context))

    def _route(self, jobs: list[Later]) -> None:
        """Give each job's stages (still to be built) to the ticket of its slot."""
        inflight = self._inflight
        for job in jobs:
            ticket = inflight.get(job.slot)
            if ticket is not None:
                ticket.stages.append(job)  # type: ignore[arg-type]  # (built when read)

    def poll(self) -> list[Outcome]:
        """Drain the RDR (1.5 step 4): every ready result, in ring order, acknowledged one
        by one as mainline does; returns their outcomes (and any collected earlier)."""
        done, self._done = self._done, []
        dev, cdr, rdr = self.device, self._cdr_mem, self._rdr_mem
        inflight = self._inflight
        # PE_RD_COUNT (reading it has no side effect), read once as the tasklet does.
        for _ in range(dev.ready):
            slot = self.tail
            offset = slot * DESCRIPTOR_SIZE
            result = bytes(rdr[offset : offset + DESCRIPTOR_SIZE])
            words = _DESC.unpack(result)
            if words[0] & 3 != PE_READY or words[7] >> 22 & 3 != PE_READY:
                self.stats.not_ready += 1  # the driver would spin; the model stops here
                break
            ticket = inflight.pop(slot, None)
            cdr[offset : offset + 4] = _ZERO_WORD
            cdr[offset + 28 : offset + 32] = _ZERO_WORD
            self.tail = slot + 1 if slot + 1 < self.entries else 0
            self.stats.completed += 1
            kicked = dev.write_reg(_RD_COUNT, 1)
            if kicked:
                self._route(kicked)
            if ticket is None:
                continue
            outcome = ticket.outcome = ticket.finish(self, words, ticket)
            outcome.slot = slot
            outcome.result = result
            defer_stages(outcome)
            done.append(outcome)
        if dev.raw_int & _RDR_THRESH and not dev.ready:
            dev.write_reg(_INT_CLR, _RDR_THRESH)  # tasklet end: clear, then unmask
            dev.write_reg(_MASK_ENABLE, _RDR_THRESH)
        return done

    def complete(self, ticket: Ticket) -> Outcome:
        """Poll and return ``ticket``'s outcome, or a pending one while the engine holds it."""
        done = self.poll()
        outcome = ticket.outcome
        if outcome is not None and len(done) == 1 and done[0] is outcome:
            return outcome  # (the common case: the one result is this ticket's)
        self._done += [other for other in done if other is not outcome]
        if outcome is not None:
            return outcome
        ticket.stages.append(
            self.stage(
                f"slot {ticket.slot} queued: the engine has not finished it",
                "results are read from the RDR when PE_RD_COUNT counts them (eip93.md 1.5)",
            )
        )
        return Outcome(
            False, stages=ticket.stages, slot=ticket.slot, pending=True, reason="pending"
        )

    def pause(self) -> None:
        """Stop the engine after the current descriptor: submissions queue up in the CDR."""
        self.device.running = False

    def resume(self) -> list[Outcome]:
        """Let the engine run again; returns the outcomes it completes."""
        self.device.running = True
        self._route(self.device.run())
        return self.poll()
