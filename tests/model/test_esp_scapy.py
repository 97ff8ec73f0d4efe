"""The software ESP core against independent references: scapy's SecurityAssociation
(same SA, IV and sequence number give the same bytes, both ways) and published
known-answer packets (DPDK, Linux xfrm via scapy's tests, draft-mcgrew-gcm-test-01).
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP, IPOption_Router_Alert
from scapy.layers.inet6 import (
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.ipsec import ESP, SecurityAssociation
from scapy.packet import Packet, Raw

from esplab.model.kernel.esp.algos import AUTH_ALGOS, ENC_ALGOS
from esplab.model.kernel.esp.core import EspSA, UdpEncap, decrypt, encrypt
from esplab.model.kernel.esp.ip import checksum

DATA = json.loads((Path(__file__).parent / "data" / "esp_vectors.json").read_text())

# (kernel name, key bytes, scapy name)
ENCS = [
    ("cbc(aes)", 16, "AES-CBC"),
    ("cbc(aes)", 24, "AES-CBC"),
    ("cbc(aes)", 32, "AES-CBC"),
    ("cbc(des3_ede)", 24, "3DES"),
    ("cbc(des)", 8, "DES"),
    ("rfc3686(ctr(aes))", 20, "AES-CTR"),
    ("rfc3686(ctr(aes))", 28, "AES-CTR"),
    ("rfc3686(ctr(aes))", 36, "AES-CTR"),
    ("ecb(cipher_null)", 0, "NULL"),
]
# (kernel name, key bytes, truncation bits, scapy name); None: no integrity.
AUTHS = [
    ("hmac(md5)", 16, 96, "HMAC-MD5-96"),
    ("hmac(sha1)", 20, 96, "HMAC-SHA1-96"),
    ("hmac(sha256)", 32, 128, "SHA2-256-128"),
    ("hmac(sha384)", 48, 192, "SHA2-384-192"),
    ("hmac(sha512)", 64, 256, "SHA2-512-256"),
    (None, 0, 0, None),
]
# (mode, inner family, outer family)
LAYOUTS = [
    ("transport", 4, 4),
    ("transport", 6, 6),
    ("tunnel", 4, 4),
    ("tunnel", 6, 6),
    ("tunnel", 4, 6),
    ("tunnel", 6, 4),
]
OUTER = {4: ("198.51.100.1", "203.0.113.2"), 6: ("2001:db8:a::1", "2001:db8:b::2")}


def key(n: int, salt: int = 0) -> bytes:
    return bytes((i * 7 + salt + 1) & 0xFF for i in range(n))


FLOW = 0x12345


def inner(family: int, size: int) -> Packet:
    data = bytes((i * 13) & 0xFF for i in range(size))
    if family == 4:
        return (
            IP(src="192.0.2.10", dst="192.0.2.20", id=7, flags="DF")
            / UDP(sport=1234, dport=5678)
            / Raw(data)
        )
    return (
        IPv6(src="2001:db8::10", dst="2001:db8:1::20", fl=FLOW)
        / UDP(sport=1234, dport=5678)
        / Raw(data)
    )


class ScapySA:
    """scapy's SecurityAssociation, bytes out (its methods carry no annotations)."""

    def __init__(self, sa: SecurityAssociation) -> None:
        self.sa = sa

    def encrypt(self, p: Packet, **kw: Any) -> bytes:
        return bytes(self.sa.encrypt(p, **kw))

    def decrypt(self, p: Packet) -> bytes:
        return bytes(self.sa.decrypt(p))


