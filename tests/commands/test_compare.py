from __future__ import annotations

import re

import pytest

from esplab.commands.result import TableResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, NotFound
from tests.commands import seed


def compare(s: Session, line: str) -> TableResult:
    result = s.execute(line)
    assert isinstance(result, TableResult)
    return result


def test_every_datapath_gives_the_same_bytes() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    result = compare(s, f"compare 0x1000 {seed.UDP} seq 7")
    paths = result.data["paths"]
    assert [p for p in paths if paths[p]["available"]] == ["sw", "sw+aead", "crypto", "packet"]
    assert result.data["identical"] is True
    assert len({paths[p]["hex"] for p in paths}) == 1
    # The ESP header carries the pinned sequence number on every path.
    assert bytes.fromhex(paths["packet"]["hex"])[24:28] == (7).to_bytes(4, "big")


def test_tunnel_mode_aes256_sha256() -> None:
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x4000 reqid 4 "
        "mode tunnel auth-trunc 'hmac(sha256)' 0x" + "11" * 32 + " 128 "
        "enc 'cbc(aes)' 0x" + "22" * 32
    )
    result = compare(s, 'compare 0x4000 IP(src="198.51.100.2", dst="203.0.113.9")/UDP()')
    assert result.data["identical"] is True


def test_gcm_sa_has_only_the_software_path() -> None:
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000 reqid 2 "
        "mode transport aead 'rfc4106(gcm(aes))' "
        "0x000102030405060708090a0b0c0d0e0fdeadbeef 128"
    )
    result = compare(s, f"compare 0x2000 {seed.UDP}")
    paths = result.data["paths"]
    assert paths["sw"]["available"] is True
    assert all("no AES-GCM" in paths[p]["why"] for p in ("sw+aead", "crypto", "packet"))


def test_compare_errors() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    with pytest.raises(NotFound, match="no ESP state with SPI 0x9999"):
        s.execute(f"compare 0x9999 {seed.UDP}")
    with pytest.raises(BadArgument, match="needs an SPI and a packet"):
        s.execute("compare 0x1000")
    with pytest.raises(BadArgument, match="iv of 3 bytes"):
        s.execute(f"compare 0x1000 {seed.UDP} iv 000102")
    # The SA's own IV size is the one named: cbc(aes) takes 16 bytes (RFC 3602 3), never 8.
    with pytest.raises(
        BadArgument, match=r"iv of 8 bytes \('0x0001020304050607'\); valid: 16 bytes"
    ):
        s.execute(f"compare 0x1000 {seed.UDP} iv 0x0001020304050607")
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x4000 mode transport "
        "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 enc cipher_null ''"
    )
    with pytest.raises(BadArgument, match="SPI 0x4000's cipher takes no IV"):
        s.execute(f"compare 0x4000 {seed.UDP} iv 0x0001020304050607")
    # The same bounds as send: 64 bits at most, never negative.
    for bad in ("-1", str(2**64)):
        with pytest.raises(BadArgument, match=f"seq {bad} is out of range"):
            s.execute(f"compare 0x1000 {seed.UDP} seq {bad}")


def test_compare_options_are_read_as_send_reads_them() -> None:
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 mode transport "
        "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
        "enc aes 0x000102030405060708090a0b0c0d0e0f"
    )
    result = s.execute(
        "compare 0x1000 IP(dst='192.0.2.2')/UDP(dport=5201) seq 7 "
        "iv 000102030405060708090a0b0c0d0e0f"
    )
    assert result.data["seq"] == 7 and result.data["iv"] == bytes(range(16)).hex()
    for line, text in (
        ("compare 0x1000 IP(dst='192.0.2.2') seq", "'seq' needs a value; valid: seq N, iv HEX"),
        ("compare 0x1000 IP(dst='192.0.2.2') iv zz", "iv 'zz' is not hex"),
        ("compare 0x1000 seq 3", "compare needs a packet"),
    ):
        with pytest.raises(BadArgument, match=re.escape(text)):
            s.execute(line)


def test_an_esn_sa_has_no_eip93_authenc_and_sends_in_software() -> None:
    # ESP asks the crypto API for authencesn(...) for an ESN SA; the eip93 driver
    # registers authenc(...) only (eip93-aead.c), so software crypto runs.
    s = Session()
    esn = seed.SA_OUT.replace("mode transport", "mode transport flag esn replay-window 32")
    s.execute(esn)
    s.execute("host " + esn)
    s.execute(seed.POL_OUT)
    s.execute("set crypto-provider eip93")
    journey = s.execute(f"send ap wan {seed.UDP} seq 5").journeys[0]  # type: ignore[attr-defined]
    assert journey.delivered, journey.verdict
    assert journey.stage("eip93.driver") is None
    paths = compare(s, f"compare 0x1000 {seed.UDP} seq 5").data["paths"]
    assert paths["sw+aead"]["available"] is False
    assert "authencesn" in paths["sw+aead"]["why"]


def test_compare_takes_the_outbound_sa_of_an_spi() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    # The same SPI inbound, with a null cipher: added last, so newest.
    s.execute(
        "ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x1000 reqid 2 "
        f"mode transport auth sha1 {seed.AUTH} enc 'ecb(cipher_null)' ''"
    )
    result = compare(s, f"compare 0x1000 {seed.UDP} seq 1")
    # IPv4 20 + ESP 8 + IV 16 + (8 + 64 + pad to 16 with 2) 80 + ICV 12: the AES SA's.
    assert result.data["paths"]["sw"]["len"] == 136
    s.execute(
        "ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x3000 reqid 2 "
        f"mode transport auth sha1 {seed.AUTH} enc aes {seed.ENC}"
    )
    with pytest.raises(BadArgument, match="SPI 0x3000 on ap is an inbound SA"):
        s.execute(f"compare 0x3000 {seed.UDP}")


def test_compare_names_what_it_does_not_model() -> None:
    s = Session()
    s.execute(seed.SA_OUT.replace("spi 0x1000", "spi 0x7000") + " encap espinudp 4500 4500 0.0.0.0")
    with pytest.raises(BadArgument, match="UDP-encapsulated"):
        s.execute(f"compare 0x7000 {seed.UDP}")
