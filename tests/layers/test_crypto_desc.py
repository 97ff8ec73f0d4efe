"""EIP-93 command and result descriptors: bit-exact against eip93.md sections 2, 4 and 7."""

from __future__ import annotations

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

from esplab.layers.crypto_desc import (
    DESCRIPTOR_SIZE,
    EXT_ERR_NAMES,
    HOST_READY,
    PE_READY,
    READY_NAMES,
    EIP93CommandDescriptor,
    EIP93ResultDescriptor,
)
from esplab.layers.linktypes import DLT_EIP93_CMD_DESC, DLT_EIP93_RES_DESC

CLASSES = [EIP93CommandDescriptor, EIP93ResultDescriptor]


def _words(*words: int) -> bytes:
    return struct.pack("<8I", *words)


# --- known bytes ------------------------------------------------------------


@pytest.mark.parametrize("next_header", [4, 6, 17, 41])
def test_esp_outbound_word0(next_header: int) -> None:
    # eip93.md 2.4 / 7.6: ESP outbound word 0 == 0x02000011 | next_header << 8.
    cmd = EIP93CommandDescriptor(pad_ctrl_stat=2, pad_value=next_header, hash_final=1)
    assert raw(cmd)[0:4] == struct.pack("<I", 0x02000011 | next_header << 8)


def test_esp_tunnel_command_bytes() -> None:
    # eip93.md 4.5 worked example, outbound: word 0 = 0x02000411, word 7 =
    # 0x00400054 (84-byte inner packet). Addresses per 4.2: src = ESP header + 8 + 16.
    expected = _words(
        0x02000411, 0x1000_0018, 0x1000_0000, 0x2000_0000, 0, 0x8123_4560, 0x0380_0000, 0x00400054
    )
    cmd = EIP93CommandDescriptor(
        pad_ctrl_stat="ALIGN_4",
        pad_value=4,
        hash_final=1,
        ready="HOST_READY",
        src_addr=0x1000_0018,
        dst_addr=0x1000_0000,
        sa_addr=0x2000_0000,
        state_addr=0,
        arc4_addr=0x8123_4560,
        user_id=0x0380_0000,  # vschagen IPSEC | FINISH | LAST (bits 23, 24, 25)
        length=84,
    )
    assert raw(cmd) == expected
    assert len(raw(cmd)) == DESCRIPTOR_SIZE


def test_known_bytes_dissect_field_by_field() -> None:
    # The same eip93.md 4.5 descriptor, decoded.
    cmd = EIP93CommandDescriptor(
        _words(0x02000411, 0x10000018, 0x10000000, 0x20000000, 0, 0x81234560, 0x03800000, 0x400054)
    )
    assert cmd.pad_ctrl_stat == 2
    assert cmd.status == 0
    assert cmd.pad_value == 4
    assert cmd.prng_mode == 0
    assert cmd.halt_mode == 0
    assert cmd.hash_final == 1
    assert cmd.init_arc4 == 0
    assert cmd.reserved_ctrl_2 == 0
    assert cmd.ready == HOST_READY
    assert cmd.src_addr == 0x10000018
    assert cmd.dst_addr == 0x10000000
    assert cmd.sa_addr == 0x20000000
    assert cmd.state_addr == 0
    assert cmd.arc4_addr == 0x81234560
    assert cmd.user_id == 0x03800000
    assert cmd.bypass == 0
    assert cmd.length_ready == HOST_READY
    assert cmd.reserved_len_21_20 == 0
    assert cmd.length == 84
    assert Raw not in cmd


