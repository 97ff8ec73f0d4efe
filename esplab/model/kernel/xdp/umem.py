"""The UMEM: registration checks, addressing, descriptor validation, frame ownership.

Facts from ``af_xdp.md`` 2.2 (registration, derived sizes, RX placement), 2.6 (the
ownership table) and 2.8 (what counts as invalid). The memory is a ``bytearray``;
every ring entry is a byte offset into it, never a pointer [C].
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from esplab.errors import InvalidValue
from esplab.model.kernel.xdp.consts import (
    PAGE_SIZE,
    U32_MASK,
    XDP_PACKET_HEADROOM,
    XDP_UMEM_MIN_CHUNK_SIZE,
    XSK_UNALIGNED_BUF_ADDR_MASK,
    XSK_UNALIGNED_BUF_OFFSET_SHIFT,
    DescOption,
    UmemFlag,
    kernel_error,
)
from esplab.model.kernel.xdp.rings import XskDesc

__all__ = [
    "MEMLOCK_LIMIT",
    "FrameHolder",
    "FrameState",
    "Umem",
]

_REG = "setsockopt(XDP_UMEM_REG)"
U64_MASK = (1 << 64) - 1
# RLIMIT_MEMLOCK of the emulated user; pinning more gives ENOBUFS
# (xdp_umem_account_pages; not in the reference) [U]. Also bounds the bytearray.
MEMLOCK_LIMIT = 256 << 20
_VALID_FLAGS = int(UmemFlag.UNALIGNED_CHUNK | UmemFlag.TX_SW_CSUM | UmemFlag.TX_METADATA_LEN)


class FrameState(enum.Enum):
    """Where a UMEM frame is (2.6 ownership table [C]; the split of "kernel" is ours)."""

    USER = "user"  # free in the application's pool
    FILL = "fill"  # posted to FILL, not yet taken by the kernel
    DRIVER = "driver"  # zero copy: taken from FILL and posted to the NIC's RX ring
    FREE_LIST = "free-list"  # the pool's internal free list (recycled, not returned)
    RX = "rx"  # on the RX ring, not yet released by the application
    TX = "tx"  # on the TX ring, not yet taken by the kernel
    IN_FLIGHT = "in-flight"  # taken from TX; its COMPLETION slot reserved, not published
    COMPLETION = "completion"  # on the COMPLETION ring, not yet released
    CONFLICT = "conflict"  # the same frame in two places: an application bug

    @property
    def owner(self) -> str:
        """``user`` or ``kernel`` per the 2.6 table [C]; RX and COMPLETION belong to user."""
        if self is FrameState.CONFLICT:
            return "conflict"
        user = (FrameState.USER, FrameState.RX, FrameState.COMPLETION)
        return "user" if self in user else "kernel"


class FrameHolder(Protocol):
    """Anything that holds UMEM frames: a buffer pool or a socket's RX/TX rings."""

    def held_frames(self) -> Iterable[tuple[int, FrameState]]:
        """(address as it sits in the holder, state) for every frame it holds."""
        ...


