"""__xfrm_policy_check after decapsulation: a packet out of a tunnel needs a policy."""

from __future__ import annotations

from esplab.commands.session import Session
from tests.commands import seed
from tests.commands.results import journey as send

TUNNEL = (
    "ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x6001 reqid 7 "
    f"mode tunnel auth sha1 {seed.AUTH} enc aes {seed.ENC}"
)
HOST_OUT = (
    "host ip xfrm policy add src 203.0.113.0/24 dst 198.51.100.0/24 dir out "
    "tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 7 mode tunnel"
)
PACKET = 'IP(src="203.0.113.1", dst="198.51.100.2")/UDP(sport=5201, dport=1234)/Raw(b"z"*64)'


def test_a_packet_out_of_a_tunnel_without_a_policy_is_xfrm_in_no_pols() -> None:
    # airoha-dsa-xfrm.md 3.8: XfrmInNoPols when a tunnel-mode SA decapsulated the packet
    # and no policy exists (secpath_has_nontransport -> xfrm_secpath_reject).
    s = Session()
    s.execute(TUNNEL)
    s.execute("host " + TUNNEL)
    s.execute(HOST_OUT)
    j = send(s, f"send host eth0 {PACKET}")
    drop = j.dropped
    assert drop is not None and drop.tap == "ap.xfrm.policy(fwd)"
    assert drop.counters == {"XfrmInNoPols": 1}
    assert s.lab.node("ap").xfrm.mib["XfrmInNoPols"] == 1
    # With a forward policy for the tunnel, it goes on to pc1.
    s.execute(
        "ip xfrm policy add src 203.0.113.0/24 dst 198.51.100.0/24 dir fwd "
        "tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 7 mode tunnel"
    )
    assert send(s, f"send host eth0 {PACKET}").delivered


def test_icmp_type_and_code_select_a_policy() -> None:
    # The selector's type/code match the ICMP header (xfrm_flowi_sport/dport).
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 proto icmp type 8 code 0 "
        "dir out tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
    )
    echo = send(s, 'send ap wan IP(dst="192.0.2.2")/ICMP(type=8)/Raw(b"x"*8)')
    assert echo.stage("ap.esp") is not None, echo.taps()
    other = send(s, 'send ap wan IP(dst="192.0.2.2")/ICMP(type=13)/Raw(b"x"*12)')
    assert other.stage("ap.esp") is None


def test_the_no_policy_drop_names_the_command_that_fixes_it() -> None:
    s = Session()
    s.execute(TUNNEL)
    s.execute("host " + TUNNEL)
    s.execute(HOST_OUT)
    drop = send(s, f"send host eth0 {PACKET}").dropped
    assert drop is not None
    assert "a policy dir fwd for 203.0.113.1 -> 198.51.100.2, none matches" in drop.why
    fix = drop.why.split("Fix: ", 1)[1]
    assert fix == (
        "ip xfrm policy add src 203.0.113.1 dst 198.51.100.2 dir fwd tmpl src 192.0.2.2 "
        "dst 192.0.2.1 proto esp reqid 7 mode tunnel"
    )
    s.execute(fix)
    assert send(s, f"send host eth0 {PACKET}").delivered
