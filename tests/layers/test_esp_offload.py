"""ESP trailer (RFC 4303 section 2) and the XFRM offload metadata record."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP as ScapyESP
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from esplab.layers.esp_offload import ESP, ESPTrailer, XfrmOffload, esp_padding
from esplab.layers.linktypes import DLT_XFRM_OFFLOAD

# --- known bytes: published ESP packets whose payload is not encrypted ----------

# DPDK app/test/test_cryptodev_security_ipsec_test_vectors.h, pkt_null_aes_xcbc
# (NULL cipher, AES-XCBC-MAC-96, SPI 256, seq 1, tunnel mode), via
# esp_vector_sources/dpdk_and_scapy_vectors_normalized.json. ESP starts at byte 20.
XCBC_INNER = bytes.fromhex("4500002f49370000401122840d0000020200000208000800001b6d99") + b"X" * 19
XCBC_PACKET = (
    bytes.fromhex("4500005c060000004032136c0a006f020a00de020000010000000001")
    + XCBC_INNER
    + bytes.fromhex("0102030304f15264d19b6224ddcc14f5c1")
)
XCBC_ICV = bytes.fromhex("f15264d19b6224ddcc14f5c1")

# scapy test/scapy/layers/ipsec.uts, "IPv4 / ESP - Transport - AES-NULL-GMAC - NULL",
# a packet made by Linux xfrm (rfc4543(gcm(aes)), ICV 128 bits, flag align4), via the
# same JSON file: SPI 0x222, seq 22, 8-byte IV, then the plaintext payload.
GMAC_ESP = bytes.fromhex(
    "0000022200000016"
    "54706c6a9fbaa618"
    "45000054bc5300004001a9590a7d00010a7d00020000ad53a883000102e6096400000000d90a0600"
    "00000000101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f30313233"
    "34353637"
    "01020204"
    "9b763230f64992a88f6a20872c740c18"
)
GMAC_INNER = GMAC_ESP[16:-20]
GMAC_ICV = bytes.fromhex("9b763230f64992a88f6a20872c740c18")


def test_esp_is_scapys() -> None:
    assert ESP is ScapyESP


def test_dpdk_null_xcbc_trailer_dissects() -> None:
    # 47-byte inner packet + 3 padding + 2 = 52, a multiple of 4 (RFC 4303 2.4).
    esp = ESP(XCBC_PACKET[20:])
    assert esp.spi == 256
    assert esp.seq == 1
    t = ESPTrailer.parse(esp.data, icv_len=12)
    assert t.data == XCBC_INNER
    assert t.padding == b"\x01\x02\x03"
    assert t.pad_len == 3
    assert t.nh == 4
    assert t.icv == XCBC_ICV
    assert t.padding_ok()
    assert t.problems() == []
    assert t.inner()[IP].dst == "2.0.0.2"


def test_dpdk_null_xcbc_trailer_builds() -> None:
    built = ESPTrailer.with_icv_len(12)(data=XCBC_INNER, nh=4, icv=XCBC_ICV)
    assert raw(built) == XCBC_PACKET[28:]


def test_linux_gmac_trailer_dissects() -> None:
    # The IV is part of the payload data (RFC 4303 2.3); skip it to get the inner packet.
    t = ESPTrailer.parse(GMAC_ESP[16:])
    assert ESPTrailer.icv_len == 16
    assert t.data == GMAC_INNER
    assert (t.padding, t.pad_len, t.nh) == (b"\x01\x02", 2, 4)
    assert t.icv == GMAC_ICV
    assert t.problems() == []
    assert isinstance(t.inner()[IP].payload, ICMP)


def test_linux_gmac_trailer_builds_from_a_packet() -> None:
    # nh comes from the IP layer given as data; padding from the alignment of 4.
    built = ESPTrailer(data=IP(GMAC_INNER), icv=GMAC_ICV)
    assert raw(built) == GMAC_ESP[16:]


def test_icv_length_decides_the_dissection() -> None:
    # The same bytes read with a 16-byte ICV are a different (and broken) trailer.
    t = ESPTrailer.parse(XCBC_PACKET[28:], icv_len=16)
    assert t.icv == XCBC_PACKET[-16:]
    assert t.problems() != []


def test_with_icv_len_variants() -> None:
    e12 = ESPTrailer.with_icv_len(12)
    assert e12 is ESPTrailer.with_icv_len(12)
    assert issubclass(e12, ESPTrailer)
    assert (e12.icv_len, e12.align) == (12, 4)
    assert ESPTrailer.with_icv_len(16) is ESPTrailer
    e8a16 = ESPTrailer.with_icv_len(8, align=16)
    assert (e8a16.icv_len, e8a16.align) == (8, 16)
    assert isinstance(ESPTrailer.parse(b"\x00" * 20, icv_len=12), e12)
    with pytest.raises(ValueError, match="valid: 1-256"):
        ESPTrailer.with_icv_len(12, align=0)
    with pytest.raises(ValueError, match="valid: 0-64"):
        ESPTrailer.with_icv_len(-1)


# --- computed fields ------------------------------------------------------------


def test_defaults_are_computed() -> None:
    # 5 data bytes + 1 padding + 2 = 8; nh 59 for plain bytes (RFC 4303 2.6);
    # a 16-byte zero ICV placeholder.
    t = ESPTrailer(data=b"abcde")
    assert raw(t) == b"abcde" + b"\x01" + b"\x01" + b"\x3b" + bytes(16)


@pytest.mark.parametrize(
    ("data_len", "align", "padding"),
    [
        (0, 4, b"\x01\x02"),
        (2, 4, b""),
        (3, 4, b"\x01\x02\x03"),
        (14, 16, b""),
        (1, 16, bytes(range(1, 14))),
    ],
)
def test_default_padding_reaches_the_alignment(data_len: int, align: int, padding: bytes) -> None:
    cls = ESPTrailer.with_icv_len(0, align=align)
    wire = raw(cls(data=b"\xaa" * data_len))
    assert wire == b"\xaa" * data_len + padding + bytes((len(padding), 59))


@pytest.mark.parametrize(
    ("inner", "nh"),
    [(IP(), 4), (IPv6(), 41), (UDP(), 17), (ICMP(), 1)],
)
def test_nh_from_the_data_layer(inner: object, nh: int) -> None:
    assert raw(ESPTrailer.with_icv_len(0)(data=inner))[-1] == nh


def test_explicit_values_are_never_overridden() -> None:
    # Bad padding bytes, a lying pad_len, a wrong nh and a short ICV all build as given.
    t = ESPTrailer(data=b"ab", padding=b"\x07\x07", pad_len=9, nh=41, icv=b"\x01")
    assert raw(t) == b"ab" + b"\x07\x07" + b"\x09" + b"\x29" + b"\x01"
    assert raw(ESPTrailer(data=b"ab", icv=b""))[-2:] == b"\x00\x3b"


def test_pad_len_follows_explicit_padding_while_none() -> None:
    t = ESPTrailer.with_icv_len(0)(data=b"ab", padding=b"\xff\xff\xff")
    assert raw(t) == b"ab\xff\xff\xff\x03\x3b"


def test_padding_follows_the_alignment_even_with_explicit_pad_len() -> None:
    t = ESPTrailer.with_icv_len(0)(data=b"ab", pad_len=200)
    assert raw(t) == b"ab" + b"\xc8\x3b"


def test_esp_padding_helper() -> None:
    assert esp_padding(0) == b""
    assert esp_padding(5) == b"\x01\x02\x03\x04\x05"
    assert esp_padding(255)[-1] == 255
    with pytest.raises(ValueError, match="valid: 0-255"):
        esp_padding(256)


@pytest.mark.parametrize(("data", "nh"), [(b"\x45", 4), (b"\x60\x00", 41), (b"", 4)])
def test_inner_of_a_broken_packet_is_raw(data: bytes, nh: int) -> None:
    inner = ESPTrailer(data=data, nh=nh).inner()
    assert isinstance(inner, Raw)
    assert raw(inner) == data


# --- checks -----------------------------------------------------------------------


def test_problems_of_a_malformed_trailer() -> None:
    data = bytes(IP()) + b"\x00"  # 21 + 2 + 2 = 25 bytes: not aligned to 4
    t = ESPTrailer(data=data, padding=b"\x01\x01", pad_len=9, nh=41, icv=b"\x01")
    found = t.problems()
    assert not t.padding_ok()
    assert any("ICV length 1; expected 16" in msg for msg in found)
    assert any("pad_len 9 but 2 padding bytes" in msg for msg in found)
    assert any("0101 is not 1, 2, 3" in msg for msg in found)
    assert any("nh 41 announces IPv6 but the data has version 4" in msg for msg in found)
    assert any("not a multiple of 4" in msg for msg in found)


def test_pad_len_longer_than_the_buffer() -> None:
    # pad_len 200 with 3 bytes before it: all 3 are padding, no data, and a problem.
    wire = b"\x01\x02\x03" + b"\xc8" + b"\x04" + bytes(12)
    t = ESPTrailer.parse(wire, icv_len=12)
    assert t.data == b""
    assert t.padding == b"\x01\x02\x03"
    assert t.pad_len == 200
    assert t.nh == 4
    assert any("pad_len 200 but 3 padding bytes" in msg for msg in t.problems())
    assert raw(t) == wire


def test_bad_padding_bytes_are_reported() -> None:
    wire = b"\x00\x00" + b"\x01\x03" + b"\x02\x04" + bytes(12)
    t = ESPTrailer.parse(wire, icv_len=12)
    assert t.padding == b"\x01\x03"
    assert not t.padding_ok()
    assert any("0103 is not 1, 2, 3" in msg for msg in t.problems())


# --- round trip and truncation -------------------------------------------------


@pytest.mark.parametrize(
    "trailer",
    [
        ESPTrailer(data=b"hello world"),
        ESPTrailer.with_icv_len(12)(data=IP(dst="192.0.2.9") / UDP(), icv=b"\xee" * 12),
        ESPTrailer.with_icv_len(8, align=16)(data=b"x" * 30),
        ESPTrailer(data=b"ab", padding=b"\x09", pad_len=1, nh=0, icv=bytes(16)),
    ],
)
def test_round_trip(trailer: ESPTrailer) -> None:
    assert raw(type(trailer)(raw(trailer))) == raw(trailer)


@pytest.mark.parametrize("size", [0, 1, 11, 12, 13])
def test_truncated_input(size: int) -> None:
    # icv_len 12: 13 bytes hold an ICV and a next header but no pad length.
    wire = bytes(range(100, 100 + size))
    t = ESPTrailer.parse(wire, icv_len=12)
    assert raw(t) == wire
    assert t.icv == wire[-12:]
    assert t.data == b""
    assert any(msg.startswith(f"truncated: length {size}") for msg in t.problems())
    if size == 13:
        assert t.nh == 100
        assert t.pad_len is None


@settings(max_examples=300)
@given(
    data=st.binary(max_size=300),
    icv_len=st.integers(0, 32),
    align=st.sampled_from([1, 4, 8, 16]),
)
def test_any_bytes_dissect(data: bytes, icv_len: int, align: int) -> None:
    t = ESPTrailer.parse(data, icv_len=icv_len, align=align)
    assert raw(t) == data
    assert isinstance(t.problems(), list)
    t.padding_ok()
    t.inner()
    assert isinstance(t.summary(), str)
    assert isinstance(t.show(dump=True), str)


@given(data=st.binary(max_size=100), icv=st.binary(min_size=12, max_size=12))
def test_built_trailers_are_valid(data: bytes, icv: bytes) -> None:
    t = ESPTrailer.with_icv_len(12)(data=data, icv=icv)
    back = ESPTrailer.parse(raw(t), icv_len=12)
    assert back.data == data
    assert back.icv == icv
    assert back.problems() == []


# --- XfrmOffload --------------------------------------------------------------------

# Hand-assembled from the layout table in XfrmOffload's docstring (esplab's own format):
# magic "XO", version 1, datapath crypto (2), dir in (1), status auth-failed (1),
# proto IPv4 (4), reserved 0, errno -74 (-EBADMSG), SPI 0x00001000, seq 2^32 + 5 (ESN),
# len 28, dev "lan2".
XO_HEADER = bytes.fromhex(
    "584f010201010400ffffffb60000100000000001000000050000001c6c616e32000000000000000000000000"
)
# IPv4 192.0.2.1 -> 192.0.2.2, UDP 1000 -> 2000 (checksum 0xf6cc worked out by hand).
IPV4_UDP = bytes.fromhex("4500001c000100004011f6ccc0000201c000020203e807d000080000")


def test_xfrm_offload_dissects() -> None:
    p = XfrmOffload(XO_HEADER + IPV4_UDP)
    assert len(XO_HEADER) == 44
    assert p.magic == 0x584F
    assert p.version == 1
    assert p.datapath == 2
    assert p.sprintf("%datapath%") == "crypto"
    assert p.dir == 1
    assert p.sprintf("%dir%") == "in"
    assert p.status == 1
    assert p.sprintf("%status%") == "auth-failed"
    assert p.proto == 4
    assert p.reserved == 0
    assert p.errno == -74
    assert p.spi == 0x1000
    assert p.seq == (1 << 32) + 5
    assert (p.seq_hi, p.seq_lo) == (1, 5)
    assert p.len == 28
    assert p.dev == b"lan2"
    assert isinstance(p.payload, IP)
    assert p[UDP].dport == 2000


def test_xfrm_offload_builds() -> None:
    p = XfrmOffload(
        datapath="crypto",
        dir="in",
        status="auth-failed",
        errno=-74,
        spi=0x1000,
        seq=(1 << 32) + 5,
        dev="lan2",
    ) / IP(IPV4_UDP)
    assert raw(p) == XO_HEADER + IPV4_UDP


def test_xfrm_offload_enum_values() -> None:
    p = XfrmOffload(datapath="packet", dir="out", status="dropped")
    wire = raw(p)
    assert wire[3] == 3  # packet offload
    assert wire[4] == 2  # XFRM_DEV_OFFLOAD_OUT
    assert XfrmOffload(datapath="sw+aead").datapath == 1
    assert XfrmOffload(dir="fwd").dir == 3


@pytest.mark.parametrize(
    ("layer", "proto", "cls"),
    [(IP(IPV4_UDP), 4, IP), (IPv6(), 41, IPv6), (Raw(b"\x45junk"), 0, Raw)],
)
def test_xfrm_offload_binding(layer: object, proto: int, cls: type) -> None:
    p = XfrmOffload() / layer
    assert raw(p)[6] == proto
    back = XfrmOffload(raw(p))
    assert back.proto == proto
    assert type(back.payload) is cls


def test_xfrm_offload_unknown_proto_is_raw() -> None:
    wire = XO_HEADER[:6] + b"\x32" + XO_HEADER[7:] + IPV4_UDP
    assert isinstance(XfrmOffload(wire).payload, Raw)


def test_xfrm_offload_len_computed_only_while_none() -> None:
    assert raw(XfrmOffload() / Raw(b"x" * 300))[24:28] == (300).to_bytes(4, "big")
    assert raw(XfrmOffload())[24:28] == bytes(4)
    assert raw(XfrmOffload(len=7) / Raw(b"x" * 300))[24:28] == (7).to_bytes(4, "big")


def test_xfrm_offload_dev_is_nul_padded() -> None:
    assert raw(XfrmOffload(dev="eth0"))[28:44] == b"eth0" + bytes(12)
    full = "abcdefghijklmnop"  # 16 characters: no room for a NUL, kept as is
    assert raw(XfrmOffload(dev=full))[28:44] == full.encode()
    odd = b"eth0\x00junk" + bytes(7)
    assert raw(XfrmOffload(XO_HEADER[:28] + odd)) == XO_HEADER[:28] + odd


def test_xfrm_offload_round_trip() -> None:
    p = XfrmOffload(datapath=3, dir=2, spi=0xDEADBEEF, seq=42, dev="wan") / IPv6()
    assert raw(XfrmOffload(raw(p))) == raw(p)
    q = XfrmOffload(XO_HEADER + IPV4_UDP)
    assert raw(q) == XO_HEADER + IPV4_UDP


def test_xfrm_offload_truncated() -> None:
    p = XfrmOffload(XO_HEADER[:30])
    assert p.spi == 0x1000
    assert p.len == 28
    assert p.missing_fields() == ["dev"]
    assert p.load == XO_HEADER[28:30]
    assert raw(p) == XO_HEADER[:30]
    q = XfrmOffload(XO_HEADER[:3])
    assert (q.magic, q.version) == (0x584F, 1)
    assert q.missing_fields()[0] == "datapath"
    assert raw(q) == XO_HEADER[:3]
    r = XfrmOffload(XO_HEADER[:1])
    assert r.missing_fields()[0] == "magic"
    assert r.load == b"\x58"


@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=120))
def test_xfrm_offload_any_bytes(data: bytes) -> None:
    p = XfrmOffload(data)
    assert raw(p) == data
    assert isinstance(p.summary(), str)
    assert isinstance(p.show(dump=True), str)


def test_pcap_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "xo.pcap"
    wrpcap(str(path), [XfrmOffload(XO_HEADER + IPV4_UDP)])
    header = path.read_bytes()[:24]
    order = "<" if header[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    assert struct.unpack(order + "I", header[20:24])[0] == DLT_XFRM_OFFLOAD == 153
    back = rdpcap(str(path))
    assert type(back[0]) is XfrmOffload
    assert raw(back[0]) == XO_HEADER + IPV4_UDP
    assert back[0].dev == b"lan2"
