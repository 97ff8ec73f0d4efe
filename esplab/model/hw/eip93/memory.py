"""The DMA memory the EIP-93 masters: sparse, 32-bit bus addresses, byte-addressed.

The engine is a bus master with 32-bit addresses (eip93.md 1.1). Here memory exists
only where the host allocated it: a region per ring, SA record, state record or
packet buffer, each in a pool with its own base so that addresses say what they are
(``0x08000000`` is the first SA record). An access that is not wholly inside one
region is a bus fault: the engine turns it into a result with ext error BUS
(eip93.md 2.2), and host-side code sees a :class:`BusFault`, an ``EngineError`` that
names the address.
"""

from __future__ import annotations

import bisect
from bisect import bisect_right
from dataclasses import dataclass, field

from esplab.errors import EngineError

__all__ = ["POOLS", "BusFault", "DmaMemory", "Region"]

#: Pool name -> (base, size). Rings, SA records, state records, packet buffers.
POOLS: dict[str, tuple[int, int]] = {
    "ring": (0x04000000, 0x04000000),
    "sa": (0x08000000, 0x04000000),
    "state": (0x0C000000, 0x04000000),
    "buf": (0x10000000, 0x10000000),
}


class BusFault(EngineError):
    """An access outside every allocated region."""

    def __init__(self, addr: int, size: int, what: str) -> None:
        self.addr = addr
        self.size = size
        super().__init__(
            f"bus error: {what} of {size} bytes at {addr:#010x} is outside DMA memory",
            hint="addresses come from allocate(); see 'eip93 regs' and 'eip93 ring'",
        )


@dataclass(eq=False)
class Region:
    """One allocation: ``len(data)`` bytes at bus address ``base``.

    The owner of a region (the driver, for its rings and buffers) may use ``data``
    directly; that is the host writing its own DMA memory.
    """

    base: int
    data: bytearray
    label: str
    pool: str
    view: memoryview = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.view = memoryview(self.data)


@dataclass
class DmaMemory:
    """Sparse bus-address space made of allocated regions.

    ``read``/``write`` are the bus accesses; both raise :class:`BusFault` for an
    address range that is not wholly inside one region. ``allocate`` takes memory
    from a pool (bump allocation, with exact-size reuse of freed regions).
    """

    _bases: list[int] = field(default_factory=list)
    _regions: list[Region] = field(default_factory=list)
    _next: dict[str, int] = field(default_factory=lambda: {p: b for p, (b, _) in POOLS.items()})
    _free: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    frees: int = 0  # how many regions were ever freed: cached views compare it

    def allocate(self, size: int, *, label: str, pool: str = "buf", align: int = 32) -> int:
        """Allocate ``size`` zeroed bytes; returns the bus address."""
        if pool not in POOLS:
            raise EngineError(f"unknown DMA pool '{pool}'", valid=list(POOLS), value=pool)
        if size <= 0:
            raise EngineError(f"DMA allocation of {size} bytes for {label}", valid="1 or more")
        if align <= 0 or align & (align - 1):
            raise EngineError(f"DMA alignment {align}", valid="a power of two")
        reuse = self._free.get(pool, [])
        for i, (addr, length) in enumerate(reuse):
            if length == size and addr % align == 0:
                del reuse[i]
                return self._insert(Region(addr, bytearray(size), label, pool))
        base, span = POOLS[pool]
        addr = -(-self._next[pool] // align) * align
        if addr + size > base + span:
            raise EngineError(
                f"DMA pool '{pool}' exhausted: {size} bytes for {label} do not fit",
                valid=f"{base:#010x}..{base + span - 1:#010x}",
            )
        self._next[pool] = addr + size
        return self._insert(Region(addr, bytearray(size), label, pool))

    def _insert(self, region: Region) -> int:
        i = bisect.bisect(self._bases, region.base)
        self._bases.insert(i, region.base)
        self._regions.insert(i, region)
        return region.base

    def free(self, addr: int) -> None:
        """Release the region that starts at ``addr``."""
        i = bisect.bisect_left(self._bases, addr)
        if i == len(self._bases) or self._bases[i] != addr:
            raise EngineError(
                f"no DMA region starts at {addr:#010x}", hint="free the address allocate returned"
            )
        region = self._regions.pop(i)
        del self._bases[i]
        region.view.release()
        self.frees += 1
        self._free.setdefault(region.pool, []).append((region.base, len(region.data)))

    def region(self, addr: int, size: int = 1) -> Region | None:
        """The region holding ``[addr, addr + size)``, or None."""
        i = bisect.bisect_right(self._bases, addr) - 1
        if i < 0 or size < 0:
            return None
        region = self._regions[i]
        if addr + size > region.base + len(region.data):
            return None
        return region

    def span(self, addr: int, size: int, what: str = "read") -> tuple[Region, int]:
        """The region wholly holding ``[addr, addr + size)`` and ``addr``'s offset in it,
        for a bus master that reads a record and later writes part of it back; a
        :class:`BusFault` (for a ``what``) when no region holds it."""
        i = bisect_right(self._bases, addr) - 1
        if i >= 0 and size >= 0:
            region = self._regions[i]
            off = addr - region.base
            if off + size <= len(region.data):
                return region, off
        raise BusFault(addr, size, what)

    def read(self, addr: int, size: int) -> bytes:
        """``size`` bytes at ``addr`` (a bus read)."""
        i = bisect_right(self._bases, addr) - 1
        if i >= 0 and size >= 0:
            region = self._regions[i]
            off = addr - region.base
            if off + size <= len(region.data):
                return bytes(region.view[off : off + size])
        raise BusFault(addr, size, "read")

    def write(self, addr: int, data: bytes) -> None:
        """Store ``data`` at ``addr`` (a bus write)."""
        i = bisect_right(self._bases, addr) - 1
        if i >= 0:
            region = self._regions[i]
            off = addr - region.base
            end = off + len(data)
            if end <= len(region.data):
                region.data[off:end] = data
                return
        raise BusFault(addr, len(data), "write")

    def regions(self) -> list[Region]:
        """Every allocated region, by address."""
        return list(self._regions)
