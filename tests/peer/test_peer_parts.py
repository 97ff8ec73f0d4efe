"""The real-peer parts that need no kernel: what may run there, how counters read,
what a board prints, and failures that leave the lab as it was."""

from __future__ import annotations

import sys

import pytest

from esplab.commands.session import Session
from esplab.errors import EsplabError, KernelError, PeerError
from esplab.kernel_messages import board_text, extack_of
from esplab.peer import backends
from esplab.peer.bridge import delivered, interesting, split_line
from esplab.peer.check import mask
from esplab.peer.known import known_for


def test_only_listed_programs_run_on_a_peer_and_never_through_a_shell() -> None:
    assert split_line("ip -s xfrm state") == ["ip", "-s", "xfrm", "state"]
    assert split_line("cat /proc/net/xfrm_stat") == ["cat", "/proc/net/xfrm_stat"]
    with pytest.raises(PeerError, match="'rm' does not run on a real peer"):
        split_line("rm -rf /")
    with pytest.raises(PeerError, match="no shell on the peer"):
        split_line("ip xfrm state | grep spi")
    with pytest.raises(PeerError, match="cat reads /proc and /sys only"):
        split_line("cat /etc/shadow")
    with pytest.raises(PeerError, match="cannot split"):
        split_line("ip 'unbalanced")


def test_ping_gets_a_count_so_it_ends() -> None:
    assert split_line("ping 192.0.2.1")[:5] == ["ping", "-c", "3", "-W", "1"]
    assert split_line("ping -c 1 192.0.2.1") == ["ping", "-c", "1", "192.0.2.1"]


def test_delivery_is_a_transport_protocol_taking_the_packet_without_an_xfrm_error() -> None:
    # /proc/net/snmp names: a decrypted UDP packet to a closed port counts UdpNoPorts.
    assert delivered({"UdpNoPorts": 1, "IpInDelivers": 2})
    assert not delivered({"IpInDelivers": 1, "XfrmInStateProtoError": 1})
    assert not delivered({"IpInReceives": 1})
    assert interesting({"IpInReceives": 1, "XfrmInNoStates": 1, "UdpNoPorts": 0}) == {
        "XfrmInNoStates": 1
    }


def test_board_text_is_iproute2s_line() -> None:
    # What Linux 6.12 + iproute2 6.15 printed (tests/kernel/): an extended ACK alone,
    # else the errno's text after "RTNETLINK answers:".
    assert extack_of("TFC padding can only be used in tunnel mode") is not None
    assert extack_of("SA 192.0.2.2 spi 0x1000 exists") is None
    assert board_text("RTNETLINK answers", "Invalid argument", "Invalid policy type: x") == (
        "Error: Invalid policy type."
    )
    assert KernelError("EEXIST", "SA exists").board == "RTNETLINK answers: File exists"


def test_timestamps_are_masked_and_nothing_else() -> None:
    text = "\t  add 2026-12-05 06:06:05 use -\n\tspi 0x1000\n"
    assert mask(text) == "\t  add <time> use -\n\tspi 0x1000"


def test_no_known_difference_for_an_unknown_case() -> None:
    assert known_for("no-such-case", "anything") is None


def test_missing_tools_are_one_line_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr(backends, "_beside_python", lambda name: None)
    with pytest.raises(PeerError, match="pip install virtme-ng"):
        backends.qemu()


def test_a_missing_kernel_image_names_the_value() -> None:
    with pytest.raises(PeerError, match="no kernel image '/no/such/vmlinuz'"):
        backends.find_kernel_image("/no/such/vmlinuz")


def test_a_peer_that_cannot_start_leaves_the_lab_as_it_was() -> None:
    session = Session()
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 enc aes 0x" + "00" * 16
    )
    with pytest.raises(EsplabError):
        session.execute("peer host kernel /no/such/vmlinuz")
    assert session.lab.real_peers == {}
    assert len(session.lab.node("ap").xfrm.states) == 1
    assert session.execute("peer").data["peers"]["host"] == "emulated"


def test_pc_and_ap_names_are_checked() -> None:
    session = Session()
    with pytest.raises(EsplabError, match="unknown NODE 'ap'; valid: host, pc1"):
        session.execute("peer ap kernel")


def test_an_echo_request_from_a_real_peer_gets_linuxs_reply() -> None:
    # icmp_echo / icmpv6_echo_reply: addresses swapped, id, seq and data kept.
    from scapy.layers.inet import ICMP, IP
    from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
    from scapy.packet import Raw

    from esplab.peer.bridge import echo_reply

    request = IP(src="192.0.2.2", dst="192.0.2.1") / ICMP(type=8, id=7, seq=3) / Raw(b"abc")
    answered = echo_reply(bytes(request))
    assert answered is not None
    reply = IP(answered)
    assert (reply.src, reply.dst, reply[ICMP].type) == ("192.0.2.1", "192.0.2.2", 0)
    assert (reply[ICMP].id, reply[ICMP].seq, bytes(reply[ICMP].payload)) == (7, 3, b"abc")
    six = IPv6(src="2001:db8:2::2", dst="2001:db8:2::1") / ICMPv6EchoRequest(id=7, seq=3, data=b"z")
    answered = echo_reply(bytes(six))
    assert answered is not None
    back = IPv6(answered)
    assert back.dst == "2001:db8:2::2" and back[ICMPv6EchoReply].data == b"z"
    assert echo_reply(bytes(IP() / ICMP(type=0))) is None  # a reply gets no reply


def test_a_peer_that_died_hands_its_node_back_to_the_emulation() -> None:
    from esplab.peer.backends import Backend
    from esplab.peer.bridge import RealPeer
    from esplab.peer.client import KernelPeer

    session = Session()
    dead = KernelPeer(Backend("qemu", ["true"], "QEMU guest (test)"))  # never started
    peer = RealPeer("host", dead)
    session.lab.real_peers["host"] = peer
    session.lab.deliver_hooks.append(peer.heard)
    listed = session.execute("peer")
    assert ("host", "QEMU guest (test)", "0", "0", "0") in listed.rows  # type: ignore[attr-defined]
    result = session.execute('send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=9)')
    journey = session.lab.journeys.get(result.data["journeys"][-1])
    assert journey is not None and journey.delivered
    gone = journey.stage("host.kernel")
    assert gone is not None and "the real host is gone" in gone.decision
    assert gone.fidelity == "M" and "not running" in gone.why
    assert session.lab.real_peers == {} and session.lab.deliver_hooks == []
    assert session.execute("peer").data["peers"]["host"] == "emulated"


def test_a_request_that_times_out_names_its_wait_and_stops_the_agent() -> None:
    from esplab.peer.backends import Backend
    from esplab.peer.client import KernelPeer

    # An agent that says it is ready and then never answers.
    script = 'import sys, time; print(\'{"ev": "ready"}\', flush=True); time.sleep(60)'
    peer = KernelPeer(Backend("netns", [sys.executable, "-c", script], "test agent")).start()
    proc = peer.proc
    assert proc is not None
    with pytest.raises(PeerError, match=r"timed out after 1 s waiting for the peer to answer"):
        peer.request("counters", wait=1.0)
    assert peer.proc is None and proc.poll() is not None  # (stopped, not left running)