def scapy_sa(
    spi: int,
    enc: tuple[str, int, str],
    auth: tuple[str | None, int, int, str | None],
    mode: str,
    outer: int,
    *,
    esn_hi: int | None = None,
    natt: bool = False,
    seq_num: int = 1,
    flow: int = 0,
) -> ScapySA:
    th = None
    if mode == "tunnel":
        # The kernel (and esplab) copy an IPv6 inner flow label to an IPv6 outer header.
        src, dst = OUTER[outer]
        th = IP(src=src, dst=dst) if outer == 4 else IPv6(src=src, dst=dst, fl=flow)
    sa = SecurityAssociation(
        ESP,
        spi=spi,
        seq_num=seq_num,
        crypt_algo=enc[2],
        crypt_key=key(enc[1]),
        auth_algo=auth[3],
        auth_key=key(auth[1], 100) if auth[3] else None,
        tunnel_header=th,
        nat_t_header=UDP(sport=4500, dport=4500) if natt else None,
        esn_en=esn_hi is not None,
        esn=esn_hi or 0,
    )
    return ScapySA(sa)


def our_sa(spi, enc, auth, mode, outer, *, esn=False, natt=False, **kw) -> EspSA:
    if mode == "tunnel":
        kw.update(tunnel_src=OUTER[outer][0], tunnel_dst=OUTER[outer][1])
    return EspSA.build(
        spi,
        mode=mode,
        enc=enc[0],
        enc_key=key(enc[1]),
        auth=auth[0],
        auth_key=key(auth[1], 100),
        auth_trunc=auth[2] or None,
        esn=esn,
        replay_window=64,
        encap=UdpEncap() if natt else None,
        df="clear",  # scapy's tunnel header: flags 0, id 1
        **kw,
    )


def zero_udp6_checksum(pkt: bytes, outer: int, mode: str) -> bytes:
    """Scapy leaves the NAT-T UDP checksum 0 over IPv6; the kernel fills it (esp6)."""
    off = 40 + 6
    assert outer == 6 and mode in ("tunnel", "transport")
    return pkt[:off] + b"\x00\x00" + pkt[off + 2 :]


def assert_udp6_checksum_valid(pkt: bytes) -> None:
    src, dst, seg = pkt[8:24], pkt[24:40], pkt[40:]
    pseudo = src + dst + len(seg).to_bytes(4, "big") + b"\x00\x00\x00\x11"
    assert checksum(pseudo + seg) == 0
    assert seg[6:8] != b"\x00\x00"


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-in{x[1]}-out{x[2]}")
@pytest.mark.parametrize("auth", AUTHS, ids=lambda a: a[0] or "noauth")
@pytest.mark.parametrize("enc", ENCS, ids=lambda e: f"{e[0]}-{e[1] * 8}")
def test_same_bytes_as_scapy(enc, auth, layout):
    mode, fin, fout = layout
    size = 20 + (ENCS.index(enc) * 7 + AUTHS.index(auth) * 3) % 40  # vary the padding
    p = inner(fin, size)
    sa = our_sa(0x1000 + size, enc, auth, mode, fout)
    iv = key(sa.iv_size, 50)
    # Scapy's tunnel header is IP() with its default id 1; Linux's outer id is hashed
    # (esplab.model.kernel.stack.ipident), so pin Scapy's to compare the bytes.
    mine = encrypt(sa, bytes(p), seq=42, iv=iv, ident=1)
    ssa = scapy_sa(0x1000 + size, enc, auth, mode, fout, flow=FLOW * (fin == 6))
    theirs = ssa.encrypt(p, seq_num=42, iv=iv)
    assert mine == theirs
    # Scapy decrypts ours (a fresh parse: its decrypt() modifies its input) ...
    cls = IP if (fout if mode == "tunnel" else fin) == 4 else IPv6
    assert ssa.decrypt(cls(mine)) == bytes(p)
    # ... and we decrypt ours.
    res = decrypt(sa, mine)
    assert res.ok, res.detail
    assert res.packet == bytes(p)
    assert res.seq == 42 and res.iv == iv


