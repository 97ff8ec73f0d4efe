"""EIP-93 SA and state records: bit-exact against eip93.md sections 3, 4.1, 5 and 7."""

from __future__ import annotations

import hmac
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.config import conf
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from esplab.layers.hashstate import compress, hmac_from_states, initial_state
from esplab.layers.linktypes import DLT_EIP93_SA_RECORD, DLT_EIP93_STATE_RECORD
from esplab.layers.sa_record import (
    SA_RECORD_SIZE,
    STATE_RECORD_SIZE,
    EIP93SARecord,
    EIP93StateRecord,
)

AES128 = bytes(range(0x10, 0x20))
AUTH20 = bytes(range(0xA0, 0xB4))

CMD0_FIELDS = [f.name for f in EIP93SARecord.fields_desc[:16]]
CMD1_FIELDS = [f.name for f in EIP93SARecord.fields_desc[16:33]]


def _esp(direction: str = "out", **kwargs: Any) -> EIP93SARecord:
    args: dict[str, Any] = {
        "spi": 0x12345678,
        "crypt_algo": "AES-CBC",
        "crypt_key": AES128,
        "auth_algo": "HMAC-SHA1-96",
        "auth_key": AUTH20,
    }
    args.update(kwargs)
    return EIP93SARecord.for_esp(direction, **args)


def _le(word: int) -> bytes:
    return struct.pack("<I", word)


# --- layout (eip93.md 3.1, 3.4, 7.1) ----------------------------------------


def test_sizes() -> None:
    assert len(raw(EIP93SARecord())) == SA_RECORD_SIZE == 128
    assert len(raw(EIP93StateRecord())) == STATE_RECORD_SIZE == 56


def test_defaults_are_zeroed_memory() -> None:
    # Drivers start from a kzalloc'ed record (eip93.md 4.1, V-esp mtk_create_sa).
    assert raw(EIP93SARecord()) == bytes(128)
    assert raw(EIP93StateRecord()) == bytes(56)


def test_sa_field_offsets() -> None:
    rec = EIP93SARecord(
        sa_key=b"K" * 32,
        sa_i_digest=b"I" * 32,
        sa_o_digest=b"O" * 32,
        sa_spi=0x12345678,
        sa_seqnum_0=0x01020304,
        sa_seqnum_1=0x05060708,
        sa_seqnum_mask_0=0x090A0B0C,
        sa_seqnum_mask_1=0x0D0E0F10,
        sa_nonce=b"NONC",
    )
    data = raw(rec)
    assert data[0x08:0x28] == b"K" * 32
    assert data[0x28:0x48] == b"I" * 32
    assert data[0x48:0x68] == b"O" * 32
    # eip93.md 5.2: SPI 0x12345678 is stored as 78 56 34 12.
    assert data[0x68:0x6C] == bytes.fromhex("78563412")
    assert data[0x6C:0x74] == bytes.fromhex("04030201 08070605")
    assert data[0x74:0x7C] == bytes.fromhex("0c0b0a09 100f0e0d")
    assert data[0x7C:0x80] == b"NONC"


def test_state_field_offsets() -> None:
    # eip93.md 3.4: RFC 3686 counter block nonce(4) | IV(8) | 00 00 00 01, raw.
    block = bytes.fromhex("a1a2a3a4 b1b2b3b4b5b6b7b8 00000001")
    st_rec = EIP93StateRecord(
        state_iv=block, state_byte_cnt_0=64, state_byte_cnt_1=1, state_i_digest=b"D" * 32
    )
    data = raw(st_rec)
    assert data[0x00:0x10] == block
    assert data[0x10:0x18] == bytes.fromhex("40000000 01000000")
    assert data[0x18:0x38] == b"D" * 32


