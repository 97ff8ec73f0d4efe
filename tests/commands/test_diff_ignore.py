"""diff --ignore repeated and checked against the packets; operand and ESP messages."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import BadArgument, NoSuchPacket
from tests.commands.test_diff_cmd import run, session  # noqa: F401 - the fixture


def test_repeated_ignore_options_add_up(session: Session) -> None:  # noqa: F811
    both = run(session, "diff wan.wire#1 wan.wire#2 --ignore ESP.seq --ignore icv")
    assert both.rows == [] and both.summary.endswith(": identical")
    mixed = run(session, "diff wan.wire#1 wan.wire#2 --ignore ESP.seq,ip.ttl --ignore icv")
    assert mixed.identical


def test_an_unknown_layer_or_field_is_refused_by_name(session: Session) -> None:  # noqa: F811
    with pytest.raises(
        BadArgument,
        match=r"^--ignore 'Bogus\.field': neither packet has a layer 'Bogus'; "
        r"valid: Ether \(dst, src, type\); IP \(.*\); ESP \(spi, seq, data, iv\); "
        r"ESPTrailer \(padding, pad_len, nh, icv, icv_ok\); UDP \(sport, dport, len, chksum\)",
    ):
        session.execute("diff wan.wire#1 wan.wire#2 --ignore ESP.seq --ignore Bogus.field")
    with pytest.raises(
        BadArgument,
        match=r"^--ignore 'ESP\.sqe': ESP has no field 'sqe'; valid: ESP\.spi, ESP\.seq, "
        r"ESP\.data, ESP\.iv; did you mean ESP\.seq\?$",
    ):
        session.execute("diff wan.wire#1 wan.wire#2 --ignore ESP.sqe")
    with pytest.raises(BadArgument, match=r"^--ignore 'bogus' is no layer or field"):
        session.execute("diff wan.wire#1 wan.wire#2 --ignore bogus")
    # Layers inside ESP, numbered layers and whole layers are names it knows.
    run(session, "diff wan.wire#1 wan.wire#2 --ignore 'inner UDP.sport,IP[1].ttl,ESP.*,raw'")


def test_one_side_without_esp_is_said_plainly(session: Session) -> None:  # noqa: F811
    result = run(session, "diff wan.wire#1 00")
    assert result.notes == [
        "only wan.wire#1 carries ESP (00 has none), so the packets are compared as they are"
    ]


def test_an_empty_operand_lists_every_form(session: Session) -> None:  # noqa: F811
    with pytest.raises(
        NoSuchPacket,
        match=r"^an empty operand is not a packet; valid: a name from let \(none yet\), "
        r"a tap or TAP#N \(.*wan\.wire\), a packet expression \(IP\(\)/UDP\(\)\), "
        r"or whole hex bytes$",
    ):
        session.execute('diff "" 00')
    with pytest.raises(NoSuchPacket, match=r"'wan\.wir' is not a packet; .*did you mean wan\.wire"):
        session.execute("diff wan.wir 00")