@pytest.mark.parametrize("icv_bits", [64, 96, 128])
@pytest.mark.parametrize("key_len", [20, 28, 36])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-in{x[1]}-out{x[2]}")
def test_gcm_same_bytes_as_scapy(key_len, icv_bits, layout):
    mode, fin, fout = layout
    p = inner(fin, 33)
    kw: dict[str, Any] = {}
    if mode == "tunnel":
        kw = {"tunnel_src": OUTER[fout][0], "tunnel_dst": OUTER[fout][1]}
    sa = EspSA.build(
        0x2222,
        mode=mode,
        aead="rfc4106(gcm(aes))",
        aead_key=key(key_len),
        aead_icv=icv_bits,
        replay_window=32,
        df="clear",
        **kw,
    )
    iv = key(8, 9)
    mine = encrypt(sa, bytes(p), seq=7, iv=iv, ident=1)  # Scapy's IP() id 1
    ssa = scapy_sa(
        0x2222, ("", key_len, "AES-GCM"), (None, 0, 0, None), mode, fout, flow=FLOW * (fin == 6)
    )
    theirs = ssa.encrypt(p, seq_num=7, iv=iv)
    if icv_bits == 128:
        assert mine == theirs
    else:
        # Scapy always appends a 16-byte tag; a shorter ICV is its leftmost part
        # (RFC 4106 8.1, SP 800-38D 5.2.1.2). Compare the ESP parts.
        cut = 16 - icv_bits // 8
        assert len(theirs) - len(mine) == cut
        esp_at = 40 if (fout if mode == "tunnel" else fin) == 6 else 20
        assert mine[esp_at:] == theirs[esp_at:-cut]
    res = decrypt(sa, mine)
    assert res.ok and res.packet == bytes(p)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-in{x[1]}-out{x[2]}")
@pytest.mark.parametrize("aead", [False, True])
def test_esn_same_bytes_as_scapy(aead, layout):
    # RFC 4303 2.2.1 / RFC 4106 5: the high half enters the ICV/AAD, not the wire.
    mode, fin, fout = layout
    p = inner(fin, 50)
    if aead:
        enc: tuple[str, int, str] = ("rfc4106(gcm(aes))", 20, "AES-GCM")
        auth: tuple[str | None, int, int, str | None] = (None, 0, 0, None)
        kw: dict[str, Any] = {}
        if mode == "tunnel":
            kw = {"tunnel_src": OUTER[fout][0], "tunnel_dst": OUTER[fout][1]}
        sa = EspSA.build(
            0x3333,
            mode=mode,
            aead=enc[0],
            aead_key=key(20),
            esn=True,
            replay_window=64,
            df="clear",
            **kw,
        )
    else:
        enc, auth = ENCS[0], AUTHS[1]
        sa = our_sa(0x3333, enc, auth, mode, fout, esn=True)
    for hi, lo in [(0, 5), (1, 0), (7, 0xFFFFFFFF), (0xFFFFFFFF, 3)]:
        iv = key(sa.iv_size, hi & 0xFF)
        mine = encrypt(sa, bytes(p), seq=hi << 32 | lo, iv=iv, ident=1)
        ssa = scapy_sa(0x3333, enc, auth, mode, fout, esn_hi=hi, seq_num=lo, flow=FLOW * (fin == 6))
        assert mine == ssa.encrypt(p, iv=iv)  # seq_num=0 would mean "the SA's"
        sa.replay.top, sa.replay.bitmap = (hi << 32 | lo) - 1, 0  # the receiver is in step
        res = decrypt(sa, mine)
        assert res.ok and res.seq == hi << 32 | lo and res.packet == bytes(p)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-in{x[1]}-out{x[2]}")
def test_nat_t_same_bytes_as_scapy(layout):
    mode, fin, fout = layout
    p = inner(fin, 40)
    enc, auth = ENCS[0], AUTHS[1]
    sa = our_sa(0x4444, enc, auth, mode, fout, natt=True)
    iv = key(16, 3)
    mine = encrypt(sa, bytes(p), seq=9, iv=iv, ident=1)  # Scapy's IP() id 1
    ssa = scapy_sa(0x4444, enc, auth, mode, fout, natt=True, flow=FLOW * (fin == 6))
    theirs = ssa.encrypt(p, seq_num=9, iv=iv)
    family = fout if mode == "tunnel" else fin
    if family == 4:
        assert mine == theirs
        assert mine[9] == 17 and mine[26:28] == b"\x00\x00"  # RFC 3948 2.1: checksum 0
    else:
        assert zero_udp6_checksum(mine, family, mode) == theirs
        assert_udp6_checksum_valid(mine)
    res = decrypt(sa, mine)
    assert res.ok and res.packet == bytes(p) and res.encap_ports == (4500, 4500)