def test_state_dissect_field_by_field() -> None:
    data = bytes(range(16)) + struct.pack("<2I", 0x40, 0) + bytes(range(100, 132))
    rec = EIP93StateRecord(data)
    assert rec.state_iv == bytes(range(16))
    assert rec.state_byte_cnt_0 == 0x40
    assert rec.state_byte_cnt_1 == 0
    assert rec.state_i_digest == bytes(range(100, 132))
    assert raw(EIP93StateRecord(raw(rec))) == data


# --- sa_cmd0 / sa_cmd1 bit positions (eip93.md 3.2, 3.3) -----------------------

CMD0_BITS = [
    (0, "opcode", 1), (1, "opcode", 2), (2, "opcode", 4), (3, "direction", 1),
    (4, "opgroup", 1), (5, "opgroup", 2), (6, "pad_type", 1), (7, "pad_type", 2),
    (8, "cipher", 1), (9, "cipher", 2), (10, "cipher", 4), (11, "cipher", 8),
    (12, "hash", 1), (13, "hash", 2), (14, "hash", 4), (15, "hash", 8),
    (16, "reserved_cmd0_16", 1), (17, "scpad", 1), (18, "ext_pad", 1), (19, "hdr_proc", 1),
    (20, "digest_length", 1), (21, "digest_length", 2), (22, "digest_length", 4),
    (23, "digest_length", 8), (24, "iv_source", 1), (25, "iv_source", 2),
    (26, "hash_source", 1), (27, "hash_source", 2), (28, "save_iv", 1), (29, "save_hash", 1),
    (30, "reserved_cmd0_31_30", 1), (31, "reserved_cmd0_31_30", 2),
]  # fmt: skip
CMD1_BITS = [
    (0, "copy_digest", 1), (1, "copy_header", 1), (2, "copy_payload", 1), (3, "copy_pad", 1),
    (4, "reserved_cmd1_7_4", 1), (5, "reserved_cmd1_7_4", 2), (6, "reserved_cmd1_7_4", 4),
    (7, "reserved_cmd1_7_4", 8), (8, "cipher_mode", 1), (9, "cipher_mode", 2),
    (10, "reserved_cmd1_10", 1), (11, "ssl_mac", 1), (12, "hmac", 1), (13, "byte_offset", 1),
    (14, "reserved_cmd1_15_14", 1), (15, "reserved_cmd1_15_14", 2),
    *[(b, "hash_crypt_offset", 1 << (b - 16)) for b in range(16, 24)],
    (24, "aes_key_length", 1), (25, "aes_key_length", 2), (26, "aes_key_length", 4),
    (27, "reserved_cmd1_27", 1), (28, "aes_dec_key", 1), (29, "en_seqnum_chk", 1),
    (30, "reserved_cmd1_31_30", 1), (31, "reserved_cmd1_31_30", 2),
]  # fmt: skip


def _set_fields(pkt: Any, names: list[str]) -> dict[str, int]:
    return {n: int(pkt.getfieldval(n)) for n in names if int(pkt.getfieldval(n))}


def test_cmd0_bit_positions() -> None:
    for bit, field, value in CMD0_BITS:
        rec = EIP93SARecord(_le(1 << bit) + bytes(124))
        assert _set_fields(rec, CMD0_FIELDS) == {field: value}, bit
        one: dict[str, Any] = {field: value}
        built = EIP93SARecord(**one)
        assert raw(built)[0:4] == _le(1 << bit), bit


def test_cmd1_bit_positions() -> None:
    for bit, field, value in CMD1_BITS:
        rec = EIP93SARecord(bytes(4) + _le(1 << bit) + bytes(120))
        assert _set_fields(rec, CMD1_FIELDS) == {field: value}, bit
        one: dict[str, Any] = {field: value}
        built = EIP93SARecord(**one)
        assert raw(built)[4:8] == _le(1 << bit), bit


