"""ESP sizes (esplab.model.kernel.esp.layout): known values with their source, and
agreement with the bytes the software ESP core builds."""

from __future__ import annotations

import pytest

from esplab.model.hw.eip93.espmode import pad_align, pad_count
from esplab.model.kernel.esp import layout
from esplab.model.kernel.esp.core import UdpEncap, encrypt
from esplab.model.kernel.esp.tfc import state_mtu
from tests.model.test_esp import make_sa, v4, v6


@pytest.mark.parametrize(
    ("block", "align"),
    # ALIGN(crypto_aead_blocksize(aead), 4), esp4.c esp_output: cbc(aes) 16,
    # cbc(des3_ede) 8, rfc4106(gcm(aes)) / rfc3686(ctr(aes)) / cipher_null 1.
    [(16, 16), (8, 8), (1, 4), (4, 4)],
)
def test_alignment_is_the_block_rounded_up_to_four(block: int, align: int) -> None:
    assert layout.esp_align(block) == align


@pytest.mark.parametrize(
    ("size", "align", "pad"),
    # RFC 4303 2.4: payload + padding + 2 is a multiple of the alignment.
    [(0, 4, 2), (2, 4, 0), (10, 16, 4), (14, 16, 0), (15, 16, 15), (300, 16, 2), (428, 16, 2)],
)
def test_pad_length(size: int, align: int, pad: int) -> None:
    assert layout.pad_len(size, align) == pad
    assert layout.encrypted_len(size, align) == size + pad + 2
    assert layout.encrypted_len(size, align) % align == 0


def test_kernel_frame_sizes() -> None:
    # Linux 6.12, mode tunnel, hmac(sha1) (12-byte ICV) + cbc(aes)-128 (16-byte IV),
    # IPv4 outer (tests/model/test_esp_tfc.py): tfcpad 300 makes a 374-byte frame
    # (14 Ethernet + 20 outer IP + ESP of a 300-byte padded inner packet); a 428-byte
    # inner packet (400 bytes of UDP payload) makes 502.
    for inner, frame in ((300, 374), (428, 502)):
        assert 14 + layout.esp_packet_len(inner, 20, 16, 16, 12, tunnel=True) == frame
    # The same SA under MTU 200: xfrm_state_mtu gives 142, and a 142-byte inner packet
    # makes an ESP packet of exactly 200 bytes (the 214-byte frame).
    header_len = layout.encap_len(True, 4, False) + layout.esp_head_len(16)
    assert header_len == 44
    assert layout.state_mtu(200, header_len, 12, 16, 0) == 142
    assert layout.esp_packet_len(142, 20, 16, 16, 12, tunnel=True) == 200


def test_state_mtu_known_values() -> None:
    # tests/commands/test_journey.py: ((1280 - (20 + 8 + 16) - 12) & ~15) - 2 = 1214.
    assert layout.state_mtu(1280, 44, 12, 16, 0) == 1214
    # Transport mode keeps the IPv4 header out of the rounding (net_adj 20):
    # ((1500 - 24 - 16 - 20) & ~3) + 20 - 2 = 1458 for AES-GCM (8-byte IV, 16-byte ICV).
    assert layout.state_mtu(1500, 24, 16, 4, 20) == 1458


def test_encapsulation_overheads() -> None:
    # esp_init_state: struct iphdr (esp4) or struct ipv6hdr (esp6) in tunnel mode, and
    # struct udphdr for ESP in UDP (RFC 3948 2.1).
    assert layout.encap_len(False, 4, False) == 0
    assert layout.encap_len(False, 4, True) == 8
    assert layout.encap_len(True, 4, False) == 20
    assert layout.encap_len(True, 6, False) == 40
    assert layout.encap_len(True, 6, True) == 48
    # The shortest ESP: header, IV, the two trailer bytes and the ICV (AES-GCM 8 + 16).
    assert layout.min_esp_len(8, 16) == 34
    assert layout.esp_head_len(16) == 24


@pytest.mark.parametrize(
    ("suite", "mode", "outer", "encap"),
    [
        ("aes-cbc-sha1", "transport", 4, False),
        ("aes-cbc-sha1", "tunnel", 4, False),
        ("aes-cbc-sha1", "tunnel", 6, False),
        ("gcm-128", "transport", 4, True),
        ("gcm-64", "tunnel", 6, True),
        ("3des-sha256", "transport", 4, False),
        ("null-md5", "tunnel", 4, False),
    ],
)
@pytest.mark.parametrize("size", [0, 1, 13, 14, 15, 16, 100])
@pytest.mark.parametrize("inner", [4, 6])
def test_layout_matches_the_bytes_the_core_builds(
    suite: str, mode: str, outer: int, encap: bool, size: int, inner: int
) -> None:
    kw = {"encap": UdpEncap(4500, 4500)} if encap else {}
    sa = make_sa(suite, mode, outer, **kw)
    packet = (v4 if inner == 4 else v6)(bytes(size))
    hlen = 20 if inner == 4 else 40
    expected = layout.esp_packet_len(
        len(packet),
        hlen,
        sa.iv_size,
        sa.align,
        sa.icv_len,
        tunnel=mode == "tunnel",
        outer_version=outer,
        udp=encap,
    )
    assert len(encrypt(sa, packet)) == expected
    # xfrm_state_mtu of the SA's own sizes: a packet of that size (the inner packet in
    # tunnel mode, the whole packet in transport mode) fits the MTU.
    mtu = 1400
    fits = state_mtu(sa, mtu, inner if mode == "transport" else outer)
    assert (
        layout.esp_packet_len(
            fits,
            hlen,
            sa.iv_size,
            sa.align,
            sa.icv_len,
            tunnel=mode == "tunnel",
            outer_version=outer,
            udp=encap,
        )
        <= mtu
    )


def test_the_engine_pads_by_the_same_arithmetic_to_its_own_boundary() -> None:
    # eip93.md 2.1: command word 0 bits 31:24 one-hot, 0x02 = 4 bytes (the driver's ESP
    # command, fast.ESP_CTRL); the cipher's block wins when larger [U] pad-boundary.
    assert pad_align(16, 0x02) == 16 == layout.esp_align(16)
    assert pad_align(8, 0x02) == 8 == layout.esp_align(8)
    assert pad_align(1, 0x02) == 4 == layout.esp_align(1)
    assert pad_align(16, 0x20) == 64  # a boundary Linux never asks for
    for size in range(40):
        assert pad_count(size, 16) == layout.pad_len(size, 16)
