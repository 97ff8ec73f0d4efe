"""Ring mechanics: af_xdp.md 2.3, 2.4 and facts 6.1-6.4."""

from __future__ import annotations

import struct

import pytest

from esplab.errors import InvalidValue, KernelError, StateConflict
from esplab.layers.xdp import XDPDesc
from esplab.model.kernel.xdp.consts import RingKind
from esplab.model.kernel.xdp.rings import (
    MAX_RING_ENTRIES,
    AddrRing,
    DescRing,
    XskDesc,
    mmap_offsets,
)

NEAR_WRAP = 0xFFFF_FFF0  # fact 6.1: start just below 2**32


def test_wrap_around_u32() -> None:
    # 6.1: push more than 16 entries through a 16-entry ring starting at 0xFFFFFFF0;
    # slots are idx & 15, occupancy is (prod - cons) mod 2**32.
    ring = AddrRing(RingKind.FILL, 16, start=NEAR_WRAP)
    seen: list[int] = []
    for n in range(40):
        first = ring.reserve(1)
        assert first is not None
        assert ring.slot(first) == (NEAR_WRAP + n) & 15
        ring.write(first, n)
        ring.submit()
        assert ring.occupancy == 1
        seen += ring.consume(1)
        assert ring.occupancy == 0
    assert seen == list(range(40))
    assert ring.producer == (NEAR_WRAP + 40) & 0xFFFF_FFFF == 0x18  # crossed 2**32
    assert ring.consumer == ring.producer


def test_full_ring_across_the_wrap() -> None:
    ring = AddrRing(RingKind.FILL, 16, start=NEAR_WRAP + 8)
    assert ring.produce(list(range(16))) == 16
    assert ring.producer < ring.consumer  # the producer wrapped, the consumer did not
    assert ring.occupancy == 16  # (prod - cons) mod 2**32
    assert ring.reserve(1) is None  # 6.3: never prod - cons > size
    assert ring.consume(16) == list(range(16))


@pytest.mark.parametrize("size", [0, 3, 12, 1000, -4])
def test_ring_size_must_be_power_of_two(size: int) -> None:
    # 6.2: 0 or a non-power-of-two size gives EINVAL.
    with pytest.raises(KernelError) as err:
        DescRing(RingKind.RX, size)
    assert err.value.errno_name == "EINVAL"
    assert "XDP_RX_RING" in str(err.value)


def test_a_ring_too_large_to_allocate_is_enomem() -> None:
    # [M] ring-memory: the largest ring the lab allocates, and one size more.
    assert DescRing(RingKind.TX, MAX_RING_ENTRIES).size == MAX_RING_ENTRIES
    with pytest.raises(KernelError) as err:
        DescRing(RingKind.TX, MAX_RING_ENTRIES * 2)
    assert err.value.errno_name == "ENOMEM"


def test_a_negative_peek_is_refused_and_moves_nothing() -> None:
    ring = AddrRing(RingKind.COMPLETION, 4)
    ring.produce([0x1000])
    with pytest.raises(InvalidValue, match="peek of -1 entries"):
        ring.peek(-1)
    assert ring.peek(1) == (1, 0)
    assert ring.read(0) == 0x1000
    ring.release(1)


def test_reserve_is_all_or_nothing() -> None:
    # 6.3: libxdp reserve returns 0 if fewer than n slots are free.
    ring = AddrRing(RingKind.FILL, 8)
    assert ring.produce([1, 2, 3, 4, 5]) == 5
    assert ring.reserve(4) is None
    assert ring.prod_head == ring.producer  # nothing was taken
    assert ring.reserve(3) is not None


def test_peek_returns_min_of_n_and_available() -> None:
    # 6.3: peek returns min(n, available) and advances past what it returned.
    ring = AddrRing(RingKind.COMPLETION, 8)
    ring.produce([10, 11, 12])
    count, first = ring.peek(64)
    assert count == 3
    assert [ring.read(first + i) for i in range(count)] == [10, 11, 12]
    assert ring.peek(64)[0] == 0  # nothing new
    ring.release(3)
    assert ring.is_empty


