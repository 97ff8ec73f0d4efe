"""Forwarding lowers the TTL (hop limit) and refuses a packet whose TTL runs out
(ip_forward, ip6_forward): ICMP time exceeded back to the sender."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import ICMPv6TimeExceeded, IPv6

from esplab.commands.session import Session
from esplab.model.journey.walk import decrease_ttl
from esplab.model.stage import Journey
from tests.commands.results import journey as send


def _snapshot(journey: Journey, tap: str) -> bytes:
    stage = journey.stage(tap)
    assert stage is not None and stage.data is not None, journey.taps()
    return stage.data


def test_a_forwarded_ipv4_packet_leaves_with_ttl_one_lower_and_a_valid_checksum() -> None:
    s = Session()
    j = send(s, 'send pc1 eth0 IP(dst="203.0.113.1", ttl=5)/UDP(dport=53)')
    assert j.delivered, j.verdict
    sent, out = IP(_snapshot(j, "pc1.out")), IP(_snapshot(j, "host.deliver"))
    assert (sent.ttl, out.ttl) == (5, 4)
    stage = j.stage("ap.forward")
    assert stage is not None and stage.decision == "forward towards 203.0.113.1, TTL 5 -> 4"
    # The checksum the host received is the one a fresh computation gives.
    fresh = IP(bytes(out))
    del fresh.chksum
    assert out.chksum == IP(bytes(fresh)).chksum


def test_a_forwarded_ipv6_packet_leaves_with_hop_limit_one_lower() -> None:
    s = Session()
    j = send(s, 'send pc1 eth0 IPv6(dst="2001:db8:3::1", hlim=9)/UDP(dport=53)')
    assert j.delivered, j.verdict
    assert IPv6(_snapshot(j, "host.deliver")).hlim == 8


@pytest.mark.parametrize("ttl", [0, 1])
def test_ttl_running_out_is_icmp_time_exceeded_to_the_sender(ttl: int) -> None:
    s = Session()
    j = send(s, f'send pc1 eth0 IP(dst="203.0.113.1", ttl={ttl})/UDP(dport=53)')
    drop = j.dropped
    assert drop is not None and drop.tap == "ap.forward"
    assert drop.counters == {"InHdrErrors": 1}
    icmp = IP(_snapshot(j, "ap.forward"))
    assert icmp[ICMP].type == 11 and icmp[ICMP].code == 0
    # The quote is the packet as it arrived, TTL and all.
    assert bytes(icmp[ICMP].payload)[:28] == _snapshot(j, "pc1.out")[:28]
    assert not s.lab.node("host").flows
    back = s.lab.journeys.get()
    assert back is not None and back.id == j.id + 1 and back.delivered
    assert back.taps()[-1] == "pc1.deliver"


def test_hop_limit_running_out_is_icmpv6_time_exceeded() -> None:
    s = Session()
    j = send(s, 'send pc1 eth0 IPv6(dst="2001:db8:3::1", hlim=1)/UDP(dport=53)')
    drop = j.dropped
    assert drop is not None and drop.counters == {"Ip6InHdrErrors": 1}
    assert IPv6(_snapshot(j, "ap.forward")).haslayer(ICMPv6TimeExceeded)


def test_the_forward_paths_too_big_quotes_the_packet_as_it_arrived() -> None:
    # ip_forward checks the MTU before ip_decrease_ttl: the quote keeps TTL 64.
    s = Session()
    s.execute("ip link set wan mtu 1280")
    j = send(s, 'send pc1 eth0 IP(dst="203.0.113.1", flags="DF")/UDP(dport=9)/Raw(b"x"*1400)')
    icmp = IP(_snapshot(j, "ap.pmtu"))
    quoted = bytes(icmp[ICMP].payload)
    assert quoted[:20] == _snapshot(j, "pc1.out")[:20]
    assert IP(quoted[:20] + bytes(8)).ttl == 64


def test_decrease_ttl_matches_a_fresh_checksum() -> None:
    for ttl in (2, 64, 255):
        for ident in (0, 0x1234, 0xFEFF, 0xFFFF):
            packet = bytes(IP(src="192.0.2.1", dst="192.0.2.2", ttl=ttl, id=ident) / UDP())
            lowered = IP(decrease_ttl(packet))
            fresh = IP(packet)
            fresh.ttl -= 1
            del fresh.chksum
            assert bytes(lowered) == bytes(IP(bytes(fresh))), (ttl, ident)


@pytest.mark.parametrize(
    "packet",
    [
        # An ICMP error is never answered with one (__icmp_send, RFC 1122 3.2.2).
        'IP(dst="203.0.113.1", ttl=1)/ICMP(type=11)/IP(dst="198.51.100.2")/UDP()',
        # Only fragment 0 is answered.
        'IP(dst="203.0.113.1", ttl=1, frag=5)/Raw(b"x"*40)',
        # Nor an ICMPv6 error (icmp6_send's is_ineligible).
        'IPv6(dst="2001:db8:3::1", hlim=1)/ICMPv6PacketTooBig()/IPv6()/UDP()',
        # Nor an IPv6 fragment other than the first.
        'IPv6(dst="2001:db8:3::1", hlim=1)/IPv6ExtHdrFragment(offset=3)/Raw(b"x"*24)',
    ],
)
def test_no_icmp_error_answers_an_error_or_a_later_fragment(packet: str) -> None:
    s = Session()
    j = send(s, f"send pc1 eth0 {packet}")
    drop = j.dropped
    assert drop is not None and drop.tap == "ap.forward"
    assert drop.data is None and "no ICMP error answers this packet" in drop.decision
    assert len(s.lab.journeys) == 1  # nothing went back


def test_icmp_answers_an_echo_request_and_a_first_fragment() -> None:
    s = Session()
    for packet in (
        'IP(dst="203.0.113.1", ttl=1)/ICMP()',
        'IP(dst="203.0.113.1", ttl=1, flags="MF")/UDP()',
    ):
        j = send(s, f"send pc1 eth0 {packet}")
        assert j.dropped is not None and j.dropped.data is not None


def test_an_icmp_packet_cut_before_its_type_gets_no_icmp_error() -> None:
    # __icmp_send gives up when it cannot read the type (itp NULL).
    s = Session()
    j = send(s, 'send pc1 eth0 IP(dst="203.0.113.1", ttl=1, proto=1)')
    drop = j.dropped
    assert drop is not None and drop.data is None
    assert "no ICMP error answers this packet" in drop.decision
    assert "sends no ICMP" in drop.why
