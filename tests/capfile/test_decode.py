"""The decode pipeline: published vectors, esplab's own captures on every link type,
trailer and encapsulation checks, sequence analysis, packets without an SA."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esplab.capfile.decoder import Decoder
from esplab.capfile.pipeline import RunResult, decode_capture
from esplab.capfile.records import STATUSES, PacketRecord
from esplab.capfile.safile import SaFile, parse_sa_text
from esplab.layers.linktypes import DLT_EIP93_CMD_DESC, DLT_MTK_ETHER
from esplab.model.kernel.esp.core import encrypt
from esplab.pcap import LINKTYPE_ETHERNET, LINKTYPE_RAW

from .support import (
    GCM_KEY,
    ether,
    ipv4_udp,
    make_packets,
    mtk,
    sa_file,
    sender,
    sll,
    sll2,
    write_frames,
)

DATA = json.loads(
    (Path(__file__).parent.parent / "model" / "data" / "esp_vectors.json").read_text()
)

_ENC = {
    "AES-GCM": "rfc4106(gcm(aes))",
    "AES-CBC": "cbc(aes)",
    "3DES": "cbc(des3_ede)",
    "DES": "cbc(des)",
    "AES-CTR": "rfc3686(ctr(aes))",
}
_AUTH = {
    "HMAC-MD5-96": ("hmac(md5)", 96),
    "HMAC-SHA1-96": ("hmac(sha1)", 96),
    "SHA2-256-128": ("hmac(sha256)", 128),
    "SHA2-384-192": ("hmac(sha384)", 192),
    "SHA2-512-256": ("hmac(sha512)", 256),
}


def decode(path: Path, sas: SaFile, **kw: Any) -> tuple[RunResult, list[PacketRecord]]:
    records: list[PacketRecord] = []
    run = decode_capture(path, sas.sas, records.append, keep_inner=True, **kw)
    return run, records


def _vector_sa(v: dict[str, Any], src: str, dst: str) -> str:
    """The ``ip xfrm state add`` line for a vector of esp_vectors.json."""
    key = v["enc_key"] + (v["salt"] or "")
    line = f"ip xfrm state add src {src} dst {dst} proto esp spi {v['spi']} mode {v['mode']} "
    if v["enc_alg"] == "AES-GCM":
        line += f"aead 'rfc4106(gcm(aes))' 0x{key} {v['icv_len'] * 8}"
    else:
        line += f"enc '{_ENC[v['enc_alg']]}' 0x{key}"
        if v["auth_alg"] != "NULL":
            name, bits = _AUTH[v["auth_alg"]]
            line += f" auth-trunc '{name}' 0x{v['auth_key']} {bits}"
    if v["esn_high"] is not None:
        line += f" flag esn replay-window 32 replay-seq-hi {v['esn_high']}"
    return line + "\n"


def _outer_ipv4(esp: bytes) -> bytes:
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(esp), 1, 0, 64, 50, 0,
                       bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2]))  # fmt: skip
    return head + esp


@pytest.mark.parametrize("v", DATA["packets"], ids=lambda v: v["name"])
def test_published_vectors_decrypt_to_their_plaintext(tmp_path: Path, v: dict[str, Any]) -> None:
    # DPDK app/test and Linux xfrm packets (tests/model/data/esp_vectors.json).
    esp = bytes.fromhex(v["esp_packet_hex"])
    if v["esp_packet_includes_ip_header"]:
        packet = esp
        if v["ip_version"] == 4:
            src, dst = (".".join(str(b) for b in esp[i : i + 4]) for i in (12, 16))
        else:
            import ipaddress

            src, dst = (str(ipaddress.ip_address(esp[i : i + 16])) for i in (8, 24))
    else:
        packet, src, dst = _outer_ipv4(esp), "192.0.2.1", "192.0.2.2"
    sas = parse_sa_text(_vector_sa(v, src, dst), "vector")
    path = write_frames(tmp_path / "v.pcapng", [(LINKTYPE_RAW, packet)])
    run, (rec,) = decode(path, sas)
    assert rec.status == "ok", rec.detail
    assert rec.icv == ("good" if v["icv_len"] else "none")
    assert rec.seq == v["seq"] + ((v["esn_high"] or 0) << 32)
    assert rec.next_header == v["next_header"]
    assert rec.inner_packet == bytes.fromhex(v["plaintext_packet_hex"])
    assert run.summary.ok == 1


@pytest.mark.parametrize("case", DATA["gcm"], ids=lambda c: f"gcm-case-{c['case']}")
def test_gcm_esp_test_cases(tmp_path: Path, case: dict[str, Any]) -> None:
    # draft-mcgrew-gcm-test-01 section 4: an 8-byte sequence field means ESN.
    spi, seq = int(case["spi"], 16), bytes.fromhex(case["seq"])
    plain = bytes.fromhex(case["plaintext"])
    icv = len(bytes.fromhex(case["ctext_tag"])) - len(plain)
    keymat = case["key"] + case["nonce"][:8]
    if len(seq) == 8:
        text = (
            f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi {spi} mode tunnel "
            f"aead 'rfc4106(gcm(aes))' 0x{keymat} {icv * 8} flag esn replay-window 32 "
            f"replay-seq-hi 0x{seq[:4].hex()}\n"
        )
    else:  # SPI 0 in case 4: the Wireshark form takes it, ip xfrm (in esplab) does not
        text = (
            f'"IPv4","*","*","0x{spi:08x}","AES-GCM with {icv} octet ICV [RFC4106]",'
            f'"0x{keymat}","NULL",""\n'
        )
    packet = _outer_ipv4(bytes.fromhex(case["packet"]))
    path = write_frames(tmp_path / "g.pcapng", [(LINKTYPE_RAW, packet)])
    _, (rec,) = decode(path, parse_sa_text(text, "gcm"))
    assert (rec.icv, rec.seq) == ("good", int.from_bytes(seq, "big"))
    assert (rec.pad_len, rec.next_header) == (plain[-2], plain[-1])
    if plain[-1] == 4:
        assert rec.inner_packet == plain[: -2 - plain[-2]]


LINKS = {
    "ethernet": lambda p: (LINKTYPE_ETHERNET, ether(p)),
    "vlan": lambda p: (LINKTYPE_ETHERNET, ether(p, (0x8100, 100))),
    "qinq": lambda p: (LINKTYPE_ETHERNET, ether(p, (0x88A8, 10), (0x8100, 100))),
    "raw": lambda p: (LINKTYPE_RAW, p),
    "raw-v4": lambda p: (228, p),
    "sll": lambda p: (113, sll(p)),
    "sll2": lambda p: (276, sll2(p)),
    "mtk-rx": lambda p: (DLT_MTK_ETHER, mtk(p, 3)),
    "mtk-tx-vlan": lambda p: (DLT_MTK_ETHER, mtk(p, 2, vlan=100)),
}


@pytest.mark.parametrize("fmt", ["pcapng", "pcap"])
@pytest.mark.parametrize("link", list(LINKS))
def test_esplab_captures_decode_with_every_icv_good(tmp_path: Path, link: str, fmt: str) -> None:
    sas = sa_file()
    one, gcm, v6, natt = sas.sas
    packets = (
        make_packets(sender(one), 6)
        + make_packets(sender(gcm), 6)
        + make_packets(sender(v6), 4, v6=True)
        + make_packets(sender(natt), 4)
    )
    path = write_frames(tmp_path / f"c.{fmt}", [LINKS[link](p) for p in packets])
    run, records = decode(path, sas)
    assert run.summary.frames == run.summary.esp == run.summary.ok == 20
    assert all(r.icv == "good" and r.status == "ok" for r in records)
    assert [r.sa for r in records] == [1] * 6 + [2] * 6 + [3] * 4 + [4] * 4
    assert [r.seq for r in records[:6]] == [1, 2, 3, 4, 5, 6]
    assert records[-1].encap == (4500, 4500)
    # The inner packets are the ones that were encrypted.
    assert records[0].inner_packet == ipv4_udp(64, 0)
    assert records[12].inner is not None and records[12].inner[0] == 6
    assert all(r.padding_ok for r in records)
    assert [r.counters.packets for r in run.summary.sas] == [6, 6, 4, 4]


def test_non_esp_traffic_is_counted_and_skipped(tmp_path: Path) -> None:
    sas = sa_file()
    esp = make_packets(sender(sas.sas[0]), 2)
    udp = ipv4_udp(80, 9)
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes(28)
    keepalive = _udp4500(b"\xff")
    ike = _udp4500(b"\x00\x00\x00\x00" + b"ike!" * 8)
    frames = [
        (LINKTYPE_ETHERNET, ether(esp[0])),
        (LINKTYPE_ETHERNET, arp),
        (LINKTYPE_RAW, udp),
        (LINKTYPE_RAW, keepalive),
        (LINKTYPE_RAW, ike),
        (DLT_EIP93_CMD_DESC, bytes(32)),
        (LINKTYPE_ETHERNET, ether(esp[1])),
    ]
    run, records = decode(write_frames(tmp_path / "m.pcapng", frames), sas)
    s = run.summary
    assert (s.frames, s.esp, s.ok, s.non_esp) == (7, 2, 2, 5)
    assert s.skipped == {"not-ip": 1, "other-ip": 1, "keepalive": 1, "ike": 1, "link-type": 1}
    assert s.linktypes_skipped == {DLT_EIP93_CMD_DESC: 1}
    assert [r.frame for r in records] == [1, 7]


def _udp4500(payload: bytes, sport: int = 4500, dport: int = 4500) -> bytes:
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                       bytes([198, 51, 100, 1]), bytes([198, 51, 100, 2]))  # fmt: skip
    return head + udp


def test_unknown_spi_and_unmatched_sa(tmp_path: Path) -> None:
    sas = sa_file()
    stranger = sender(sas.sas[0], spi=0xABCD)
    packets = make_packets(stranger, 3) + make_packets(sender(sas.sas[1]), 1)
    run, records = decode(write_frames(tmp_path / "u.pcapng", [(101, p) for p in packets]), sas)
    assert [r.status for r in records] == ["no-sa", "no-sa", "no-sa", "ok"]
    assert run.summary.unknown_spi == {0xABCD: 3}
    assert [r.counters.packets for r in run.summary.sas] == [0, 1, 0, 0]


def test_bad_icv_is_reported_and_the_rest_still_decodes(tmp_path: Path) -> None:
    sas = sa_file()
    packets = make_packets(sender(sas.sas[0]), 3)
    broken = packets[1][:-1] + bytes([packets[1][-1] ^ 1])
    frames = [(101, packets[0]), (101, broken), (101, packets[2])]
    run, records = decode(write_frames(tmp_path / "b.pcapng", frames), sas)
    assert [(r.icv, r.status) for r in records] == [
        ("good", "ok"), ("bad", "icv-bad"), ("good", "ok"),
    ]  # fmt: skip
    assert records[1].inner is None and records[1].pad_len is None
    assert run.summary.failed == 1


def test_trailer_checks(tmp_path: Path) -> None:
    # An SA without integrity, so a tampered ciphertext still reaches the trailer check.
    text = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x77 mode tunnel "
        "enc 'ecb(cipher_null)' ''\n"
    )
    sas = parse_sa_text(text)
    sa = sender(sas.sas[0])
    good = encrypt(sa, ipv4_udp(64, 1), seq=1)
    # cipher_null: the trailer is in the clear, pad length then next header before the end.
    odd_pad = bytearray(encrypt(sa, ipv4_udp(63, 2), seq=2))
    assert odd_pad[-2] > 0
    odd_pad[-3] ^= 0x40  # the last padding byte is no longer its index
    huge_pad = bytearray(encrypt(sa, ipv4_udp(64, 3), seq=3))
    huge_pad[-2] = 250
    not_ip = bytearray(encrypt(sa, ipv4_udp(64, 4), seq=4))
    not_ip[-1] = 17  # tunnel mode, but the next header says UDP
    frames = [(101, bytes(p)) for p in (good, odd_pad, huge_pad, not_ip)]
    run, records = decode(write_frames(tmp_path / "t.pcapng", frames), sas)
    assert [(r.icv, r.status) for r in records] == [
        ("none", "ok"), ("none", "ok"), ("none", "bad-trailer"), ("none", "mode-error"),
    ]  # fmt: skip
    assert records[1].padding_ok is False
    assert "pad length 250" in records[2].detail
    c = run.summary.sas[0].counters
    assert (c.padding_nonstandard, c.bad_trailer, c.mode_error, c.no_integrity) == (1, 1, 1, 4)


def test_encapsulation_mismatch(tmp_path: Path) -> None:
    sas = sa_file()
    one, _, _, natt = sas.sas
    plain_for_natt = make_packets(sender(natt, encap=None), 1)[0]
    udp_for_plain = make_packets(sender(one, encap=(4500, 4500)), 1)[0]
    frames = [(101, plain_for_natt), (101, udp_for_plain)]
    _, records = decode(write_frames(tmp_path / "n.pcapng", frames), sas)
    assert [(r.icv, r.status) for r in records] == [
        ("good", "encap-mismatch"), ("good", "encap-mismatch"),
    ]  # fmt: skip
    assert "SA with UDP encapsulation" in records[0].detail
    assert records[1].encap == (4500, 4500)


def test_sequence_analysis(tmp_path: Path) -> None:
    text = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x10 mode tunnel "
        f"aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 128 replay-window 32\n"
    )
    sas = parse_sa_text(text)
    sa = sender(sas.sas[0])
    order = [1, 2, 3, 7, 5, 5, 8, 60, 20, 61]
    packets = [encrypt(sa, ipv4_udp(64, s), seq=s) for s in order]
    run, records = decode(write_frames(tmp_path / "s.pcapng", [(101, p) for p in packets]), sas)
    from esplab.capfile.sequence import event_names

    events = [event_names(r.events, r.gap) for r in records]
    assert events == [
        [], [], [], ["gap:3"], ["late"], ["duplicate"], [], ["gap:51"],
        ["late", "out-of-window"], [],
    ]  # fmt: skip
    q = run.summary.sas[0].seq
    assert (q.first, q.highest, q.gaps, q.missing, q.duplicates, q.late, q.too_old) == (
        1, 61, 2, 52, 1, 2, 1,
    )  # fmt: skip


def test_esn_rollover_and_wrap_without_esn(tmp_path: Path) -> None:
    esn_text = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x20 mode tunnel "
        f"aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 128 flag esn replay-window 64\n"
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x21 mode tunnel "
        f"aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 128\n"
    )
    sas = parse_sa_text(esn_text)
    esn_sa, plain_sa = sender(sas.sas[0]), sender(sas.sas[1])
    top = 0xFFFFFFFE
    seqs = [top, top + 1, top + 2, top + 3]
    packets = [encrypt(esn_sa, ipv4_udp(64, 1), seq=s) for s in seqs]
    packets += [encrypt(plain_sa, ipv4_udp(64, 1), seq=s) for s in (0xFFFFFFFF, 1)]
    run, records = decode(write_frames(tmp_path / "e.pcapng", [(101, p) for p in packets]), sas)
    assert all(r.icv == "good" for r in records)
    assert [r.seq for r in records[:4]] == seqs
    from esplab.capfile.sequence import event_names

    assert event_names(records[2].events) == ["esn-rollover"]
    assert run.summary.sas[0].seq.rollovers == [(3, 1)]
    assert event_names(records[5].events) == ["wrapped-without-esn"]
    assert run.summary.sas[1].seq.wraps == 1


def test_limit_and_truncation(tmp_path: Path) -> None:
    sas = sa_file()
    packets = make_packets(sender(sas.sas[0]), 5)
    path = write_frames(tmp_path / "l.pcapng", [(101, p) for p in packets])
    run, records = decode(path, sas, limit=2)
    assert (run.limit_reached, len(records), run.summary.frames) == (True, 2, 2)
    path.write_bytes(path.read_bytes()[:-40])
    run, records = decode(path, sas)
    assert run.truncated is not None and "after 4 packet(s)" in run.truncated
    assert len(records) == run.summary.ok == 4


def test_mtk_link_type_matches_the_layers() -> None:
    from esplab.capfile import linklayer
    from esplab.layers import linktypes

    assert linklayer.DLT_MTK_ETHER == linktypes.DLT_MTK_ETHER


def test_ipv6_transport_rebuilds_the_packet(tmp_path: Path) -> None:
    sas = sa_file()
    v6 = sas.sas[2]
    packets = make_packets(sender(v6), 2, v6=True)
    _, records = decode(write_frames(tmp_path / "6.pcapng", [(101, p) for p in packets]), sas)
    from .support import ipv6_udp

    assert records[0].inner_packet == ipv6_udp(64, 0)
    assert records[1].inner_packet == ipv6_udp(100, 1)


def test_a_wireshark_sa_file_decodes_the_same(tmp_path: Path) -> None:
    # Wireshark's esp_sa has no mode: tunnel or transport follows the next header.
    from esplab.wireshark import EspSaEntry, esp_sa_file

    sas = sa_file()
    one, gcm, v6, _ = sas.sas
    entries = [
        EspSaEntry(s.src or "", s.dst or "", s.spi or 0, s.aead or s.enc or "",
                   s.aead_key or s.enc_key, s.auth, s.auth_key, s.icv_bits)
        for s in (one, gcm, v6)
    ]  # fmt: skip
    ws = parse_sa_text(esp_sa_file(entries), "esp_sa")
    assert ws.form == "wireshark" and all(s.mode is None for s in ws.sas)
    packets = (
        make_packets(sender(one), 3) + make_packets(sender(gcm), 3)
        + make_packets(sender(v6), 3, v6=True)
    )  # fmt: skip
    path = write_frames(tmp_path / "w.pcapng", [(LINKTYPE_RAW, p) for p in packets])
    _, ours = decode(path, sas)
    _, theirs = decode(path, ws)
    assert [(r.status, r.icv, r.inner, r.inner_packet) for r in ours] == [
        (r.status, r.icv, r.inner, r.inner_packet) for r in theirs
    ]
    assert all(r.status == "ok" for r in theirs)


@settings(max_examples=300, deadline=None)
@given(
    linktype=st.sampled_from([1, 101, 113, 276, 151, 228, 229, 147]),
    data=st.binary(max_size=200),
)
def test_any_bytes_give_a_verdict_never_an_exception(linktype: int, data: bytes) -> None:
    decoder = Decoder(sa_file().sas, keep_inner=True, keep_esp=True, sniff_udp=True)
    rec = decoder.feed(1, 0, linktype, 0, data)
    assert rec is None or rec.status in STATUSES
    assert decoder.finish().frames == 1


_GOOD = make_packets(sender(sa_file().sas[0]), 1)[0] + make_packets(sender(sa_file().sas[1]), 1)[0]


@settings(max_examples=300, deadline=None)
@given(cut=st.integers(0, len(_GOOD)), flips=st.lists(st.integers(0, len(_GOOD) - 1), max_size=4))
def test_damaged_esp_packets_give_a_verdict(cut: int, flips: list[int]) -> None:
    first = bytearray(_GOOD[: len(_GOOD) // 2] if cut % 2 else _GOOD[len(_GOOD) // 2 :])
    for i in flips:
        if i < len(first):
            first[i] ^= 0xA5
    decoder = Decoder(sa_file().sas, keep_inner=True)
    for lt in (101, 1):
        frame = bytes(first[: cut % (len(first) + 1)])
        rec = decoder.feed(1, 0, lt, 0, frame if lt == 101 else ether(frame))
        assert rec is None or rec.status in STATUSES


def test_wildcard_spi_and_unchecked_icv(tmp_path: Path) -> None:
    # Wireshark's '*' SPI matches by address; "ANY 96 bit" skips the ICV but knows its size.
    sas = sa_file()
    one = sas.sas[0]
    text = (
        f'"IPv4","*","192.0.2.2","*","AES-CBC [RFC3602]","0x{one.enc_key.hex()}",'
        '"ANY 96 bit authentication [no checking]",""\n'
    )
    ws = parse_sa_text(text, "esp_sa")
    packets = make_packets(sender(one), 2) + make_packets(sender(sas.sas[1]), 1)
    path = write_frames(tmp_path / "w.pcapng", [(LINKTYPE_RAW, p) for p in packets])
    run, records = decode(path, ws)
    assert [(r.sa, r.icv, r.status) for r in records] == [
        (1, "unchecked", "ok"),
        (1, "unchecked", "ok"),
        (0, "none", "no-sa"),  # destination 192.0.2.1: the wildcard SA does not match
    ]
    assert records[0].inner_packet == ipv4_udp(64, 0)
    assert run.summary.sas[0].counters.no_integrity == 2