def test_reserved_bits_round_trip() -> None:
    data = _le(0xC0010000) + _le(0xC800C4F0) + bytes(120)
    rec = EIP93SARecord(data)
    assert rec.reserved_cmd0_31_30 == 3
    assert rec.reserved_cmd0_16 == 1
    assert rec.reserved_cmd1_31_30 == 3
    assert rec.reserved_cmd1_27 == 1
    assert rec.reserved_cmd1_15_14 == 3
    assert rec.reserved_cmd1_10 == 1
    assert rec.reserved_cmd1_7_4 == 0xF
    rebuilt = EIP93SARecord(**{f.name: rec.getfieldval(f.name) for f in rec.fields_desc})
    assert raw(rebuilt) == data


def test_dissect_esp_sa_field_by_field() -> None:
    # eip93.md 4.1: AES-128-CBC + HMAC-SHA1-96 outbound words, decoded per 3.2/3.3.
    data = _le(0x133A1310) + _le(0x22001101) + AES128 + bytes(16) + bytes(64)
    data += _le(0x12345678) + bytes(8) + _le(0xFFFFFFFF) + bytes(4) + bytes(4)
    rec = EIP93SARecord(data)
    expected_cmd0 = {
        "opcode": 0, "direction": 0, "opgroup": 1, "pad_type": 0, "cipher": 3, "hash": 1,
        "reserved_cmd0_16": 0, "scpad": 1, "ext_pad": 0, "hdr_proc": 1, "digest_length": 3,
        "iv_source": 3, "hash_source": 0, "save_iv": 1, "save_hash": 0,
        "reserved_cmd0_31_30": 0,
    }  # fmt: skip
    expected_cmd1 = {
        "copy_digest": 1, "copy_header": 0, "copy_payload": 0, "copy_pad": 0,
        "reserved_cmd1_7_4": 0, "cipher_mode": 1, "reserved_cmd1_10": 0, "ssl_mac": 0,
        "hmac": 1, "byte_offset": 0, "reserved_cmd1_15_14": 0, "hash_crypt_offset": 0,
        "aes_key_length": 2, "reserved_cmd1_27": 0, "aes_dec_key": 0, "en_seqnum_chk": 1,
        "reserved_cmd1_31_30": 0,
    }  # fmt: skip
    assert {n: rec.getfieldval(n) for n in CMD0_FIELDS} == expected_cmd0
    assert {n: rec.getfieldval(n) for n in CMD1_FIELDS} == expected_cmd1
    assert rec.sa_key == AES128 + bytes(16)
    assert rec.sa_spi == 0x12345678
    assert rec.sa_seqnum_0 == rec.sa_seqnum_1 == 0
    assert rec.sa_seqnum_mask_0 == 0xFFFFFFFF
    assert rec.sa_seqnum_mask_1 == 0
    assert rec.sa_nonce == bytes(4)
    assert rec.sa_cmd0 == 0x133A1310
    assert rec.sa_cmd1 == 0x22001101
    assert raw(rec) == data


@pytest.mark.parametrize(
    ("cmd0", "cmd1", "fields"),
    [
        # eip93.md 3.5, mainline authenc(hmac(sha1),cbc(aes)) encrypt: opcode 1, AES,
        # SHA-1, pad type 3, digest 3 words, IV from state, save IV; copy digest,
        # header and pad, HMAC, CBC, AES-128, hash/crypt offset 2 words.
        (
            0x123013C1,
            0x0202110B,
            {"opcode": 1, "cipher": 3, "hash": 1, "pad_type": 3, "digest_length": 3,
             "iv_source": 2, "save_iv": 1, "copy_digest": 1, "copy_header": 1, "copy_pad": 1,
             "hmac": 1, "cipher_mode": 1, "aes_key_length": 2, "hash_crypt_offset": 2},
        ),
        # ... and decrypt: DIRECTION_IN set; copy_pad and copy_digest cleared.
        (
            0x123013C9,
            0x02021102,
            {"opcode": 1, "direction": 1, "cipher": 3, "hash": 1, "pad_type": 3,
             "digest_length": 3, "iv_source": 2, "save_iv": 1, "copy_header": 1, "hmac": 1,
             "cipher_mode": 1, "aes_key_length": 2, "hash_crypt_offset": 2},
        ),
        # eip93.md 3.5, PRNG job SA: opcode 7, cipher AES, hash 1, basic; AES-128.
        (0x00001307, 0x02000000, {"opcode": 7, "cipher": 3, "hash": 1, "aes_key_length": 2}),
    ],
)  # fmt: skip
def test_basic_mode_reference_words(cmd0: int, cmd1: int, fields: dict[str, Any]) -> None:
    rec = EIP93SARecord(_le(cmd0) + _le(cmd1) + bytes(120))
    assert _set_fields(rec, CMD0_FIELDS + CMD1_FIELDS) == fields
    assert raw(EIP93SARecord(**fields))[0:8] == _le(cmd0) + _le(cmd1)