@pytest.mark.parametrize(
    ("word0", "word7", "fields"),
    [
        # eip93.md 2.4: basic skcipher/AEAD (mainline)
        (0x00000001, 0x00400000 | 4096, {"length": 4096}),
        # eip93.md 2.4: hash, last block
        (0x00000011, 0x00400000 | 64, {"hash_final": 1, "length": 64}),
        # eip93.md 4.5: inbound of the worked example, 132 bytes, template word 0
        (0x02000011, 0x00400084, {"pad_ctrl_stat": 2, "hash_final": 1, "length": 132}),
        # eip93.md 2.3: length is 20 bits wide (at most 1 MiB - 1)
        (0x00000001, 0x00400000 | 0xFFFFF, {"length": 0xFFFFF}),
        # eip93.md 3.5: the PRNG job uses prng_mode 1 (init) and 2 (generate)
        (0x00000041, 0x00400000 | 4080, {"prng_mode": "INIT", "length": 4080}),
        (0x00000081, 0x00400000 | 4080, {"prng_mode": "GENERATE", "length": 4080}),
    ],
)
def test_driver_command_words(word0: int, word7: int, fields: dict[str, Any]) -> None:
    cmd = EIP93CommandDescriptor(**fields)
    data = raw(cmd)
    assert data[0:4] == struct.pack("<I", word0)
    assert data[28:32] == struct.pack("<I", word7)


# Every bit of word 0 and word 7 on its own: (bit, field, value). eip93.md 2.1-2.3.
COMMAND_BITS = [
    (0, "ready", 1), (1, "ready", 2), (2, "reserved_ctrl_2", 1), (3, "init_arc4", 1),
    (4, "hash_final", 1), (5, "halt_mode", 1), (6, "prng_mode", 1), (7, "prng_mode", 2),
    *[(b, "pad_value", 1 << (b - 8)) for b in range(8, 16)],
    *[(b, "status", 1 << (b - 16)) for b in range(16, 24)],
    *[(b, "pad_ctrl_stat", 1 << (b - 24)) for b in range(24, 32)],
]  # fmt: skip
RESULT_BITS = [
    *[(b, f, v) for b, f, v in COMMAND_BITS if b < 16],
    (16, "auth_err", 1), (17, "pad_err", 1), (18, "seqnum_err", 1), (19, "ext_err", 1),
    *[(b, "ext_err_code", 1 << (b - 20)) for b in range(20, 24)],
    *[(b, "pad_ctrl_stat", 1 << (b - 24)) for b in range(24, 32)],
]  # fmt: skip
LENGTH_BITS = [
    *[(b, "length", 1 << b) for b in range(20)],
    (20, "reserved_len_21_20", 1), (21, "reserved_len_21_20", 2),
    (22, "length_ready", 1), (23, "length_ready", 2),
    *[(b, "bypass", 1 << (b - 24)) for b in range(24, 32)],
]  # fmt: skip


def _only_field_set(pkt: Any, fields: list[str]) -> dict[str, int]:
    return {f: int(pkt.getfieldval(f)) for f in fields if int(pkt.getfieldval(f))}


@pytest.mark.parametrize(
    ("cls", "table"),
    [(EIP93CommandDescriptor, COMMAND_BITS), (EIP93ResultDescriptor, RESULT_BITS)],
)
def test_word0_bit_positions(cls: Any, table: list[tuple[int, str, int]]) -> None:
    word0_fields = [f.name for f in cls.fields_desc[: cls.fields_desc.index(cls.src_addr)]]
    assert len(table) == 32
    for bit, field, value in table:
        pkt = cls(struct.pack("<I", 1 << bit) + bytes(28))
        assert _only_field_set(pkt, word0_fields) == {field: value}, bit
        built = cls(**{"ready": 0, field: value})
        assert raw(built)[0:4] == struct.pack("<I", 1 << bit)


@pytest.mark.parametrize("cls", CLASSES)
def test_word7_bit_positions(cls: Any) -> None:
    names = ["bypass", "length_ready", "reserved_len_21_20", "length"]
    for bit, field, value in LENGTH_BITS:
        pkt = cls(bytes(28) + struct.pack("<I", 1 << bit))
        assert _only_field_set(pkt, names) == {field: value}, bit


@pytest.mark.parametrize("cls", CLASSES)
def test_address_words(cls: Any) -> None:
    # Words 1..6 at 0x04..0x18, u32 LE each (eip93.md 2).
    data = _words(0, 0x11223344, 0x55667788, 0x99AABBCC, 0xDDEEFF00, 0x01020304, 0xCAFEF00D, 0)
    pkt = cls(data)
    assert pkt.src_addr == 0x11223344
    assert pkt.dst_addr == 0x55667788
    assert pkt.sa_addr == 0x99AABBCC
    assert pkt.state_addr == 0xDDEEFF00
    assert pkt.arc4_addr == 0x01020304
    assert pkt.user_id == 0xCAFEF00D
    assert data[4:8] == bytes.fromhex("44332211")


