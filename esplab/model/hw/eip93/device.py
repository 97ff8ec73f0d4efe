"""The EIP-93 as a driver sees it: registers, the two descriptor rings, the interrupt.

Ring protocol (eip93.md 1.5): the host fills CDR slots and writes how many to
PE_CD_COUNT; the engine processes them in ring order, writes each result into the
RDR slot of the same index and counts it in PE_RD_COUNT; the host acknowledges
results by writing how many it consumed to PE_RD_COUNT. Register semantics follow
eip93.md 6.1 and 7.13-7.15. Processing runs when PE_CD_COUNT is written (or when a
consumed result frees the RDR), unless ``running`` is False, in which case
:meth:`EIP93Device.run` steps it.

Host-side misuse (a ring that was never programmed, an unknown register, more
results acknowledged than are ready) raises :class:`~esplab.errors.EngineError`
naming the register; what the hardware itself would report goes into the result
descriptor instead.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from esplab.errors import EngineError
from esplab.layers.crypto_desc import DESCRIPTOR_SIZE, PE_READY
from esplab.model.hw.eip93 import regs as R
from esplab.model.hw.eip93.algos import Prng
from esplab.model.hw.eip93.core import Engine
from esplab.model.hw.eip93.memory import (
    DmaMemory,
    Region,
)
from esplab.model.stage import Later

__all__ = ["MAX_RING_ENTRIES", "EIP93Device"]

#: PE_RING_CONFIG bits 9:0 hold entries - 1 (eip93.md 6.1).
MAX_RING_ENTRIES = 1024
_U32 = 0xFFFFFFFF
_RING_REGS = (R.CDR_BASE, R.RDR_BASE, R.RING_CONFIG)
_CD_COUNT, _RD_COUNT, _INT_CLR, _MASK_ENABLE = R.CD_COUNT, R.RD_COUNT, R.INT_CLR, R.MASK_ENABLE
_RDR_THRESH, _OPERATION_DONE = R.INT_RDR_THRESH, R.INT_OPERATION_DONE
_DESC = struct.Struct("<8I")


@dataclass
class EIP93Device:
    """One EIP-93 packet engine with its DMA memory.

    ``seed`` seeds the IV generator [U] iv-prng. ``snapshots`` keeps the bytes of
    every stage (descriptors, records, buffers); turn it off for speed.
    """

    seed: int = 0
    node: str = "ap"
    snapshots: bool = True
    running: bool = True
    memory: DmaMemory = field(default_factory=DmaMemory)
    engine: Engine = field(init=False)
    pending: int = 0  # PE_CD_COUNT
    ready: int = 0  # PE_RD_COUNT
    index: int = 0  # next CDR slot the engine fetches (= next RDR slot it writes)
    stalls: int = 0
    raw_int: int = 0  # INT_UNMASK_STAT
    int_mask: int = 0  # INT_MASK
    _regs: dict[int, int] = field(default_factory=dict, repr=False)
    _programmed: set[int] = field(default_factory=set, repr=False)
    _checked: int = field(default=0, repr=False)  # ring size once _geometry passed
    #: What the fetch loop needs, fixed while no register is written and no memory freed:
    #: (CDR region, offset in it, RDR region, offset, memory.frees, EN_CDR_UPDATE,
    #: RDR threshold level, its timeout bit).
    _rings: tuple[Region, int, Region, int, int, int, int, int] | None = field(
        default=None, repr=False
    )

    def __post_init__(self) -> None:
        self.engine = Engine(self.memory, Prng(self.seed), node=self.node, snapshots=self.snapshots)

    def set_snapshots(self, on: bool) -> None:
        self.snapshots = self.engine.snapshots = on

    # --- ring geometry -----------------------------------------------------------

    @property
    def ring_entries(self) -> int:
        """Entries per ring from PE_RING_CONFIG, or 0 when it was never programmed."""
        if R.RING_CONFIG not in self._programmed:
            return 0
        return (self._regs.get(R.RING_CONFIG, 0) & 0x3FF) + 1

    @property
    def cdr_base(self) -> int:
        return self._regs.get(R.CDR_BASE, 0)

    @property
    def rdr_base(self) -> int:
        return self._regs.get(R.RDR_BASE, 0)

    def _geometry(self) -> int:
        """The ring size, after checking everything processing needs [host misuse]."""
        if self._checked:
            return self._checked
        config = self._regs.get(R.PE_CONFIG, 0)
        if config >> 8 & 3 != R.CONFIG_MODE_ARM:
            raise EngineError(
                f"PE_CONFIG (0x100) = {config:#010x} selects mode {config >> 8 & 3}; only "
                "autonomous ring mode is modelled",
                valid="PE_CONFIG bits 9:8 = 3 (0x00000300)",
            )
        for bit, what in R.CONFIG_SWAP_BITS.items():
            if config >> bit & 1:
                raise EngineError(
                    f"PE_CONFIG bit {bit} ({what}) is set; byte swapping is not modelled",
                    valid="bits 16, 17, 18 and 20 clear, as drivers do",
                )
        entries = self.ring_entries
        if not entries:
            raise EngineError(
                "ring size 0: PE_RING_CONFIG (0x088) was not programmed since reset",
                valid=f"entries - 1 in bits 9:0, 1..{MAX_RING_ENTRIES} entries",
            )
        spacing = self._regs.get(R.RING_CONFIG, 0) >> 16 & 0xFF
        if spacing not in (0, 8):
            raise EngineError(
                f"PE_RING_CONFIG (0x088) descriptor spacing {spacing} words",
                valid="0 or 8 (32-byte descriptors)",
            )
        for reg in (R.CDR_BASE, R.RDR_BASE):
            base = self._regs.get(reg, 0)
            name = R.reg_name(reg)
            if reg not in self._programmed or not base:
                raise EngineError(
                    f"{name} ({reg:#05x}) is not set: the ring has no base address",
                    valid="the bus address of an allocated ring",
                )
            if self.memory.region(base, entries * DESCRIPTOR_SIZE) is None:
                raise EngineError(
                    f"{name} ({reg:#05x}) = {base:#010x}: a {entries}-entry ring "
                    f"({entries * DESCRIPTOR_SIZE} bytes) there is outside DMA memory",
                    valid="a ring allocated in DMA memory",
                )
        cdr = self.memory.region(self.cdr_base, entries * DESCRIPTOR_SIZE)
        rdr = self.memory.region(self.rdr_base, entries * DESCRIPTOR_SIZE)
        assert cdr is not None and rdr is not None
        # The rings' regions and the registers the fetch loop reads, so that it needs no
        # address or register lookups (any register write clears this).
        thresh = self._regs.get(R.RING_THRESH, 0)
        self._rings = (
            cdr,
            self.cdr_base - cdr.base,
            rdr,
            self.rdr_base - rdr.base,
            self.memory.frees,
            config & R.CONFIG_EN_CDR_UPDATE,
            thresh >> 16 & 0x3FF,
            thresh >> 31,
        )
        self._checked = entries
        return entries

    # --- registers ---------------------------------------------------------------

    def read_reg(self, offset: int) -> int:
        """Read a register (no side effects)."""
        if offset == _RD_COUNT:
            return self.ready
        if offset not in R.REGISTERS:
            raise EngineError(
                f"no EIP-93 register at {offset:#05x}",
                valid=[f"{o:#05x} {n}" for o, n in R.REGISTERS.items()],
            )
        if offset == R.CD_COUNT:
            return self.pending
        if offset == R.RD_COUNT:
            return self.ready
        if offset == R.RING_RW_PNTR:
            return self.index | self.index << 16
        if offset == R.INT_UNMASK_STAT:
            return self.raw_int
        if offset == R.INT_MASK_STAT:
            return self.raw_int & self.int_mask
        if offset == R.INT_MASK:
            return self.int_mask
        if offset == R.OPTION_0:
            return R.OPTION_0_VALUE
        if offset == R.OPTION_1:
            return R.OPTION_1_VALUE
        if offset == R.REVISION:
            return R.REVISION_VALUE
        if offset in R.WRITE_ONLY or offset in R.READ_ONLY:
            return 0  # [U] unmodelled-regs
        return self._regs.get(offset, 0)

    def write_reg(self, offset: int, value: int) -> list[Later]:
        """Write a register; returns the stages of any processing the write started, one
        :class:`~esplab.model.stage.Later` place per job (built when read)."""
        if 0 <= value <= _U32:  # the registers a driver writes per packet, first
            if offset == _CD_COUNT:
                count = value & 0xFF  # write 7:0 (eip93.md 7.13)
                if count and self._checked and self.pending + count <= self._checked:
                    self.pending += count  # _add_commands, once the rings were checked
                    return self.run() if self.running else []
                return self._add_commands(count)
            if offset == _RD_COUNT:
                return self._consume(value & 0xFF)
            if offset == _INT_CLR:
                self.raw_int &= ~value
                self._update_irq()
                return []
            if offset == _MASK_ENABLE:
                self.int_mask |= value
                return []
        name = R.reg_name(offset, write=True)
        if offset not in R.REGISTERS:
            raise EngineError(
                f"no EIP-93 register at {offset:#05x}",
                valid=[f"{o:#05x} {n}" for o, n in R.REGISTERS.items()],
            )
        if not 0 <= value <= _U32:
            raise EngineError(f"{name} value {value:#x}", valid="a 32-bit word")
        if offset in R.READ_ONLY:
            raise EngineError(f"{name} ({offset:#05x}) is read-only")
        if offset == R.INT_MASK:
            self.int_mask = value
        elif offset == R.MASK_DISABLE:
            self.int_mask &= ~value
        else:
            self._regs[offset] = value
            self._checked = 0
            self._rings = None
            if offset in _RING_REGS:
                self._programmed.add(offset)
            elif offset == R.PE_CONFIG:
                self._config(value)
            elif offset == R.RING_THRESH:
                self._update_irq()
        return []

    def _config(self, value: int) -> None:
        if value & R.CONFIG_RESET_PE:
            # Reset PE: the rings and interrupts come back unprogrammed.
            for reg in _RING_REGS:
                self._regs.pop(reg, None)
            self._programmed.clear()
            self.int_mask = 0
        if value & (R.CONFIG_RESET_PE | R.CONFIG_RESET_RING_BITS):  # [U] reset-ring-bit
            self.pending = self.ready = self.index = 0
            self.raw_int = 0

    def _add_commands(self, count: int) -> list[Later]:
        if not count:
            return []
        entries = self._checked or self._geometry()
        if self.pending + count > entries:
            raise EngineError(
                f"PE_CD_COUNT (0x090): {count} more commands with {self.pending} pending "
                f"overrun the {entries}-entry CDR",
                valid=f"at most {entries - self.pending} more",
            )
        self.pending += count
        return self.run() if self.running else []

    def _consume(self, count: int) -> list[Later]:
        if count > self.ready:
            raise EngineError(
                f"PE_RD_COUNT (0x094): {count} results acknowledged with {self.ready} ready",
                valid=f"0..{self.ready}",
            )
        self.ready -= count
        if self.ready:
            self._update_irq()
        return self.run() if self.pending and self.running else []

    def _update_irq(self) -> None:
        """Latch the RDR-threshold interrupt (bit 1) while results wait beyond RDR_THRESH,
        or any wait with the timeout enabled [U] rdr-interrupt (eip93.md 7.15)."""
        thresh = self._regs.get(R.RING_THRESH, 0)
        if self.ready > (thresh >> 16 & 0x3FF) or (thresh >> 31 and self.ready):
            self.raw_int |= R.INT_RDR_THRESH

    # --- processing --------------------------------------------------------------

    def run(self, limit: int | None = None) -> list[Later]:
        """Process pending commands (at most ``limit``); returns their stages in order,
        one :class:`~esplab.model.stage.Later` place per job."""
        stages: list[Later] = []
        if not self.pending:
            return stages
        rings = self._rings
        if rings is None or rings[4] != self.memory.frees:
            # First run since a register write, or memory was freed: check the rings again.
            if self._regs.get(R.PE_CONFIG, 0) & (R.CONFIG_RESET_PE | R.CONFIG_RESET_RING_BITS):
                return stages  # held in reset
            self._checked, self._rings = 0, None
            self._geometry()
            rings = self._rings
            assert rings is not None
        elif self._regs.get(R.PE_CONFIG, 0) & (R.CONFIG_RESET_PE | R.CONFIG_RESET_RING_BITS):
            return stages  # held in reset
        entries = self._checked
        cdr_region, cdr_off, rdr_region, rdr_off, _, update, level, timeout = rings
        cdr, rdr = cdr_region.data, rdr_region.data
        process = self.engine.process
        unpack_from = _DESC.unpack_from
        snap = self.engine.snapshots
        done = 0
        while self.pending and (limit is None or done < limit):
            ready = self.ready
            if ready >= entries:
                self.stalls += 1  # [U] rdr-full-stall
                break
            slot = self.index
            at = cdr_off + slot * DESCRIPTOR_SIZE
            words = unpack_from(cdr, at)
            stages.append(
                process(
                    words,
                    slot,
                    bytes(cdr[at : at + DESCRIPTOR_SIZE]) if snap else None,
                    rdr,
                    rdr_off + slot * DESCRIPTOR_SIZE,
                )
            )
            if update:
                # EN_CDR_UPDATE: the CDR entry's ownership bits become PE_READY too (1.5) [D]:
                # word 0 bits 1:0 are byte 0, word 7 bits 23:22 the top of byte 30 (LE words),
                # from the command as it was fetched.
                cdr[at] = words[0] & 0xFC | PE_READY
                cdr[at + 30] = words[7] >> 16 & 0x3F | PE_READY << 6
            self.pending -= 1
            self.ready = ready = ready + 1
            slot += 1
            self.index = 0 if slot == entries else slot
            # Operation done; the RDR threshold as _update_irq latches it.
            if ready > level or timeout:
                self.raw_int |= _OPERATION_DONE | _RDR_THRESH
            else:
                self.raw_int |= _OPERATION_DONE
            done += 1
        return stages

    @property
    def irq_pending(self) -> bool:
        """The interrupt line: any enabled status bit (INT_MASK_STAT != 0)."""
        return bool(self.raw_int & self.int_mask)