def test_opcode_names_follow_opgroup_and_direction() -> None:
    # eip93.md 1.2: the opcode's meaning depends on opgroup and direction.
    assert EIP93SARecord(opgroup=1, opcode=0).sprintf("%opcode%") == "ESP"
    assert EIP93SARecord(opgroup=0, direction=1, opcode=1).sprintf("%opcode%") == "HASH_DECRYPT"
    assert EIP93SARecord(opgroup=0, direction=0, opcode=1).sprintf("%opcode%") == "ENCRYPT_HASH"
    assert EIP93SARecord(opgroup=1, direction=1, opcode="SSL").opcode == 2
    assert EIP93SARecord(opgroup=1, direction=0, opcode="SSL").opcode == 4
    assert EIP93SARecord(opcode="PRNG").opcode == 7
    with pytest.raises(ValueError, match="opcode 'NOPE'"):
        EIP93SARecord(opcode="NOPE")


# --- for_esp (eip93.md 4.1, 7.3-7.5) -------------------------------------------

TABLE_4_1 = [
    ("AES-CBC", 16, "HMAC-SHA1-96", 0x133A1310, 0x22001101, 0x113A1318, 0x22001102),
    ("AES-CBC", 24, "HMAC-MD5-96", 0x133A0310, 0x23001101, 0x113A0318, 0x23001102),
    ("AES-CBC", 32, "SHA2-256-128", 0x134A3310, 0x24001101, 0x114A3318, 0x24001102),
    ("3DES", 24, "HMAC-SHA1-96", 0x133A1110, 0x20001101, 0x113A1118, 0x20001102),
    ("DES", 8, "HMAC-MD5-96", 0x133A0010, 0x20001101, 0x113A0018, 0x20001102),
    # RFC 3686: Scapy's key is the 16-byte AES key followed by the 4-byte nonce.
    ("AES-CTR", 20, "SHA2-256-128", 0x134A3310, 0x22001201, 0x114A3318, 0x22001202),
]


@pytest.mark.parametrize(("crypt", "key_len", "auth", "out0", "out1", "in0", "in1"), TABLE_4_1)
def test_for_esp_table(
    crypt: str, key_len: int, auth: str, out0: int, out1: int, in0: int, in1: int
) -> None:
    key = bytes(range(1, key_len + 1))
    for direction, cmd0, cmd1 in (("out", out0, out1), ("in", in0, in1)):
        rec = _esp(direction, crypt_algo=crypt, crypt_key=key, auth_algo=auth)
        assert raw(rec)[0:8] == _le(cmd0) + _le(cmd1), direction
        assert (rec.sa_cmd0, rec.sa_cmd1) == (cmd0, cmd1)


