"""The four AF_XDP rings: single-producer/single-consumer, free-running u32 indices.

Semantics from ``af_xdp.md`` 2.3-2.5 and facts 6.1-6.5:

* ``producer`` and ``consumer`` are free-running u32 counters, never reduced modulo
  the size; a slot is ``index & (size - 1)``; occupancy is ``(prod - cons) mod 2**32``
  and free space ``size - occupancy``. The size is a non-zero power of two [C].
* Each side keeps a cached copy of the other side's index and refreshes it only when
  the cache shows too little [C]. Reserve is all-or-nothing; peek returns
  ``min(n, available)`` (libxdp) [C].
* The user consumer (RX, COMPLETION) publishes its index on every release, as
  libxdp does. The kernel consumer (FILL, TX) releases privately and publishes
  lazily unless the ring is eager (design choice ``lazy-consumer``) [C]/[design].

A ring holds plain values: ``int`` UMEM addresses (FILL, COMPLETION) or
:class:`XskDesc` tuples (RX, TX). :meth:`Ring.to_bytes` packs the in-flight entries
as the kernel lays them out (``'<QII'`` or ``'<Q'``, little-endian, 2.3/2.9), for
dissection with ``esplab.layers.xdp.XDPDesc``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from esplab.errors import InvalidValue, StateConflict
from esplab.model.kernel.xdp.consts import U32_MASK, XDP_RING_NEED_WAKEUP, RingKind, kernel_error

# Rings over this many entries get ENOMEM (consts.DESIGN_CHOICES "ring-memory") [M].
MAX_RING_ENTRIES = 1 << 20

__all__ = [
    "ADDR_ENTRY",
    "DESC_ENTRY",
    "AddrRing",
    "DescRing",
    "MmapOffsets",
    "Ring",
    "RingOffsets",
    "XskDesc",
    "mmap_offsets",
    "ring_option",
]

DESC_ENTRY = struct.Struct("<QII")  # struct xdp_desc: addr u64, len u32, options u32 (2.3) [C]
ADDR_ENTRY = struct.Struct("<Q")  # FILL/COMPLETION entry: u64 UMEM addr (2.3) [C]


class XskDesc(NamedTuple):
    """One RX/TX descriptor, ``struct xdp_desc`` (2.3) [C]."""

    addr: int  # u64 UMEM offset (RX: the data start, chunk base + headroom + 256)
    len: int  # u32 bytes
    options: int = 0  # u32, PKT_CONTD | TX_METADATA; 0 for a single-buffer packet

    def pack(self) -> bytes:
        """The 16 bytes the kernel shares with user space."""
        return DESC_ENTRY.pack(self.addr, self.len, self.options)


T = TypeVar("T", int, XskDesc)


def _u32(value: int) -> int:
    return value & U32_MASK


def ring_option(kind: RingKind) -> str:
    """The setsockopt that creates a ring of this kind, for error messages."""
    return {
        RingKind.RX: "XDP_RX_RING",
        RingKind.TX: "XDP_TX_RING",
        RingKind.FILL: "XDP_UMEM_FILL_RING",
        RingKind.COMPLETION: "XDP_UMEM_COMPLETION_RING",
    }[kind]


@dataclass(eq=False)
class Ring(Generic[T]):
    """One ring with both sides' private state.

    ``producer``, ``consumer`` and ``flags`` are the shared words. ``prod_head`` is
    the producer's reserved position (libxdp/kernel ``cached_prod``), ``cons_head``
    the consumer's released position (kernel ``cached_cons``) and ``cons_peeked``
    the user consumer's peek cursor (libxdp ``cached_cons``). ``start`` sets every
    index; the kernel starts at 0, other values exercise the u32 wrap (6.1).
    """

    kind: RingKind
    size: int
    start: int = 0
    lazy_consumer: bool = False
    flags: int = 0
    invalid_descs: int = 0  # entries that failed validation (2.7) [C]
    queue_empty_descs: int = 0  # the kernel found the ring empty (2.7) [C]
    producer: int = field(init=False)
    consumer: int = field(init=False)
    prod_head: int = field(init=False)
    prod_seen_cons: int = field(init=False)
    cons_head: int = field(init=False)
    cons_peeked: int = field(init=False)
    cons_seen_prod: int = field(init=False)
    slots: list[T] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # setsockopt rejects 0 and non-powers of two with EINVAL (2.1, 6.2) [C].
        if self.size <= 0 or self.size & (self.size - 1) or self.size > U32_MASK:
            raise kernel_error(
                "EINVAL",
                f"ring size {self.size} is not a non-zero power of two",
                op=f"setsockopt({ring_option(self.kind)})",
                hint="use 2048 or 4096 as xdpsock does",
            )
        if self.size > MAX_RING_ENTRIES:
            raise kernel_error(
                "ENOMEM",
                f"ring size {self.size}: the ring memory cannot be allocated",
                op=f"setsockopt({ring_option(self.kind)})",
                hint=f"at most {MAX_RING_ENTRIES} entries in this lab [M] ring-memory",
            )
        start = _u32(self.start)
        self.producer = self.consumer = start
        self.prod_head = self.prod_seen_cons = start
        self.cons_head = self.cons_peeked = self.cons_seen_prod = start
        self.slots = [self.blank()] * self.size  # the kernel's ring memory starts zeroed

    # ---- shared view -------------------------------------------------------------
    @property
    def mask(self) -> int:
        return self.size - 1

    @property
    def occupancy(self) -> int:
        """Published entries: ``(producer - consumer) mod 2**32`` (2.4) [C]."""
        return _u32(self.producer - self.consumer)

    @property
    def is_empty(self) -> bool:
        return self.producer == self.consumer

    @property
    def needs_wakeup(self) -> bool:
        """``XDP_RING_NEED_WAKEUP`` in the flags word (2.5) [C]."""
        return bool(self.flags & XDP_RING_NEED_WAKEUP)

    def slot(self, index: int) -> int:
        """The array slot of a free-running index."""
        return index & self.mask

    def entries(self, first: int, last: int) -> list[T]:
        """The entries at indices ``first`` up to (not including) ``last``."""
        return [self.slots[(first + i) & self.mask] for i in range(_u32(last - first))]

    def in_flight(self) -> list[T]:
        """Entries the producer published and the consumer has not released."""
        return self.entries(self.cons_head, self.producer)

    def reserved(self) -> list[T]:
        """Entries reserved (and, for the kernel, written) but not yet published."""
        return self.entries(self.producer, self.prod_head)

    def blank(self) -> T:
        """A zeroed entry: what a slot holds before anything was written to it."""
        raise NotImplementedError

    def pack_entry(self, entry: T) -> bytes:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """The in-flight entries in their shared-memory layout, oldest first."""
        return b"".join(self.pack_entry(e) for e in self.in_flight())

    # ---- producer side (user for FILL/TX, kernel for RX/COMPLETION) --------------
    def nb_free(self, n: int) -> int:
        """min(n, free slots); refreshes the cached consumer only if short (2.4) [C]."""
        free = self.size - _u32(self.prod_head - self.prod_seen_cons)
        if free < n:
            self.prod_seen_cons = self.consumer
            free = self.size - _u32(self.prod_head - self.prod_seen_cons)
        return min(n, free)

    def reserve(self, n: int) -> int | None:
        """Reserve ``n`` slots, all or nothing; the first index, or None (6.3) [C]."""
        if n <= 0 or self.nb_free(n) < n:
            return None
        first = self.prod_head
        self.prod_head = _u32(self.prod_head + n)
        return first

    def write(self, index: int, entry: T) -> None:
        """Write a reserved, unpublished slot."""
        if _u32(index - self.producer) >= _u32(self.prod_head - self.producer):
            raise StateConflict(
                f"{self.kind.name} index {index:#x} is not reserved",
                valid=f"{self.producer:#x}..{_u32(self.prod_head - 1):#x}"
                if self.prod_head != self.producer
                else "nothing; reserve first",
            )
        self.slots[index & self.mask] = entry

    def submit(self, n: int | None = None) -> None:
        """Publish ``n`` reserved entries (default: all); release ordering (2.4) [C]."""
        pending = _u32(self.prod_head - self.producer)
        count = pending if n is None else n
        if not 0 <= count <= pending:
            raise StateConflict(
                f"cannot submit {count} {self.kind.name} entries", valid=f"0..{pending}"
            )
        self.producer = _u32(self.producer + count)

    def cancel(self, n: int) -> None:
        """Give back ``n`` reserved, unpublished slots (``xskq_prod_cancel_n``) [C]."""
        pending = _u32(self.prod_head - self.producer)
        if not 0 <= n <= pending:
            raise StateConflict(
                f"cannot cancel {n} {self.kind.name} entries", valid=f"0..{pending}"
            )
        self.prod_head = _u32(self.prod_head - n)

    def produce(self, entries: list[T]) -> int:
        """Reserve, write and submit ``entries`` all or nothing; how many went in."""
        first = self.reserve(len(entries))
        if first is None:
            return 0
        for i, entry in enumerate(entries):
            self.slots[(first + i) & self.mask] = entry
        self.submit(len(entries))
        return len(entries)

    # ---- user consumer side (RX, COMPLETION): libxdp peek/release ----------------
    def peek(self, n: int) -> tuple[int, int]:
        """Up to ``n`` new entries: ``(count, first index)``; advances the peek cursor."""
        if n < 0:  # a u32 in libxdp; refused here before anything moves
            raise InvalidValue(f"peek of {n} entries", valid="0 or more")
        avail = _u32(self.cons_seen_prod - self.cons_peeked)
        if avail < n:
            self.cons_seen_prod = self.producer  # acquire (2.4) [C]
            avail = _u32(self.cons_seen_prod - self.cons_peeked)
        count = min(n, avail)
        first = self.cons_peeked
        self.cons_peeked = _u32(self.cons_peeked + count)
        return count, first

    def read(self, index: int) -> T:
        """A peeked, unreleased entry."""
        if _u32(index - self.cons_head) >= _u32(self.cons_peeked - self.cons_head):
            raise StateConflict(f"{self.kind.name} index {index:#x} was not peeked")
        return self.slots[index & self.mask]

    def release(self, n: int) -> None:
        """Release ``n`` peeked entries and publish the consumer index (2.4) [C]."""
        peeked = _u32(self.cons_peeked - self.cons_head)
        if not 0 <= n <= peeked:
            raise StateConflict(
                f"cannot release {n} {self.kind.name} entries", valid=f"0..{peeked}"
            )
        self.cons_head = _u32(self.cons_head + n)
        self.consumer = self.cons_head

    def consume(self, n: int) -> list[T]:
        """Peek, read and release up to ``n`` entries."""
        count, first = self.peek(n)
        out = [self.read(_u32(first + i)) for i in range(count)]
        self.release(count)
        return out

    # ---- kernel consumer side (FILL, TX) -----------------------------------------
    def k_avail(self, n: int) -> int:
        """min(n, entries) seen by the kernel; refresh only if short (2.4) [C].

        Refreshing an empty cache also publishes the consumer (``xskq_cons_get_entries``).
        """
        avail = _u32(self.cons_seen_prod - self.cons_head)
        if avail < n:
            if avail == 0:
                self.k_publish()
            self.cons_seen_prod = self.producer
            avail = _u32(self.cons_seen_prod - self.cons_head)
        return min(n, avail)

    def k_entry(self, offset: int = 0) -> T:
        """The entry ``offset`` places after the kernel's consumer position."""
        return self.slots[(self.cons_head + offset) & self.mask]

    def k_release(self, n: int = 1) -> None:
        """Consume privately (``xskq_cons_release``); publish now if eager."""
        self.cons_head = _u32(self.cons_head + n)
        self.cons_peeked = self.cons_head
        if not self.lazy_consumer:
            self.k_publish()

    def k_unrelease(self, n: int) -> None:
        """Un-consume ``n`` entries not yet published (``xskq_cons_cancel_n``) [C]."""
        self.cons_head = _u32(self.cons_head - n)
        self.cons_peeked = self.cons_head
        if not self.lazy_consumer:
            self.k_publish()

    def k_publish(self) -> None:
        """Store the private position in the shared consumer word (``__xskq_cons_release``)."""
        self.consumer = self.cons_head


