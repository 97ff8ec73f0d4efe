"""DMA memory: sparse 32-bit bus addresses, allocation pools, bus faults."""

from __future__ import annotations

import pytest

from esplab.errors import EngineError
from esplab.model.hw.eip93.memory import POOLS, BusFault, DmaMemory


def test_allocate_from_pools_aligned_and_zeroed() -> None:
    mem = DmaMemory()
    sa = mem.allocate(128, label="SA", pool="sa", align=128)
    assert sa == POOLS["sa"][0] == 0x08000000
    buf = mem.allocate(100, label="a")
    buf2 = mem.allocate(100, label="b", align=64)
    assert buf == POOLS["buf"][0] and buf2 % 64 == 0 and buf2 >= buf + 100
    assert mem.read(sa, 128) == bytes(128)


def test_read_write_round_trip_inside_a_region() -> None:
    mem = DmaMemory()
    addr = mem.allocate(64, label="x")
    mem.write(addr + 10, b"hello")
    assert mem.read(addr + 8, 9) == b"\x00\x00hello\x00\x00"


@pytest.mark.parametrize(("offset", "size"), [(60, 8), (64, 1), (-1, 4), (0x1000, 4)])
def test_access_outside_a_region_is_a_bus_fault_naming_the_address(offset: int, size: int) -> None:
    mem = DmaMemory()
    addr = mem.allocate(64, label="x")
    with pytest.raises(BusFault) as info:
        mem.read(addr + offset, size)
    assert isinstance(info.value, EngineError)
    assert f"{addr + offset:#010x}" in str(info.value)
    with pytest.raises(BusFault):
        mem.write(addr + offset, bytes(size))


def test_unmapped_address_faults() -> None:
    with pytest.raises(BusFault, match="0x00000000"):
        DmaMemory().read(0, 4)


def test_free_releases_and_the_size_is_reused() -> None:
    mem = DmaMemory()
    first = mem.allocate(128, label="SA 1", pool="sa")
    mem.allocate(128, label="SA 2", pool="sa")
    mem.write(first, b"\xff" * 128)
    mem.free(first)
    with pytest.raises(BusFault):
        mem.read(first, 4)
    again = mem.allocate(128, label="SA 3", pool="sa")
    assert again == first and mem.read(again, 128) == bytes(128)
    with pytest.raises(EngineError, match="no DMA region starts at"):
        mem.free(first + 4)


def test_bad_requests_are_engine_errors() -> None:
    mem = DmaMemory()
    with pytest.raises(EngineError, match="valid: ring, sa, state, buf"):
        mem.allocate(8, label="x", pool="nope")
    with pytest.raises(EngineError):
        mem.allocate(0, label="x")
    with pytest.raises(EngineError):
        mem.allocate(8, label="x", align=3)
    with pytest.raises(EngineError, match="exhausted"):
        mem.allocate(POOLS["sa"][1] + 1, label="x", pool="sa")
