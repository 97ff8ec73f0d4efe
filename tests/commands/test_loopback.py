"""A packet to one of the node's own addresses loops back through lo (local table)."""

from __future__ import annotations

from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from tests.commands import seed
from tests.commands.results import journey as send


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


def test_outbound_policy_on_loopback_traffic() -> None:
    s = Session()
    line = 'send ap wan IP(dst="192.0.2.1")/UDP()'
    # A block policy and a template without an SA refuse the flow as on any device,
    # with their counters (transport mode: the template's addresses are the flow's,
    # so the SA looked up is 192.0.2.1 -> 192.0.2.1, xfrm_tmpl_resolve_one).
    s.execute(
        "ip xfrm policy add src 0.0.0.0/0 dst 192.0.2.1/32 dir out "
        "tmpl proto esp reqid 7 mode transport"
    )
    j = send(s, line)
    assert j.verdict == "dropped at ap.xfrm.policy(out): no SA for the template"
    assert s.lab.node("ap").xfrm.mib["XfrmOutNoStates"] == 1
    # With the SA there, IPsec through lo is the lab's limit, and says so.
    s.execute(seed.SA_OUT.replace("dst 192.0.2.2", "dst 192.0.2.1").replace("reqid 1", "reqid 7"))
    j = send(s, line)
    dropped = j.dropped
    assert dropped is not None and dropped.fidelity == "M"
    assert "loopback is not modelled" in j.verdict
    s.execute("ip xfrm policy add src 0.0.0.0/0 dst 127.0.0.0/8 dir out action block")
    j = send(s, 'send ap wan IP(dst="127.0.0.1")/UDP()')
    assert j.verdict == "dropped at ap.xfrm.policy(out): policy action block"


def test_the_loopback_network_is_local() -> None:
    s = Session()
    for dst in ("127.0.0.1", "127.3.2.1"):
        j = send(s, f'send ap wan IP(src="127.0.0.1", dst="{dst}")/UDP()')
        assert j.delivered, j.verdict
        assert j.taps() == ["ap.out", "ap.route", "ap.lo", "ap.deliver"]
    assert s.lab.node("ap").devs["wan"].counters.tx_packets == 0


def test_a_loopback_address_from_a_wire_is_a_martian() -> None:
    # ip_route_input_slow: a loopback destination or source from a device is martian;
    # ip6_rcv_core drops ::1 from a non-loopback device (Ip6InAddrErrors).
    s = Session()
    ap = s.lab.node("ap").devs["wan"]
    for packet, counter in (
        ("IP(src='192.0.2.2', dst='127.0.0.1')", "in_martian_dst"),
        ("IP(src='127.0.0.1', dst='192.0.2.1')", "in_martian_src"),
        ("IPv6(src='2001:db8:2::2', dst='::1')", "Ip6InAddrErrors"),
    ):
        j = send(s, f"send host eth0 Ether(dst='{ap.mac}')/{packet}/UDP()")
        dropped = j.dropped
        assert dropped is not None and dropped.tap == "ap.ip", j.verdict
        assert dropped.counters == {counter: 1}
        assert "martian" in j.verdict
    assert not s.lab.node("ap").flows


def test_ping_to_the_loopback_network_is_from_itself_and_captured_at_lo() -> None:
    s = Session()
    result = s.execute("ping 127.0.0.1")
    assert isinstance(result, JourneyResult) and "1 received" in result.summary
    (rec,) = [r for r in s.lab.captures.get("ap.lo") if r.journey == result.journeys[0].id]
    assert rec.data[12:20] == bytes([127, 0, 0, 1, 127, 0, 0, 1])  # src and dst


def test_a_v4_mapped_ipv6_source_from_a_wire_is_dropped() -> None:
    # ip6_rcv_core: a v4-mapped source (RFC 4291 2.5.5.2) is dropped, Ip6InAddrErrors.
    s = Session()
    mac = s.lab.node("ap").devs["wan"].mac
    j = send(
        s,
        f"send host eth0 Ether(dst='{mac}')/IPv6(src='::ffff:127.0.0.1', "
        "dst='2001:db8:2::1')/UDP()",
    )
    dropped = j.dropped
    assert dropped is not None and dropped.counters == {"Ip6InAddrErrors": 1}


def test_ping_to_loopback_is_answered_by_the_node_itself() -> None:
    s = Session()
    result = s.execute("host ping 127.0.0.1")
    assert isinstance(result, JourneyResult)
    assert [j.origin for j in result.journeys] == ["host", "host"]


def test_a_decapsulated_packet_meets_the_martian_check_too() -> None:
    # After tunnel decapsulation the inner packet goes through IP input again
    # (ip_rcv, ip_route_input): a loopback source is a martian there as well.
    s = Session()
    sa = (
        "ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x7000 reqid 7 "
        f"mode tunnel auth sha1 {seed.AUTH} enc aes {seed.ENC}"
    )
    s.execute(sa)
    s.execute("host " + sa)
    s.execute(
        "host ip xfrm policy add src 127.0.0.0/8 dst 192.0.2.1/32 dir out "
        "tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 7 mode tunnel"
    )
    j = send(s, 'send host eth0 IP(src="127.0.0.1", dst="192.0.2.1")/UDP(dport=9)')
    assert "ap.xfrm" in j.taps()
    assert j.verdict == "dropped at ap.ip: martian source 127.0.0.1"


def test_local_traffic_needs_lo_up() -> None:
    s = Session()
    s.execute("ip link set lo down")
    j = send(s, 'send ap wan IP(dst="192.0.2.1")/UDP()')
    assert j.verdict == "dropped at ap.lo: lo is down"
    assert s.lab.node("ap").devs["lo"].counters.tx_dropped == 1
    s.execute("ip link set lo up")
    assert send(s, 'send ap wan IP(dst="192.0.2.1")/UDP()').delivered