class AddrRing(Ring[int]):
    """FILL or COMPLETION: u64 UMEM addresses."""

    def blank(self) -> int:
        return 0

    def pack_entry(self, entry: int) -> bytes:
        return ADDR_ENTRY.pack(entry)


class DescRing(Ring[XskDesc]):
    """RX or TX: 16-byte descriptors."""

    def blank(self) -> XskDesc:
        return XskDesc(0, 0, 0)

    def pack_entry(self, entry: XskDesc) -> bytes:
        return entry.pack()


class RingOffsets(NamedTuple):
    """One ``xdp_ring_offset``: byte offsets inside the ring's mmap (2.3)."""

    producer: int
    consumer: int
    desc: int
    flags: int


class MmapOffsets(NamedTuple):
    """``struct xdp_mmap_offsets`` (128 bytes; 96 in v1 without ``flags``) (2.3, 2.9) [C]."""

    rx: RingOffsets
    tx: RingOffsets
    fr: RingOffsets
    cr: RingOffsets

    def pack(self, *, v1: bool = False) -> bytes:
        out = b""
        for ring in self:
            words = ring[:3] if v1 else (ring.producer, ring.consumer, ring.desc, ring.flags)
            out += struct.pack(f"<{len(words)}Q", *words)
        return out


def mmap_offsets(cache_line: int = 64) -> MmapOffsets:
    """The offsets for a given cache line size (2.3, [D]).

    The shared header is producer, pad, consumer, pad, each cache-line aligned, then
    flags (a u32 after the second pad) and a last aligned pad; the descriptor array
    follows, aligned too. With 64-byte lines: 0, 128, 196, 320 for every ring.
    """
    if cache_line <= 0 or cache_line & (cache_line - 1) or cache_line < 8:
        raise InvalidValue(f"cache line {cache_line} is not a power of two >= 8")
    one = RingOffsets(
        producer=0, consumer=2 * cache_line, desc=5 * cache_line, flags=3 * cache_line + 4
    )
    return MmapOffsets(one, one, one, one)
