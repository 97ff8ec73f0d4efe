"""eip93 swap-digest (the old name of eip93 fault ... digest-byte-order): the SA record's
hash state in the wrong byte order (eip93.md 5.2), set or removed, and saying which."""

from __future__ import annotations

import pytest

from esplab.commands.result import JourneyResult, MessageResult, PacketResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, NotFound
from esplab.model.stage import Journey
from tests.commands import seed

IV = "000102030405060708090a0b0c0d0e0f"
SEND = f"send ap wan {seed.UDP} seq 7 iv {IV}"
HOST_RX = 'host send eth0 IP(dst="192.0.2.1")/UDP(dport=5201)/Raw(b"hello")'


@pytest.fixture
def session() -> Session:
    """The seed scenario with the ap's outbound SA 0x1000 in crypto offload on wan."""
    return seed.crypto_session()


def send(s: Session, line: str = SEND) -> Journey:
    result = s.execute(line)
    assert isinstance(result, JourneyResult)
    return result.journeys[0]


def record(s: Session, spi: str = "0x1000", direction: str = "") -> bytes:
    result = s.execute(f"eip93 sa {spi} {direction}".strip())
    assert isinstance(result, PacketResult)
    return bytes.fromhex(result.data["hex"])


def wire(j: Journey) -> bytes:
    stage = j.stage("wan.wire")
    assert stage is not None and stage.data is not None, j.taps()
    return stage.data


def test_swap_reverses_every_digest_word_and_nothing_else(session: Session) -> None:
    before = record(session)
    result = session.execute("eip93 swap-digest 0x1000")
    assert isinstance(result, MessageResult)
    after = record(session)
    # sa_i_digest and sa_o_digest: 16 words at 0x28..0x67 (eip93.md 3.1).
    assert after[:0x28] == before[:0x28] and after[0x68:] == before[0x68:]
    for offset in range(0x28, 0x68, 4):
        assert after[offset : offset + 4] == before[offset : offset + 4][::-1]
    assert result.data["action"] == "set" and result.data["alias"] == "swap-digest"
    assert result.data["fault"] == "digest-byte-order" and result.data["direction"] == "out"
    assert sorted(result.data["changed"]) == ["sa_i_digest", "sa_o_digest"]
    assert result.data["faults"] == {"digest-byte-order": ""}
    assert "fault INJECTED" in result.summary and "SPI 0x1000 (out" in result.summary
    assert "eip93.md" not in result.summary


def test_after_the_swap_the_host_fails_the_icv(session: Session) -> None:
    good = send(session)
    assert good.delivered, good.verdict
    session.execute("eip93 swap-digest 0x1000")
    bad = send(session)
    # The engine still builds the packet and the driver sends it: only the ICV is wrong.
    assert "host.rx" in bad.taps() and not bad.delivered
    assert bad.dropped is not None and bad.dropped.tap == "host.xfrm"
    assert "ICV does not verify" in (bad.dropped.drop or "")
    assert bad.dropped.counters == {"XfrmInStateProtoError": 1}
    assert session.lab.node("host").xfrm.mib["XfrmInStateProtoError"] == 1
    rdr = bad.stage("eip93.rdr")
    assert rdr is not None and "OK" in rdr.decision  # the engine sees nothing wrong
    # Same SA, seq and IV: every byte but the 12-byte HMAC-SHA1-96 ICV is the same.
    assert len(wire(bad)) == len(wire(good))
    assert wire(bad)[:-12] == wire(good)[:-12] and wire(bad)[-12:] != wire(good)[-12:]


def test_swapping_twice_restores_the_record(session: Session) -> None:
    original = record(session)
    first = session.execute("eip93 swap-digest 0x1000")
    second = session.execute("eip93 swap-digest 0x1000 out")
    # It says what it did: the second call removes the fault (it used to say "injected").
    assert first.data["action"] == "set" and "fault INJECTED" in first.summary
    assert second.data["action"] == "clear" and "fault REMOVED" in second.summary
    assert "injected" not in second.summary.lower()
    assert second.data["changed"]["sa_i_digest"] == first.data["changed"]["sa_i_digest"][::-1]
    restored = record(session)
    # The engine wrote nothing back in between: no packet was sent.
    assert restored == original
    assert send(session).delivered


def test_inbound_record_makes_the_engine_fail_the_icv() -> None:
    s = Session()
    for line in (
        seed.SA_IN + " offload dev wan dir in",
        "host " + seed.SA_IN,
        "host " + seed.POL_BACK_HOST,
    ):
        s.execute(line)
    assert s.execute("eip93 swap-digest 0x1001 in").data["direction"] == "in"
    j = send(s, HOST_RX)
    assert not j.delivered
    rdr = j.stage("eip93.rdr")
    assert rdr is not None and "AUTH_ERR" in rdr.decision
    assert s.lab.node("ap").xfrm.mib["XfrmInStateProtoError"] == 1


def test_sw_aead_transform_record() -> None:
    s = Session()
    s.execute("set crypto-provider eip93")
    for line in (seed.SA_OUT, seed.POL_OUT, "host " + seed.SA_OUT, "host " + seed.POL_IN_HOST):
        s.execute(line)
    assert send(s).delivered  # the first packet keys the authenc transform
    result = s.execute("eip93 swap-digest 0x1000")
    assert result.data["direction"] == "out" and "encrypt" in result.summary
    j = send(s)
    assert j.dropped is not None and "ICV does not verify" in (j.dropped.drop or "")


def test_unknown_spi_lists_the_valid_ones(session: Session) -> None:
    before = record(session)
    with pytest.raises(NotFound) as info:
        session.execute("eip93 swap-digest 0x999")
    assert "no offloaded SA with SPI 0x999" in str(info.value)
    assert "valid: 0x1000 (out)" in str(info.value)
    with pytest.raises(NotFound, match=r"no offloaded SA with SPI 0x1000 \(in\).*0x1000 \(out\)"):
        session.execute("eip93 swap-digest 0x1000 in")
    assert record(session) == before  # nothing written


def test_nothing_offloaded_yet() -> None:
    with pytest.raises(NotFound, match="none: add a state with offload"):
        Session().execute("eip93 swap-digest 0x1000")


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("eip93 swap-digest", "needs an SPI"),
        ("eip93 swap-digest 0x1000 sideways", "direction 'sideways'"),
        ("eip93 swap-digest 0x1000 out now", "unexpected argument 'now'"),
        ("eip93 swap-digest spi", "must be a number"),
    ],
)
def test_bad_lines_are_usage_errors(session: Session, line: str, match: str) -> None:
    before = record(session)
    with pytest.raises(BadArgument, match=match):
        session.execute(line)
    assert session.run(line).ok is False
    assert record(session) == before


def test_declared_and_completed(session: Session) -> None:
    command = session.registry.lookup("eip93")
    assert "swap-digest SPI [in|out]" in command.usage
    assert "fault injection" in command.details
    assert command.complete is not None
    assert "swap-digest" in list(command.complete(session, []))
    assert list(command.complete(session, ["swap-digest"])) == ["0x1000"]
    assert list(command.complete(session, ["swap-digest", "0x1000"])) == ["in", "out"]