# --- result status --------------------------------------------------------------


def test_success_result_of_worked_example() -> None:
    # eip93.md 4.5 inbound: result length 108, bits 15:8 = 0x04, bits 23:16 = 0, and
    # both ready fields PE_READY (eip93.md 7.10).
    res = EIP93ResultDescriptor(_words(0x02000412, 0, 0, 0, 0, 0, 0, 0x0080006C))
    assert res.ready == PE_READY
    assert res.length_ready == PE_READY
    assert res.pad_value == 4
    assert res.hash_final == 1
    assert res.length == 108
    assert res.status_byte == 0
    assert res.errors() == []


@pytest.mark.parametrize(
    ("status", "errors"),
    [
        # eip93.md 2.2 / 7.9: ICV failure sets AUTH_ERR alone; vschagen sees status 1
        (0x01, ["AUTH_ERR"]),
        (0x02, ["PAD_ERR"]),
        (0x04, ["SEQNUM_ERR"]),
        (0x03, ["AUTH_ERR", "PAD_ERR"]),
        # EXT_ERR with code 5 (ZERO_LENGTH), code 4 (SPI), code 0 (BUS)
        (0x58, ["EXT_ERR", "ZERO_LENGTH"]),
        (0x48, ["EXT_ERR", "SPI"]),
        (0x08, ["EXT_ERR", "BUS"]),
        (0x88, ["EXT_ERR", "PROCESSING"]),
        (0xF8, ["EXT_ERR", "EXT_CODE_15"]),
        # a code without EXT_ERR is not an error
        (0x50, []),
    ],
)
def test_result_errors(status: int, errors: list[str]) -> None:
    res = EIP93ResultDescriptor(_words(0x00000002 | status << 16, 0, 0, 0, 0, 0, 0, 0x00800000))
    assert res.errors() == errors
    assert res.status_byte == status


def test_result_flags_build() -> None:
    res = EIP93ResultDescriptor(auth_err=1, ext_err=1, ext_err_code="INVALID_CRYPTO_ALGO")
    assert raw(res)[0:4] == struct.pack("<I", 0x00390002)


def test_ext_code_is_named_only_while_ext_err_is_set() -> None:
    # eip93.md 2.2: bits 23:20 hold a code when EXT_ERR (bit 19) is set; code 0 is BUS.
    ok = EIP93ResultDescriptor(_words(0x00000002, 0, 0, 0, 0, 0, 0, 0x00800000))
    field = ok.get_field("ext_err_code")
    assert field.i2repr(ok, ok.ext_err_code) == "0 (ext_err clear)"
    assert "BUS" not in str(ok.show(dump=True))
    bus = EIP93ResultDescriptor(_words(0x00080002, 0, 0, 0, 0, 0, 0, 0x00800000))
    assert field.i2repr(bus, bus.ext_err_code) == "BUS" and bus.errors() == ["EXT_ERR", "BUS"]


def test_enum_tables() -> None:
    # eip93.md 2.2 (L-regs names) and 1.5
    assert EXT_ERR_NAMES == {
        0: "BUS",
        1: "DESC_OWNER",
        2: "INVALID_CRYPTO_OP",
        3: "INVALID_CRYPTO_ALGO",
        4: "SPI",
        5: "ZERO_LENGTH",
        6: "INVALID_PK_LENGTH",
        7: "BLOCK_SIZE_ERR",
        8: "PROCESSING",
    }
    assert READY_NAMES == {0: "EMPTY", 1: "HOST_READY", 2: "PE_READY"}


