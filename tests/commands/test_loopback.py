"""A packet to one of the node's own addresses loops back through lo (local table)."""

from __future__ import annotations

from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from tests.commands import seed


def test_ping_own_address_is_delivered_through_lo() -> None:
    s = Session()
    result = s.execute("ping 192.0.2.1")
    assert isinstance(result, JourneyResult)
    request = result.journeys[0]
    assert request.delivered, request.verdict
    assert request.taps() == ["ap.out", "ap.route", "ap.lo", "ap.deliver"]
    route = request.stage("ap.route")
    assert route is not None and route.decision == "192.0.2.1 is local: dev lo"
    # Nothing went out on a wire.
    assert s.lab.node("ap").devs["wan"].counters.tx_packets == 0
    assert "1 received" in result.summary


def test_a_policy_matching_loopback_traffic_is_a_labelled_drop() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(
        "ip xfrm policy add src 0.0.0.0/0 dst 192.0.2.1/32 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
    )
    result = s.execute('send ap wan IP(dst="192.0.2.1")/UDP()')
    assert isinstance(result, JourneyResult)
    j = result.journeys[0]
    dropped = j.dropped
    assert dropped is not None and dropped.fidelity == "M"
    assert "loopback is not modelled" in j.verdict
