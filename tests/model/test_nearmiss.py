"""A drop for want of an SA says which states almost matched, why each was passed
over, and the one command that fixes it; the command does fix it (issue #19)."""

from __future__ import annotations

from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.model.stage import Journey
from tests.commands import seed

SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(dport=5201)/Raw(b"x"*8)'
PACKET_SA = seed.SA_OUT + " offload packet dev wan dir out"


def send(s: Session, line: str = SEND) -> Journey:
    result = s.execute(line)
    assert isinstance(result, JourneyResult)
    return result.journeys[0]


def _fix(why: str) -> str:
    assert ". Fix: " in why, why
    return why.split(". Fix: ", 1)[1]


def test_packet_offload_state_under_a_software_policy() -> None:
    s = Session()
    for line in (PACKET_SA, seed.POL_OUT, "host " + seed.SA_OUT, "host " + seed.POL_IN_HOST):
        s.execute(line)
    j = send(s)
    assert j.dropped is not None and j.dropped.tap == "ap.xfrm.policy(out)"
    why = j.dropped.why
    assert "XfrmOutNoStates" in why
    assert "SA spi 0x00001000 192.0.2.1 > 192.0.2.2 reqid 1 transport, packet offload on wan" in why
    assert "offload type: the SA is packet offload on wan, the policy is a software policy" in why
    fix = _fix(why)
    assert fix.endswith("reqid 1 mode transport offload packet dev wan")
    # explain shows the same stage text.
    explained = s.execute("explain 2 ap.xfrm.policy(out)")
    assert "offload type" in str(explained.data)
    s.execute(fix)
    assert send(s).delivered


def test_reqid_and_mode_are_named_with_their_values() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(seed.POL_OUT.replace("reqid 1 mode transport", "reqid 2 mode tunnel"))
    j = send(s)
    assert j.dropped is not None
    why = j.dropped.why
    assert "reqid: the SA has 1, the template wants 2" in why
    assert "mode: the SA is transport, the template tunnel" in why
    s.execute(_fix(why))
    j = send(s)
    assert j.dropped is None or j.dropped.tap != "ap.xfrm.policy(out)"


def test_no_state_at_all() -> None:
    s = Session()
    s.execute(seed.POL_OUT)
    j = send(s)
    assert j.dropped is not None
    assert "no state of that protocol at all" in j.dropped.why


def test_inbound_no_sa_lists_the_sa_under_another_spi() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(seed.POL_OUT)
    s.execute("host " + seed.SA_OUT.replace("spi 0x1000", "spi 0x1001"))
    j = send(s)
    assert j.dropped is not None and j.dropped.tap == "host.xfrm"
    why = j.dropped.why
    assert "XfrmInNoStates" in why
    assert "SA spi 0x00001001 192.0.2.1 > 192.0.2.2 reqid 1 transport: SPI: the SA's is " in why
    assert "the packet's 0x00001000" in why


def test_an_icv_failure_shows_the_received_and_the_computed_value() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(seed.POL_OUT)
    s.execute("host " + seed.SA_OUT.replace(seed.AUTH, "0x" + "11" * 20))
    j = send(s)
    assert j.dropped is not None and j.dropped.drop is not None
    wire = j.stage("wan.wire")
    assert wire is not None and wire.data is not None
    received = wire.data[-12:].hex()  # the HMAC-SHA1-96 ICV the ap sent
    assert f"received {received}, this SA computes " in j.dropped.drop
    assert "(hmac(sha1), 12-byte ICV over " in j.dropped.drop
