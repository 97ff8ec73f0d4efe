"""Airoha QDMA descriptors and the RX descriptor builders, bit-exact against
airoha-dsa-xfrm.md.

Section numbers refer to /work/shared/reference/airoha-dsa-xfrm.md.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.utils import rdpcap, wrpcap

from esplab.layers.linktypes import DLT_QDMA_DESC
from esplab.layers.qdma import (
    QDMADescriptor,
    QDMARxDescriptor,
    airoha_qdma_rx,
    airoha_qdma_rx_bytes,
    airoha_rx_msg1_flags,
    sport_to_gdm,
)
from tests.layers.frames import DA, SA, UNTAGGED, VLAN100, pcap_linktype

# --- QDMA descriptor: section 1.6 -------------------------------------------------


def _words(*words: int) -> bytes:
    return struct.pack("<8I", *words)


# Section 1.6 worked example (lan2, untagged, priority 0): msg0 0x00010010,
# msg1 0x7f100000, msg2 0x0000ffff; ctrl LEN 60, a buffer at 0x8a001000, next 17.
LAN2_DESC = _words(0, 60, 0x8A001000, 17, 0x00010010, 0x7F100000, 0x0000FFFF, 0)


def test_qdma_worked_example_dissects() -> None:
    d = QDMADescriptor(LAN2_DESC)
    assert d.rsv == 0
    assert (d.done, d.drop, d.more, d.dei, d.no_drop) == (0, 0, 0, 0, 0)
    assert d.len == 60
    assert d.addr == 0x8A001000
    assert d.next_id == 17
    assert d.sp_tag == 0x0004
    assert (d.ico, d.uco, d.tco, d.tso, d.fast, d.oam) == (0, 0, 0, 0, 0, 0)
    assert d.chan == 2
    assert d.queue == 0
    assert d.msg1_no_drop == 0
    assert d.meter == 0x7F
    assert d.fport == 1
    assert d.nboq == 0
    assert (d.hwf, d.hop, d.ptp, d.acnt_g1, d.acnt_g0) == (0, 0, 0, 0, 0)
    assert d.msg2 == 0xFFFF
    assert d.msg3 == 0


def test_qdma_worked_example_builds() -> None:
    d = QDMADescriptor(
        len=60, addr=0x8A001000, next_id=17, sp_tag=4, chan=2, queue=0, meter=0x7F, fport=1
    )
    assert raw(d) == LAN2_DESC
    assert raw(d)[16:20] == bytes.fromhex("10000100")  # msg0 0x00010010, little-endian


# (field, word index, high bit, low bit) from the tables of section 1.6.
TX_BITS = [
    ("done", 1, 31, 31),
    ("drop", 1, 30, 30),
    ("more", 1, 29, 29),
    ("dei", 1, 25, 25),
    ("no_drop", 1, 24, 24),
    ("len", 1, 15, 0),
    ("next_id", 3, 15, 0),
    ("mic_idx", 4, 30, 30),
    ("sp_tag", 4, 29, 14),
    ("ico", 4, 13, 13),
    ("uco", 4, 12, 12),
    ("tco", 4, 11, 11),
    ("tso", 4, 10, 10),
    ("fast", 4, 9, 9),
    ("oam", 4, 8, 8),
    ("chan", 4, 7, 3),
    ("queue", 4, 2, 0),
    ("msg1_no_drop", 5, 31, 31),
    ("meter", 5, 30, 24),
    ("fport", 5, 23, 20),
    ("nboq", 5, 19, 15),
    ("hwf", 5, 14, 14),
    ("hop", 5, 13, 13),
    ("ptp", 5, 12, 12),
    ("acnt_g1", 5, 10, 6),
    ("acnt_g0", 5, 5, 0),
]
RX_BITS = [
    ("sptag", 4, 21, 14),
    ("msg1_dei", 5, 31, 31),
    ("ip6", 5, 30, 30),
    ("ip4", 5, 29, 29),
    ("ip4f", 5, 28, 28),
    ("l4_valid", 5, 27, 27),
    ("l4f", 5, 26, 26),
    ("sport", 5, 25, 21),
    ("crsn", 5, 20, 16),
    ("ppe_entry", 5, 15, 0),
]


def _single_field(word: int, lo: int, value: int) -> bytes:
    words = [0] * 8
    words[word] = value << lo
    return _words(*words)


@pytest.mark.parametrize(("field", "word", "hi", "lo"), TX_BITS)
def test_qdma_tx_bit_positions(field: str, word: int, hi: int, lo: int) -> None:
    ones = (1 << (hi - lo + 1)) - 1
    wire = _single_field(word, lo, ones)
    d = QDMADescriptor(wire)
    assert d.getfieldval(field) == ones
    others: dict[str, Any] = {"len": 0, "meter": 0, "msg2": 0}
    others[field] = ones
    assert raw(QDMADescriptor(**others)) == wire


@pytest.mark.parametrize(("field", "word", "hi", "lo"), RX_BITS)
def test_qdma_rx_bit_positions(field: str, word: int, hi: int, lo: int) -> None:
    ones = (1 << (hi - lo + 1)) - 1
    wire = _single_field(word, lo, ones)
    d = QDMARxDescriptor(wire)
    assert d.getfieldval(field) == ones
    others: dict[str, Any] = {"len": 0, "ppe_entry": 0}
    others[field] = ones
    assert raw(QDMARxDescriptor(**others)) == wire


def test_qdma_fact_6_6_rx_source_port() -> None:
    # Fact 6.6: source port in msg0 bits 21:14; msg1.SPORT 0x10-0x14 means GDM1.
    msg0 = 3 << 14
    msg1 = (1 << 29) | (1 << 27) | (0x10 << 21) | (0x05 << 16) | 0xFFFF
    d = QDMARxDescriptor(_words(0, 1 << 31 | 64, 0x8A002000, 0, msg0, msg1, 0, 0))
    assert d.done == 1
    assert d.len == 64
    assert d.sptag == 3
    assert (d.ip4, d.ip6, d.l4_valid, d.l4f, d.ip4f) == (1, 0, 1, 0, 0)
    assert d.sport == 0x10
    assert d.crsn == 0x05
    assert d.ppe_entry == 0xFFFF
    assert d.gdm == 1


@pytest.mark.parametrize(
    ("sport", "gdm"),
    [
        *((s, 1) for s in range(0x10, 0x15)),
        (0x2, 2),
        (0x3, 3),
        (0x4, 4),
        (0x16, 3),
        (0x17, 3),
        (0x18, 4),
        (0x19, 4),
        (0x0, None),
        (0x15, None),
        (0x1F, None),
    ],
)
def test_sport_map(sport: int, gdm: int | None) -> None:
    # Section 1.6: SPORT -> port map.
    assert sport_to_gdm(sport) == gdm


def test_qdma_views_share_bytes() -> None:
    tx = QDMADescriptor(LAN2_DESC)
    assert raw(tx.as_rx()) == LAN2_DESC
    assert raw(tx.as_rx().as_tx()) == LAN2_DESC
    assert tx.as_rx().sptag == (0x00010010 >> 14) & 0xFF


def test_qdma_len_computed_only_while_none() -> None:
    frame = Ether(UNTAGGED)
    built = raw(QDMADescriptor() / frame)
    assert built[4:6] == len(UNTAGGED).to_bytes(2, "little")
    assert raw(QDMADescriptor())[4:8] == bytes(4)
    explicit = raw(QDMADescriptor(len=7, more=1) / frame)
    assert explicit[4:8] == ((1 << 29) | 7).to_bytes(4, "little")


def test_qdma_payload_is_ether() -> None:
    d = QDMADescriptor(LAN2_DESC + UNTAGGED)
    assert isinstance(d.payload, Ether)
    assert d[Ether].type == 0x0800
    assert d[IP].src == "192.0.2.1"
    assert isinstance(QDMARxDescriptor(LAN2_DESC + UNTAGGED).payload, Ether)


@pytest.mark.parametrize("cls", [QDMADescriptor, QDMARxDescriptor])
def test_qdma_round_trip(cls: type[Packet]) -> None:
    p = cls(LAN2_DESC + UNTAGGED)
    assert raw(p) == LAN2_DESC + UNTAGGED
    built = cls(addr=0x1000, next_id=3) / Ether(UNTAGGED)
    assert raw(cls(raw(built))) == raw(built)


def test_qdma_truncated_keeps_whole_words() -> None:
    short = LAN2_DESC[:19]
    d = QDMADescriptor(short)
    assert d.len == 60
    assert d.addr == 0x8A001000
    assert d.next_id == 17
    assert "sp_tag" in d.missing_fields()
    assert "next_id" not in d.missing_fields()
    assert isinstance(d.payload, Raw)
    assert d.load == LAN2_DESC[16:19]
    assert raw(d) == short


def test_qdma_truncated_inside_ctrl() -> None:
    d = QDMADescriptor(LAN2_DESC[:6])
    assert d.rsv == 0
    assert "len" in d.missing_fields()
    assert d.load == LAN2_DESC[4:6]


@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=96))
def test_qdma_any_bytes(data: bytes) -> None:
    for cls in (QDMADescriptor, QDMARxDescriptor):
        p = cls(data)
        assert raw(p) == data
        assert isinstance(p.summary(), str)
        assert isinstance(p.show(dump=True), str)


def test_pcap_round_trip_qdma(tmp_path: Path) -> None:
    path = tmp_path / "qdma.pcap"
    wrpcap(str(path), [QDMADescriptor(LAN2_DESC + UNTAGGED)])
    assert pcap_linktype(path) == DLT_QDMA_DESC == 152
    back = rdpcap(str(path))
    assert type(back[0]) is QDMADescriptor
    assert raw(back[0]) == LAN2_DESC + UNTAGGED
    assert back[0][IP].dst == "192.0.2.2"


def test_pcap_rx_descriptor_comes_back_with_the_tx_layout(tmp_path: Path) -> None:
    path = tmp_path / "qdma-rx.pcap"
    rx = QDMARxDescriptor(sptag=3, sport=0x10) / Ether(UNTAGGED)
    wrpcap(str(path), [rx])
    assert pcap_linktype(path) == DLT_QDMA_DESC
    back = rdpcap(str(path))[0]
    assert type(back) is QDMADescriptor
    assert raw(back) == raw(rx)
    assert back.as_rx().sptag == 3


# --- RX descriptor as the driver reads it, msg1 parse bits --------------------------

# IPv4 198.51.100.66 -> 198.51.100.65, id 1, UDP 53 -> 53, empty payload, checksum
# 0xaa89 (scapy's IP()/UDP(), what `send pc2 eth0 IP(dst=...)/UDP()` builds).
IPV4_UDP_CSUM = bytes.fromhex("4500001c00010000401125e6c6336442c6336441003500350008aa89")
UDP_FRAME = DA + SA + bytes.fromhex("0800") + IPV4_UDP_CSUM


def _msg1_bits(frame: bytes) -> tuple[int, int, int, int, int]:
    f = airoha_rx_msg1_flags(frame)
    return (f["ip4"], f["ip6"], f["ip4f"], f["l4_valid"], f["l4f"])


def test_rx_descriptor_is_done_with_the_frame_after_it() -> None:
    # airoha_qdma_rx_process stops at a descriptor without DONE (section 1.6 ctrl b31).
    d = airoha_qdma_rx(UDP_FRAME, sptag=2, sport=0x10, addr=0x8A000042, next_id=1)
    wire = raw(d)
    assert wire[4:8] == (1 << 31 | len(UDP_FRAME)).to_bytes(4, "little")
    assert wire[8:12] == (0x8A000042).to_bytes(4, "little")
    assert wire[12:16] == (1).to_bytes(4, "little")
    assert wire[16:20] == (2 << 14).to_bytes(4, "little")
    # msg1: IP4 b29, L4_VALID b27, SPORT 0x10 at 25:21, PPE_ENTRY 0xffff.
    assert wire[20:24] == (1 << 29 | 1 << 27 | 0x10 << 21 | 0xFFFF).to_bytes(4, "little")
    assert wire[32:] == UDP_FRAME
    back = QDMARxDescriptor(wire)
    assert (back.done, back.len, back.sptag, back.gdm) == (1, len(UDP_FRAME), 2, 1)
    assert (back.ip4, back.l4_valid, back.l4f, back.ip4f, back.ip6) == (1, 1, 0, 0, 0)
    assert raw(QDMARxDescriptor(raw(back))) == wire


def test_msg1_udp_checksum_zero_is_valid_and_a_bad_one_is_a_fault() -> None:
    assert _msg1_bits(UNTAGGED) == (1, 0, 0, 1, 0)  # UDP checksum 0: none (RFC 768)
    bad = UDP_FRAME[:-1] + bytes((UDP_FRAME[-1] ^ 1,))
    assert _msg1_bits(bad) == (1, 0, 0, 1, 1)


def test_msg1_vlan_ipv6_fragment_and_non_ip() -> None:
    assert _msg1_bits(VLAN100) == (1, 0, 0, 1, 0)
    frame = Ether(dst="02:00:00:00:00:02") / IPv6(src="2001:db8::1", dst="2001:db8::2")
    tcp6 = raw(frame / TCP(sport=1, dport=2))
    assert _msg1_bits(tcp6) == (0, 1, 0, 1, 0)
    assert _msg1_bits(raw(frame / Raw(b"x"))) == (0, 1, 0, 0, 0)  # next header 59
    frag = raw(Ether() / IP(src="192.0.2.1", dst="192.0.2.2", flags="MF") / UDP() / b"x")
    assert _msg1_bits(frag) == (1, 0, 0, 0, 0)  # a fragment's L4 cannot be checked
    esp = raw(Ether() / IP(src="192.0.2.1", dst="192.0.2.2", proto=50) / Raw(b"\0" * 16))
    assert _msg1_bits(esp) == (1, 0, 0, 0, 0)
    arp = raw(Ether() / ARP())
    assert _msg1_bits(arp) == (0, 0, 0, 0, 0)


_MACS: dict[str, Any] = {"dst": "02:00:00:00:00:02", "src": "02:00:00:00:00:01"}
_V4: dict[str, Any] = {"src": "192.0.2.1", "dst": "192.0.2.2"}
_V6: dict[str, Any] = {"src": "2001:db8::1", "dst": "2001:db8::2"}
_PAYLOAD = Raw(b"abc" * 11)
# (frame, msg1 ip4, ip6, l4_valid, l4f) as airoha_rx_msg1_flags reads it (section 1.6).
RX_FRAMES: list[tuple[Packet, int, int, int, int]] = [
    (Ether(**_MACS) / IP(**_V4) / UDP(sport=53, dport=53) / _PAYLOAD, 1, 0, 1, 0),
    (Ether(**_MACS) / IP(**_V4) / TCP(sport=1, dport=2) / _PAYLOAD, 1, 0, 1, 0),
    (Ether(**_MACS) / IP(**_V4) / UDP(chksum=0) / _PAYLOAD, 1, 0, 1, 0),  # none (RFC 768)
    (Ether(**_MACS) / IP(**_V4) / UDP(chksum=0x1234) / _PAYLOAD, 1, 0, 1, 1),
    (Ether(**_MACS) / IP(**_V4) / TCP(chksum=0x1234), 1, 0, 1, 1),
    (Ether(**_MACS) / IP(**_V4, flags="MF") / UDP() / _PAYLOAD, 1, 0, 0, 0),
    (Ether(**_MACS) / IP(**_V4, frag=3) / Raw(b"x" * 9), 1, 0, 0, 0),
    (Ether(**_MACS) / IP(**_V4, options=b"\x01" * 4) / UDP() / b"x", 1, 0, 1, 0),
    (Ether(**_MACS) / Dot1Q(vlan=100) / IP(**_V4) / UDP() / _PAYLOAD, 1, 0, 1, 0),
    (Ether(**_MACS) / Dot1AD(vlan=10) / IP(**_V4) / TCP(), 1, 0, 1, 0),
    (Ether(**_MACS) / IP(**_V4, proto=50) / Raw(b"\x00\x00\x10\x00" + b"\x00" * 20), 1, 0, 0, 0),
    (Ether(**_MACS) / IPv6(**_V6) / UDP() / _PAYLOAD, 0, 1, 1, 0),
    (Ether(**_MACS) / IPv6(**_V6) / TCP() / Raw(b"odd"), 0, 1, 1, 0),
    (Ether(**_MACS) / IPv6(**_V6) / UDP(chksum=0xBEEF) / _PAYLOAD, 0, 1, 1, 1),
    (Ether(**_MACS) / IPv6(**_V6, nh=50) / Raw(b"\x00" * 24), 0, 1, 0, 0),
    (Ether(**_MACS) / Dot1Q(vlan=7) / IPv6(**_V6) / UDP() / Raw(b"x"), 0, 1, 1, 0),
    (Ether(**_MACS) / ARP(), 0, 0, 0, 0),
    (Ether(**_MACS, type=0x9000) / Raw(b"\xff" * 50), 0, 0, 0, 0),
]


@pytest.mark.parametrize(("pkt", "ip4", "ip6", "l4_valid", "l4f"), RX_FRAMES)
def test_rx_descriptor_bytes_without_dissecting_equal_the_layer(
    pkt: Packet, ip4: int, ip6: int, l4_valid: int, l4f: int
) -> None:
    # The walk's snapshot of eth0.dma on RX is airoha_qdma_rx_bytes: the same bytes as
    # the layer with the parse bits set by hand, and as airoha_qdma_rx.
    frame = raw(pkt)
    args: dict[str, Any] = {"sptag": 2, "sport": 0x10, "addr": 0x8A000042, "next_id": 1}
    layer = QDMARxDescriptor(done=1, ip4=ip4, ip6=ip6, l4_valid=l4_valid, l4f=l4f, **args) / Ether(
        frame
    )
    assert airoha_qdma_rx_bytes(frame, **args) == raw(layer) == raw(airoha_qdma_rx(frame, **args))
    assert airoha_qdma_rx_bytes(frame) == raw(airoha_qdma_rx(frame))


def test_rx_descriptor_len_counts_the_padding() -> None:
    # A short frame padded to 60 bytes: LEN is what the DMA wrote, padding included.
    frame = UDP_FRAME + bytes(60 - len(UDP_FRAME))
    for wire in (airoha_qdma_rx_bytes(frame), raw(airoha_qdma_rx(frame))):
        assert QDMARxDescriptor(wire).len == 60
        assert wire[32:] == frame
