"""send's options and packet: bad input is one line naming the value and what is valid,
and changes nothing (no journey, no counter)."""

from __future__ import annotations

import pytest

from esplab.cli import main
from esplab.commands.parser import SEQ_MAX, iv_sizes, parse_iv, parse_seq
from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.model.stage import Journey
from tests.commands import seed


@pytest.fixture
def session() -> Session:
    s = Session()
    for line in seed.software():
        s.execute(line)
    return s


def _untouched(s: Session) -> None:
    assert len(s.lab.journeys) == 0
    assert all(v == 0 for v in s.lab.node("ap").xfrm.mib.snapshot().values())


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        ("seq -1", "seq -1 is out of range; valid: 0 to 0xffffffffffffffff"),
        ("seq 18446744073709551616", "seq 18446744073709551616 is out of range"),
        ("seq 0xffffffffffffffff count 2", "with count 2 reaches 0x10000000000000000"),
        ("seq x", "seq must be a number, got 'x'"),
        ("iv 001", "iv '001' has an odd number of hex digits (3); valid: 8 or 16 bytes"),
        ("iv 0001", "iv of 2 bytes ('0001'); valid: 8 or 16 bytes of hex"),
        ("iv 0x", "iv '0x' has no hex digits"),
        ("iv 0xzz", "iv '0xzz' is not hex"),
    ],
)
def test_bad_seq_and_iv_are_input_errors(session: Session, option: str, fragment: str) -> None:
    with pytest.raises(BadArgument) as info:
        session.execute(f"send ap wan {seed.UDP} {option}")
    assert fragment in str(info.value)
    _untouched(session)


def test_a_seq_past_32_bits_is_the_sas_overflow(session: Session) -> None:
    # A 64-bit number is valid input; on a non-ESN SA the datapath counts the overflow.
    journey = session.execute(f"send ap wan {seed.UDP} seq 4294967296").data
    assert "sequence number 0x100000000" in journey["dropped"]
    assert session.lab.node("ap").xfrm.mib["XfrmOutStateSeqError"] == 1
    assert session.lab.node("ap").xfrm.mib["XfrmOutStateProtoError"] == 0


def test_seq_and_iv_parsers_bounds() -> None:
    assert parse_seq("0") == 0
    assert parse_seq(hex(SEQ_MAX)) == SEQ_MAX
    assert iv_sizes() == [8, 16]
    assert parse_iv("0X0001020304050607") == bytes(range(8))
    assert parse_iv("000102030405060708090A0B0C0D0E0F") == bytes(range(16))


def test_cli_exits_non_zero_on_a_bad_seq(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", 'send ap wan IP(dst="192.0.2.2")/UDP() seq -1']) != 0
    err = capsys.readouterr().err
    assert "seq -1 is out of range" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("frobnicate 3", "unknown option 'frobnicate'; valid: count, seq, iv"),
        ("cuont 3", "unknown option 'cuont'; valid: count, seq, iv; did you mean count?"),
        ("count 2 frobnicate 3", "unknown option 'frobnicate'; valid: count, seq, iv"),
        ("count 2 count 3", "option 'count' given twice; give each option once"),
        ("count", "'count' needs a value; valid: count N, seq N, iv HEX"),
    ],
)
def test_send_options_are_checked_by_name(session: Session, tail: str, message: str) -> None:
    with pytest.raises(BadArgument) as info:
        session.execute(f'send ap wan IP(dst="192.0.2.2") {tail}')
    assert str(info.value) == message
    _untouched(session)


def test_an_expression_with_spaces_still_takes_its_options(session: Session) -> None:
    session.execute('let p1 = IP(dst="192.0.2.2")')
    result = session.execute("send ap wan p1 / UDP(dport=9) count 2")
    assert result.data["sent"] == 2 and len(session.lab.journeys) == 2


def test_an_unknown_name_lists_the_let_names_first(session: Session) -> None:
    from esplab.errors import PacketExpressionError

    session.execute('let probe = IP(dst="192.0.2.2")/UDP(dport=9)')
    with pytest.raises(PacketExpressionError) as info:
        session.execute("send ap wan prob")
    assert "unknown name 'prob'" in str(info.value)
    assert "; valid: probe, AH, " in str(info.value)
    _untouched(session)


def test_a_bad_field_value_is_refused_before_sending(session: Session) -> None:
    from esplab.errors import PacketExpressionError

    with pytest.raises(PacketExpressionError) as info:
        session.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=70000)')
    assert "UDP dport 70000 out of range at column 25" in str(info.value)
    assert str(info.value).endswith("valid: 0..65535")
    _untouched(session)