def test_from_command_echoes_words() -> None:
    # eip93.md 7.10: words 1-6 equal the command's, bit 4 is preserved, ready = 2.
    cmd = EIP93CommandDescriptor(
        _words(
            0x02000411, 0x10000018, 0x10000000, 0x20000000, 0x30, 0x81234560, 0x3800000, 0x400054
        )
    )
    res = EIP93ResultDescriptor.from_command(cmd, length=132)
    data = raw(res)
    assert data[4:28] == raw(cmd)[4:28]
    assert data[0:4] == struct.pack("<I", 0x00000012)
    assert data[28:32] == struct.pack("<I", 0x00800000 | 132)
    assert EIP93ResultDescriptor.from_command(cmd, auth_err=1).errors() == ["AUTH_ERR"]


# --- generic layer properties ---------------------------------------------------


@pytest.mark.parametrize("cls", CLASSES)
def test_round_trip(cls: Any) -> None:
    pkt = cls(pad_value=50, src_addr=0xDEADBEEF, user_id=7, length=1234, bypass=3)
    assert raw(cls(raw(pkt))) == raw(pkt)
    assert len(raw(pkt)) == DESCRIPTOR_SIZE


@pytest.mark.parametrize("cls", CLASSES)
def test_no_computed_fields(cls: Any) -> None:
    # Every field has a concrete default, so nothing is filled in by post_build.
    assert all(f.default is not None for f in cls.fields_desc)
    assert len(raw(cls())) == DESCRIPTOR_SIZE


def test_default_ready_values() -> None:
    # eip93.md 1.5: the host writes HOST_READY in both places, the engine PE_READY.
    assert raw(EIP93CommandDescriptor()) == _words(1, 0, 0, 0, 0, 0, 0, 0x00400000)
    assert raw(EIP93ResultDescriptor()) == _words(2, 0, 0, 0, 0, 0, 0, 0x00800000)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("cut", [1, 3, 4, 5, 13, 24, 31])
def test_truncated(cls: Any, cut: int) -> None:
    data = _words(0x02000411, 1, 2, 3, 4, 5, 6, 0x00400054)[:cut]
    pkt = cls(data)
    whole = cut // 4
    # Whole words are decoded; the rest stay at their defaults; leftovers are Raw.
    if whole >= 1:
        assert pkt.pad_value == 4
    if whole >= 2:
        assert pkt.src_addr == 1
    else:
        assert pkt.src_addr == 0
    assert pkt.length == 0
    if cut % 4:
        assert pkt[Raw].load == data[whole * 4 :]
    else:
        assert Raw not in pkt
    assert raw(pkt) == data


@pytest.mark.parametrize("cls", CLASSES)
def test_extra_bytes_become_payload(cls: Any) -> None:
    pkt = cls(_words(1, 0, 0, 0, 0, 0, 0, 0) + b"xyz")
    assert pkt[Raw].load == b"xyz"


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=80, database=None, deadline=None)
@given(data=st.binary(max_size=48))
def test_any_bytes_dissect(cls: Any, data: bytes) -> None:
    pkt = cls(data)
    if data:  # Scapy treats empty input as "no input": a default packet
        assert raw(pkt) == data
    if len(data) >= DESCRIPTOR_SIZE:
        # Every bit, reserved ones included, survives a rebuild from the fields.
        rebuilt = cls(**{f.name: pkt.getfieldval(f.name) for f in cls.fields_desc})
        assert raw(rebuilt) == data[:DESCRIPTOR_SIZE]


@pytest.mark.parametrize(
    ("cls", "linktype"),
    [(EIP93CommandDescriptor, DLT_EIP93_CMD_DESC), (EIP93ResultDescriptor, DLT_EIP93_RES_DESC)],
)
def test_pcap_round_trip(cls: Any, linktype: int, tmp_path: Path) -> None:
    assert conf.l2types.num2layer[linktype] is cls
    assert conf.l2types.layer2num[cls] == linktype
    pkt = cls(pad_value=17, src_addr=0x1234, length=99)
    path = tmp_path / "desc.pcap"
    wrpcap(str(path), [pkt])
    # pcap global header: link type at offset 20, little-endian on this writer.
    assert struct.unpack("<I", path.read_bytes()[20:24])[0] == linktype
    (back,) = rdpcap(str(path))
    assert type(back) is cls
    assert raw(back) == raw(pkt)
