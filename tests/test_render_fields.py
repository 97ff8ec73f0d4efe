"""The register view of a layer: words with their value, fields with bit ranges,
numbers right-aligned and hex zero-filled, each layer's fields indented under it."""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from scapy.layers.inet import IP, UDP

from esplab.commands.result import PacketResult
from esplab.commands.session import Session
from esplab.diff import present_fields
from esplab.layers import EIP93CommandDescriptor, EIP93SARecord, MTKEther
from esplab.render import render
from esplab.render_fields import FieldRow, layer_rows

# The README's record: sa_cmd0 0x133a1310, sa_cmd1 0x22001101.
SA = EIP93SARecord.for_esp(
    "out",
    spi=0x1000,
    crypt_algo="AES-CBC",
    crypt_key=bytes(16),
    auth_algo="HMAC-SHA1-96",
    auth_key=bytes(20),
)


def shown(result: PacketResult, width: int = 100) -> list[str]:
    buffer = StringIO()
    Console(file=buffer, width=width, color_system=None).print(render(result))
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


def rows(packet: object) -> dict[str, FieldRow]:
    return {r.name: r for r in layer_rows(packet, present_fields(packet))}  # type: ignore[arg-type]


def test_words_carry_their_value_and_fields_their_bit_ranges() -> None:
    got = rows(SA)
    assert (got["word0"].where, got["word0"].number, got["word0"].word) == (
        "+0x00",
        "0x133a1310",
        True,
    )
    assert (got["word1"].where, got["word1"].number) == ("+0x04", "0x22001101")
    assert (got["reserved_cmd0_31_30"].where, got["reserved_cmd0_31_30"].inner) == ("31:30", True)
    assert (got["save_iv"].where, got["save_iv"].number) == ("28", "1")
    assert (got["iv_source"].where, got["iv_source"].number, got["iv_source"].meaning) == (
        "25:24",
        "3",
        "PRNG",
    )
    assert (got["digest_length"].where, got["digest_length"].meaning) == ("23:20", "3_WORDS_IPSEC")
    assert got["copy_digest"].where == "0"
    assert (got["sa_key"].where, got["sa_key"].number) == ("+0x08", "")
    assert (got["sa_spi"].where, got["sa_spi"].number) == ("+0x68", "0x00001000")
    assert got["sa_nonce"].where == "+0x7c"


def test_hex_numbers_are_zero_filled_to_their_width() -> None:
    cdr = rows(EIP93CommandDescriptor(sa_addr=8, status=0))
    assert cdr["sa_addr"].number == "0x00000008"  # XLEIntField: 8 digits
    assert cdr["status"].number == "0x00"  # XBitField of 8 bits: 2 digits
    assert cdr["word7"].number == "0x00400000"  # length_ready HOST_READY, bits 23:22
    mtk = rows(MTKEther(port_mask=2, type=0x0800))
    assert (mtk["type"].number, mtk["type"].meaning) == ("0x0800", "IPv4")
    assert (mtk["port_mask"].where, mtk["port_mask"].number) == ("5:0", "0x02")


def test_eip93_sa_shows_words_and_aligned_numbers() -> None:
    session = Session()
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode "
        "transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 enc aes "
        "0x000102030405060708090a0b0c0d0e0f offload dev wan dir out"
    )
    result = session.execute("eip93 sa 0x1000")
    assert isinstance(result, PacketResult)
    lines = shown(result)
    word0 = next(line for line in lines if " word0 " in line)
    assert word0.split()[-2:] == ["word0", "0x133a1310"] and "+0x00" in word0
    # Fields sit indented under the layer's name, not under the first field.
    layer = lines.index("└── EIP93SARecord")
    assert all(
        not line.lstrip().startswith(("└──", "├──")) for line in lines[layer + 1 : layer + 40]
    )
    # Numbers end in one column: 0x133a1310, 1 and 0x00001000 are right-aligned.
    ends = {
        line.rstrip().rindex(number) + len(number)
        for line, number in (
            (word0, "0x133a1310"),
            (next(line for line in lines if " save_iv " in line), "1"),
            (next(line for line in lines if " sa_spi " in line), "0x00001000"),
        )
    }
    assert len(ends) == 1


def test_every_layer_of_a_packet_is_a_heading_with_its_fields() -> None:
    packet = IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=1234, dport=5201)
    lines = shown(PacketResult(summary="p", packet=IP(bytes(packet)), title="a packet"))
    assert lines[1] == "├── IP" and "└── UDP" in lines
    version = next(line for line in lines if " version " in line)
    assert version.split()[1:4] == ["7:4", "version", "4"]
    dport = next(line for line in lines if " dport " in line)
    assert dport.split()[:3] == ["+0x02", "dport", "5201"]  # the last layer: no guide
