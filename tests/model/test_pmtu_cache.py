"""Path MTU learned from ICMP (RFC 1191, RFC 8201; __ip_rt_update_pmtu,
rt6_do_update_pmtu)."""

from __future__ import annotations

from ipaddress import ip_address

from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6PacketTooBig, IPv6
from scapy.packet import Raw

from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.model.kernel.stack.pmtu_cache import TooBig, learn, too_big_report


def _frag_needed(mtu: int) -> bytes:
    offending = IP(src="198.51.100.2", dst="203.0.113.1", flags="DF") / UDP() / Raw(b"x" * 8)
    icmp = IP(src="192.0.2.1", dst="198.51.100.2") / ICMP(type=3, code=4, nexthopmtu=mtu)
    return bytes(icmp / Raw(bytes(offending)[:28]))


def test_reports_are_read_from_icmp_and_icmpv6() -> None:
    report = too_big_report(_frag_needed(1400), 20, 1)
    assert report == TooBig(ip_address("203.0.113.1"), 1400)
    inner = IPv6(src="2001:db8:1::2", dst="2001:db8:7::1") / ICMPv6EchoRequest()
    ptb = IPv6(src="2001:db8::1", dst="2001:db8:1::2") / ICMPv6PacketTooBig(mtu=1300)
    report6 = too_big_report(bytes(ptb / Raw(bytes(inner))), 40, 58)
    assert report6 == TooBig(ip_address("2001:db8:7::1"), 1300)
    # Other ICMP messages (echo, port unreachable) carry no MTU.
    echo = bytes(IP(dst="192.0.2.1") / ICMP())
    assert too_big_report(echo, 20, 1) is None
    unreach = bytes(IP(dst="192.0.2.1") / ICMP(type=3, code=3) / Raw(bytes(28)))
    assert too_big_report(unreach, 20, 1) is None


def test_a_report_only_lowers_and_has_a_floor() -> None:
    dst = ip_address("203.0.113.1")
    assert learn(TooBig(dst, 1500), 1500) is None  # not below: ignored
    assert learn(TooBig(dst, 1400), 1500) == 1400
    assert learn(TooBig(dst, 100), 1400) == 552  # ip_rt_min_pmtu
    assert learn(TooBig(dst, 600), 552) is None  # the floor is not below 552 either
    dst6 = ip_address("2001:db8:7::1")
    assert learn(TooBig(dst6, 1000), 1500) == 1280  # IPV6_MIN_MTU


def test_the_sender_learns_and_later_packets_are_measured_against_it() -> None:
    s = Session()
    s.execute("ip link set wan mtu 1400")
    line = 'send pc1 eth0 IP(dst="203.0.113.1", flags="DF")/UDP()/Raw(b"x"*1400)'
    first = s.execute(line)
    assert isinstance(first, JourneyResult)
    assert "ap.pmtu" in first.journeys[0].verdict
    pc1 = s.lab.node("pc1")
    assert pc1.learned_pmtus() == {ip_address("203.0.113.1"): 1400}
    again = s.execute(line)
    assert isinstance(again, JourneyResult)
    j = again.journeys[0]
    assert j.verdict == "dropped at pc1.pmtu: 1428 > path mtu 1400: ICMP fragmentation needed"
    assert pc1.devs["eth0"].counters.tx_packets == 1  # the second never left pc1
    # Other destinations still use the link MTU.
    ok = s.execute('send pc1 eth0 IP(dst="203.0.113.2", flags="DF")/UDP()/Raw(b"x"*1300)')
    assert isinstance(ok, JourneyResult) and "ap.pmtu" not in ok.journeys[0].verdict


def test_route_get_shows_the_learned_mtu_and_flush_cache_forgets_it() -> None:
    s = Session()
    s.execute("ip link set wan mtu 1400")
    s.execute('send pc1 eth0 IP(dst="203.0.113.1", flags="DF")/UDP()/Raw(b"x"*1400)')
    get = s.execute("pc1 ip route get 203.0.113.1")
    # iproute2 print_route: the RTAX_MTU metric on the "cache" line.
    assert get.summary == "203.0.113.1 via 198.51.100.1 dev eth0 src 198.51.100.2 uid 0"
    assert get.data["mtu"] == 1400 and "cache mtu 1400" in str(getattr(get, "text", ""))
    flushed = s.execute("pc1 ip route flush cache")
    assert flushed.data == {"forgotten": 1}
    assert s.lab.node("pc1").learned_pmtus() == {}
    assert s.execute("pc1 ip route get 203.0.113.1").data["mtu"] == 1500