@dataclass(eq=False)
class Umem:
    """A registered UMEM (``struct xdp_umem_reg``, 2.2).

    ``size`` is ``len``; ``vaddr`` is the user virtual address the application
    registered (it must be page-aligned). Construction runs the kernel's checks and
    raises :class:`KernelError` (EINVAL, ENOBUFS) like ``setsockopt(XDP_UMEM_REG)``.
    """

    size: int
    chunk_size: int = 4096
    headroom: int = 0
    flags: UmemFlag = UmemFlag.NONE
    tx_metadata_len: int = 0
    vaddr: int = 0x7F00_0000_0000
    zc: bool = field(default=False, init=False)  # set when a zero-copy bind succeeds
    sg: bool = field(default=False, init=False)  # XDP_UMEM_SG_FLAG: a bind asked XDP_USE_SG
    memory: bytearray = field(init=False, repr=False)
    holders: list[FrameHolder] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._check()
        if not self.flags & UmemFlag.TX_METADATA_LEN:
            self.tx_metadata_len = 0  # only read with the flag (2.2) [C]
        self.memory = bytearray(self.size)

    def _check(self) -> None:
        """The registration checks of 2.2 in the kernel's order; each is EINVAL [C]."""
        chunk = self.chunk_size

        def bad(reason: str, hint: str | None = None) -> None:
            raise kernel_error("EINVAL", reason, op=_REG, hint=hint)

        if not XDP_UMEM_MIN_CHUNK_SIZE <= chunk <= PAGE_SIZE:
            bad(
                f"chunk_size {chunk} outside {XDP_UMEM_MIN_CHUNK_SIZE}..{PAGE_SIZE}",
                "aligned mode: 2048 or 4096",
            )
        if int(self.flags) & ~_VALID_FLAGS:
            bad(f"unknown UMEM flags {int(self.flags):#x}")
        if not self.unaligned and chunk & (chunk - 1):
            bad(f"chunk_size {chunk} is not a power of two", "or register with UNALIGNED_CHUNK")
        if self.vaddr % PAGE_SIZE:
            bad(f"addr {self.vaddr:#x} is not page-aligned")
        if self.size < 0 or self.vaddr + self.size > U64_MASK:
            bad(f"addr {self.vaddr:#x} + len {self.size} overflows")
        chunks = self.size // chunk
        if chunks == 0 or chunks > U32_MASK:
            bad(f"len {self.size} gives {chunks} chunks", f"valid: 1..{U32_MASK} chunks")
        if not self.unaligned and self.size % chunk:
            bad(f"len {self.size} is not a multiple of chunk_size {chunk}")
        if not 0 <= self.headroom < chunk - XDP_PACKET_HEADROOM:
            bad(
                f"headroom {self.headroom} is outside 0 .. chunk_size - {XDP_PACKET_HEADROOM} - 1",
                f"valid: 0..{chunk - XDP_PACKET_HEADROOM - 1}",
            )
        if self.flags & UmemFlag.TX_METADATA_LEN and (
            not 0 <= self.tx_metadata_len < 256 or self.tx_metadata_len % 8
        ):
            bad(f"tx_metadata_len {self.tx_metadata_len}", "valid: a multiple of 8 below 256")
        if self.size > MEMLOCK_LIMIT:
            raise kernel_error(
                "ENOBUFS",
                f"len {self.size} exceeds the emulated RLIMIT_MEMLOCK ({MEMLOCK_LIMIT})",
                op=_REG,
            )

    # ---- derived quantities (2.2) -------------------------------------------------
    @property
    def unaligned(self) -> bool:
        return bool(self.flags & UmemFlag.UNALIGNED_CHUNK)

    @property
    def chunks(self) -> int:
        return self.size // self.chunk_size

    @property
    def rx_frame_size(self) -> int:
        """Longest RX packet in one frame: chunk - headroom - 256 (2.2) [C]."""
        return self.chunk_size - self.headroom - XDP_PACKET_HEADROOM

    def frame_base(self, addr: int) -> int:
        """The frame an address names: chunk-masked (aligned) or bits 47:0 (unaligned)."""
        if self.unaligned:
            return addr & XSK_UNALIGNED_BUF_ADDR_MASK
        return addr & ~(self.chunk_size - 1)

    def offset_of(self, addr: int) -> int:
        """Byte offset in the memory of a descriptor address (2.2) [C]."""
        if self.unaligned:
            return (addr & XSK_UNALIGNED_BUF_ADDR_MASK) + (addr >> XSK_UNALIGNED_BUF_OFFSET_SHIFT)
        return addr

    def rx_addr(self, base: int, delta: int = 0) -> int:
        """RX descriptor addr for a frame: base + headroom + 256 (+ adjust_head) (6.9) [C].

        Unaligned mode keeps the base in bits 47:0 and puts the offset in 63:48 [D].
        """
        offset = self.headroom + XDP_PACKET_HEADROOM + delta
        if self.unaligned:
            return base | (offset << XSK_UNALIGNED_BUF_OFFSET_SHIFT)
        return base + offset

    def fill_base(self, addr: int) -> int | None:
        """The frame a FILL entry gives, or None when the kernel skips it (2.8, 6.10) [C].

        Aligned: any offset inside a chunk names that chunk; invalid only past the
        end. Unaligned: invalid when base + chunk_size runs past the end (the emulated
        memory is one DMA-contiguous area, so the page rule never fires).
        """
        base = self.frame_base(addr)
        if self.unaligned:
            return base if base + self.chunk_size <= self.size else None
        return base if base < self.size else None

    def tx_invalid_reason(self, desc: XskDesc) -> str | None:
        """Why the kernel would reject a TX descriptor, or None (2.8, 6.12-6.14) [C]."""
        meta = self.tx_metadata_len
        if desc.len == 0:
            return "len 0"  # invalid since the 2023 multi-buffer work (ZLEN)
        if desc.options & ~int(DescOption.PKT_CONTD | DescOption.TX_METADATA):
            return f"unknown option bits {desc.options:#x}"
        if self.unaligned:
            start = self.offset_of(desc.addr) - meta
            if start < 0:
                return "addr - tx_metadata_len underflows"
            if desc.len + meta > self.chunk_size:
                return f"len {desc.len} + metadata exceeds chunk_size {self.chunk_size}"
            if start >= self.size or start + desc.len + meta > self.size:
                return f"addr {desc.addr:#x} runs past the UMEM ({self.size} bytes)"
            return None
        start = desc.addr - meta
        if start < 0:
            return "addr - tx_metadata_len underflows"  # checked since Oct 2025 (XSKfix)
        if start % self.chunk_size + desc.len + meta > self.chunk_size:
            return f"addr {desc.addr:#x} len {desc.len} crosses the chunk end"
        if start >= self.size:
            return f"addr {desc.addr:#x} outside the UMEM ({self.size} bytes)"
        return None

    # ---- memory ------------------------------------------------------------------
    def _span(self, addr: int, length: int) -> int:
        offset = self.offset_of(addr)
        if offset < 0 or length < 0 or offset + length > self.size:
            raise InvalidValue(
                f"UMEM range {offset:#x}+{length} outside the UMEM", valid=f"0..{self.size:#x}"
            )
        return offset

    def read(self, addr: int, length: int) -> bytes:
        offset = self._span(addr, length)
        return bytes(self.memory[offset : offset + length])

    def write(self, addr: int, data: bytes) -> None:
        offset = self._span(addr, len(data))
        self.memory[offset : offset + len(data)] = data

    # ---- ownership (2.6) -------------------------------------------------------------
    def ownership(self) -> dict[int, FrameState]:
        """Every frame base and its state, derived from the rings and the pools.

        Aligned mode lists every chunk; unaligned mode lists the frames some ring or
        pool refers to (anything else belongs to user space). A frame found in two
        places is :attr:`FrameState.CONFLICT`.
        """
        states: dict[int, FrameState] = {}
        if not self.unaligned:
            states = {i * self.chunk_size: FrameState.USER for i in range(self.chunks)}
        seen: set[int] = set()
        for holder in self.holders:
            for addr, state in holder.held_frames():
                base = self.frame_base(addr)
                if base >= self.size:
                    continue  # an invalid address names no frame
                states[base] = FrameState.CONFLICT if base in seen else state
                seen.add(base)
        return states

    def owners(self) -> dict[FrameState, int]:
        """How many frames are in each state."""
        counts: dict[FrameState, int] = {}
        for state in self.ownership().values():
            counts[state] = counts.get(state, 0) + 1
        return counts
