"""diff A B [--ignore ...]: parse and execute, with no terminal."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console
from scapy.layers.inet import IP

from esplab.commands.handlers import all_commands, diff
from esplab.commands.handlers.diff import DiffResult, esp_details
from esplab.commands.packetexpr import detached
from esplab.commands.registry import Registry
from esplab.commands.session import Session
from esplab.errors import BadArgument, NoSuchPacket, PacketExpressionError, UsageError
from esplab.render import render
from tests.commands import seed


def new_session() -> Session:
    """A session that has the diff command (once, whether or not it is registered)."""
    commands = all_commands()
    names = {c.name for c in commands}
    return Session(
        registry=Registry([*commands, *(c for c in diff.COMMANDS if c.name not in names)])
    )


@pytest.fixture
def session() -> Session:
    s = new_session()
    for line in seed.software():
        s.execute(line)
    s.execute(f"send ap wan {seed.UDP} seq 5 iv {bytes(range(16)).hex()}")
    s.execute(f"send ap wan {seed.UDP} seq 6 iv {bytes(range(16)).hex()}")
    return s


def run(session: Session, line: str) -> DiffResult:
    result = session.execute(line)
    assert isinstance(result, DiffResult)
    return result


def test_two_captures_are_compared_through_esp(session: Session) -> None:
    result = run(session, "diff wan.wire#1 wan.wire#2")
    fields = [(row[0], row[1]) for row in result.rows]
    assert fields == [("ESP", "seq"), ("ESPTrailer", "icv")]  # same IV, same plaintext
    assert result.rows[0][2:] == ("5", "6")
    assert result.columns == ("layer", "field", "wan.wire#1", "wan.wire#2")
    assert result.notes == ["ESP compared through SPI 0x1000"]
    wire, plaintext = result.views
    assert wire.ranges and not plaintext.ranges
    assert result.data["esp"][0]["pad_len"] == 6 and result.data["esp"][0]["icv_ok"]
    assert result.summary.startswith("wan.wire#1 vs wan.wire#2: 2 field(s) differ")


def test_ignore_list(session: Session) -> None:
    result = run(session, "diff wan.wire#1 wan.wire#2 --ignore ESP.seq,icv")
    assert result.rows == []
    assert result.views[0].ranges == ()  # the ignored fields' bytes do not count either
    assert result.summary.endswith(": identical")
    partial = run(session, "diff wan.wire#1 wan.wire#2 --ignore seq")
    icv_start = len(partial.views[0].left) - 12
    assert partial.views[0].ranges == ((icv_start, icv_start + 12),)
    with pytest.raises(BadArgument, match="--ignore needs field names"):
        session.execute("diff wan.wire#1 wan.wire#2 --ignore ,")


def test_identical_packets_give_no_rows(session: Session) -> None:
    result = run(session, "diff wan.wire#1 wan.wire#1")
    assert result.rows == [] and result.identical and result.data["identical"]
    assert result.summary == "wan.wire#1 vs wan.wire#1: identical"


def test_a_tap_alone_is_its_last_packet(session: Session) -> None:
    result = run(session, "diff wan.wire wan.wire#2")
    assert result.identical


def test_named_packets_expressions_and_hex(session: Session) -> None:
    session.execute('let p1 = IP(dst="192.0.2.2", ttl=3)/UDP(dport=9)')
    session.execute('let p2 = IP(dst="192.0.2.2", ttl=4)/UDP(dport=9)')
    result = run(session, "diff p1 p2 --ignore chksum")
    assert [tuple(r) for r in result.rows] == [("IP", "ttl", "3", "4")]
    result = run(session, 'diff p1 IP(dst="192.0.2.3",ttl=3)/UDP(dport=9) --ignore chksum')
    assert [tuple(r) for r in result.rows] == [("IP", "dst", "192.0.2.2", "192.0.2.3")]
    raw = bytes(detached(session.named["p2"])).hex()  # the bytes diff reads for p2
    result = run(session, f"diff p1 {raw} --ignore chksum")  # hex takes p1's class
    assert [tuple(r) for r in result.rows] == [("IP", "ttl", "3", "4")]
    result = run(session, f"diff {raw} {raw}")
    assert result.identical and isinstance(IP(bytes.fromhex(raw)), IP)


def test_capture_against_a_different_layer_class(session: Session) -> None:
    result = run(session, "diff ap.out#1 wan.wire#1")
    assert result.rows[-1][:2] == ("IP", "(layer)")
    assert result.rows[-1][2:] == ("IP", "Ether")


def test_bad_operands(session: Session) -> None:
    with pytest.raises(NoSuchPacket, match=r"'nope' is not a packet; valid: .*wan\.wire"):
        session.execute("diff nope wan.wire#1")
    with pytest.raises(NoSuchPacket, match=r"wan\.wire has no packet #9; valid: #1 to #2"):
        session.execute("diff wan.wire#9 wan.wire#1")
    with pytest.raises(PacketExpressionError):
        session.execute('diff IP(dst="x") wan.wire#1')
    with pytest.raises(UsageError, match="diff needs B"):
        session.execute("diff wan.wire#1")
    # Short digits read as hex, and an odd count is named along with what A and B may be.
    with pytest.raises(
        NoSuchPacket,
        match=r"'1' is not a packet \(odd number of hex digits "
        r"\(1\)\); valid: TAP#N from capture list",
    ):
        session.execute("diff 1 2")


def test_diff_leaves_the_lab_sas_alone(session: Session) -> None:
    host = session.lab.node("host")
    state = next(x for x in host.xfrm.states if x.spi == 0x1000)
    before = (state.curlft.packets, state.replay.seq, dict(host.xfrm.mib))
    run(session, "diff wan.wire#1 wan.wire#2")
    assert (state.curlft.packets, state.replay.seq, dict(host.xfrm.mib)) == before
    # The lab still accepts the next packet with its own SA.
    assert session.execute(f"send ap wan {seed.UDP}").data["delivered"] == 1


def test_esp_details_for_a_capture(session: Session) -> None:
    packet = session.lab.captures.get("wan.wire")[0].packet()
    details = esp_details(session, packet)
    assert details is not None
    assert (details["offset"], details["iv_len"], details["icv_len"]) == (34, 16, 12)
    assert details["padding"] == "010203040506" and details["next_header"] == 17
    assert esp_details(session, IP() / b"x") is None


def test_rendered_diff_shows_rows_and_marked_bytes(session: Session) -> None:
    buf = StringIO()
    Console(file=buf, width=100, color_system=None).print(
        render(run(session, "diff wan.wire#1 wan.wire#2"))
    )
    out = buf.getvalue()
    assert "ESPTrailer" in out and "^^" in out
    assert "0020 - " in out and "0020 + " in out


def test_help_has_usage_and_example() -> None:
    result = new_session().execute("help diff")
    assert result.data["usage"] == "diff A B [--ignore FIELD,...]"
    assert result.data["example"].startswith("diff wan.wire#1")


def test_expressions_take_nothing_from_the_host(session: Session) -> None:
    # An Ether() without dst and an IP() without src would be filled from the
    # machine running the lab; diff compares the fixed bytes (broadcast, zeros).
    session.execute('let p = Ether()/IP(dst="192.0.2.2")')
    for left in ("p", 'Ether()/IP(dst="192.0.2.2")'):
        result = run(session, f'diff {left} Ether()/IP(dst="192.0.2.3") --ignore chksum')
        assert [tuple(r) for r in result.rows] == [("IP", "dst", "192.0.2.2", "192.0.2.3")]
        wire = result.views[0]
        assert wire.left[:12] == b"\xff" * 6 + bytes(6)  # broadcast, zero source MAC
        assert wire.left[14 + 12 : 14 + 16] == bytes(4)  # IP src 0.0.0.0
