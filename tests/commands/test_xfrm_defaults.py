"""ip xfrm policy setdefault/getdefault, and the walk honouring the defaults.

Expected texts are Linux 6.12's with iproute2 6.15 (the kernel guest: kx). The drops
follow net/xfrm/xfrm_policy.c: __xfrm_policy_check counts XfrmInNoPols for in and fwd;
xfrm_lookup_with_ifid answers -EPERM for out and counts nothing; loopback is spared.
"""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import ToolUsageError
from tests.commands.results import journey as send

PACKET = 'IP(src="203.0.113.1", dst="198.51.100.2")/UDP(sport=5201, dport=1234)/Raw(b"z"*64)'


def _text(s: Session, line: str) -> str:
    return s.execute(line).text  # type: ignore[attr-defined, no-any-return]


def test_getdefault_prints_as_the_kernel() -> None:
    s = Session()
    # Linux 6.12: a fresh namespace accepts in every direction.
    assert _text(s, "ip xfrm policy getdefault") == (
        "Default policies:\n in:  accept\n fwd: accept\n out: accept"
    )
    s.execute("ip xfrm policy setdefault in block out allow")
    s.execute("ip xfrm policy setdefault fwd block")
    assert _text(s, "ip xfrm policy getdefault") == (
        "Default policies:\n in:  block\n fwd: block\n out: accept"
    )
    s.execute("ip xfrm policy setdefault")  # nothing given: nothing changes (rc 0)
    assert "fwd: block" in _text(s, "ip xfrm policy getdefault")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # iproute2 6.15's own words (Error: ... / rc 255).
        ("in block in accept", 'duplicate "in": "in" is the second value.'),
        ("in bogus", 'argument "bogus" is wrong: in policy value is invalid'),
        ("up block", 'argument "up" is wrong: unknown direction'),
        ("in", 'Command line is not complete. Try option "help"'),
    ],
)
def test_setdefault_refusals(line: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        Session().execute(f"ip xfrm policy setdefault {line}")
    assert message in str(err.value)


def test_out_block_drops_a_flow_without_policy_with_eperm_and_no_counter() -> None:
    s = Session()
    assert send(s, 'send ap wan IP(dst="192.0.2.2")/UDP()').stage("ap.xfrm.policy(out)")
    s.execute("ip xfrm policy setdefault out block")
    j = send(s, 'send ap wan IP(dst="192.0.2.2")/UDP()')
    drop = j.dropped
    assert drop is not None and drop.tap == "ap.xfrm.policy(out)"
    assert "default for dir out is block" in drop.decision and "EPERM" in drop.decision
    assert drop.counters == {}
    assert not any(dict(s.lab.node("ap").xfrm.mib).values())
    # Loopback is spared (Linux 6.12: ping of the node's own address still answers).
    assert send(s, 'send ap wan IP(dst="192.0.2.1")/UDP()').delivered
    s.execute("ip xfrm policy setdefault out accept")
    assert not send(s, 'send ap wan IP(dst="192.0.2.2")/UDP()').dropped


def test_in_block_drops_a_delivered_packet_as_xfrm_in_no_pols() -> None:
    s = Session()
    s.execute("host ip xfrm policy setdefault in block")
    j = send(s, 'send ap wan IP(dst="192.0.2.2")/UDP()')
    drop = j.dropped
    assert drop is not None and drop.tap == "host.xfrm.policy(in)"
    assert drop.counters == {"XfrmInNoPols": 1}
    assert "setdefault in accept" in drop.why
    assert s.lab.node("host").xfrm.mib["XfrmInNoPols"] == 1
    # A policy for the flow (action allow, no template) lets it in.
    s.execute("host ip xfrm policy add src 0.0.0.0/0 dst 192.0.2.2/32 dir in")
    assert send(s, 'send ap wan IP(dst="192.0.2.2")/UDP()').delivered


def test_fwd_block_drops_a_forwarded_packet_as_xfrm_in_no_pols() -> None:
    s = Session()
    s.execute("ip xfrm policy setdefault fwd block")
    j = send(s, f"send host eth0 {PACKET}")
    drop = j.dropped
    assert drop is not None and drop.tap == "ap.xfrm.policy(fwd)"
    assert drop.counters == {"XfrmInNoPols": 1}
    s.execute("ip xfrm policy setdefault fwd accept")
    assert send(s, f"send host eth0 {PACKET}").delivered


def test_a_packet_for_a_larval_state_is_xfrm_in_state_invalid() -> None:
    # xfrm_input: the state found by SPI is not XFRM_STATE_VALID (allocspi made it).
    s = Session()
    s.execute("ip xfrm state allocspi src 192.0.2.2 dst 192.0.2.1 proto esp min 0x700 max 0x700")
    j = send(s, 'send host eth0 IP(src="192.0.2.2", dst="192.0.2.1")/ESP(spi=0x700, seq=1)')
    drop = j.dropped
    assert drop is not None and drop.counters == {"XfrmInStateInvalid": 1}
    assert "larval" in drop.decision