def test_empty_ring() -> None:
    ring = DescRing(RingKind.RX, 4)
    assert ring.is_empty and ring.occupancy == 0
    assert ring.peek(1) == (0, 0)
    assert ring.consume(4) == []
    with pytest.raises(StateConflict):
        ring.release(1)


def test_write_outside_the_reservation_is_refused() -> None:
    ring = AddrRing(RingKind.FILL, 4)
    with pytest.raises(StateConflict):
        ring.write(0, 1)  # nothing reserved
    first = ring.reserve(2)
    assert first == 0
    ring.write(1, 7)
    with pytest.raises(StateConflict):
        ring.write(2, 7)
    with pytest.raises(StateConflict):
        ring.submit(3)


def test_cached_consumer_is_refreshed_only_when_short() -> None:
    # 2.4: the producer caches the consumer and refreshes it only if the cache shows
    # too little room.
    ring = AddrRing(RingKind.FILL, 4)
    ring.produce([1, 2, 3, 4])
    ring.k_avail(4)
    ring.k_release(4)
    ring.k_publish()
    assert ring.prod_seen_cons == 0  # stale, not yet needed
    assert ring.nb_free(1) == 1
    assert ring.prod_seen_cons == 4  # refreshed because the cache showed 0 free


def test_lazy_kernel_consumer_publishes_later() -> None:
    # 6.4: the kernel may take FILL/TX entries before the shared consumer shows it.
    lazy = AddrRing(RingKind.FILL, 8, lazy_consumer=True)
    eager = AddrRing(RingKind.FILL, 8, lazy_consumer=False)
    for ring in (lazy, eager):
        ring.produce([1, 2, 3])
        assert ring.k_avail(2) == 2
        ring.k_release(2)
    assert (lazy.cons_head, lazy.consumer) == (2, 0)
    assert (eager.cons_head, eager.consumer) == (2, 2)
    lazy.k_publish()
    assert lazy.consumer == 2


def test_kernel_refresh_of_an_empty_cache_publishes() -> None:
    # xskq_cons_get_entries: release the consumer, then refresh the producer (2.4).
    ring = AddrRing(RingKind.FILL, 8, lazy_consumer=True)
    ring.produce([1])
    ring.k_avail(1)
    ring.k_release()
    assert ring.consumer == 0
    assert ring.k_avail(1) == 0
    assert ring.consumer == 1


def test_in_flight_entries_pack_little_endian() -> None:
    # 2.3/2.9: struct xdp_desc is addr u64, len u32, options u32, little-endian.
    ring = DescRing(RingKind.TX, 4)
    ring.produce([XskDesc(0x3100, 60), XskDesc(0x100, 3840, 1)])
    wire = ring.to_bytes()
    assert wire == bytes.fromhex("00310000000000003c000000000000000001000000000000000f000001000000")
    assert struct.unpack("<QII", wire[:16]) == (0x3100, 60, 0)
    fill = AddrRing(RingKind.FILL, 4)
    fill.produce([0x1000])
    assert fill.to_bytes() == (0x1000).to_bytes(8, "little")


def test_in_flight_bytes_dissect_with_the_xdp_layer() -> None:
    ring = DescRing(RingKind.RX, 4)
    ring.produce([XskDesc(0x3100, 60)])
    desc = XDPDesc(ring.to_bytes())
    assert (desc.addr, desc.len, int(desc.options)) == (0x3100, 60, 0)


def test_mmap_offsets_for_64_byte_lines() -> None:
    # 2.3 [derived]: producer=0, consumer=128, flags=196, desc=320 with 64-byte lines.
    offsets = mmap_offsets(64)
    for ring in offsets:
        assert (ring.producer, ring.consumer, ring.flags, ring.desc) == (0, 128, 196, 320)
    assert len(offsets.pack()) == 128  # struct xdp_mmap_offsets (2.9)
    assert len(offsets.pack(v1=True)) == 96
    assert mmap_offsets(128).rx.consumer == 256  # never hardcoded (7)
