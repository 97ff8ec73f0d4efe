"""Messages the fuzz tests found naming nothing, or the wrong thing: each now names the
offending value."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import EsplabError


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # A packet expression where the SPI goes was "out of range (48 characters)".
        (
            'compare IP(dst="192.0.2.2")/UDP(dport=5201)/Raw(b"x"*64) 1e9 seq 7',
            'SPI must be a number, got \'IP(dst="192.0.2.2")/UDP(dp...x"*64) (48 characters)\'',
        ),
        (
            "compare 999999999999999999999999999999 IP()",
            "SPI 999999999999999999999999999999 is out of range",
        ),
        # A syntax error at the end of an expression said only "invalid syntax".
        (
            "send ap wan IP()/",
            "packet expression 'IP()/' does not parse at its end: invalid syntax",
        ),
        ("let x = IP(ttl=)", "packet expression 'IP(ttl=)' does not parse at column 8"),
        # xdpsock's own option and the value in decimal: "-s 4294967295; valid: 64..9728".
        (
            "xdpsock wan txonly size 0xffffffff packets 16 mode zc",
            "size 0xffffffff is out of range: bytes of each frame, FCS included (xdpsock -s); "
            "valid: 64..9728",
        ),
        ("xdpsock wan txonly batch 0", "batch 0 is out of range: frames a batch (xdpsock -b)"),
        # A ';' reaching one command named a function of the code.
        ("help; help", "unexpected ';' at column 5; one command here: give each its own line"),
    ],
)
def test_the_message_names_the_value(line: str, message: str) -> None:
    with pytest.raises(EsplabError) as info:
        Session().execute(line)
    assert message in str(info.value)
