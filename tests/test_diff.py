"""Packet diff: known pairs field by field, ignore rules, byte ranges, field spans,
and the ESP-aware mode (padding-only and ICV-only differences)."""

from __future__ import annotations

from itertools import pairwise

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.ipsec import ESP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from esplab.diff import (
    EspLayout,
    FieldDiff,
    FieldSpan,
    IgnoreRules,
    byte_ranges,
    diff_packets,
    field_spans,
    find_esp,
    open_esp,
)
from esplab.layers import EIP93CommandDescriptor, ESPTrailer, MTKEther
from esplab.model.kernel.esp.core import EspSA, decrypt, encrypt

# The seed-000 SA (airoha-dsa-xfrm.md 5.5 (a)): hmac(sha1) + cbc(aes)-128, as in
# `ip xfrm state add ... spi 0x1000 auth sha1 0x0102...14 enc aes 0x0001...0f`.
AUTH_KEY = bytes.fromhex("0102030405060708090a0b0c0d0e0f1011121314")
ENC_KEY = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
# RFC 4106 keying: 16-byte AES key followed by the 4-byte salt.
GCM_KEY = bytes(range(16)) + bytes.fromhex("cafebabe")
IV = bytes(range(16))


def cbc_sa(spi: int = 0x1000) -> EspSA:
    return EspSA.build(spi, enc="cbc(aes)", enc_key=ENC_KEY, auth="hmac(sha1)", auth_key=AUTH_KEY)


def gcm_sa(spi: int = 0x2000) -> EspSA:
    return EspSA.build(spi, aead="rfc4106(gcm(aes))", aead_key=GCM_KEY)


def inner(dport: int = 5201) -> bytes:
    return bytes(
        IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=1234, dport=dport) / Raw(b"x" * 64)
    )


def esp_packet(
    sa: EspSA,
    data: bytes,
    *,
    seq: int = 5,
    iv: bytes = IV,
    padding: bytes | None = None,
    icv: bytes | None = None,
) -> IP:
    """Transport-mode ESP built by hand (RFC 4303 2), so the trailer can be bent."""
    payload = IP(data).payload
    body = bytes(payload)
    pad = padding if padding is not None else bytes(range(1, -(len(body) + 2) % sa.align + 1))
    plain = body + pad + bytes((len(pad), 17))
    head = sa.spi_bytes + seq.to_bytes(4, "big")
    if sa.aead is not None:
        sealed = sa.aead.seal(iv[: sa.iv_size], plain, head)
        esp = head + iv[: sa.iv_size] + sealed
        if icv is not None:
            esp = esp[: -len(icv)] + icv
    else:
        assert sa.enc is not None and sa.auth is not None
        esp = head + iv + sa.enc.encrypt(iv, plain)
        esp += icv if icv is not None else sa.auth.icv(esp)
    outer = IP(src="192.0.2.1", dst="192.0.2.2", proto=50)
    return IP(bytes(outer / Raw(esp)))


def flip_last(packet: Packet) -> IP:
    data = bytearray(bytes(packet))
    data[-1] ^= 0x01
    return IP(bytes(data))


# --------------------------------------------------------------------------- plain pairs


def test_identical_packets_give_no_rows() -> None:
    p = Ether() / IP(dst="192.0.2.2") / UDP(dport=9) / Raw(b"hi")
    assert diff_packets(p, p) == []
    assert diff_packets(p, Ether(bytes(p))) == []  # built against its own capture
    assert byte_ranges(bytes(p), bytes(p)) == []


def test_known_pair_field_by_field() -> None:
    left = IP(src="192.0.2.1", dst="192.0.2.2", ttl=64) / UDP(sport=1, dport=9)
    right = IP(src="192.0.2.1", dst="192.0.2.3", ttl=63) / UDP(sport=1, dport=9)
    rows = diff_packets(left, right)
    assert [(d.layer, d.field) for d in rows] == [
        ("IP", "ttl"),
        ("IP", "chksum"),
        ("IP", "dst"),
        ("UDP", "chksum"),
    ]
    ttl = rows[0]
    assert (ttl.left, ttl.right) == (64, 63)
    assert rows[2] == FieldDiff("IP", "dst", "192.0.2.2", "192.0.2.3")
    assert rows[1].row()[2:] == (
        f"{IP(bytes(left)).chksum:#06x}",
        f"{IP(bytes(right)).chksum:#06x}",
    )
    layer, name, a, b = rows[0]  # a record unpacks as (layer, field, left, right)
    assert (layer, name, a, b) == ("IP", "ttl", 64, 63)