def test_ipv4_options_kept_in_transport_mode():
    p = (
        IP(src="192.0.2.1", dst="192.0.2.2", options=[IPOption_Router_Alert()])
        / UDP()
        / Raw(b"options")
    )
    enc, auth = ENCS[0], AUTHS[2]
    sa = our_sa(0x5555, enc, auth, "transport", 4)
    mine = encrypt(sa, bytes(p), seq=3, iv=key(16))
    assert mine == bytes(
        scapy_sa(0x5555, enc, auth, "transport", 4).encrypt(p, seq_num=3, iv=key(16))
    )
    assert mine[0] == 0x46
    assert decrypt(sa, mine).packet == bytes(p)


V6_CHAINS = {
    "hbh": IPv6ExtHdrHopByHop(),
    "hbh-dst": IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt(),
    "hbh-rt-dst": IPv6ExtHdrHopByHop()
    / IPv6ExtHdrRouting(addresses=["2001:db8::99"], segleft=0)
    / IPv6ExtHdrDestOpt(),
    "dst-rt": IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting(addresses=["2001:db8::98"], segleft=0),
}


@pytest.mark.parametrize("chain", list(V6_CHAINS), ids=str)
def test_ipv6_extension_headers_as_scapy(chain):
    # Destination options before a routing header stay in front of ESP; after one,
    # they are encrypted (kernel ip6_find_1stfragopt; scapy split_for_transport).
    p = IPv6(src="2001:db8::1", dst="2001:db8::2") / V6_CHAINS[chain] / UDP() / Raw(b"v6" * 9)
    enc, auth = ENCS[0], AUTHS[1]
    sa = our_sa(0x6666, enc, auth, "transport", 6)
    mine = encrypt(sa, bytes(p), seq=1, iv=key(16))
    theirs = scapy_sa(0x6666, enc, auth, "transport", 6).encrypt(p, seq_num=1, iv=key(16))
    assert mine == theirs
    res = decrypt(sa, mine)
    assert res.ok and res.packet == bytes(p)


def test_ipv6_fragment_header_placement():
    p = (
        IPv6(src="2001:db8::1", dst="2001:db8::2")
        / IPv6ExtHdrHopByHop()
        / IPv6ExtHdrFragment(id=5)
        / UDP()
        / Raw(b"atomic fragment")
    )
    raw_p = bytes(p)
    enc, auth = ENCS[0], AUTHS[1]
    # Linux and scapy put ESP in front of the fragment header ...
    linux = our_sa(0x7777, enc, auth, "transport", 6, esp_after_v6_fragment=False)
    mine = encrypt(linux, raw_p, seq=1, iv=key(16))
    scapy_out = scapy_sa(0x7777, enc, auth, "transport", 6).encrypt(p, seq_num=1, iv=key(16))
    assert mine == scapy_out
    assert decrypt(linux, mine).packet == raw_p
    # ... the RFC 4303 3.1.1 figure (our default) after it.
    rfc = our_sa(0x7777, enc, auth, "transport", 6)
    out = encrypt(rfc, raw_p, seq=1, iv=key(16))
    # Hop-by-hop and fragment headers stay in the clear; the fragment header announces ESP.
    assert out[40:48] == raw_p[40:48] and out[49:56] == raw_p[49:56]
    assert (raw_p[48], out[48]) == (17, 50)
    assert decrypt(rfc, out).packet == raw_p


# --------------------------------------------------------------------------- vectors

SCAPY_ENC = {info.scapy_name: name for name, info in ENC_ALGOS.items()}
SCAPY_AUTH = {info.scapy_name: name for name, info in AUTH_ALGOS.items() if info.digest_bits}