@pytest.mark.parametrize(("crypt", "key_len", "auth", "out0", "out1", "in0", "in1"), TABLE_4_1)
def test_for_esp_invariants(
    crypt: str, key_len: int, auth: str, out0: int, out1: int, in0: int, in1: int
) -> None:
    # eip93.md 7.4 and 7.5
    icv = {"HMAC-SHA1-96": 12, "HMAC-MD5-96": 12, "SHA2-256-128": 16}[auth]
    for direction in ("out", "in"):
        rec = _esp(direction, crypt_algo=crypt, crypt_key=bytes(key_len), auth_algo=auth)
        assert (rec.opgroup, rec.opcode, rec.hdr_proc, rec.hmac) == (1, 0, 1, 1)
        assert (rec.pad_type, rec.en_seqnum_chk) == (0, 1)
        assert rec.digest_length == icv // 4
        if direction == "out":
            assert (rec.iv_source, rec.copy_digest, rec.copy_header) == (3, 1, 0)
        else:
            assert (rec.iv_source, rec.copy_digest, rec.copy_header) == (1, 0, 1)
        aes_key = key_len - 4 if crypt == "AES-CTR" else key_len
        assert rec.aes_key_length == (aes_key >> 3 if crypt.startswith("AES") else 0)


def test_for_esp_null_cipher() -> None:
    # eip93.md 4.1: cipher NULL = 15; V-esp gives it no mode flag (cipher_mode 0)
    # and no ECB flag, so save_iv stays 1 [D].
    rec = _esp("out", crypt_algo="NULL", crypt_key=b"")
    assert (rec.cipher, rec.cipher_mode, rec.aes_key_length, rec.save_iv) == (15, 0, 0, 1)
    assert (rec.sa_cmd0, rec.sa_cmd1) == (0x133A1F10, 0x20001001)
    assert rec.sa_key == bytes(32)
    assert _esp("in", crypt_algo="NULL", crypt_key=None).sa_cmd0 == 0x113A1F18


def test_for_esp_keys_spi_and_window() -> None:
    rec = _esp("out", spi=0x12345678)
    data = raw(rec)
    assert data[0x08:0x28] == AES128 + bytes(16)
    assert data[0x68:0x6C] == bytes.fromhex("78563412")  # eip93.md 7.12
    assert data[0x6C:0x74] == bytes(8)
    # V-esp window words 0xFFFFFFFF, 0 (eip93.md 4.1); V-ipsec zeroed them.
    assert data[0x74:0x7C] == bytes.fromhex("ffffffff 00000000")
    assert raw(_esp("out", seqnum_mask=(0, 0)))[0x74:0x7C] == bytes(8)
    assert data[0x7C:0x80] == bytes(4)


def test_for_esp_rfc3686_nonce() -> None:
    # eip93.md 4.1: sa_key is the key minus its last 4 bytes, sa_nonce those 4 bytes.
    key = bytes(range(0x40, 0x60)) + b"\xde\xad\xbe\xef"
    rec = _esp("in", crypt_algo="AES-CTR", crypt_key=key)
    assert rec.sa_key == key[:32]
    assert raw(rec)[0x7C:0x80] == b"\xde\xad\xbe\xef"
    assert rec.aes_key_length == 4


def test_for_esp_3des_key_padding() -> None:
    key = bytes(range(24))
    assert _esp("out", crypt_algo="3DES", crypt_key=key).sa_key == key + bytes(8)


def test_for_esp_mode_does_not_change_record() -> None:
    # The next header lives in the descriptor (eip93.md 4.2), not in the SA.
    assert raw(_esp("out", mode="transport")) == raw(_esp("out", mode="tunnel"))