def test_enum_and_flag_fields_show_as_scapy_shows_them() -> None:
    rows = diff_packets(IP(flags="DF") / TCP(flags="S"), IP(flags=0) / TCP(flags="SA"))
    shown = {(d.layer, d.field): d.row()[2:] for d in rows}
    assert shown[("IP", "flags")] == ("DF", "")
    assert shown[("TCP", "flags")] == ("S", "SA")


def test_ignore_field_layer_field_and_whole_layer() -> None:
    left = Ether() / IP(dst="192.0.2.2", ttl=64) / UDP(dport=9) / Raw(b"a")
    right = Ether(dst="02:00:00:00:00:01") / IP(dst="192.0.2.2", ttl=3) / UDP(dport=9) / Raw(b"b")
    everything = {(d.layer, d.field) for d in diff_packets(left, right)}
    assert everything == {
        ("Ether", "dst"),
        ("IP", "ttl"),
        ("IP", "chksum"),
        ("UDP", "chksum"),
        ("Raw", "load"),
    }
    rows = diff_packets(left, right, ignore=["TTL", "IP.chksum", "Raw", "ether.*"])
    assert [(d.layer, d.field) for d in rows] == [("UDP", "chksum")]
    assert diff_packets(left, right, ignore=["chksum", "ttl", "Ether", "load"]) == []


def test_ignore_rules_parse() -> None:
    rules = IgnoreRules(["TTL", "UDP.len", "Raw", "ESP.*", " "])
    assert rules("IP", "ttl") and rules("inner IP", "ttl")
    assert rules("UDP", "len") and not rules("IP", "len")
    assert rules.layer("Raw") and rules.layer("ESP") and not rules.layer("IP")


def test_layer_mismatch_and_missing_layer() -> None:
    udp, tcp = IP() / UDP(), IP() / TCP()
    rows = diff_packets(udp, tcp)
    assert rows[-1] == FieldDiff("UDP", "(layer)", "UDP", "TCP")
    short, long = IP(dst="192.0.2.2") / UDP(), IP(dst="192.0.2.2") / UDP() / Raw(b"x")
    rows = diff_packets(short, long)
    assert rows[-1] == FieldDiff("Raw", "(layer)", None, "Raw")


def test_repeated_layers_are_numbered() -> None:
    left = IP(dst="198.51.100.1") / IP(dst="192.0.2.2", ttl=5)
    right = IP(dst="198.51.100.1") / IP(dst="192.0.2.2", ttl=6)
    assert [(d.layer, d.field) for d in diff_packets(left, right)] == [
        ("IP[2]", "ttl"),
        ("IP[2]", "chksum"),
    ]  # the outer checksum covers its header only


# --------------------------------------------------------------------------- bytes


def test_byte_ranges_merge_runs_and_count_a_longer_tail() -> None:
    assert byte_ranges(b"abcdef", b"aXYdeZ") == [(1, 3), (5, 6)]
    assert byte_ranges(b"abc", b"abcde") == [(3, 5)]
    assert byte_ranges(b"abX", b"abYzz") == [(2, 5)]
    assert byte_ranges(b"abcdef", b"aXYdeZ", skip=[(1, 2)]) == [(2, 3), (5, 6)]
    assert byte_ranges(b"", b"") == []


# --------------------------------------------------------------------------- field spans


