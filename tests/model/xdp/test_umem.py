"""UMEM registration, addressing and descriptor validation: af_xdp.md 2.2, 2.8, 6.9-6.14, 6.21."""

from __future__ import annotations

from typing import Any

import pytest

from esplab.errors import KernelError
from esplab.model.kernel.xdp.consts import DescOption, UmemFlag
from esplab.model.kernel.xdp.rings import XskDesc
from esplab.model.kernel.xdp.umem import FrameState, Umem

MIB = 1 << 20


def einval(**kwargs: Any) -> KernelError:
    with pytest.raises(KernelError) as err:
        Umem(**kwargs)
    assert err.value.errno_name == "EINVAL"
    assert str(err.value).startswith("setsockopt(XDP_UMEM_REG)")
    return err.value


def test_xdpsock_default_umem() -> None:
    # 3.1: 4096 frames x 4096 bytes, headroom 0 = 16 MiB; 2.2: RX limit 3840.
    umem = Umem(4096 * 4096)
    assert umem.size == 16 * MIB and umem.chunks == 4096
    assert umem.rx_frame_size == 3840
    assert Umem(2048 * 8, chunk_size=2048).rx_frame_size == 1792  # 2.2


@pytest.mark.parametrize("chunk", [1024, 2047, 8192])
def test_chunk_size_outside_2048_to_page_size(chunk: int) -> None:
    einval(size=chunk * 4, chunk_size=chunk)  # 6.21: chunk 1024 -> EINVAL


def test_chunk_3000_needs_unaligned_mode() -> None:
    # 6.21: chunk 3000 aligned -> EINVAL, unaligned OK.
    error = einval(size=3000 * 4, chunk_size=3000)
    assert "power of two" in str(error)
    assert Umem(3000 * 4, chunk_size=3000, flags=UmemFlag.UNALIGNED_CHUNK).chunks == 4


def test_headroom_limit() -> None:
    # 6.21: headroom = chunk - 256 -> EINVAL; one less is the largest accepted.
    einval(size=4 * 4096, headroom=4096 - 256)
    assert Umem(4 * 4096, headroom=4096 - 257).rx_frame_size == 1
    einval(size=4 * 4096, headroom=-1)  # a u32 in the kernel: never below 0


def test_len_must_be_a_multiple_of_the_chunk_when_aligned() -> None:
    einval(size=4 * 4096 + 100)  # 6.21
    assert Umem(4 * 4096 + 100, flags=UmemFlag.UNALIGNED_CHUNK).chunks == 4


def test_other_registration_errors() -> None:
    einval(size=0)  # zero chunks
    einval(size=4096, vaddr=0x1000_0001)  # not page-aligned
    einval(size=4096, flags=UmemFlag(1 << 5))  # unknown flag bit
    einval(size=4096, flags=UmemFlag.TX_METADATA_LEN, tx_metadata_len=12)  # not x8
    einval(size=4096, flags=UmemFlag.TX_METADATA_LEN, tx_metadata_len=256)
    assert Umem(4096, flags=UmemFlag.TX_METADATA_LEN, tx_metadata_len=24).tx_metadata_len == 24
    assert Umem(4096, tx_metadata_len=24).tx_metadata_len == 0  # ignored without the flag


def test_rx_placement_with_headroom() -> None:
    # 6.9: in aligned mode with headroom H the RX desc addr is chunk_base + H + 256.
    umem = Umem(8 * 4096, headroom=128)
    assert umem.rx_addr(3 * 4096) == 3 * 4096 + 128 + 256
    unaligned = Umem(8 * 4096, flags=UmemFlag.UNALIGNED_CHUNK)
    handle = unaligned.rx_addr(0x2000)
    assert handle == (256 << 48) | 0x2000  # offset in bits 63:48 (2.2)
    assert unaligned.offset_of(handle) == 0x2100


def test_fill_masking() -> None:
    # 6.10: an aligned FILL addr with an in-chunk offset names its chunk; past the end
    # it is skipped.
    umem = Umem(4 * 4096)
    assert umem.fill_base(2 * 4096 + 256) == 2 * 4096
    assert umem.fill_base(4 * 4096) is None
    unaligned = Umem(4 * 4096, flags=UmemFlag.UNALIGNED_CHUNK)
    assert unaligned.fill_base(100) == 100  # not rounded
    assert unaligned.fill_base(3 * 4096 + 1) is None  # base + chunk passes the end (2.8)


def test_tx_validation_aligned() -> None:
    umem = Umem(4 * 4096)
    ok = umem.tx_invalid_reason
    assert ok(XskDesc(0, 4096)) is None  # 6.13: len = chunk at the base is valid
    assert ok(XskDesc(4096 + 100, 60)) is None
    assert ok(XskDesc(100, 4096)) is not None  # crosses the chunk end (6.13)
    assert ok(XskDesc(4 * 4096, 60)) is not None  # outside the UMEM (6.12)
    assert ok(XskDesc(0, 0)) is not None  # len 0 (6.14)
    assert ok(XskDesc(0, 60, 1 << 2)) is not None  # unknown option bit (6.14)
    assert ok(XskDesc(0, 60, DescOption.PKT_CONTD | DescOption.TX_METADATA)) is None


def test_tx_validation_with_metadata_len() -> None:
    # 2.8: addr - M underflow and offset + len + M > chunk are invalid.
    umem = Umem(4 * 4096, flags=UmemFlag.TX_METADATA_LEN, tx_metadata_len=16)
    assert umem.tx_invalid_reason(XskDesc(8, 60)) is not None  # underflow
    assert umem.tx_invalid_reason(XskDesc(16, 4096 - 16)) is None
    assert umem.tx_invalid_reason(XskDesc(16, 4096 - 15)) is not None


def test_tx_validation_unaligned() -> None:
    umem = Umem(4 * 4096, chunk_size=2048, flags=UmemFlag.UNALIGNED_CHUNK)
    assert umem.tx_invalid_reason(XskDesc(100, 2048)) is None  # any start, len <= chunk
    assert umem.tx_invalid_reason(XskDesc(100, 2049)) is not None
    assert umem.tx_invalid_reason(XskDesc(4 * 4096 - 10, 60)) is not None  # runs past the end


def test_fresh_umem_belongs_to_user() -> None:
    umem = Umem(8 * 4096)
    assert umem.owners() == {FrameState.USER: 8}
    assert FrameState.RX.owner == "user" and FrameState.FILL.owner == "kernel"  # 2.6 table
