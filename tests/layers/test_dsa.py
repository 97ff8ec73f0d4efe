"""MediaTek DSA tag and Airoha QDMA descriptors, bit-exact against airoha-dsa-xfrm.md.

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

from esplab.layers.dsa import (
    MTKEther,
    QDMADescriptor,
    QDMARxDescriptor,
    airoha_dsa_xmit,
    airoha_dsa_xmit_bytes,
    airoha_qdma_rx,
    airoha_qdma_rx_bytes,
    airoha_rx_msg1_flags,
    mtk_tag_from_cpu,
    mtk_tag_rcv,
    mtk_tag_to_cpu,
    mtk_tag_xmit,
    sport_to_gdm,
)
from esplab.layers.linktypes import DLT_MTK_ETHER, DLT_QDMA_DESC

# Addresses of the hex examples in section 2.2.
DA = bytes.fromhex("020000000002")
SA = bytes.fromhex("020000000001")
# IPv4 192.0.2.1 -> 192.0.2.2, id 1, TTL 64, UDP 1000 -> 2000 with no checksum
# (RFC 791 / RFC 768, header checksum 0xf6cc worked out by hand).
IPV4_UDP = bytes.fromhex("4500001c000100004011f6ccc0000201c000020203e807d000080000")

UNTAGGED = DA + SA + bytes.fromhex("0800") + IPV4_UDP
VLAN100 = DA + SA + bytes.fromhex("810000640800") + IPV4_UDP
# 802.1ad S-VLAN 10 carrying an 802.1Q C-VLAN 20.
QINQ = DA + SA + bytes.fromhex("88a8000a810000140800") + IPV4_UDP

# Section 2.2 hex examples (CPU -> switch).
TX_PORT2_UNTAGGED = DA + SA + bytes.fromhex("00040000") + bytes.fromhex("0800") + IPV4_UDP
TX_PORT2_VLAN100 = DA + SA + bytes.fromhex("01040064") + bytes.fromhex("0800") + IPV4_UDP
TX_PORT3_QINQ = DA + SA + bytes.fromhex("0208000a") + bytes.fromhex("810000140800") + IPV4_UDP
# Section 2.3 hex examples (switch -> CPU).
RX_PORT3_UNTAGGED = DA + SA + bytes.fromhex("00030000") + bytes.fromhex("0800") + IPV4_UDP
RX_PORT1_VLAN100 = DA + SA + bytes.fromhex("00010000") + bytes.fromhex("810000640800") + IPV4_UDP


# --- the tagger: section 2.2 / 2.3 hex examples, facts 6.1-6.4 ----------------


def test_xmit_untagged_port2_grows_by_4() -> None:
    # Section 2.2 "to port 2, untagged IPv4"; fact 6.1.
    tagged = mtk_tag_xmit(UNTAGGED, 2)
    assert tagged == TX_PORT2_UNTAGGED
    assert len(tagged) == len(UNTAGGED) + 4


def test_xmit_vlan100_port2_merges_tpid() -> None:
    # Section 2.2 "to port 2, VLAN 100 (PCP 0)": the tag replaces 0x8100; fact 6.2.
    tagged = mtk_tag_xmit(VLAN100, 2)
    assert tagged == TX_PORT2_VLAN100
    assert len(tagged) == len(VLAN100)


def test_xmit_8021ad_port3_selector_2() -> None:
    # Section 2.2 "to port 3, 802.1ad S-VLAN 10"; fact 6.2 (first byte 02).
    tagged = mtk_tag_xmit(QINQ, 3)
    assert tagged == TX_PORT3_QINQ
    assert len(tagged) == len(QINQ)


def test_xmit_accepts_a_packet() -> None:
    assert mtk_tag_xmit(Ether(UNTAGGED), 2) == TX_PORT2_UNTAGGED


@pytest.mark.parametrize("port", range(6))
def test_xmit_port_mask_bits(port: int) -> None:
    # Fact 6.4: the mask uses bits 5:0 only.
    assert mtk_tag_xmit(UNTAGGED, port)[12:16] == bytes((0, 1 << port, 0, 0))


@pytest.mark.parametrize("port", [-1, 6, 7])
def test_xmit_rejects_ports_outside_the_mask(port: int) -> None:
    with pytest.raises(ValueError, match="valid: 0-5"):
        mtk_tag_xmit(UNTAGGED, port)


def test_xmit_rejects_a_runt() -> None:
    with pytest.raises(ValueError, match="need at least 14"):
        mtk_tag_xmit(DA + SA, 1)


def test_rcv_untagged_port3() -> None:
    # Section 2.3 "from port 3, untagged" -> delivered on lan3 as DA SA 08 00 45 ...
    assert mtk_tag_rcv(RX_PORT3_UNTAGGED) == (3, UNTAGGED)


def test_rcv_vlan100_port1() -> None:
    # Section 2.3 "from port 1, VLAN 100" -> lan1 sees an ordinary 802.1Q frame.
    assert mtk_tag_rcv(RX_PORT1_VLAN100) == (1, VLAN100)


def test_rcv_ignores_every_other_bit() -> None:
    # Fact 6.3: source port = byte13 & 0x07; the rest (SA_DIS included) is ignored.
    noisy = DA + SA + bytes.fromhex("fffbffff") + bytes.fromhex("0800") + IPV4_UDP
    assert mtk_tag_rcv(noisy) == (3, UNTAGGED)


def test_rcv_rejects_a_frame_without_a_tag() -> None:
    with pytest.raises(ValueError, match="need at least 16"):
        mtk_tag_rcv(DA + SA + b"\x00\x01")


def test_to_cpu_builds_the_rx_examples() -> None:
    # Section 2.3: the switch pushes 00 0N 00 00 and keeps a VLAN header after it.
    assert mtk_tag_to_cpu(UNTAGGED, 3) == RX_PORT3_UNTAGGED
    assert mtk_tag_to_cpu(VLAN100, 1) == RX_PORT1_VLAN100
    with pytest.raises(ValueError, match="valid: 0-7"):
        mtk_tag_to_cpu(UNTAGGED, 8)


def test_from_cpu_undoes_the_tx_examples() -> None:
    assert mtk_tag_from_cpu(TX_PORT2_UNTAGGED) == (0x04, UNTAGGED)
    assert mtk_tag_from_cpu(TX_PORT2_VLAN100) == (0x04, VLAN100)
    assert mtk_tag_from_cpu(TX_PORT3_QINQ) == (0x08, QINQ)


def test_from_cpu_ignores_sa_dis() -> None:
    # Fact 6.4 / section 2.2: SA_DIS (bit 6) is accepted and ignored.
    with_sa_dis = DA + SA + bytes.fromhex("00440000") + bytes.fromhex("0800") + IPV4_UDP
    assert mtk_tag_from_cpu(with_sa_dis) == (0x04, UNTAGGED)


ETHER_TYPES_FOR_FRAMES = st.sampled_from([0x0800, 0x86DD, 0x0806, 0x8100, 0x88A8, 0x1234])


@given(
    port=st.integers(0, 5),
    ethertype=ETHER_TYPES_FOR_FRAMES,
    rest=st.binary(min_size=0, max_size=64),
)
def test_from_cpu_inverts_xmit(port: int, ethertype: int, rest: bytes) -> None:
    frame = DA + SA + ethertype.to_bytes(2, "big") + rest
    assert mtk_tag_from_cpu(mtk_tag_xmit(frame, port)) == (1 << port, frame)


@given(port=st.integers(0, 7), rest=st.binary(min_size=2, max_size=64))
def test_rcv_inverts_to_cpu(port: int, rest: bytes) -> None:
    frame = DA + SA + rest
    assert mtk_tag_rcv(mtk_tag_to_cpu(frame, port)) == (port, frame)


# --- MTKEther: dissect, build, round trip ----------------------------------------


def test_mtkether_dissects_tx_untagged() -> None:
    p = MTKEther(TX_PORT2_UNTAGGED)
    assert p.dst == "02:00:00:00:00:02"
    assert p.src == "02:00:00:00:00:01"
    assert p.tpid_sel == 0
    assert p.unused == 0
    assert p.sa_dis == 0
    assert int(p.port_mask) == 0x04
    assert p.ports == [2]
    assert (p.pcp, p.dei, p.vid) == (0, 0, 0)
    assert p.type == 0x0800
    assert p.tag == 0x00040000
    assert isinstance(p.payload, IP)
    assert p[IP].src == "192.0.2.1"


def test_mtkether_dissects_tx_vlan100() -> None:
    p = MTKEther(TX_PORT2_VLAN100)
    assert p.tpid_sel == 1
    assert p.sprintf("%tpid_sel%") == "802.1Q"
    assert int(p.port_mask) == 0x04
    assert (p.pcp, p.dei, p.vid) == (0, 0, 100)
    assert p.type == 0x0800
    assert p[IP].dst == "192.0.2.2"


def test_mtkether_dissects_tx_8021ad() -> None:
    p = MTKEther(TX_PORT3_QINQ)
    assert p.tpid_sel == 2
    assert p.ports == [3]
    assert p.vid == 10
    assert p.type == 0x8100
    assert p[Dot1Q].vlan == 20
    assert p[Dot1Q].type == 0x0800
    assert IP in p


def test_mtkether_dissects_rx_forms() -> None:
    # Section 2.3: only byte13 bits 2:0 carry the source port.
    p = MTKEther(RX_PORT3_UNTAGGED)
    assert p.src_port == 3
    assert p.type == 0x0800
    q = MTKEther(RX_PORT1_VLAN100)
    assert q.src_port == 1
    assert q.type == 0x8100
    assert q[Dot1Q].vlan == 100


def test_mtkether_tolerates_sa_dis_and_bit7() -> None:
    raw_bytes = DA + SA + bytes.fromhex("00c40000") + bytes.fromhex("0800") + IPV4_UDP
    p = MTKEther(raw_bytes)
    assert (p.unused, p.sa_dis, int(p.port_mask)) == (1, 1, 0x04)
    assert raw(p) == raw_bytes


def test_mtkether_tci_bits() -> None:
    # 802.1Q TCI: PCP 15:13, DEI 12, VID 11:0. 5 << 13 | 1 << 12 | 0xabc = 0xbabc.
    p = MTKEther(DA + SA + bytes.fromhex("0104babc0800") + IPV4_UDP)
    assert (p.pcp, p.dei, p.vid) == (5, 1, 0xABC)


def test_mtkether_builds_the_section_2_2_examples() -> None:
    untagged = MTKEther(dst=DA.hex(":"), src=SA.hex(":"), port_mask=1 << 2, type=0x0800) / Raw(
        IPV4_UDP
    )
    assert raw(untagged) == TX_PORT2_UNTAGGED
    vlan = MTKEther(
        dst=DA.hex(":"), src=SA.hex(":"), tpid_sel=1, port_mask="port2", vid=100, type=0x0800
    ) / Raw(IPV4_UDP)
    assert raw(vlan) == TX_PORT2_VLAN100
    rx = MTKEther(dst=DA.hex(":"), src=SA.hex(":"), port_mask=3, type=0x0800) / Raw(IPV4_UDP)
    assert raw(rx) == RX_PORT3_UNTAGGED


@pytest.mark.parametrize(
    "frame",
    [TX_PORT2_UNTAGGED, TX_PORT2_VLAN100, TX_PORT3_QINQ, RX_PORT3_UNTAGGED, RX_PORT1_VLAN100],
)
def test_mtkether_round_trip(frame: bytes) -> None:
    p = MTKEther(frame)
    assert raw(p) == frame
    assert raw(MTKEther(raw(p))) == raw(p)


def test_mtkether_round_trip_of_a_built_frame() -> None:
    p = MTKEther(dst=DA.hex(":"), src=SA.hex(":"), port_mask="port1+port4") / IP(
        src="192.0.2.1", dst="192.0.2.2"
    )
    assert raw(MTKEther(raw(p))) == raw(p)
    assert raw(p)[13] == 0b010010


def test_mtkether_conversions() -> None:
    assert raw(MTKEther.from_ether(Ether(VLAN100), 2)) == TX_PORT2_VLAN100
    assert raw(MTKEther.to_cpu(UNTAGGED, 3)) == RX_PORT3_UNTAGGED
    assert raw(MTKEther(TX_PORT3_QINQ).to_ether()) == QINQ
    assert raw(MTKEther(RX_PORT1_VLAN100).to_ether(rx=True)) == VLAN100
    assert isinstance(MTKEther(TX_PORT2_UNTAGGED).to_ether(), Ether)


# --- bindings -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer", "ethertype"),
    [(IP(), 0x0800), (IPv6(), 0x86DD), (ARP(), 0x0806), (Dot1Q(), 0x8100), (Dot1AD(), 0x88A8)],
)
def test_mtkether_binds_like_ether(layer: Packet, ethertype: int) -> None:
    p = MTKEther(dst=DA.hex(":"), src=SA.hex(":")) / layer
    assert raw(p)[16:18] == ethertype.to_bytes(2, "big")
    back = MTKEther(raw(p))
    assert back.type == ethertype
    assert type(back.payload) is type(layer)


def test_mtkether_unknown_type_is_raw() -> None:
    p = MTKEther(DA + SA + bytes.fromhex("00040000") + bytes.fromhex("1234") + b"xyz")
    assert isinstance(p.payload, Raw)
    assert p.load == b"xyz"


# --- truncated input --------------------------------------------------------------


def test_mtkether_truncated_inside_the_tci() -> None:
    short = TX_PORT2_VLAN100[:15]
    p = MTKEther(short)
    assert p.dst == "02:00:00:00:00:02"
    assert p.tpid_sel == 1
    assert int(p.port_mask) == 0x04
    assert p.missing_fields() == ["pcp", "dei", "vid", "type"]
    assert isinstance(p.payload, Raw)
    assert p.load == b"\x00"
    assert raw(p) == short


def test_mtkether_truncated_inside_the_mac() -> None:
    p = MTKEther(DA[:5])
    assert p.missing_fields() == [f.name for f in MTKEther.fields_desc]
    assert p.load == DA[:5]
    assert raw(p) == DA[:5]


def test_mtkether_complete_header_has_no_missing_fields() -> None:
    assert MTKEther(TX_PORT2_UNTAGGED[:18]).missing_fields() == []
    assert MTKEther().missing_fields() == []


@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=80))
def test_mtkether_any_bytes(data: bytes) -> None:
    p = MTKEther(data)
    assert raw(p) == data
    assert isinstance(p.summary(), str)
    assert isinstance(p.show(dump=True), str)


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


def test_qdma_fact_6_5_untagged_dsa_frame_to_port2() -> None:
    # Fact 6.5: no tag in the DMA buffer; SP_TAG 0x0004, CHAN 2, FPORT 1 (GDM1),
    # METER 0x7f, msg2 0xffff. Section 1.3: the driver moves the tag into msg0.
    d = airoha_dsa_xmit(mtk_tag_xmit(UNTAGGED, 2))
    assert isinstance(d, QDMADescriptor)
    assert raw(d.payload) == UNTAGGED
    assert (d.sp_tag, d.chan, d.queue, d.fport, d.meter, d.msg2) == (4, 2, 0, 1, 0x7F, 0xFFFF)
    wire = raw(d)
    assert wire[4:8] == len(UNTAGGED).to_bytes(4, "little")  # ctrl LEN, MORE clear
    assert wire[16:28] == bytes.fromhex("100001000000107fffff0000")


def test_qdma_tag_in_descriptor_for_vlan_frames() -> None:
    # Section 1.3: an 802.1Q/802.1ad frame gets its TPID back; SP_TAG is the mask.
    d = airoha_dsa_xmit(mtk_tag_xmit(QINQ, 3))
    assert raw(d.payload) == QINQ
    assert d.sp_tag == 0x08
    assert d.chan == 3
    v = airoha_dsa_xmit(mtk_tag_xmit(VLAN100, 1), queue=5)
    assert raw(v.payload) == VLAN100
    assert (v.sp_tag, v.chan, v.queue) == (0x02, 1, 5)


def test_qdma_channel_wraps_mod_4() -> None:
    # Section 1.3: channel = queue_mapping (the user port) mod 4.
    assert airoha_dsa_xmit(mtk_tag_xmit(UNTAGGED, 5)).chan == 1


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


# --- pcap link types ----------------------------------------------------------------


def _pcap_linktype(path: Path) -> int:
    # libpcap file header: the link type is the u32 at offset 20 (native order).
    header = path.read_bytes()[:24]
    magic = header[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    return int(struct.unpack(order + "I", header[20:24])[0])


def test_pcap_round_trip_mtkether(tmp_path: Path) -> None:
    path = tmp_path / "mtk.pcap"
    wrpcap(str(path), [MTKEther(TX_PORT2_VLAN100), MTKEther(RX_PORT3_UNTAGGED)])
    assert _pcap_linktype(path) == DLT_MTK_ETHER == 151
    back = rdpcap(str(path))
    assert [type(p) for p in back] == [MTKEther, MTKEther]
    assert raw(back[0]) == TX_PORT2_VLAN100
    assert back[1].src_port == 3


def test_pcap_round_trip_qdma(tmp_path: Path) -> None:
    path = tmp_path / "qdma.pcap"
    wrpcap(str(path), [QDMADescriptor(LAN2_DESC + UNTAGGED)])
    assert _pcap_linktype(path) == DLT_QDMA_DESC == 152
    back = rdpcap(str(path))
    assert type(back[0]) is QDMADescriptor
    assert raw(back[0]) == LAN2_DESC + UNTAGGED
    assert back[0][IP].dst == "192.0.2.2"


def test_pcap_rx_descriptor_comes_back_with_the_tx_layout(tmp_path: Path) -> None:
    path = tmp_path / "qdma-rx.pcap"
    rx = QDMARxDescriptor(sptag=3, sport=0x10) / Ether(UNTAGGED)
    wrpcap(str(path), [rx])
    assert _pcap_linktype(path) == DLT_QDMA_DESC
    back = rdpcap(str(path))[0]
    assert type(back) is QDMADescriptor
    assert raw(back) == raw(rx)
    assert back.as_rx().sptag == 3


def test_rx_tag_class_names_the_source_port(tmp_path: Path) -> None:
    from scapy.utils import rdpcap, wrpcap

    from esplab.layers.dsa import MTKEtherRx

    # airoha-dsa-xfrm.md 2.3: from port 3, untagged: DA SA 00 03 00 00 08 00 45 ...
    frame = bytes.fromhex("020000000002020000000001000300000800") + bytes(IP())
    pkt = MTKEtherRx(frame)
    assert pkt.src_port == 3 and pkt.reserved0 == 0 and pkt.reserved1 == 0
    assert pkt.type == 0x0800 and IP in pkt
    assert bytes(pkt) == frame
    # Linux reads only bits 2:0 of byte 13 and drops the 4 bytes (2.3).
    assert bytes(pkt.to_ether())[12:14] == b"\x08\x00"
    # The RX class has its own link type, so a pcap reads back into it.
    path = tmp_path / "rx.pcap"
    wrpcap(str(path), [pkt])
    back = rdpcap(str(path))[0]
    assert isinstance(back, MTKEtherRx) and back.src_port == 3


@given(st.binary(min_size=1, max_size=64))
def test_rx_tag_class_dissects_any_bytes(data: bytes) -> None:
    from esplab.layers.dsa import MTKEtherRx

    pkt = MTKEtherRx(data)
    assert bytes(pkt) == data


@pytest.mark.parametrize("port", [1, 2, 3, 4])
def test_descriptor_bytes_without_dissecting_equal_the_layer(port: int) -> None:
    # The walk's snapshot of eth0.dma is airoha_dsa_xmit_bytes: the same bytes as the
    # layer, for untagged, 802.1Q and 802.1ad frames (section 1.3 selectors) and sizes.
    for size in (0, 18, 46, 1500):
        for ethertype in (b"\x08\x00", b"\x81\x00\x00\x05\x08\x00", b"\x88\xa8\x00\x07\x08\x00"):
            body = bytes((size * 7 + i) & 0xFF for i in range(size))
            tagged = mtk_tag_xmit(DA + SA + ethertype + body, port)
            assert airoha_dsa_xmit_bytes(tagged) == bytes(airoha_dsa_xmit(tagged))


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


def test_xmit_bytes_carry_addr_and_next_id() -> None:
    tagged = mtk_tag_xmit(UNTAGGED, 2)
    got = airoha_dsa_xmit_bytes(tagged, addr=0x8B000040, next_id=1)
    assert got == raw(airoha_dsa_xmit(tagged, addr=0x8B000040, next_id=1))
    d = QDMADescriptor(got)
    assert (d.done, d.addr, d.next_id, d.sp_tag) == (0, 0x8B000040, 1, 4)
    # The cache keys on addr and next_id too.
    assert QDMADescriptor(airoha_dsa_xmit_bytes(tagged)).next_id == 0
