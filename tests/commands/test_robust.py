"""No command line, however wrong, ends in anything but a result or a one-line error."""

from __future__ import annotations

import os
import tempfile

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