def test_a_forwarded_packet_ignores_the_forwarders_learned_pmtu() -> None:
    # ip_dst_mtu_maybe_forward: with ip_forward_use_pmtu 0 a router measures forwarded
    # packets against the device MTU, not against exceptions it learned for itself.
    s = Session()
    ap = s.lab.node("ap")
    ap.learn_pmtu(TooBig(ip_address("203.0.113.1"), 1000))
    assert ap.path_mtu(ip_address("203.0.113.1")) == 1000
    fwd = s.execute('send pc1 eth0 IP(dst="203.0.113.1", flags="DF")/UDP()/Raw(b"x"*1200)')
    assert isinstance(fwd, JourneyResult) and fwd.journeys[0].delivered
    own = s.execute('send ap wan IP(dst="203.0.113.1", flags="DF")/UDP()/Raw(b"x"*1200)')
    assert isinstance(own, JourneyResult)
    assert own.journeys[0].verdict == (
        "dropped at ap.pmtu: 1228 > path mtu 1000: ICMP fragmentation needed"
    )


def test_an_exception_goes_with_its_route() -> None:
    s = Session()
    pc1 = s.lab.node("pc1")
    dst = ip_address("203.0.113.1")
    pc1.learn_pmtu(TooBig(dst, 1000))
    assert pc1.learned_pmtus() == {dst: 1000}
    s.execute("pc1 ip route del default")
    s.execute("pc1 ip route add default via 198.51.100.1")
    # The route it hung off was deleted: a new route starts without it.
    assert pc1.path_mtu(dst) is None and pc1.learned_pmtus() == {}


def test_ipv6_packet_too_big_teaches_the_sender() -> None:
    s = Session()
    s.execute("ip link set wan mtu 1300")
    line = 'send pc1 eth0 IPv6(dst="2001:db8:2::2")/UDP()/Raw(b"x"*1300)'
    first = s.execute(line)
    assert isinstance(first, JourneyResult) and "ap.pmtu" in first.journeys[0].verdict
    assert s.lab.node("pc1").learned_pmtus() == {ip_address("2001:db8:2::2"): 1300}
    again = s.execute(line)
    assert isinstance(again, JourneyResult)
    assert again.journeys[0].verdict.startswith("dropped at pc1.pmtu: 1348 > path mtu 1300")


def test_the_icmp_error_quotes_what_fits_576_bytes() -> None:
    # __icmp_send: room = 576 - IP header - ICMP header of the offending packet.
    s = Session()
    s.execute("ip link set wan mtu 1400")
    s.execute('send pc1 eth0 IP(dst="203.0.113.1", flags="DF")/UDP()/Raw(b"x"*1400)')
    icmp = s.lab.journeys.get()
    assert icmp is not None
    delivered = icmp.stage("pc1.deliver")
    assert delivered is not None
    assert delivered.decision == "delivered to 198.51.100.2 (proto 1, 576 bytes)"


def test_a_packet_without_df_says_fragmentation_is_not_modelled() -> None:
    s = Session()
    s.execute("ip link set wan mtu 1400")
    result = s.execute('send pc1 eth0 IP(dst="203.0.113.1")/UDP()/Raw(b"x"*1450)')
    assert isinstance(result, JourneyResult)
    j = result.journeys[0]
    assert j.verdict == "dropped at ap.pmtu: 1478 > mtu 1400: IPv4 fragmentation is not modelled"
    dropped = j.dropped
    assert dropped is not None and dropped.fidelity == "M" and dropped.counters == {}


def test_flush_cache_is_ipv4_unless_told_6() -> None:
    # iproute2 iproute_list_flush_or_save: a flush without -6 is AF_INET's.
    s = Session()
    pc1 = s.lab.node("pc1")
    v4, v6 = ip_address("203.0.113.1"), ip_address("2001:db8:2::2")
    pc1.learn_pmtu(TooBig(v4, 1400))
    pc1.learn_pmtu(TooBig(v6, 1400))
    assert s.execute("pc1 ip route flush cache").data == {"forgotten": 1}
    assert pc1.learned_pmtus() == {v6: 1400}
    assert s.execute("pc1 ip -6 route flush cache").data == {"forgotten": 1}
    assert pc1.learned_pmtus() == {}