@pytest.mark.parametrize(
    ("auth", "alg", "words"), [("HMAC-SHA1-96", "sha1", 5), ("HMAC-MD5-96", "md5", 4)]
)
def test_for_esp_hmac_digests(auth: str, alg: str, words: int) -> None:
    # eip93.md 7.11: sa_i_digest == pack('<5I', state after K^ipad) (MD5: '<4I');
    # sa_o_digest likewise with opad; unused trailing bytes are zero.
    rec = _esp("out", auth_algo=auth)
    block = AUTH20.ljust(64, b"\x00")
    ipad = bytes(b ^ 0x36 for b in block)
    opad = bytes(b ^ 0x5C for b in block)
    inner = compress(alg, initial_state(alg), ipad)
    outer = compress(alg, initial_state(alg), opad)
    assert rec.sa_i_digest == struct.pack(f"<{words}I", *inner).ljust(32, b"\x00")
    assert rec.sa_o_digest == struct.pack(f"<{words}I", *outer).ljust(32, b"\x00")
    # Reading the record's words back yields states that give the real HMAC.
    i_state = struct.unpack_from(f"<{words}I", rec.sa_i_digest)
    o_state = struct.unpack_from(f"<{words}I", rec.sa_o_digest)
    message = b"SPI|SEQ|IV|ciphertext" * 5
    assert (
        hmac_from_states(alg, i_state, o_state, message) == hmac.new(AUTH20, message, alg).digest()
    )


def test_for_esp_sha256_long_key() -> None:
    key = bytes(range(100))  # longer than the block: hashed first (eip93.md 5.1)
    rec = _esp(
        "in", crypt_algo="AES-CBC", crypt_key=bytes(32), auth_algo="SHA2-256-128", auth_key=key
    )
    i_state = struct.unpack("<8I", rec.sa_i_digest)
    o_state = struct.unpack("<8I", rec.sa_o_digest)
    expected = hmac.new(key, b"abc", "sha256").digest()
    assert hmac_from_states("sha256", i_state, o_state, b"abc") == expected


