from __future__ import annotations

import pytest

from esplab.commands.result import ErrorResult, PacketResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, DecodeError
from esplab.layers import EIP93SARecord


def decode(line: str) -> PacketResult:
    result = Session().execute(line)
    assert isinstance(result, PacketResult)
    return result


def test_sa_record_from_hex_field_by_field() -> None:
    # eip93.md 4.1: AES-128-CBC + HMAC-SHA1-96 outbound is 0x133A1310 / 0x22001101,
    # stored little-endian; sa_spi is the numeric SPI as u32 LE at 0x68 (5.2).
    record = bytearray(128)
    record[0:8] = bytes.fromhex("10133a1301110022")
    record[0x68:0x6C] = bytes.fromhex("00100000")
    result = decode("decode sa " + record.hex())
    sa = result.packet
    assert isinstance(sa, EIP93SARecord)
    assert sa.sa_cmd0 == 0x133A1310 and sa.sa_cmd1 == 0x22001101
    assert sa.sa_spi == 0x1000
    assert result.data == {"layer": "EIP93SARecord", "length": 128, "hex": record.hex()}


def test_memory_dump_words() -> None:
    # u-boot md.l output: little-endian words (eip93.md 5.2), 8 words per line.
    lines = "\n".join(
        f"{0x1000 + 32 * i:08x}: " + " ".join(["133a1310", "22001101"] + ["00000000"] * 6)
        if i == 0
        else f"{0x1000 + 32 * i:08x}: " + " ".join(["00000000"] * 8)
        for i in range(4)
    )
    record = bytes.fromhex("10133a1301110022") + bytes(120)
    for text in (lines, lines.replace("\n", " ")):  # as pasted, or joined into one line
        result = decode("decode sa " + text)
        assert result.data["hex"] == record.hex()  # every address column dropped


def test_aliases_and_case() -> None:
    # eip93.md 2.4: ESP outbound word 0 = 0x02000011 | nh << 8, word 7 = 0x00400000 | len.
    words = ["0x02000411", "0", "0", "0", "0", "0", "0", "0x00400054"]
    result = decode("decode CDR --words " + " ".join(words))
    assert result.packet is not None
    assert result.packet.pad_value == 4
    assert result.packet.length == 84


def test_extra_bytes_are_noted() -> None:
    result = decode("decode xdp " + "00" * 20)
    assert result.notes == ["4 bytes after the 16-byte record are shown as payload"]


@pytest.mark.parametrize(
    ("line", "error", "fragment"),
    [
        (
            "decode bogus 00",
            BadArgument,
            "unknown layer 'bogus'; valid: cdr, cmd, rdr, result, sa, state, mtk",
        ),
        ("decode eip93sarecord 00", DecodeError, "needs at least 128 bytes, got 1"),
        ("decode sa 0", DecodeError, "odd number of hex digits (1)"),
        ("decode sa xyz", DecodeError, "'xyz' is not hex"),
        ("decode sa --words --bytes 00", BadArgument, "exclude each other"),
    ],
)
def test_bad_input_one_line(line: str, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error) as info:
        Session().execute(line)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_misspelt_layer_suggests() -> None:
    result = Session().run("decode EIP93SARecrod 00")
    assert isinstance(result, ErrorResult)
    assert "did you mean EIP93SARecord?" in result.summary


def test_the_help_example_runs_as_typed() -> None:
    # The example is a whole result descriptor as u-boot md.l prints it: PE_READY in
    # both ready fields, 116 bytes written (eip93.md 2.2).
    session = Session()
    example = session.registry.lookup("decode").example
    result = session.execute(example)
    assert isinstance(result, PacketResult) and result.packet is not None
    assert result.packet.errors() == [] and result.packet.length == 116


def test_every_layer_of_the_package_decodes_by_name() -> None:
    # The RX descriptor (QDMARxDescriptor, airoha-dsa-xfrm.md 1.6) included.
    from esplab import layers

    for name in layers.__all__:
        cls = getattr(layers, name)
        if name == "LAYERS" or not isinstance(cls, type):
            continue
        assert name in layers.LAYERS, name
    result = decode("decode QDMARxDescriptor " + "00" * 32)
    assert result.data["layer"] == "QDMARxDescriptor"


def test_dump_pasted_right_after_the_layer_name() -> None:
    # 'decode sa' typed, then a dump pasted without a space: the first address is
    # glued to the layer name ('sa08000000:'); the split is taken only when the rest
    # of the line reads as a dump line, so nothing else changes meaning.
    record = bytes.fromhex("10133a1301110022") + bytes(120)
    words = [record[i : i + 4][::-1].hex() for i in range(0, 128, 4)]
    md = "\n".join(
        f"{0x08000000 + 16 * i:08x}: " + " ".join(words[4 * i : 4 * i + 4]) + "    ................"
        for i in range(8)
    )
    hexdump = "\n".join(
        f"{16 * i:08x}  " + " ".join(f"{b:02x}" for b in record[16 * i : 16 * i + 16]) + "  |.|"
        for i in range(8)
    )
    for line in ("decode sa" + md, "decode SA" + md, "decode sa" + hexdump):
        result = decode(line)
        assert result.data["layer"] == "EIP93SARecord"
        assert result.data["hex"] == record.hex()
    with pytest.raises(BadArgument, match="unknown layer 'sa00'"):
        Session().execute("decode sa00 11")  # no dump line: still an unknown layer
