"""MediaTek DSA tag, and the tag moved into the QDMA TX descriptor, bit-exact against
airoha-dsa-xfrm.md. The descriptor layers themselves are in test_qdma.py.

Section numbers refer to /work/shared/reference/airoha-dsa-xfrm.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.utils import rdpcap, wrpcap

from esplab.layers.dsa import (
    MTKEther,
    airoha_dsa_xmit,
    airoha_dsa_xmit_bytes,
    mtk_tag_from_cpu,
    mtk_tag_rcv,
    mtk_tag_to_cpu,
    mtk_tag_xmit,
)
from esplab.layers.linktypes import DLT_MTK_ETHER
from esplab.layers.qdma import QDMADescriptor
from tests.layers.frames import DA, IPV4_UDP, QINQ, SA, UNTAGGED, VLAN100, pcap_linktype

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


# --- the tag moves into the TX descriptor: section 1.3 ------------------------


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


@pytest.mark.parametrize("port", [1, 2, 3, 4])
def test_descriptor_bytes_without_dissecting_equal_the_layer(port: int) -> None:
    # The walk's snapshot of eth0.dma is airoha_dsa_xmit_bytes: the same bytes as the
    # layer, for untagged, 802.1Q and 802.1ad frames (section 1.3 selectors) and sizes.
    for size in (0, 18, 46, 1500):
        for ethertype in (b"\x08\x00", b"\x81\x00\x00\x05\x08\x00", b"\x88\xa8\x00\x07\x08\x00"):
            body = bytes((size * 7 + i) & 0xFF for i in range(size))
            tagged = mtk_tag_xmit(DA + SA + ethertype + body, port)
            assert airoha_dsa_xmit_bytes(tagged) == bytes(airoha_dsa_xmit(tagged))


def test_xmit_bytes_carry_addr_and_next_id() -> None:
    tagged = mtk_tag_xmit(UNTAGGED, 2)
    got = airoha_dsa_xmit_bytes(tagged, addr=0x8B000040, next_id=1)
    assert got == raw(airoha_dsa_xmit(tagged, addr=0x8B000040, next_id=1))
    d = QDMADescriptor(got)
    assert (d.done, d.addr, d.next_id, d.sp_tag) == (0, 0x8B000040, 1, 4)
    # The cache keys on addr and next_id too.
    assert QDMADescriptor(airoha_dsa_xmit_bytes(tagged)).next_id == 0


def test_tx_descriptor_len_counts_the_padding() -> None:
    # Section 1.3: LEN is the frame length with the tag removed. An ARP request padded
    # to 60 bytes dissects as 42 bytes of ARP and 18 of padding; LEN is still 60.
    frame = raw(Ether(dst=DA, src=SA) / ARP()) + bytes(18)
    tagged = mtk_tag_xmit(frame, 2)
    d = airoha_dsa_xmit(tagged)
    assert (d.len, len(raw(d)) - 32) == (60, 60)
    assert QDMADescriptor(airoha_dsa_xmit_bytes(tagged)).len == 60


def test_xmit_bytes_do_not_depend_on_an_earlier_frame_of_the_same_length() -> None:
    # A padded frame and an unpadded one of the same tag and length, in both orders:
    # each gets the layer's bytes (the old cache gave the second the first's LEN).
    padded = mtk_tag_xmit(raw(Ether(dst=DA, src=SA) / ARP()) + bytes(18), 4)
    full = mtk_tag_xmit(raw(Ether(dst=DA, src=SA) / IP(len=46) / Raw(bytes(26))), 4)
    assert len(padded) == len(full) == 64
    for first, second in ((padded, full), (full, padded)):
        for frame in (first, second):
            got = airoha_dsa_xmit_bytes(frame, addr=0x8B000080, next_id=3)
            assert got == raw(airoha_dsa_xmit(frame, addr=0x8B000080, next_id=3))
            assert QDMADescriptor(got).len == 60


@pytest.mark.parametrize("selector", [0, 1, 2, 3, 0x45, 0xFF])
def test_xmit_bytes_equal_the_layer_for_any_selector_and_padding(selector: int) -> None:
    # Section 1.3: selectors 1 and 2 give the TPID back, any other removes the 4 bytes;
    # frames of 60 to 1514 bytes, IP lengths short of the frame (padding) or not.
    for size in (60, 61, 64, 100, 577, 1500, 1514):
        for body in (
            Ether(dst=DA, src=SA) / IP(dst="192.0.2.9") / Raw(bytes(8)),
            Ether(dst=DA, src=SA) / IPv6(dst="2001:db8::9"),
            Ether(dst=DA, src=SA) / Dot1Q(vlan=7) / ARP(),
            Ether(dst=DA, src=SA, type=0x88B5),
        ):
            frame = raw(body)
            frame += bytes(range(256)) * 6
            tagged = mtk_tag_xmit(frame[:size], 1)
            tagged = tagged[:12] + bytes((selector,)) + tagged[13:]
            for addr, next_id in ((0, 0), (0x8B000040, 1)):
                want = raw(airoha_dsa_xmit(tagged, addr=addr, next_id=next_id))
                assert airoha_dsa_xmit_bytes(tagged, addr=addr, next_id=next_id) == want


# --- pcap link types ----------------------------------------------------------------


def test_pcap_round_trip_mtkether(tmp_path: Path) -> None:
    path = tmp_path / "mtk.pcap"
    wrpcap(str(path), [MTKEther(TX_PORT2_VLAN100), MTKEther(RX_PORT3_UNTAGGED)])
    assert pcap_linktype(path) == DLT_MTK_ETHER == 151
    back = rdpcap(str(path))
    assert [type(p) for p in back] == [MTKEther, MTKEther]
    assert raw(back[0]) == TX_PORT2_VLAN100
    assert back[1].src_port == 3


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
