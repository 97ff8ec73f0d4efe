from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw

from esplab.commands.packetexpr import build_packet, detached
from esplab.commands.packetliterals import MAX_BYTES
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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'IP(dst="example.com")',
            'IP dst "example.com" is not an IPv4 address at column 4 in \'IP(dst="example.com")\'; '
            "valid: a literal IPv4 address such as 192.0.2.2; the lab does not resolve names",
        ),
        ('IP(src="localhost", dst="192.0.2.2")', 'IP src "localhost" is not an IPv4 address'),
        ('IP(dst="192.0.2.0/30")', "a network would make one packet per address"),
        ("IP(dst=3221225986)", "IP dst 3221225986 is not an IPv4 address"),
        ('IPv6(dst="localhost")', 'IPv6 dst "localhost" is not an IPv6 address'),
        ('IPv6(dst="fe80::1%eth0")', "is not an IPv6 address"),
        ('IPv6(dst="192.0.2.2")', "is not an IPv6 address"),
        ('Ether(dst="router")', 'Ether dst "router" is not a MAC address at column 7'),
        ('ARP(pdst="example.com")', 'ARP pdst "example.com" is not an IPv4 or IPv6 address'),
        ('ARP(pdst="2001:db8::1")', "does not fit the address kind ARP's other fields select"),
        (
            'IPv6(dst="2001:db8::2")/IPv6ExtHdrRouting(addresses=["a"])',
            'addresses ["a"] is not a list of IPv6 addresses',
        ),
    ],
)
def test_address_fields_take_literal_addresses_only(text: str, message: str) -> None:
    with pytest.raises(PacketExpressionError) as info:
        build_packet(text)
    assert message in str(info.value)


def test_a_name_is_refused_before_anything_resolves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def no_lookup(*args: object, **kwargs: object) -> object:
        raise AssertionError("the host's resolver was consulted")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    monkeypatch.setattr(socket, "gethostbyname", no_lookup)
    with pytest.raises(PacketExpressionError, match="does not resolve names"):
        build_packet('IP(dst="example.com")/UDP()')


@pytest.mark.parametrize(
    "text",
    [
        'IP(dst="192.0.2.2", src="192.0.2.1")',
        'IPv6(dst="2001:db8::2", src="::1")',
        'Ether(dst="02:00:00:00:00:01", src="02:AA:bb:cc:dd:ee")',
        'ARP(ptype=0x86dd, pdst="2001:db8::1")',
        'ARP(pdst="192.0.2.9", psrc="192.0.2.1", hwsrc="02:00:00:00:00:01")',
        "ARP(pdst=b'\\x01\\x02')",
        'IPv6(dst="2001:db8::2")/IPv6ExtHdrRouting(addresses=["2001:db8::5"])',
    ],
)
def test_literal_addresses_build(text: str) -> None:
    assert len(bytes(detached(build_packet(text)))) > 0


def test_nothing_is_taken_from_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from scapy.config import conf

    def no_route(*args: object, **kwargs: object) -> object:
        raise AssertionError("the host's routes or neighbours were consulted")

    monkeypatch.setattr(conf.neighbor, "resolve", no_route)
    monkeypatch.setattr(conf.route, "route", no_route)
    monkeypatch.setattr(conf.route6, "route", no_route)
    packet = build_packet('Ether()/IP(dst="192.0.2.2")/UDP()/Raw(b"x")')
    assert "dst" not in packet.fields and "src" not in packet[IP].fields  # left for send
    wire = bytes(detached(packet))
    assert wire[:12] == b"\xff" * 6 + b"\x00" * 6  # broadcast, zeros: nothing from the host
    assert IP(wire[14:]).src == "0.0.0.0"
    v6 = bytes(detached(build_packet('IPv6(dst="2001:db8::2")')))
    assert v6[8:24] == bytes(16)
    arp = bytes(detached(build_packet('ARP(pdst="192.0.2.9")')))
    assert arp[8:18] == bytes(10)  # hwsrc and psrc


@pytest.mark.parametrize("text", ['Raw(b"x"*-1)', 'Raw(-3*b"ab")'])
def test_a_negative_repeat_count_is_called_negative(text: str) -> None:
    with pytest.raises(PacketExpressionError, match=r"the count -\d is negative") as info:
        build_packet(text)
    assert "too large" not in str(info.value)


def test_a_zero_repeat_count_gives_no_bytes() -> None:
    assert bytes(build_packet('Raw(b"x"*0)')) == b""
