"""SA files in their three forms, and the errors that name a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.capfile.safile import load_sa_file, parse_sa_text
from esplab.errors import FileError, LabFileError
from esplab.wireshark import EspSaEntry, esp_sa_file

from .support import AUTH_KEY, ENC_KEY, GCM_KEY, SA_TEXT

# What a board prints for worked example (a) of airoha-dsa-xfrm.md 5.5, plus an offloaded
# GCM SA with -s statistics and an ESN context (ip -s xfrm state, iproute2 ipxfrm.c).
PASTED = "".join(
    line + "\n"
    for line in (
        "src 192.0.2.1 dst 192.0.2.2",
        "\tproto esp spi 0x00001000 reqid 1 mode transport",
        "\treplay-window 0 ",
        "\tauth-trunc hmac(sha1) 0x0102030405060708090a0b0c0d0e0f1011121314 96",
        "\tenc cbc(aes) 0x000102030405060708090a0b0c0d0e0f",
        "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000",
        "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 ",
        "src 192.0.2.2 dst 192.0.2.1",
        "\tproto esp spi 0x00002000 reqid 2 mode tunnel",
        "\treplay-window 0 flag esn",
        "\taead rfc4106(gcm(aes)) 0x00112233445566778899aabbccddeeff01020304 128",
        "\tanti-replay esn context:",
        "\t seq-hi 0x1, seq 0x10, oseq-hi 0x0, oseq 0x0",
        "\t replay_window 64, bitmap-length 2",
        "\t 00000000 0000ffff ",
        "\tcrypto offload parameters: dev wan dir in mode packet",
        "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 ",
    )
)


def test_ip_xfrm_commands() -> None:
    f = parse_sa_text(SA_TEXT, "sa.txt")
    assert f.form == "xfrm"
    assert [(s.index, s.line, s.spi) for s in f.sas] == [
        (1, 2, 0x1000),
        (2, 4, 0x2000),
        (3, 6, 0x3000),
        (4, 8, 0x4000),
    ]
    one, gcm, v6, natt = f.sas
    assert (one.enc, one.enc_key, one.auth, one.auth_key, one.icv_bits) == (
        "cbc(aes)", ENC_KEY, "hmac(sha1)", AUTH_KEY, 96,
    )  # fmt: skip
    assert (one.src, one.dst, one.mode) == ("192.0.2.1", "192.0.2.2", "tunnel")
    assert (gcm.aead, gcm.aead_key, gcm.icv_bits) == ("rfc4106(gcm(aes))", GCM_KEY, 128)
    assert (v6.auth, v6.icv_bits, v6.mode) == ("hmac(sha256)", 128, "transport")
    assert natt.encap == (4500, 4500)
    assert one.label == "SA 1 (spi 0x00001000 192.0.2.1 > 192.0.2.2)"
    assert one.algorithms == "cbc(aes)-128 + hmac(sha1)-96"
    assert gcm.algorithms == "rfc4106(gcm(aes))-128 ICV 128"
    assert "0001020304" not in repr(one)  # keys stay out of reprs


def test_pasted_ip_s_xfrm_state_output() -> None:
    f = parse_sa_text(PASTED, "board.txt")
    assert f.form == "xfrm"
    plain, esn = f.sas
    assert (plain.line, plain.spi, plain.mode) == (2, 0x1000, "transport")
    assert (esn.line, esn.spi, esn.esn, esn.replay_window, esn.seq_hi) == (9, 0x2000, True, 64, 1)


def test_wireshark_esp_sa_file(tmp_path: Path) -> None:
    text = esp_sa_file(
        [
            EspSaEntry("192.0.2.1", "192.0.2.2", 0x1000, "cbc(aes)", ENC_KEY, "hmac(sha1)",
                       AUTH_KEY, 96),
            EspSaEntry("192.0.2.2", "192.0.2.1", 0x2000, "rfc4106(gcm(aes))", GCM_KEY,
                       icv_bits=128),
        ]
    )  # fmt: skip
    text += '"IPv6","*","2001:db8::2","*","NULL","","ANY 96 bit authentication [no checking]",""\n'
    path = tmp_path / "esp_sa"
    path.write_text(text)
    f = load_sa_file(path)
    assert f.form == "wireshark"
    cbc, gcm, wild = f.sas
    assert (cbc.line, cbc.enc, cbc.enc_key, cbc.auth, cbc.auth_key, cbc.icv_bits) == (
        2, "cbc(aes)", ENC_KEY, "hmac(sha1)", AUTH_KEY, 96,
    )  # fmt: skip
    assert (gcm.aead, gcm.aead_key, gcm.icv_bits, gcm.mode) == (
        "rfc4106(gcm(aes))", GCM_KEY, 128, None,
    )  # fmt: skip
    assert (wild.spi, wild.src, wild.dst, wild.enc, wild.unchecked_icv, wild.icv_bits) == (
        None, None, "2001:db8::2", "ecb(cipher_null)", True, 96,
    )  # fmt: skip


def test_wireshark_ascii_and_odd_hex_keys() -> None:
    text = (
        '"IPv4","192.0.2.1","192.0.2.2","4096","AES-CBC [RFC3602]","sixteenbytekey!!",'
        '"HMAC-SHA-1-96 [RFC2404]","0x123"\n'
    )
    (sa,) = parse_sa_text(text).sas
    assert (sa.spi, sa.enc_key, sa.auth_key) == (4096, b"sixteenbytekey!!", b"\x01\x23")


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1 enc aes 0x00\n",
         1, "setkey rejects a 1-byte key"),
        ("# two SAs\n\nip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 "
         "enc aes 0x000102030405060708090a0b0c0d0e0f\nip xfrm stat add src\n",
         4, ""),
        ("src 192.0.2.1 dst 192.0.2.2\n\tproto esp spi 0x00001000 reqid 1 mode transport\n"
         "\tauth-trunc hmac(sha1) <<Keys hidden>> 96\n", 3, "keys are hidden"),
        ("hello world\n", 1, "expected an 'ip xfrm' command"),
        ('"IPv4","192.0.2.1","192.0.2.2","0x1","AES-CBC [RFC3602]"\n', 1, "5 field"),
        ('# wireshark\n"IPv4","192.0.2.1","192.0.2.2","0x1","AES-CBD [RFC3602]","0x00",'
         '"NULL",""\n', 2, "did you mean AES-CBC"),
        ('"IPv4","192.0.2.1","192.0.2.2","0x1","CAST5-CBC [RFC2144]","0x00","NULL",""\n',
         1, "cannot decrypt"),
        ('"IPv4","192.0.2.1","192.0.2.2","0x1","AES-CBC [RFC3602]","0xzz","NULL",""\n',
         1, "is not hex"),
        ('"IPv4","192.0.2.1","192.0.2.2","0x1","AES-CBC [RFC3602]","0x0011","NULL",""\n',
         1, "wrong key length 2 bytes"),
        ('"IPv4","2001:db8::1","192.0.2.2","0x1","NULL","","NULL",""\n', 1, "IPv6 in a IPv4"),
        ('"IPv4","192.0.2.1","192.0.2.2","0x1ffffffff","NULL","","NULL",""\n', 1, "SPI"),
        ('"IPv4","192.0.2.*","192.0.2.2","0x1","NULL","","NULL",""\n', 1, "partial address"),
        ('"IPv4","192.0.2.1","192.0.2.2","0x1","NULL","","HMAC-SHA-1-96 [RFC2404]","0x01"\n'
         "ip xfrm state add\n", 2, "expected a Wireshark esp_sa record"),
        ("", 1, "no SA in this file"),
        (
            "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 "
            "aead 'rfc4309(ccm(aes))' 0x000102030405060708090a0b0c0d0e0f010203 128\n",
            1,
            "esplab cannot decrypt or check rfc4309(ccm(aes))",
        ),
        ("ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto ah spi 1 auth sha1 0x01\n",
         1, "no ESP SA"),
    ],
)  # fmt: skip
def test_errors_name_the_line_and_why(text: str, line: int, why: str) -> None:
    with pytest.raises(LabFileError) as info:
        parse_sa_text(text, "sa.txt")
    assert info.value.file == "sa.txt"
    assert info.value.line == line
    assert why in str(info.value)
    assert str(info.value).startswith(f"sa.txt:{line}:")


def test_unreadable_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(FileError, match=r"cannot read SA file '.*missing\.txt': No such file"):
        load_sa_file(tmp_path / "missing.txt")
    binary = tmp_path / "bin"
    binary.write_bytes(b"ip xfrm\n\xff\xfe")
    with pytest.raises(LabFileError, match=r"bin:2:1: not text"):
        load_sa_file(binary)


def test_espintcp_is_noted_not_decoded() -> None:
    text = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x10 "
        f"aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 128 encap espintcp 4500 4500 0.0.0.0\n"
    )
    (sa,) = parse_sa_text(text).sas
    assert sa.encap is None
    assert "espintcp" in sa.notes[0]


# A paste of 'ip xfrm state' output (iproute2, TAB-indented) cut after the key of its
# auth-trunc line: no truncation length and no enc line.
PARTIAL_PASTE = (
    "src 192.0.2.1 dst 192.0.2.2\n"
    "\tproto esp spi 0xc0de0001 reqid 7 mode transport\n"
    "\treplay-window 0\n"
    "\tauth-trunc hmac(sha256) 0x4041424344454647\n"
)


def test_a_printed_auth_trunc_line_without_its_length_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "partial.txt"
    path.write_text(PARTIAL_PASTE)
    with pytest.raises(LabFileError) as err:
        load_sa_file(path)
    assert (err.value.line, err.value.col) == (4, 45)
    msg = str(err.value)
    assert msg.startswith(f"{path}:4:45: auth-trunc hmac(sha256): ")
    assert 'argument "ALGO-TRUNC-LEN" is required' in msg
    assert "valid: a number of bits" in msg and "cut short" in msg


def test_a_printed_aead_line_without_its_icv_length_is_refused() -> None:
    text = PARTIAL_PASTE.replace(
        "\tauth-trunc hmac(sha256) 0x4041424344454647\n",
        f"\taead rfc4106(gcm(aes)) 0x{GCM_KEY.hex()} (160 bits)\n",
    )
    with pytest.raises(LabFileError, match=r'sa:4:\d+: aead .*"ALGO-ICV-LEN" is required'):
        parse_sa_text(text, "sa")


def test_the_command_form_already_refuses_a_missing_length() -> None:
    text = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1 "
        "auth-trunc 'hmac(sha256)' 0x4041424344454647\n"
    )
    with pytest.raises(LabFileError, match='"ALGO-TRUNC-LEN" is required'):
        parse_sa_text(text, "sa")


def test_an_esp_sa_without_enc_or_aead_is_a_partial_paste() -> None:
    text = PARTIAL_PASTE.replace("0x4041424344454647\n", "0x4041424344454647 128\n")
    with pytest.raises(LabFileError) as err:
        parse_sa_text(text, "sa")
    assert (err.value.line, err.value.col) == (2, 1)
    msg = str(err.value)
    assert "spi 0xc0de0001: an ESP SA without an enc or aead line" in msg
    assert "enc ecb(cipher_null)" in msg and "cut short" in msg
    # iproute2 prints a null cipher explicitly: that SA loads
    full = text + "\tenc ecb(cipher_null) \n"
    (spec,) = parse_sa_text(full, "sa").sas
    assert spec.algorithms == "ecb(cipher_null) + hmac(sha256)-128"
