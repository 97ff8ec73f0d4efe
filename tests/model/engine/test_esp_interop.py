"""The engine's ESP against the software ESP core and published packets.

For every EIP-93ies cipher and integrity algorithm, in transport and tunnel mode,
over IPv4 and IPv6, in crypto and packet offload: with the same IV and sequence
number the engine's packet is byte-identical to the software's (DESIGN.md: the four
datapaths give the same bytes), the software decrypts it, and the engine decrypts
the software's packet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP
from scapy.layers.ipsec import ESP, SecurityAssociation

from esplab.model.kernel.drivers.eip93 import new_eip93
from esplab.model.kernel.drivers.eip93.xmit import locate_esp
from esplab.model.kernel.esp import core as esp

from .support import AUTHS, ENCS, LAYOUTS, kernel_skb, key, make_pair, plain_packet

CASES = [
    pytest.param(
        enc, elen, auth, alen, bits, mode, family, id=f"{enc}-{elen * 8}-{auth}-{mode}-v{family}"
    )
    for enc, elen in ENCS
    for auth, alen, bits in AUTHS
    for mode, family in LAYOUTS
]


@pytest.mark.parametrize("offload", ["crypto", "packet"])
@pytest.mark.parametrize(("enc", "elen", "auth", "alen", "bits", "mode", "family"), CASES)
def test_engine_and_software_agree(
    enc: str, elen: int, auth: str, alen: int, bits: int, mode: str, family: int, offload: str
) -> None:
    pair = make_pair(enc, elen, auth, alen, bits, mode, family, offload)
    drv = pair.driver
    iv = key(pair.iv_size, 0x3C)
    for seq, size in ((1, 100), (2, 61)):
        plain = plain_packet(family, size, ident=seq)
        ref = esp.encrypt(pair.sw_out, plain, seq=seq, iv=iv)
        skb, proto = kernel_skb(ref, plain, mode, pair.iv_size)
        send = drv.crypto_tx if offload == "crypto" else drv.packet_tx
        out = send(pair.out, skb, proto=proto, iv=iv)
        assert out.ok, out.errors
        assert out.data == ref
        assert out.seq == seq
        # The software side decrypts the engine's packet...
        back = esp.decrypt(pair.sw_in, out.data)
        assert back.ok, back.detail
        assert back.packet == plain
        # ...and the engine decrypts the software's.
        rx = drv.rx(ref)
        assert rx is not None and rx.ok, rx and rx.errors
        assert rx.next_header == proto
        assert rx.seq == seq
        if offload == "packet":
            assert rx.data == back.packet
        else:
            off, _ = locate_esp(ref)
            head = off + 8 + pair.iv_size
            assert rx.data == ref[:head] + skb[head:]  # ESP header, IV, payload; no trailer


def _scapy_sa(enc: str, ekey: bytes, auth: str, akey: bytes) -> SecurityAssociation:
    return SecurityAssociation(
        ESP, spi=0x100, crypt_algo=enc, crypt_key=ekey, auth_algo=auth, auth_key=akey
    )


@pytest.mark.parametrize(
    ("enc", "elen", "scapy_enc", "auth", "alen", "bits", "scapy_auth"),
    [
        ("cbc(aes)", 16, "AES-CBC", "hmac(sha1)", 20, 96, "HMAC-SHA1-96"),
        ("rfc3686(ctr(aes))", 20, "AES-CTR", "hmac(sha256)", 32, 128, "SHA2-256-128"),
        ("cbc(des3_ede)", 24, "3DES", "hmac(md5)", 16, 96, "HMAC-MD5-96"),
    ],
)
def test_engine_matches_scapy(
    enc: str, elen: int, scapy_enc: str, auth: str, alen: int, bits: int, scapy_auth: str
) -> None:
    # An independent reference: scapy's SecurityAssociation, IPv4 transport, seq 1.
    pair = make_pair(enc, elen, auth, alen, bits, "transport", 4, "packet")
    iv = key(pair.iv_size, 0x3C)
    plain = plain_packet(4, 90)
    theirs = bytes(
        _scapy_sa(scapy_enc, key(elen, 0x11), scapy_auth, key(alen, 0x80)).encrypt(
            IP(plain), seq_num=1, iv=iv
        )
    )
    skb, proto = kernel_skb(theirs, plain, "transport", pair.iv_size)
    out = pair.driver.packet_tx(pair.out, skb, proto=proto, iv=iv)
    assert out.ok and out.data == theirs


_VECTORS = json.loads((Path(__file__).parents[1] / "data" / "esp_vectors.json").read_text())
_KERNEL = {
    "AES-CBC": "cbc(aes)",
    "AES-CTR": "rfc3686(ctr(aes))",
    "3DES": "cbc(des3_ede)",
    "DES": "cbc(des)",
    "HMAC-MD5-96": "hmac(md5)",
    "SHA2-256-128": "hmac(sha256)",
}
_KATS = [
    v
    for v in _VECTORS["packets"]
    if v["family"] == "esp-packet" and v["enc_alg"] in _KERNEL and v["auth_alg"] in _KERNEL
]


@pytest.mark.parametrize("vector", _KATS, ids=[v["name"] for v in _KATS])
def test_published_packets(vector: dict[str, object]) -> None:
    # DPDK app/test ESP packets (tests/model/data/esp_vectors.json): tunnel mode.
    enc, auth = _KERNEL[str(vector["enc_alg"])], _KERNEL[str(vector["auth_alg"])]
    ekey = bytes.fromhex(str(vector["enc_key"])) + bytes.fromhex(str(vector["salt"] or ""))
    akey = bytes.fromhex(str(vector["auth_key"]))
    drv = new_eip93(1)
    spi, seq = int(str(vector["spi"])), int(str(vector["seq"]))
    common: dict[str, Any] = dict(
        spi=spi,
        mode="tunnel",
        enc=enc,
        enc_key=ekey,
        auth=auth,
        auth_key=akey,
        auth_trunc_bits=8 * int(str(vector["icv_len"])),
        family=int(str(vector["ip_version"])),
    )
    out_sa = drv.state_add(direction="out", **common).sa
    assert drv.state_add(direction="in", **common).ok
    assert out_sa is not None
    wire = bytes.fromhex(str(vector["esp_packet_hex"]))
    plain = bytes.fromhex(str(vector["plaintext_packet_hex"]))
    iv = bytes.fromhex(str(vector["iv"]))
    skb, proto = kernel_skb(wire, plain, "tunnel", len(iv))
    assert proto == vector["next_header"]
    # Crypto offload: the kernel's sequence number goes on the wire.
    out = drv.crypto_tx(out_sa, skb, proto=proto, iv=iv)
    assert out.ok and out.data == wire and out.seq == seq
    rx = drv.rx(wire)
    assert rx is not None and rx.ok and rx.next_header == proto
    assert rx.data.endswith(plain)