def test_field_spans_follow_scapy_offsets() -> None:
    p = Ether() / IP(dst="192.0.2.2") / UDP(dport=9) / Raw(b"hello")
    spans = {(s.layer, s.field): (s.start, s.end) for s in field_spans(p)}
    assert spans[("Ether", "dst")] == (0, 6)
    assert spans[("Ether", "type")] == (12, 14)
    assert spans[("IP", "version/ihl")] == (14, 15)  # two 4-bit fields share a byte
    assert spans[("IP", "flags/frag")] == (20, 22)
    assert spans[("IP", "ttl")] == (22, 23)
    assert spans[("IP", "dst")] == (30, 34)
    assert spans[("UDP", "dport")] == (36, 38)
    assert spans[("Raw", "load")] == (42, 47)
    covered = sorted((s.start, s.end) for s in field_spans(p))
    assert covered[0][0] == 0 and covered[-1][1] == len(p)
    assert all(a[1] == b[0] for a, b in pairwise(covered))


def test_field_spans_mtk_tag_and_little_endian_words() -> None:
    frame = MTKEther(bytes(MTKEther(port_mask=2, type=0x0800) / IP()))
    tag = [s for s in field_spans(frame) if s.role == "mtk-tag"]
    assert (tag[0].start, tag[-1].end) == (12, 16)  # the 4-byte special tag
    record = field_spans(EIP93CommandDescriptor())
    # Each 32-bit little-endian word of a descriptor is one span (its bits are scattered).
    assert [(s.start, s.end) for s in record][:2] == [(0, 4), (4, 8)]
    assert record[-1].end == 32


def test_field_spans_of_a_decoded_trailer() -> None:
    trailer = ESPTrailer.parse(b"data" + bytes([1, 2]) + bytes([2, 17]) + bytes(12), icv_len=12)
    roles = {s.field: (s.start, s.end, s.role) for s in field_spans(trailer)}
    assert roles["padding"] == (4, 6, "padding")
    assert roles["pad_len"] == (6, 7, "pad-len")
    assert roles["nh"] == (7, 8, "next-header")
    assert roles["icv"] == (8, 20, "icv")


def test_field_spans_of_esp_with_a_layout() -> None:
    sa = cbc_sa()
    p = esp_packet(sa, inner())
    offset, esp = find_esp(p) or (0, b"")
    opened = open_esp(sa, esp, offset)
    assert opened is not None and offset == 20
    spans = {s.field: s for s in field_spans(p, opened.layout)}
    assert (spans["spi"].start, spans["seq"].end) == (20, 28)
    assert (spans["iv"].start, spans["iv"].end, spans["iv"].role) == (28, 44, "iv")
    icv = spans["icv"]
    assert icv == FieldSpan("ESPTrailer", "icv", len(p) - 12, len(p), icv.depth, "icv")
    assert spans["nh"].start == len(p) - 13 and spans["pad_len"].start == len(p) - 14
    assert spans["padding"].end - spans["padding"].start == opened.pad_len
    assert EspLayout.from_data(opened.as_data()) == opened.layout
    assert EspLayout.from_data({"offset": "x"}) is None and EspLayout.from_data(None) is None


# --------------------------------------------------------------------------- ESP


def test_hand_built_esp_matches_the_esp_core() -> None:
    sa = cbc_sa()
    assert bytes(esp_packet(sa, inner())) == encrypt(cbc_sa(), inner(), seq=5, iv=IV)


def test_open_esp_reads_the_trailer_and_leaves_the_sa_alone() -> None:
    sa = EspSA.build(
        0x1000,
        enc="cbc(aes)",
        enc_key=ENC_KEY,
        auth="hmac(sha1)",
        auth_key=AUTH_KEY,
        replay_window=32,
    )
    wire = encrypt(cbc_sa(), inner(), seq=5, iv=IV)
    offset, esp = find_esp(IP(wire)) or (0, b"")
    for _ in range(2):  # the same packet twice: no replay state kept
        opened = open_esp(sa, esp, offset)
        assert opened is not None
        assert (opened.spi, opened.seq, opened.iv, opened.icv_ok) == (0x1000, 5, IV, True)
    assert sa.stats.packets == 0 and sa.replay.seq == 0
    reference = decrypt(cbc_sa(), wire)
    assert reference.ok and opened is not None
    assert (opened.padding, opened.pad_len, opened.next_header, opened.icv) == (
        reference.padding,
        reference.pad_len,
        reference.next_header,
        reference.icv,
    )
    assert open_esp(sa, esp[:20]) is None  # too short for IV, trailer and ICV


