"""Packet expressions and hex pastes, the two readers of typed text below the command
line: random and mutated text either gives a value or one EsplabError, in bounded time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from esplab.commands.hexinput import MAX_PASTE_BYTES, parse_hex
from esplab.commands.packetexpr import build_packet
from esplab.errors import DecodeError, PacketExpressionError
from tests.fuzz.budget import budget, clean_failure, names_the_input

EXPRESSIONS = (
    'IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64)',
    'Ether(dst="02:00:00:00:00:01")/IPv6(dst="2001:db8::2")/TCP(flags="S")',
    'IP(hex("4500001c000100004011f7c8c0000201c0000202"))',
    'IP(ttl=1, options=[IPOption_RR()])/ICMP(type=8)/Raw(load="ping")',
    "p1/Raw(b'\\x00' * 3)",
    'MTKEther(port=2)/IP(dst="198.51.100.65")/UDP()',
)
#: What a mutation puts into an expression: its syntax and values at their bounds.
PIECES = (
    "(", ")", "/", "*", "+", "-", ",", "=", '"', "'", "[", "]", "{", "}", ".", "b", "x",
    "**", "99999999999", "-1", "0x", "lambda", "__class__", "IP", "Raw", "hex(", "\\",
    "\udcff", "é", "\x00", "65536", "1e308", "True", " ",
)  # fmt: skip


@st.composite
def expressions(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(EXPRESSIONS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.integers(0, 2))
        if op == 0:
            text = text[:at] + draw(st.sampled_from(PIECES)) + text[at:]
        elif op == 1:
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        else:
            text = text[:at] + draw(st.text(max_size=4)) + text[at:]
    return text


@budget(400)
@given(text=st.one_of(expressions(), st.text(max_size=60)))
def test_packet_expressions(text: str) -> None:
    from scapy.layers.inet import IP

    named = {"p1": IP(dst="192.0.2.2")}
    outcome = clean_failure(lambda: build_packet(text, named), text)
    if isinstance(outcome, Exception):
        assert isinstance(outcome, PacketExpressionError), f"{text!r}: {outcome!r}"
        assert names_the_input(text, str(outcome)), f"{text!r}: {outcome} names no value"
    else:
        assert len(bytes(outcome)) >= 0


_DUMP_ALPHABET = "0123456789abcdefABCDEFxX :|-,.\n\t;#'\"g"


@st.composite
def pastes(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:  # md.l / xxd lines, some broken
        lines = []
        for i in range(draw(st.integers(1, 8))):
            words = draw(st.lists(st.text("0123456789abcdef", min_size=1, max_size=9), max_size=5))
            ascii_col = draw(st.text(max_size=16))
            lines.append(f"{0x08000000 + 16 * i:08x}: " + " ".join(words) + "    " + ascii_col)
        return "\n".join(lines)
    if kind == 1:  # hexdump -C
        body = " ".join(draw(st.lists(st.text("0123456789abcdef", max_size=3), max_size=16)))
        return f"{draw(st.integers(0, 0xFFFF)):08x}  {body}  |{draw(st.text(max_size=16))}|"
    if kind == 2:
        return draw(st.text(_DUMP_ALPHABET, max_size=200))
    return draw(st.text(max_size=80))


@budget(400)
@given(text=pastes(), words=st.sampled_from([None, True, False]))
def test_hex_pastes(text: str, words: bool | None) -> None:
    outcome = clean_failure(lambda: parse_hex(text, words=words), text)
    if isinstance(outcome, Exception):
        assert isinstance(outcome, DecodeError), f"{text!r}: {outcome!r}"
        assert names_the_input(text, str(outcome)), f"{text!r}: {outcome} names no value"
    else:
        assert len(outcome) <= MAX_PASTE_BYTES