def vector_sa(v: dict[str, Any]) -> tuple[EspSA, int | None]:
    """An SA for a published vector, with the outer header fields it shows."""
    ident = None
    kw: dict[str, Any] = {"tunnel_src": "192.0.2.1", "tunnel_dst": "192.0.2.2"}
    if v["esp_packet_includes_ip_header"]:
        outer = bytes.fromhex(v["outer_header_hex"])
        if outer[0] >> 4 == 4:
            src, dst, ttl = outer[12:16], outer[16:20], outer[8]
            ident = int.from_bytes(outer[4:6], "big")
            df = "set" if outer[6] & 0x40 else "clear"
        else:
            src, dst, ttl, df = outer[8:24], outer[24:40], outer[7], "copy"
        kw = {
            "tunnel_src": str(ipaddress.ip_address(src)),
            "tunnel_dst": str(ipaddress.ip_address(dst)),
            "ttl": ttl,
            "df": df,
        }
    esn = v["esn_high"] is not None
    if v["enc_alg"] == "AES-GCM":
        sa = EspSA.build(
            v["spi"],
            mode="tunnel",
            aead="rfc4106(gcm(aes))",
            aead_key=bytes.fromhex(v["enc_key"] + v["salt"]),
            aead_icv=v["icv_len"] * 8,
            esn=esn,
            replay_window=64,
            **kw,
        )
    else:
        auth = SCAPY_AUTH.get(v["auth_alg"])
        sa = EspSA.build(
            v["spi"],
            mode="tunnel",
            enc=SCAPY_ENC[v["enc_alg"]],
            enc_key=bytes.fromhex(v["enc_key"] + (v["salt"] or "")),
            auth=auth,
            auth_key=bytes.fromhex(v["auth_key"] or ""),
            auth_trunc=v["icv_len"] * 8 if auth else None,
            esn=esn,
            replay_window=64,
            **kw,
        )
    return sa, ident


@pytest.mark.parametrize("v", DATA["packets"], ids=lambda v: v["name"])
def test_published_packets(v):
    sa, ident = vector_sa(v)
    seq = (v["esn_high"] or 0) << 32 | v["seq"]
    plain = bytes.fromhex(v["plaintext_packet_hex"])
    out = encrypt(sa, plain, seq=seq, iv=bytes.fromhex(v["iv"]), ident=ident)
    wire = out if v["esp_packet_includes_ip_header"] else out[20:]
    assert wire.hex() == v["esp_packet_hex"]
    sa.replay.top = seq - 1
    res = decrypt(sa, out)
    assert res.ok, res.detail
    assert res.packet == plain
    assert res.next_header == v["next_header"]


@pytest.mark.parametrize("case", DATA["gcm"], ids=lambda c: f"mcgrew-{c['case']}")
def test_gcm_draft_packets_through_decrypt(case):
    # The ESP packets of draft-mcgrew-gcm-test-01 section 4 behind an IPv4 header.
    nonce, seq = bytes.fromhex(case["nonce"]), int(case["seq"], 16)
    esn = len(case["seq"]) == 16
    sa = EspSA.build(
        int(case["spi"], 16),
        aead="rfc4106(gcm(aes))",
        aead_key=bytes.fromhex(case["key"]) + nonce[:4],
        esn=esn,
        replay_window=32,
    )
    sa.replay.top = seq - 1 if seq else 0
    packet = bytes(
        IP(src="192.0.2.1", dst="192.0.2.2", proto=50) / Raw(bytes.fromhex(case["packet"]))
    )
    res = decrypt(sa, packet)
    plain = bytes.fromhex(case["plaintext"])
    pad_len = plain[-2]
    if pad_len + 2 >= len(plain):
        # The zero-length payload case: Linux calls it garbage (esp_remove_trailer).
        assert (res.reason, res.pad_len) == ("bad-padding", pad_len)
        return
    assert res.ok, res.detail
    assert res.seq == seq and res.iv == nonce[4:]
    assert res.next_header == plain[-1]
    assert res.padding == plain[-2 - pad_len : -2]
    assert res.packet[20:] == plain[: -2 - pad_len] and res.packet[9] == plain[-1]