def test_esp_without_the_sa_compares_ciphertext() -> None:
    sa = cbc_sa()
    rows = diff_packets(esp_packet(sa, inner()), esp_packet(sa, inner(), padding=bytes(6)))
    assert [(d.layer, d.field) for d in rows] == [("ESP", "data")]


def test_esp_differing_only_in_padding() -> None:
    sa = cbc_sa()
    good = esp_packet(sa, inner())
    bent = esp_packet(sa, inner(), padding=bytes(6))  # zeros instead of 1, 2, ... 6
    rows = diff_packets(good, bent, sa=sa)
    # The ICV covers the ciphertext, so it differs too; the inner packet does not.
    assert [(d.layer, d.field) for d in rows] == [("ESPTrailer", "padding"), ("ESPTrailer", "icv")]
    assert rows[0].left == bytes(range(1, 7)) and rows[0].right == bytes(6)
    assert rows[0].row()[2:] == ("010203040506", "000000000000")


def test_esp_differing_only_in_icv() -> None:
    sa = cbc_sa()
    good = esp_packet(sa, inner())
    bad = flip_last(good)
    rows = diff_packets(good, bad, sa={0x1000: sa})
    assert [(d.layer, d.field) for d in rows] == [("ESPTrailer", "icv"), ("ESPTrailer", "icv_ok")]
    assert (rows[1].left, rows[1].right) == (True, False)
    assert rows[1].row()[2:] == ("verifies", "does not verify")
    assert rows[0].right[-1] == rows[0].left[-1] ^ 1


def test_aead_icv_difference_still_shows_the_trailer() -> None:
    sa = gcm_sa()
    good = esp_packet(sa, inner(), iv=bytes(8))
    bad = flip_last(good)
    offset, esp = find_esp(bad) or (0, b"")
    opened = open_esp(sa, esp, offset)
    assert opened is not None and not opened.icv_ok
    assert opened.padding == bytes(range(1, opened.pad_len + 1)) and opened.next_header == 17
    rows = diff_packets(good, bad, sa=sa)
    assert [(d.layer, d.field) for d in rows] == [("ESPTrailer", "icv"), ("ESPTrailer", "icv_ok")]


def test_esp_inner_layers_are_compared() -> None:
    sa = cbc_sa()
    rows = diff_packets(
        esp_packet(sa, inner(5201)), esp_packet(sa, inner(5202)), sa=sa, ignore=["icv"]
    )
    assert [(d.layer, d.field) for d in rows] == [("inner UDP", "dport"), ("inner UDP", "chksum")]
    assert (
        diff_packets(
            esp_packet(sa, inner(5201)), esp_packet(sa, inner(5202)), sa=sa, ignore=["icv", "UDP"]
        )
        == []
    )


def test_esp_seq_and_iv_differences() -> None:
    sa = cbc_sa()
    rows = diff_packets(
        esp_packet(sa, inner(), seq=5), esp_packet(sa, inner(), seq=6, iv=bytes(16)), sa=sa
    )
    assert [(d.layer, d.field) for d in rows] == [
        ("ESP", "seq"),
        ("ESP", "iv"),
        ("ESPTrailer", "icv"),
    ]


@pytest.mark.parametrize("other", [0x1000, 0x3000])
def test_sa_for_another_spi_is_not_used(other: int) -> None:
    sa = cbc_sa(other)
    rows = diff_packets(
        esp_packet(cbc_sa(), inner()), flip_last(esp_packet(cbc_sa(), inner())), sa=sa
    )
    expected = (
        [("ESPTrailer", "icv"), ("ESPTrailer", "icv_ok")] if other == 0x1000 else [("ESP", "data")]
    )
    assert [(d.layer, d.field) for d in rows] == expected
    assert isinstance(esp_packet(cbc_sa(), inner()).payload, ESP)
