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