@pytest.mark.parametrize(
    ("auth", "icv", "digest_length"),
    [("HMAC-SHA1-96", 16, 4), ("HMAC-SHA1-96", 20, 5), ("SHA2-256-128", 12, 3),
     ("SHA2-256-128", 32, 8), ("HMAC-MD5-96", 16, 4)],
)  # fmt: skip
def test_for_esp_icv_override(auth: str, icv: int, digest_length: int) -> None:
    # ip xfrm ... auth-trunc: the driver programs alg_trunc_len / 4 words.
    assert _esp("out", auth_algo=auth, icv_size=icv).digest_length == digest_length


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"crypt_algo": "AES-GCM"}, r"unsupported cipher 'AES-GCM' \(the EIP-93 has no GCM\); "
         r"valid: AES-CBC, AES-CTR, DES, 3DES, NULL"),
        ({"crypt_algo": "aes-cbc"}, r"unknown cipher 'aes-cbc'; valid: .*did you mean AES-CBC\?"),
        ({"auth_algo": "NULL"}, r"unsupported integrity algorithm 'NULL'.*requires integrity"),
        ({"auth_algo": "SHA2-512-256"}, r"'SHA2-512-256' \(the EIP-93 has no SHA-512\)"),
        ({"auth_algo": "SHA2-224-112"}, r"unknown integrity algorithm 'SHA2-224-112'; valid: "),
        ({"crypt_key": bytes(17)}, r"AES-CBC key of 17 bytes; valid: 16, 24, 32 bytes"),
        ({"crypt_algo": "AES-CTR", "crypt_key": bytes(16)}, r"AES-CTR key of 16 bytes; valid: 20"),
        ({"crypt_algo": "DES", "crypt_key": bytes(24)}, r"DES key of 24 bytes; valid: 8 bytes"),
        ({"crypt_algo": "NULL", "crypt_key": b"x"}, r"NULL key of 1 bytes; valid: 0 bytes"),
        ({"icv_size": 10}, r"ICV of 10 bytes; valid: a multiple of 4 from 4 to 20"),
        ({"icv_size": 24}, r"ICV of 24 bytes"),
        ({"mode": "beet"}, r"unknown mode 'beet'; valid: transport, tunnel"),
        ({"spi": 1 << 32}, r"SPI 0x100000000 out of range"),
        ({"seqnum_mask": (1 << 32, 0)}, r"sequence mask \(4294967296, 0\); valid: two words"),
    ],
)  # fmt: skip
def test_for_esp_rejects(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        _esp("out", **kwargs)
    assert "\n" not in str(info.value)


def test_for_esp_rejects_direction() -> None:
    with pytest.raises(ValueError, match=r"unknown direction 'outbound'; valid: out, in"):
        _esp("outbound")


# --- generic layer properties ---------------------------------------------------


@pytest.mark.parametrize("cls", [EIP93SARecord, EIP93StateRecord])
def test_round_trip(cls: Any) -> None:
    pkt = _esp("in") if cls is EIP93SARecord else EIP93StateRecord(state_iv=b"\x01" * 16)
    assert raw(cls(raw(pkt))) == raw(pkt)


@pytest.mark.parametrize("cls", [EIP93SARecord, EIP93StateRecord])
def test_no_computed_fields(cls: Any) -> None:
    # Every field has a concrete default, so nothing is filled in by post_build.
    assert all(f.default is not None for f in cls.fields_desc)


def test_truncated_sa_record() -> None:
    data = raw(_esp("out"))
    mid_word = EIP93SARecord(data[:6])
    assert mid_word.sa_cmd0 == 0x133A1310
    assert mid_word.copy_digest == 0  # sa_cmd1 is incomplete: left at its default
    assert mid_word[Raw].load == data[4:6]
    assert raw(mid_word) == data[:6]

    mid_key = EIP93SARecord(data[:0x30])
    assert mid_key.copy_digest == 1
    assert mid_key.sa_key == AES128 + bytes(16)
    assert mid_key.sa_i_digest == bytes(32)  # not dissected
    assert mid_key[Raw].load == data[0x28:0x30]
    assert raw(mid_key) == data[:0x30]

    no_nonce = EIP93SARecord(data[:0x7E])
    assert no_nonce.sa_seqnum_mask_1 == 0
    assert no_nonce[Raw].load == data[0x7C:0x7E]


def test_truncated_state_record() -> None:
    rec = EIP93StateRecord(bytes(range(22)))
    assert rec.state_iv == bytes(range(16))
    assert rec.state_byte_cnt_0 == 0x13121110
    assert rec.state_byte_cnt_1 == 0  # only 2 of its 4 bytes are present
    assert rec[Raw].load == bytes(range(20, 22))


@pytest.mark.parametrize(("cls", "size"), [(EIP93SARecord, 128), (EIP93StateRecord, 56)])
@settings(max_examples=80, database=None, deadline=None)
@given(data=st.binary(max_size=160))
def test_any_bytes_dissect(cls: Any, size: int, data: bytes) -> None:
    pkt = cls(data)
    if data:  # Scapy treats empty input as "no input": a default packet
        assert raw(pkt) == data
    if len(data) >= size:
        rebuilt = cls(**{f.name: pkt.getfieldval(f.name) for f in cls.fields_desc})
        assert raw(rebuilt) == data[:size]


@pytest.mark.parametrize(
    ("cls", "linktype"),
    [(EIP93SARecord, DLT_EIP93_SA_RECORD), (EIP93StateRecord, DLT_EIP93_STATE_RECORD)],
)
def test_pcap_round_trip(cls: Any, linktype: int, tmp_path: Path) -> None:
    assert conf.l2types.num2layer[linktype] is cls
    assert conf.l2types.layer2num[cls] == linktype
    pkt = _esp("out") if cls is EIP93SARecord else EIP93StateRecord(state_byte_cnt_0=64)
    path = tmp_path / "records.pcap"
    wrpcap(str(path), [pkt, pkt])
    assert struct.unpack("<I", path.read_bytes()[20:24])[0] == linktype
    back = rdpcap(str(path))
    assert [type(p) for p in back] == [cls, cls]
    assert raw(back[0]) == raw(pkt)