def _journey(result: object) -> Journey:
    assert isinstance(result, JourneyResult)
    return result.journeys[0]


def _wire(result: object, tap: str = "wan.wire") -> bytes:
    stage = _journey(result).stage(tap)
    assert stage is not None and stage.data is not None
    return stage.data


def test_a_bare_ether_is_the_kernels_header_and_the_packet_is_routed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scapy.config import conf

    def host_lookup(*args: object, **kwargs: object) -> object:
        raise AssertionError("the host's routes or neighbours were consulted")

    monkeypatch.setattr(conf.neighbor, "resolve", host_lookup)
    monkeypatch.setattr(conf.route, "route", host_lookup)
    s = Session()
    plain = _wire(s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=9)'))
    framed = s.execute('send ap wan Ether()/IP(dst="192.0.2.2")/UDP(dport=9)')
    assert _wire(framed) == plain
    assert "ap.route" in _journey(framed).taps()
    s.execute('send ap lan2 Ether()/Dot1Q(vlan=100)/IP(dst="198.51.100.66")/UDP()')
    s.execute('let f = Ether()/IP(dst="192.0.2.2")')


def test_ether_fields_are_sent_as_given() -> None:
    s = Session()
    line = 'send ap wan Ether(dst="02:00:00:00:00:99", type=0x86dd)/IP(dst="192.0.2.2")/UDP()'
    result = s.execute(line)
    wire = _wire(result)
    assert wire[:6] == bytes.fromhex("020000000099")
    assert wire[6:12] == bytes.fromhex(s.lab.node("ap").devs["wan"].mac.replace(":", ""))
    assert wire[12:14] == b"\x86\xdd"
    assert "ap.route" not in _journey(result).taps()
    assert wire[14 + 12 : 14 + 16] == bytes([192, 0, 2, 1])  # the device's address


def test_a_named_frame_keeps_its_header_and_count_repeats_it() -> None:
    s = Session()
    s.execute('let f = Ether(src="02:00:00:00:00:42")/IP(dst="192.0.2.2")/UDP()')
    result = s.execute("send ap wan f count 3")
    assert result.data["sent"] == 3 and len(s.lab.journeys) == 3
    assert _wire(result)[6:12] == bytes.fromhex("020000000042")


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (
            'send ap wan Ether(src="02:00:00:00:00:01")/IP(dst="192.0.2.2")/UDP() seq 3',
            "seq and iv pin the ESP of a routed packet",
        ),
        (
            'send ap wan Dot1Q(vlan=5)/IP(dst="192.0.2.2")/UDP()',
            "is a VLAN tag without an Ethernet header; valid: Ether()/Dot1Q(vlan=N)/...",
        ),
        (
            "send ap wan Ether(type=0x800)/Raw(b'abc')",
            "EtherType 0x0800 announces IPv4, but what follows is not an IP packet the lab's "
            "nodes can receive (its first byte says IPv6: IPv6 header truncated: 3 bytes)",
        ),
        (
            'send ap wan Ether(src="02:00:00:00:00:01")/IP(dst="192.0.2.2", len=10)/UDP()',
            "bad IPv4 lengths",
        ),
    ],
)
def test_frames_send_cannot_take_are_refused(line: str, fragment: str) -> None:
    s = Session()
    with pytest.raises(BadArgument) as info:
        s.execute(line)
    assert fragment in str(info.value)
    assert len(s.lab.journeys) == 0
    assert s.lab.node("ap").devs["wan"].counters.tx_packets == 0


def test_compare_refuses_an_ethernet_header_it_would_drop(session: Session) -> None:
    with pytest.raises(BadArgument, match="is an Ethernet frame with its own header"):
        session.execute('compare 0x1000 Ether(dst="02:00:00:00:00:99")/IP(dst="192.0.2.2")')


@pytest.mark.parametrize(
    "line",
    ['send ap wan Ether()/ARP(pdst="192.0.2.2")', "send ap wan Ether(type=0x88b5)/Raw(b'a'*50)"],
)
def test_a_frame_of_another_ethertype_goes_as_it_is(line: str) -> None:
    # The nodes model IPv4 and IPv6 only: the host has no handler for it (rx_dropped).
    s = Session()
    result = s.execute(line)
    assert isinstance(result, JourneyResult)
    assert result.journeys[0].verdict.startswith(
        "dropped at host.rx: no protocol handler for EtherType"
    )
    assert s.lab.node("host").devs["eth0"].counters.rx_dropped == 1
