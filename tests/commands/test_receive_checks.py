"""What a node checks before IP sees a frame: the destination MAC, the EtherType and
the IP version (eth_type_trans, ip_rcv_core, ipv6_rcv)."""

from __future__ import annotations

from esplab.commands.session import Session
from tests.commands.results import journey as send


def test_a_unicast_frame_for_another_mac_is_otherhost() -> None:
    s = Session()
    j = send(s, 'send ap wan Ether(dst="02:00:00:00:00:99")/IP(dst="192.0.2.2")/UDP()')
    eth0 = s.lab.node("host").devs["eth0"]
    assert j.verdict == "dropped at host.rx: frame for 02:00:00:00:00:99, not " + eth0.mac
    assert eth0.counters.rx_otherhost_dropped == 1
    assert eth0.counters.rx_packets == 1  # received by the device, dropped by IP
    assert not s.lab.node("host").flows


def test_broadcast_and_the_devices_own_mac_pass() -> None:
    s = Session()
    eth0 = s.lab.node("host").devs["eth0"]
    for dst in ("ff:ff:ff:ff:ff:ff", eth0.mac):
        j = send(s, f'send ap wan Ether(dst="{dst}")/IP(dst="192.0.2.2")/UDP()')
        assert j.delivered, j.verdict
    assert eth0.counters.rx_otherhost_dropped == 0


def test_the_ethertype_must_match_the_ip_version() -> None:
    s = Session()
    j = send(s, 'send ap wan Ether(type=0x86dd)/IP(dst="192.0.2.2")/UDP()')
    dropped = j.dropped
    assert dropped is not None and dropped.tap == "host.ip"
    assert dropped.counters == {"Ip6InHdrErrors": 1}
    assert "IPv4 header in a frame of EtherType 0x86dd" in j.verdict


def test_a_frame_no_protocol_takes_is_counted_in_rx_dropped() -> None:
    # send refuses such a frame up front; the model's own path (an AF_XDP transmit,
    # a frame given to Datapath.send_frame) still meets the receive check.
    s = Session()
    host = s.lab.node("host").devs["eth0"]
    arp = bytes.fromhex(host.mac.replace(":", "")) + bytes(6) + b"\x08\x06" + bytes(28)
    j = s.lab.datapath.send_frame("ap", "wan", arp)
    assert j.verdict == "dropped at host.rx: no protocol handler for EtherType 0x0806"
    # __netif_receive_skb_core: rx_dropped, as no rx_handler asked for exact delivery.
    assert (host.counters.rx_dropped, host.counters.rx_nohandler) == (1, 0)
    dropped = j.dropped
    assert dropped is not None and dropped.fidelity == "M"  # Linux has ARP; the lab has not
    # The protocol is chosen first: a non-IP frame for another MAC is counted the same.
    other = bytes.fromhex("020000000099") + bytes(6) + b"\x08\x06" + bytes(28)
    s.lab.datapath.send_frame("ap", "wan", other)
    assert (host.counters.rx_dropped, host.counters.rx_otherhost_dropped) == (2, 0)


def test_a_total_length_past_the_frame_is_a_truncated_packet() -> None:
    # ip_rcv_core: skb->len < iph->tot_len counts InTruncatedPkts, not InHdrErrors.
    s = Session()
    host = s.lab.node("host").devs["eth0"]
    ip = bytearray(bytes.fromhex("45000064000100004011") + bytes(10))
    frame = bytes.fromhex(host.mac.replace(":", "")) + bytes(6) + b"\x08\x00" + bytes(ip)
    j = s.lab.datapath.send_frame("ap", "wan", frame)
    dropped = j.dropped
    assert dropped is not None and dropped.counters == {"InTruncatedPkts": 1}


def test_a_fragment_for_the_node_waits_for_reassembly_and_is_not_delivered() -> None:
    # ip_local_deliver defragments first; the lab does not reassemble (a labelled gap).
    s = Session()
    lines = (
        'send ap wan IP(dst="192.0.2.2", flags="MF")/UDP(dport=9)/Raw(b"x"*64)',
        'send ap wan IP(dst="192.0.2.2", frag=1)/UDP(dport=9)/Raw(b"x"*64)',
        'send ap wan IPv6(dst="2001:db8:2::2")/IPv6ExtHdrFragment(m=1)/UDP(dport=9)',
    )
    for line, counter in zip(lines, ("ReasmReqds", "ReasmReqds", "Ip6ReasmReqds"), strict=True):
        j = send(s, line)
        dropped = j.dropped
        assert dropped is not None and dropped.tap == "host.ip", j.verdict
        assert dropped.counters == {counter: 1} and dropped.fidelity == "M"
    assert not s.lab.node("host").flows


def test_a_tagged_frame_of_another_protocol_is_untagged_then_finds_no_handler() -> None:
    # VID 100, no VLAN device: PACKET_OTHERHOST and the tag cleared; no handler then
    # takes 0x88b5, which is the EtherType named and counted in rx_dropped.
    s = Session()
    host = s.lab.node("host").devs["eth0"]
    tag = b"\x81\x00\x00\x64"
    frame = bytes.fromhex(host.mac.replace(":", "")) + bytes(6) + tag + b"\x88\xb5" + bytes(46)
    j = s.lab.datapath.send_frame("ap", "wan", frame)
    assert j.verdict == "dropped at host.rx: no protocol handler for EtherType 0x88b5"
    assert (host.counters.rx_dropped, host.counters.rx_otherhost_dropped) == (1, 0)


def test_a_tunnels_inner_fragment_waits_for_reassembly_too() -> None:
    # After decapsulation the inner packet goes through IP input again (xfrm_input
    # re-injects it), where ip_local_deliver holds a fragment as for any other.
    keys = "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 enc aes 0x" + "00" * 16
    sa = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000 reqid 2 "
        f"mode tunnel {keys}"
    )
    sel = "src 192.0.2.1/32 dst 203.0.113.0/24"
    tmpl = "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 2 mode tunnel"
    s = Session()
    for line in (sa, f"ip xfrm policy add {sel} dir out {tmpl}", "host " + sa):
        s.execute(line)
    s.execute(f"host ip xfrm policy add {sel} dir in {tmpl}")
    j = send(s, 'send ap wan IP(dst="203.0.113.1", flags="MF")/UDP(dport=9)/Raw(b"x"*64)')
    dropped = j.dropped
    assert dropped is not None and dropped.tap == "host.ip", j.verdict
    assert dropped.counters == {"ReasmReqds": 1}
    assert "host.xfrm" in j.taps() and not s.lab.node("host").flows
