from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw

from esplab.commands.packetexpr import MAX_BYTES, build_packet
from esplab.errors import PacketExpressionError


def test_scapy_syntax_builds_the_same_bytes_as_scapy() -> None:
    built = build_packet('IP(dst="192.0.2.2", ttl=3)/UDP(dport=5001)/Raw(b"x"*64)')
    expected = IP(dst="192.0.2.2", ttl=3) / UDP(dport=5001) / Raw(b"x" * 64)
    assert bytes(built) == bytes(expected)


def test_hex_bytes_and_repetition_both_ways() -> None:
    assert bytes(build_packet('Raw(hex("4500"))')) == b"\x45\x00"
    assert bytes(build_packet('Raw(bytes.fromhex("ab cd"))')) == b"\xab\xcd"
    assert bytes(build_packet("Raw(3*b'ab')")) == b"ababab"


def test_named_packets_are_copied() -> None:
    p1 = build_packet('IP(dst="192.0.2.2")')
    combined = build_packet("p1/UDP()", {"p1": p1})
    assert combined[IP].dst == "192.0.2.2" and UDP in combined
    assert UDP not in p1


def test_esplab_layers_are_allowed() -> None:
    pkt = build_packet("XDPDesc(addr=4096, len=64)")
    assert bytes(pkt)[:8] == (4096).to_bytes(8, "little")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('__import__("os").system("true")', "cannot be called"),
        ('__import__("os")', "'__import__' is not a layer"),
        ("open('/etc/passwd')", "'open' is not a layer"),
        ("IP().__class__", "is not a layer"),
        ("IP(dst=__import__('os'))", "is not a literal"),
        ("[x for x in ()]", "is not a layer"),
        ("lambda: 0", "is not a layer"),
        ("IP(**{'dst': '1'})", "'**' is not allowed"),
        ("os.system", "is not a layer"),
        ("Raw(b'x'*100000)", f"at most {MAX_BYTES}"),
        ("IP(dts='1.2.3.4')", "IP has no field 'dts'"),
        ("IP(dst='1.2.3.4'", "does not parse"),
        ("", "empty packet expression"),
        ("Rwa()", "did you mean Raw?"),
    ],
)
def test_refused_expressions(text: str, fragment: str) -> None:
    with pytest.raises(PacketExpressionError) as info:
        build_packet(text)
    assert fragment in str(info.value)


def test_refusal_executes_nothing(tmp_path: object) -> None:
    import builtins

    calls: list[str] = []
    original_import = builtins.__import__

    def spy(name: str, *args: object, **kwargs: object) -> object:
        if name == "os.path.evil":
            calls.append(name)
        return original_import(name, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.raises(PacketExpressionError):
        build_packet('__import__("os.path.evil")')
    assert calls == []


@pytest.mark.parametrize("text", ["-" * 5000 + "1", "/".join(["IP()"] * 3000)])
def test_a_pathological_paste_is_one_error(text: str) -> None:
    with pytest.raises(PacketExpressionError, match="nests too deeply"):
        build_packet(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'IP(dst="192.0.2.2")/UDP(dport=70000)',
            "UDP dport 70000 out of range at column 25 in "
            "'IP(dst=\"192.0.2.2\")/UDP(dport=70000)'; valid: 0..65535",
        ),
        (
            "UDP(sport=1, dport=-1)",
            "UDP dport -1 out of range at column 14 in 'UDP(sport=1, dport=-1)'; valid: 0..65535",
        ),
        # Scapy would mask these to 4 and 12 bits without a word.
        (
            "IP(version=20)",
            "IP version 20 out of range at column 4 in 'IP(version=20)'; valid: 0..15",
        ),
        ("Dot1Q(vlan=5000)", "Dot1Q vlan 5000 out of range at column 7"),
        (
            "ESP(spi=0x100000000)",
            "ESP spi 0x100000000 out of range at column 5 in 'ESP(spi=0x100000000)'; "
            "valid: 0x0..0xffffffff",
        ),
        ("UDP(dport=1.5)", "UDP dport 1.5 is not a whole number at column 5"),
        ("IP(tos=b'a')", "IP tos b'a' is not a whole number at column 4"),
        ("UDP(dport='domian')", "UDP dport 'domian' is not a name this field knows"),
        ("UDP(dport=[1, 2])", "UDP dport [1, 2] is a list at column 5"),
        ("UDP(dport=(1, 5))", "UDP dport (1, 5) is a list"),
        ("IP(flags='XX')", "IP flags 'XX' is refused by Scapy: 'XX' is not in list at column 4"),
        ("TCP(flags='Z')", "valid: letters from FSRPAUECN, or a number"),
    ],
)
def test_a_bad_field_value_is_one_line_with_its_column(text: str, message: str) -> None:
    with pytest.raises(PacketExpressionError) as info:
        build_packet(text)
    text_of_error = str(info.value)
    assert message in text_of_error
    assert "\n" not in text_of_error and "RawVal" not in text_of_error


def test_a_name_the_field_knows_suggests_the_closest() -> None:
    with pytest.raises(PacketExpressionError, match="did you mean domain"):
        build_packet("UDP(dport='domian')")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("UDP(sport=0, dport=65535)", bytes.fromhex("0000ffff00080000")),
        ("UDP(sport='domain', dport=True)", bytes.fromhex("0035000100080000")),
        ("ESP(spi=0xFFFFFFFF, seq=0)", bytes.fromhex("ffffffff00000000")),
    ],
)
def test_values_at_the_edges_build(text: str, expected: bytes) -> None:
    assert bytes(build_packet(text)) == expected


def test_list_fields_still_take_lists() -> None:
    built = build_packet("TCP(options=[('MSS', 1460)])")
    assert built.options == [("MSS", 1460)]
