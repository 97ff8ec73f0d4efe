"""No command line, however wrong, ends in anything but a result or a one-line error."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esplab.commands.session import Session
from esplab.errors import EsplabError

NAMES = [*Session().registry.names(), "host", "pc1"]
WORDS = st.one_of(
    st.sampled_from(
        [
            "wan",
            "lan1",
            "eth0",
            "0x1000",
            "-1",
            "0",
            "99999999999999999999",
            "in",
            "out",
            "state",
            "policy",
            "add",
            "del",
            "list",
            "show",
            "src",
            "dst",
            "spi",
            "offload",
            "dev",
            "packet",
            "crypto",
            "IP()",
            'IP(dst="192.0.2.2")/UDP()',
            "Raw(b'x'*9)",
            "#3",
            "wan.wire#1",
            "--count",
            "--words",
            "sa",
            "cdr",
            "ffff",
            "zz",
            "'",
            '"',
            "(",
            ")",
            "[",
            "]",
            "\\",
            ";",
            "enc",
            "aes",
            "auth",
            "sha1",
            "0x00",
            "mtu",
            "up",
            "down",
            "rxdrop",
            "xsk0",
            "tracing",
            "off",
            "/dev/null",
            "/nonexistent/x.pcap",
            "attach",
            "native",
            "zc",
            "drop",
            "redirect",
            "create",
            "bind",
            "fill",
            "rings",
            "regs",
            "ring",
            "rdr",
            "stats",
            "import",
            "export",
            "clear",
            "1",
            "3",
            "-k",
            "-K",
            "esp-hw-offload",
            "on",
            "route",
            "neigh",
            "addr",
            "link",
            "set",
            "get",
            "flush",
            "tmpl",
            "proto",
            "esp",
            "mode",
            "tunnel",
            "aead",
            "rfc4106(gcm(aes))",
            "128",
        ]
    ),
    st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12),
)


def _fresh() -> Session:
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
        "mode transport auth sha1 0x" + "01" * 20 + " enc aes 0x" + "02" * 16
    )
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP()')
    return s


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.lists(WORDS, max_size=6))
def test_any_line_gives_a_result_or_an_esplab_error(command: str, words: list[str]) -> None:
    session = _fresh()
    line = " ".join([command, *words])
    if command in ("quit", "exit", "lab"):
        return  # these leave the session by design
    # Commands that write files (save, capture export, wireshark-keys) write here.
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            session.execute(line)
        except EsplabError as exc:
            _one_line(exc)
        finally:
            os.chdir(here)


def _one_line(exc: EsplabError) -> None:
    message = str(exc)
    assert message
    assert "\n" not in message.strip() or message.startswith("Usage:")


FIELD_VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.binary(max_size=8),
    st.none(),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=3), max_size=3),
    st.sampled_from(["192.0.2.2", "2001:db8::2", "02:00:00:00:00:01", "localhost", "::1"]),
)
LAYERS = ["IP", "IPv6", "UDP", "TCP", "ICMP", "Ether", "Dot1Q", "ARP", "ESP", "Raw"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LAYERS), st.data())
def test_any_field_value_builds_or_is_one_line(layer: str, data: st.DataObject) -> None:
    import socket
    from unittest import mock

    from esplab.commands.packetexpr import build_packet, detached, layer_whitelist

    cls = layer_whitelist()[layer]
    field = data.draw(st.sampled_from([f.name for f in cls.fields_desc]))
    text = f"{layer}({field}={data.draw(FIELD_VALUES)!r})"

    def host(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"{text} consulted the host's resolver")

    with mock.patch.object(socket, "getaddrinfo", host):
        try:
            bytes(detached(build_packet(text)))
        except EsplabError as exc:
            _one_line(exc)


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ('Raw(load=b"abc")', 3),
        ('IP(dst="192.0.2.2", options=b"\\x01\\x01\\x01\\x01")', 24),
        ('TCP(options=[("MSS", 1460)])', 24),
        ('ESP(spi=1, data=b"xx")', 10),
        ("Dot1Q(vlan=4095)", 4),
    ],
)
def test_string_packet_and_list_fields_build(text: str, length: int) -> None:
    # String, packet and list fields carry a struct format ("H") but hold no number:
    # the range check must leave them alone.
    from esplab.commands.packetexpr import build_packet, detached

    assert len(bytes(detached(build_packet(text)))) == length


@pytest.mark.parametrize("command", ["help", "trace", "ping", "xdp", "eip93"])
def test_a_quoted_newline_is_echoed_escaped_on_one_line(command: str) -> None:
    result = Session().run(f"{command} '\n'")
    assert not result.ok
    assert "\n" not in result.summary.strip() and "\\n" in result.summary
