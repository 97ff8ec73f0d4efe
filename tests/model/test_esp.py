"""Software ESP core: round trips, sequence numbers, replay, failures and counters,
lifetimes, NAT-T, tunnel header rules and SA validation. The byte-for-byte
comparisons with scapy and published vectors are in test_esp_scapy.py.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw

from esplab.errors import DecodeError, IntegrityError, InvalidValue, KernelError
from esplab.model.kernel.esp.core import (
    DECRYPT_REASONS,
    EspSA,
    Lifetime,
    UdpEncap,
    decrypt,
    encrypt,
)
from esplab.model.kernel.esp.ip import checksum

SUITES: dict[str, dict[str, Any]] = {
    "aes-cbc-sha1": {
        "enc": "cbc(aes)",
        "enc_key": bytes(range(16)),
        "auth": "hmac(sha1)",
        "auth_key": bytes(range(20)),
    },
    "3des-sha256": {
        "enc": "cbc(des3_ede)",
        "enc_key": bytes(range(24)),
        "auth": "hmac(sha256)",
        "auth_key": bytes(32),
        "auth_trunc": 128,
    },
    "ctr-sha512": {
        "enc": "rfc3686(ctr(aes))",
        "enc_key": bytes(range(36)),
        "auth": "hmac(sha512)",
        "auth_key": bytes(64),
        "auth_trunc": 256,
    },
    "null-md5": {"enc": "ecb(cipher_null)", "auth": "hmac(md5)", "auth_key": bytes(16)},
    "aes-cbc-noauth": {"enc": "cbc(aes)", "enc_key": bytes(32)},
    "gcm-128": {"aead": "rfc4106(gcm(aes))", "aead_key": bytes(range(20))},
    "gcm-64": {"aead": "rfc4106(gcm(aes))", "aead_key": bytes(range(28)), "aead_icv": 64},
}
OUTER = {4: ("198.51.100.1", "203.0.113.2"), 6: ("2001:db8:a::1", "2001:db8:b::2")}


def make_sa(suite: str = "aes-cbc-sha1", mode: str = "transport", outer: int = 4, **kw) -> EspSA:
    if mode == "tunnel":
        kw.setdefault("tunnel_src", OUTER[outer][0])
        kw.setdefault("tunnel_dst", OUTER[outer][1])
    kw.setdefault("replay_window", 32)
    return EspSA.build(0xABCD, mode=mode, **SUITES[suite], **kw)


def v4(payload: bytes = b"hello esp", **kw) -> bytes:
    return bytes(IP(src="192.0.2.1", dst="192.0.2.2", **kw) / UDP(sport=7, dport=9) / Raw(payload))


def v6(payload: bytes = b"hello esp", **kw) -> bytes:
    return bytes(IPv6(src="2001:db8::1", dst="2001:db8::2", **kw) / UDP() / Raw(payload))


def craft(sa: EspSA, plain: bytes, seq: int = 1, iv: bytes | None = None) -> bytes:
    """An IPv4/ESP packet whose encrypted part is exactly ``plain`` (any trailer)."""
    iv = bytes(sa.iv_size) if iv is None else iv
    head = sa.spi_bytes + seq.to_bytes(4, "big")
    if sa.aead is not None:
        esp = head + iv + sa.aead.seal(iv, plain, head)
    else:
        assert sa.enc is not None
        esp = head + iv + sa.enc.encrypt(iv, plain)
        if sa.auth is not None:
            esp += sa.auth.icv(esp)
    return bytes(IP(src="192.0.2.1", dst="192.0.2.2", proto=50) / Raw(esp))


def fix_ipv4(packet: bytes) -> bytes:
    """Recompute the IPv4 header checksum after editing header bytes."""
    ihl = (packet[0] & 15) * 4
    h = packet[:10] + b"\x00\x00" + packet[12:ihl]
    return h[:10] + checksum(h).to_bytes(2, "big") + h[12:] + packet[ihl:]


# --------------------------------------------------------------------------- round trips

inner_packets = st.one_of(
    st.binary(max_size=1400).map(v4),
    st.binary(max_size=1400).map(v6),
    # Any upper protocol but 59, which marks a dummy packet (see test_dummy_packet).
    st.tuples(st.binary(max_size=200), st.integers(0, 255).filter(lambda n: n != 59)).map(
        lambda t: bytes(IP(src="10.0.0.1", dst="10.0.0.2", proto=t[1], tos=t[1]) / Raw(t[0]))
    ),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    packets=st.lists(inner_packets, min_size=1, max_size=6),
    suite=st.sampled_from(sorted(SUITES)),
    mode=st.sampled_from(["transport", "tunnel"]),
    outer=st.sampled_from([4, 6]),
    esn=st.booleans(),
    natt=st.booleans(),
    start=st.sampled_from([0, 0xFFFFFFFD, 0x1_2345_6780]),
)
def test_decrypt_inverts_encrypt(packets, suite, mode, outer, esn, natt, start):
    if not esn:
        start &= 0xFFFF
    kw = {"esn": esn, "encap": UdpEncap(4500, 4501) if natt else None}
    tx = make_sa(suite, mode, outer, oseq=start, **kw)
    rx = make_sa(suite, mode, outer, **kw)
    rx.replay.top = start
    empty = 0
    for n, p in enumerate(packets, 1):
        wire = encrypt(tx, p)
        res = decrypt(rx, wire)
        assert res.seq == start + n
        if mode == "transport" and len(p) == 20:  # an IPv4 header with nothing after it
            # No payload at all: the kernel's receiver calls that garbage.
            assert res.reason == "bad-padding"
            empty += 1
            continue
        assert res.ok, res.detail
        assert res.packet == p
        assert res.padding_ok and res.reason is None and res.mib is None
    assert tx.stats.packets == rx.stats.packets + empty == len(packets)


def test_padding_aligns_payload_and_trailer():
    # RFC 4303 2.4: payload + pad + 2 is a multiple of max(block size, 4).
    for suite, align in (
        ("aes-cbc-sha1", 16),
        ("3des-sha256", 8),
        ("gcm-128", 4),
        ("ctr-sha512", 4),
        ("null-md5", 4),
    ):
        sa = make_sa(suite, "tunnel", replay_window=0)
        for size in range(20, 60):
            p = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / Raw(bytes(size - 20)))
            res = decrypt(sa, encrypt(sa, p))
            assert (size + (res.pad_len or 0) + 2) % align == 0
            assert res.pad_len is not None and res.pad_len < align
            assert res.padding == bytes(range(1, res.pad_len + 1))


def test_first_packet_is_one_and_explicit_seq_leaves_the_counter():
    sa = make_sa()
    assert decrypt(make_sa(), encrypt(sa, v4())).seq == 1
    encrypt(sa, v4(), seq=1000)
    assert sa.oseq == 1
    assert int.from_bytes(encrypt(sa, v4())[24:28], "big") == 2


def test_a_bytearray_packet_is_taken_as_its_bytes():
    # Outside the typed API, but what a Scapy user may hand in: the header fixes
    # remember their results by value, and a mutable buffer still works.
    a, b = make_sa(), make_sa()
    sealed = encrypt(a, bytearray(v4()))  # type: ignore[arg-type]
    assert sealed == encrypt(b, v4())
    assert decrypt(make_sa(), bytearray(sealed)).ok  # type: ignore[arg-type]


def test_iv_sources_are_deterministic():
    a, b = make_sa(), make_sa()
    assert encrypt(a, v4()) == encrypt(b, v4())
    seeded = make_sa(iv_source=random.Random(7).randbytes)
    out = encrypt(seeded, v4())
    assert out[28:44] == random.Random(7).randbytes(16)
    with pytest.raises(InvalidValue, match="IV of 8 bytes"):
        encrypt(a, v4(), iv=bytes(8))
    assert a.oseq == a.stats.packets == 1  # refused before anything was counted


# --------------------------------------------------------------------------- sequence numbers


def test_exhaustion_without_esn_is_counted_not_wrapped():
    sa = make_sa(oseq=0xFFFFFFFE)
    wire = encrypt(sa, v4())
    assert wire[24:28] == b"\xff\xff\xff\xff"
    for n in (1, 2):
        with pytest.raises(KernelError) as exc:
            encrypt(sa, v4())
        assert exc.value.errno_name == "EOVERFLOW"
        assert "XfrmOutStateSeqError" in str(exc.value)
        assert sa.stats.seq_overflow == n
        assert sa.oseq == 0xFFFFFFFF
    assert sa.stats.mib()["XfrmOutStateSeqError"] == 2
    assert sa.stats.packets == 1
    with pytest.raises(InvalidValue, match="sequence number 0x100000000"):
        encrypt(sa, v4(), seq=1 << 32)  # where scapy raises struct.error


def test_esn_rollover_encrypt_and_decrypt():
    tx = make_sa("aes-cbc-sha1", "tunnel", esn=True, oseq=0xFFFFFFFD)
    rx = make_sa("aes-cbc-sha1", "tunnel", esn=True)
    rx.replay.top = 0xFFFFFFFD
    seqs = []
    for _ in range(5):
        wire = encrypt(tx, v4())
        res = decrypt(rx, wire)
        assert res.ok, res.detail
        seqs.append((int.from_bytes(wire[24:28], "big"), res.seq))
    assert seqs == [
        (0xFFFFFFFE, 0xFFFFFFFE),
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0, 1 << 32),
        (1, (1 << 32) + 1),
        (2, (1 << 32) + 2),
    ]
    assert tx.oseq == (1 << 32) + 2 and (rx.replay.seq_hi, rx.replay.seq) == (1, 2)


def test_esn_high_bits_are_authenticated():
    tx = make_sa("gcm-128", esn=True, oseq=(5 << 32) + 10)
    rx = make_sa("gcm-128", esn=True)
    rx.replay.top = (4 << 32) + 10  # the receiver believes in round 4
    res = decrypt(rx, encrypt(tx, v4()))
    assert res.reason == "auth-failed"


def test_esn_exhaustion():
    sa = make_sa("gcm-128", esn=True, oseq=(1 << 64) - 2)
    encrypt(sa, v4())
    with pytest.raises(KernelError, match="Value too large"):
        encrypt(sa, v4())
    assert sa.stats.seq_overflow == 1


# --------------------------------------------------------------------------- replay


def test_replay_duplicate_too_old_and_zero_are_counted():
    tx, rx = make_sa(), make_sa(replay_window=8)
    wires = [encrypt(tx, v4()) for _ in range(20)]
    assert decrypt(rx, wires[0]).ok
    dup = decrypt(rx, wires[0])
    assert (dup.reason, dup.mib, dup.seq) == ("replay", "XfrmInStateSeqError", 1)
    assert decrypt(rx, wires[19]).ok
    old = decrypt(rx, wires[5])  # seq 6, top 20, window 8
    assert (old.reason, old.mib) == ("too-old", "XfrmInStateSeqError")
    assert decrypt(rx, wires[15]).ok  # out of order inside the window
    zero = decrypt(rx, encrypt(tx, v4(), seq=0))
    assert zero.reason == "seq-zero"
    st_ = rx.stats
    assert (st_.replay, st_.replay_window, st_.in_seq_error) == (1, 1, 3)
    assert st_.packets == 3


def test_window_zero_accepts_everything():
    tx, rx = make_sa(), make_sa(replay_window=0)
    wire = encrypt(tx, v4())
    assert decrypt(rx, wire).ok and decrypt(rx, wire).ok
    assert decrypt(rx, encrypt(tx, v4(), seq=0)).ok


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("suite", ["aes-cbc-sha1", "ctr-sha512", "gcm-128", "gcm-64"])
def test_flipped_icv_byte(suite):
    tx, rx = make_sa(suite), make_sa(suite)
    wire = encrypt(tx, v4())
    bad = wire[:-1] + bytes((wire[-1] ^ 0x80,))
    keep = bytes(bad)
    res = decrypt(rx, bad)
    assert (res.ok, res.reason, res.mib) == (False, "auth-failed", "XfrmInStateProtoError")
    assert bad == keep and res.packet == b""
    assert (rx.stats.integrity_failed, rx.stats.in_proto_error) == (1, 1)
    with pytest.raises(IntegrityError, match="ICV does not verify"):
        decrypt(rx, bad, strict=True)
    assert rx.stats.integrity_failed == 2
    # The window did not move: the genuine packet still passes.
    assert decrypt(rx, wire).ok


@pytest.mark.parametrize("where", [4, 6, 8, 30, -13, -1], ids=str)
def test_any_flipped_byte_fails_authentication(where):
    # Sequence number, IV, ciphertext, ICV: all covered by the ICV (RFC 4303 2.8).
    tx, rx = make_sa(), make_sa()
    wire = bytearray(encrypt(tx, v4()))
    wire[20 + where if where > 0 else where] ^= 1
    assert decrypt(rx, bytes(wire)).reason == "auth-failed"


def test_wrong_spi():
    res = decrypt(make_sa(), encrypt(EspSA.build(0x99, **SUITES["aes-cbc-sha1"]), v4()))
    assert (res.reason, res.spi, res.mib) == ("wrong-spi", 0x99, None)


def test_bad_pad_length():
    sa = make_sa()
    # 16 bytes: pad length 15 + 2 leaves no payload (kernel esp_remove_trailer).
    res = decrypt(sa, craft(sa, b"\x01" * 14 + bytes((15, 4))))
    assert (res.reason, res.pad_len, res.mib) == ("bad-padding", 15, "XfrmInStateProtoError")
    assert sa.stats.in_proto_error == 1 and sa.stats.packets == 0


def test_non_monotonic_padding_is_reported_and_optionally_refused():
    inner = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / Raw(b"x" * 8))  # 28 bytes
    plain = inner + b"\x00\x00" + bytes((2, 4))  # zero padding, 32 bytes
    lax = make_sa(mode="tunnel")
    res = decrypt(lax, craft(lax, plain))
    assert res.ok and res.packet == inner
    assert (res.padding, res.padding_ok) == (b"\x00\x00", False)
    strict = make_sa(mode="tunnel", strict_padding=True)
    res = decrypt(strict, craft(strict, plain))
    assert (res.reason, res.padding_ok) == ("bad-padding", False)


def test_ciphertext_not_whole_blocks():
    sa = make_sa()
    head = sa.spi_bytes + (1).to_bytes(4, "big")
    esp = head + bytes(16) + bytes(17)
    assert sa.auth is not None
    esp += sa.auth.icv(esp)
    res = decrypt(sa, bytes(IP(proto=50) / Raw(esp)))
    assert (res.reason, res.mib) == ("bad-length", "XfrmInStateProtoError")


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_truncated_packets_give_clean_results(suite):
    tx = make_sa(suite)
    wire = encrypt(tx, v4(b"truncate me" * 5))
    esp = wire[20:]
    for cut in range(len(esp)):
        rx = make_sa(suite)
        res = decrypt(rx, bytes(IP(src="192.0.2.1", dst="192.0.2.2", proto=50) / Raw(esp[:cut])))
        assert not res.ok
        assert res.reason in ("truncated", "auth-failed", "bad-length", "bad-padding")
        if cut < 8:
            assert (res.reason, res.mib) == ("truncated", "XfrmInHdrError")
    for cut in range(len(wire)):  # the IP header says more than there is
        assert decrypt(make_sa(suite), wire[:cut]).reason == "malformed"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([b"", bytes(IP(proto=50)), bytes(IPv6(nh=50))]))
def test_garbage_never_raises(data, prefix):
    packet = prefix + data
    if prefix[:1] == b"\x45":
        packet = fix_ipv4(packet[:2] + len(packet).to_bytes(2, "big") + packet[4:])
    elif prefix:
        packet = packet[:4] + len(data).to_bytes(2, "big") + packet[6:]
    for suite in ("aes-cbc-sha1", "gcm-128", "null-md5"):
        for mode in ("transport", "tunnel"):
            res = decrypt(make_sa(suite, mode), packet)
            assert res.reason in DECRYPT_REASONS or res.ok


def test_not_esp_fragment_and_malformed():
    sa = make_sa()
    assert decrypt(sa, bytes(IP() / ICMP())).reason == "not-esp"
    assert decrypt(sa, bytes(IP(flags="MF", proto=50) / Raw(bytes(40)))).reason == "fragment"
    assert decrypt(sa, b"").reason == "malformed"
    assert decrypt(sa, b"\x55" * 40).reason == "malformed"


def test_tunnel_payload_must_be_ip():
    # A transport-mode packet (next header 17) reaching a tunnel-mode SA.
    tx, rx = make_sa(), make_sa(mode="tunnel")
    res = decrypt(rx, encrypt(tx, v4()))
    assert (res.reason, res.mib, res.next_header) == ("mode-error", "XfrmInStateModeError", 17)
    assert rx.stats.in_mode_error == 1 and rx.replay.top == 1


def test_dummy_packet():
    sa = make_sa()
    res = decrypt(sa, craft(sa, b"tfc-dummy" + bytes(range(1, 6)) + bytes((5, 59))))
    assert (res.reason, res.mib, res.next_header) == ("dummy", None, 59)
    assert sa.replay.top == 1 and sa.stats.packets == 1


def test_transport_fragment_and_non_ip_input_are_refused():
    sa = make_sa()
    with pytest.raises(InvalidValue, match="fragment"):
        encrypt(sa, bytes(IP(flags="MF") / Raw(b"x" * 16)))
    with pytest.raises(DecodeError):
        encrypt(sa, b"\x00" * 30)
    with pytest.raises(DecodeError):
        encrypt(sa, v4()[:-1])  # shorter than its total length
    assert sa.stats.packets == 0 and sa.oseq == 0
    assert encrypt(make_sa(mode="tunnel"), bytes(IP(flags="MF") / Raw(b"x" * 16)))


def test_oversize_results_are_refused_before_counting():
    for mode, outer in (("transport", 4), ("tunnel", 4), ("tunnel", 6)):
        sa = make_sa(mode=mode, outer=outer)
        fits = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / Raw(bytes(65535 - 20 - 100)))
        assert len(encrypt(sa, fits)) <= 0xFFFF + 40
        with pytest.raises(KernelError, match="do not fit") as exc:
            encrypt(sa, bytes(IP() / Raw(bytes(65535 - 20))))
        assert exc.value.errno_name == "EMSGSIZE"
        assert sa.oseq == sa.stats.packets == 1


# --------------------------------------------------------------------------- lifetimes


def test_output_lifetime():
    sa = make_sa(lifetime=Lifetime(soft_packets=2, hard_packets=3))
    encrypt(sa, v4())
    encrypt(sa, v4())
    assert not sa.stats.soft_expired
    encrypt(sa, v4())
    assert sa.stats.soft_expired
    with pytest.raises(KernelError, match="XfrmOutStateExpired"):
        encrypt(sa, v4())
    assert (sa.stats.out_expired, sa.stats.hard_expired, sa.oseq) == (1, True, 3)


def test_lifetime_counts_protected_bytes():
    tunnel = make_sa(mode="tunnel", lifetime=Lifetime(hard_bytes=100))
    encrypt(tunnel, bytes(IP() / Raw(bytes(80))))  # 100-byte inner packet
    assert tunnel.stats.bytes == 100
    with pytest.raises(KernelError):
        encrypt(tunnel, v4())
    transport = make_sa()
    encrypt(transport, v4(bytes(10)))
    assert transport.stats.bytes == 18  # UDP header + payload


def test_input_lifetime():
    tx = make_sa()
    rx = make_sa(lifetime=Lifetime(soft_packets=1, hard_packets=2))
    results = [decrypt(rx, encrypt(tx, v4())) for _ in range(4)]
    assert [r.ok for r in results] == [True, True, False, False]
    assert [r.soft_expired for r in results] == [False, True, False, False]
    assert results[2].reason == "expired" and results[2].mib == "XfrmInStateExpired"
    assert rx.stats.in_expired == 2


# --------------------------------------------------------------------------- NAT-T


def test_nat_t_markers_and_mismatch():
    natt = make_sa(encap=UdpEncap())
    plain = make_sa()
    udp = IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=4500, dport=4500, chksum=0)
    assert decrypt(natt, bytes(udp / Raw(b"\xff"))).reason == "keepalive"
    assert decrypt(natt, bytes(udp / Raw(bytes(4) + b"ike"))).reason == "non-esp"
    res = decrypt(natt, encrypt(plain, v4()))
    assert (res.reason, res.mib) == ("encap-mismatch", "XfrmInStateMismatch")
    res = decrypt(plain, encrypt(make_sa(encap=UdpEncap(1000, 2000)), v4()))
    assert (res.reason, res.encap_ports) == ("encap-mismatch", (1000, 2000))
    assert natt.stats.in_mismatch == plain.stats.in_mismatch == 1


def test_nat_t_layout():
    sa = make_sa(encap=UdpEncap(4500, 4501))
    wire = encrypt(sa, v4())
    assert wire[9] == 17
    assert (
        wire[20:28]
        == (4500).to_bytes(2, "big")
        + (4501).to_bytes(2, "big")
        + (len(wire) - 20).to_bytes(2, "big")
        + b"\x00\x00"
    )
    assert wire[28:32] == sa.spi_bytes
    with pytest.raises(InvalidValue):
        UdpEncap(0, 4500)


# --------------------------------------------------------------------------- tunnel headers


def test_outer_ipv4_df_ident_and_ttl():
    inner_df = v4(flags="DF")
    copy = make_sa(mode="tunnel", ttl=17)
    out = encrypt(copy, inner_df)
    # A local UDP packet's skb has ignore_df: DF, and a hashed identification (an
    # ip_select_ident without socket, include/net/ip.h); a forwarded one with DF: 0.
    assert (out[6] & 0x40, out[8]) == (0x40, 17) and out[4:6] != b"\x00\x00"
    assert encrypt(copy, inner_df, ignore_df=False)[4:6] == b"\x00\x00"
    clear = make_sa(mode="tunnel", df="clear")
    ids = [int.from_bytes(encrypt(clear, inner_df)[4:6], "big") for _ in range(3)]
    # one (daddr, saddr, protocol) bucket: consecutive numbers from its random start
    assert ids[1] == (ids[0] + 1) & 0xFFFF and ids[2] == (ids[0] + 2) & 0xFFFF
    assert encrypt(clear, inner_df)[6] & 0x40 == 0
    assert encrypt(make_sa(mode="tunnel", df="set"), v4())[6] & 0x40
    given_ = make_sa(mode="tunnel", ident_source=lambda: 0x1234)
    assert encrypt(given_, inner_df)[4:6] == b"\x12\x34"
    assert encrypt(clear, inner_df, ident=0xBEEF)[4:6] == b"\xbe\xef"
    assert checksum(out[:20]) == 0


def test_ipv6_inner_df_follows_its_size():
    sa = make_sa(mode="tunnel")
    assert encrypt(sa, v6(bytes(100)))[6] & 0x40 == 0
    assert encrypt(sa, v6(bytes(1300)))[6] & 0x40


def test_ds_field_and_flow_label():
    sa = make_sa(mode="tunnel")
    # DSCP EF (0xb8) copied; inner CE becomes ECT(0) outside (RFC 6040 4.1).
    assert encrypt(sa, v4(tos=0xB8 | 3))[1] == 0xB8 | 2
    assert encrypt(sa, v4(tos=0xB8 | 1))[1] == 0xB8 | 1
    assert encrypt(make_sa(mode="tunnel", encap_dscp=False), v4(tos=0xB8 | 1))[1] == 1
    assert encrypt(make_sa(mode="tunnel", noecn=True), v4(tos=0xB8 | 1))[1] == 0xB8
    out6 = encrypt(make_sa(mode="tunnel", outer=6, ttl=9), v6(tc=0x28, fl=0xABCDE))
    assert out6[:4] == bytes.fromhex("628abcde") and out6[7] == 9


def test_outer_ce_reaches_the_inner_packet():
    tx = make_sa(mode="tunnel")
    wire = encrypt(tx, v4(tos=0x02))  # inner ECT(0)
    ce = fix_ipv4(wire[:1] + bytes((wire[1] | 3,)) + wire[2:])
    res = decrypt(make_sa(mode="tunnel"), ce)
    assert res.packet[1] == 0x03 and checksum(res.packet[:20]) == 0
    assert decrypt(make_sa(mode="tunnel", noecn=True), ce).packet[1] == 0x02
    plain = encrypt(tx, v4(tos=0))  # not-ECT: left alone
    ce = fix_ipv4(plain[:1] + bytes((plain[1] | 3,)) + plain[2:])
    assert decrypt(make_sa(mode="tunnel"), ce).packet == v4(tos=0)
    dscp = fix_ipv4(plain[:1] + b"\xb8" + plain[2:])
    assert decrypt(make_sa(mode="tunnel", decap_dscp=True), dscp).packet[1] == 0xB8


# --------------------------------------------------------------------------- SA checks


def test_sa_validation():
    with pytest.raises(InvalidValue, match="needs an encryption algorithm"):
        EspSA(1)
    with pytest.raises(InvalidValue, match="takes no enc or auth"):
        EspSA.build(
            1, enc="cbc(aes)", enc_key=bytes(16), aead="rfc4106(gcm(aes))", aead_key=bytes(20)
        )
    with pytest.raises(InvalidValue, match="tunnel mode needs"):
        EspSA.build(1, mode="tunnel", enc="cipher_null")
    with pytest.raises(InvalidValue, match="differ in family"):
        EspSA.build(
            1, mode="tunnel", enc="cipher_null", tunnel_src="192.0.2.1", tunnel_dst="2001:db8::1"
        )
    with pytest.raises(InvalidValue, match=r"unknown mode 'tunel'.*did you mean tunnel"):
        EspSA.build(1, mode="tunel", enc="cipher_null")
    with pytest.raises(InvalidValue, match="ESN with replay window 0"):
        EspSA.build(1, enc="cipher_null", esn=True)
    with pytest.raises(InvalidValue, match="SPI"):
        EspSA.build(1 << 32, enc="cipher_null")
    with pytest.raises(InvalidValue, match="not-an-address"):
        EspSA.build(
            1, mode="tunnel", enc="cipher_null", tunnel_src="not-an-address", tunnel_dst="192.0.2.1"
        )
