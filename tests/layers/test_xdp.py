"""AF_XDP descriptor, bit-exact against af_xdp.md sections 2.2, 2.3 and 2.9."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from esplab.layers.linktypes import DLT_XDP_DESC
from esplab.layers.xdp import XDP_PKT_CONTD, XDP_TX_METADATA, XDPDesc

# af_xdp.md 2.2 and fact 9: in aligned mode with 4096-byte chunks and no headroom, an
# RX descriptor for chunk 3 has addr = 3 * 4096 + 256 = 0x3100. A 60-byte frame,
# options 0. struct xdp_desc (2.3): addr u64, len u32, options u32, little-endian.
RX_DESC = bytes.fromhex("00310000000000003c00000000000000")
# A multi-buffer first fragment (options XDP_PKT_CONTD = 1 << 0) of 3840 bytes at
# chunk 0 (2.2: 4096 - 256 = 3840 is the RX frame limit).
CONTD_DESC = bytes.fromhex("0001000000000000000f000001000000")
# Unaligned mode (2.2): base 0x2000 in bits 47:0, offset 0x100 in bits 63:48;
# TX with XDP_TX_METADATA = 1 << 1.
UNALIGNED_DESC = bytes.fromhex("00200000000000014000000002000000")

# Ethernet + IPv4 + UDP, 42 bytes (checksum 0xf6cc worked out by hand).
FRAME = bytes.fromhex(
    "02000000000202000000000108004500001c000100004011f6ccc0000201c000020203e807d000080000"
)


def test_option_constants() -> None:
    # af_xdp.md 2.3: XDP_PKT_CONTD = 1 << 0, XDP_TX_METADATA = 1 << 1.
    assert (XDP_PKT_CONTD, XDP_TX_METADATA) == (1, 2)


def test_rx_desc_dissects() -> None:
    d = XDPDesc(RX_DESC)
    assert d.addr == 0x3100
    assert d.len == 60
    assert int(d.options) == 0
    assert len(raw(d)) == 16  # af_xdp.md 2.9: sizeof(struct xdp_desc)


def test_contd_desc_dissects() -> None:
    d = XDPDesc(CONTD_DESC)
    assert (d.addr, d.len) == (0x100, 3840)
    assert int(d.options) == XDP_PKT_CONTD
    assert d.options.PKT_CONTD
    assert not d.options.TX_METADATA


def test_unaligned_desc_dissects() -> None:
    d = XDPDesc(UNALIGNED_DESC)
    assert d.addr == (0x100 << 48) | 0x2000
    assert d.addr_base == 0x2000
    assert d.addr_offset == 0x100
    assert d.len == 64
    assert d.options.TX_METADATA


def test_descs_build() -> None:
    assert raw(XDPDesc(addr=0x3100, len=60)) == RX_DESC
    assert raw(XDPDesc(addr=0x100, len=3840, options="PKT_CONTD")) == CONTD_DESC
    built = XDPDesc(addr=(0x100 << 48) | 0x2000, len=64, options=XDP_TX_METADATA)
    assert raw(built) == UNALIGNED_DESC


def test_unknown_option_bits_survive() -> None:
    # af_xdp.md 2.8: other option bits make a TX descriptor invalid; they must show.
    wire = RX_DESC[:12] + (1 << 31 | 1).to_bytes(4, "little")
    d = XDPDesc(wire)
    assert int(d.options) == 0x80000001
    assert d.options.bit31
    assert raw(d) == wire


def test_len_computed_only_while_none() -> None:
    assert raw(XDPDesc(addr=0x3100) / Ether(FRAME))[8:12] == (42).to_bytes(4, "little")
    assert raw(XDPDesc())[8:12] == bytes(4)
    assert raw(XDPDesc(len=9) / Ether(FRAME))[8:12] == (9).to_bytes(4, "little")


def test_payload_is_ether() -> None:
    d = XDPDesc(RX_DESC + FRAME)
    assert isinstance(d.payload, Ether)
    assert d[IP].dst == "192.0.2.2"
    back = XDPDesc(raw(XDPDesc(addr=0x3100) / Ether(FRAME)))
    assert back.len == 42
    assert raw(back.payload) == FRAME


@pytest.mark.parametrize("wire", [RX_DESC, CONTD_DESC, UNALIGNED_DESC, RX_DESC + FRAME])
def test_round_trip(wire: bytes) -> None:
    p = XDPDesc(wire)
    assert raw(p) == wire
    assert raw(XDPDesc(raw(p))) == raw(p)


def test_round_trip_of_a_built_desc() -> None:
    p = XDPDesc(addr=0xFFFF_FFFF_FFFF_FFFF, len=0xFFFF_FFFF, options=0xFFFF_FFFF)
    assert raw(p) == b"\xff" * 16
    assert raw(XDPDesc(raw(p))) == raw(p)


def test_truncated_inside_len() -> None:
    d = XDPDesc(RX_DESC[:10])
    assert d.addr == 0x3100
    assert d.missing_fields() == ["len", "options"]
    assert isinstance(d.payload, Raw)
    assert d.load == RX_DESC[8:10]
    assert raw(d) == RX_DESC[:10]


def test_truncated_inside_addr() -> None:
    d = XDPDesc(RX_DESC[:7])
    assert d.missing_fields() == ["addr", "len", "options"]
    assert d.load == RX_DESC[:7]


@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=80))
def test_any_bytes(data: bytes) -> None:
    p = XDPDesc(data)
    assert raw(p) == data
    assert isinstance(p.summary(), str)
    assert isinstance(p.show(dump=True), str)


@given(
    addr=st.integers(0, 2**64 - 1),
    length=st.integers(0, 2**32 - 1),
    options=st.integers(0, 2**32 - 1),
)
def test_layout_matches_struct(addr: int, length: int, options: int) -> None:
    # af_xdp.md 2.9: addr u64, len u32, options u32, host (little-endian) order.
    wire = struct.pack("<QII", addr, length, options)
    d = XDPDesc(wire)
    assert (d.addr, d.len, int(d.options)) == (addr, length, options)
    assert raw(XDPDesc(addr=addr, len=length, options=options)) == wire


def test_pcap_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "xdp.pcap"
    wrpcap(str(path), [XDPDesc(RX_DESC + FRAME), XDPDesc(CONTD_DESC)])
    header = path.read_bytes()[:24]
    order = "<" if header[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    assert struct.unpack(order + "I", header[20:24])[0] == DLT_XDP_DESC == 154
    back = rdpcap(str(path))
    assert [type(p) for p in back] == [XDPDesc, XDPDesc]
    assert raw(back[0]) == RX_DESC + FRAME
    assert raw(back[1]) == CONTD_DESC
