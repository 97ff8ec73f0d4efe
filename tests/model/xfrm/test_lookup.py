"""Policy and state lookups: priorities, HW-before-SW, templates (reference 3.6,
facts 6.23, 6.24)."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from esplab.errors import KernelError
from esplab.model.kernel.xfrm.objects import Flow

from .fakes import FakeDevice
from .support import GCM, ip, make_node

A, B = ip_address("198.51.100.1"), ip_address("203.0.113.2")
UDP = Flow(A, B, proto=17, sport=4000, dport=53)
TUNNEL_SA = (
    "src 192.0.2.1 dst 192.0.2.2 proto esp spi {spi} reqid 3 mode tunnel "
    f"{GCM} sel src 198.51.100.0/24 dst 203.0.113.0/24"
)
TMPL = "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 3 mode tunnel"


def test_fact_6_23_mainline_packet_policy_wins_the_exact_chain() -> None:
    # Reference 6.23: both /32 policies share an exact chain; the packet-offload one
    # sits at its head whatever its priority, and no -EINVAL is raised.
    node = make_node(FakeDevice("wan"), rule="mainline")
    sw = ip(node, f"ip xfrm policy add src {A}/32 dst {B}/32 dir out priority 0").policies[0]
    hw = ip(
        node,
        f"ip xfrm policy add src {A}/32 dst {B}/32 proto udp dir out priority 1000 "
        "offload packet dev wan",
    ).policies[0]
    assert node.lookup_policy(UDP, "out") is hw
    assert node.lookup_policy(Flow(A, B, proto=6), "out") is sw
    # An identical selector is a duplicate, not a priority contest.
    with pytest.raises(KernelError) as err:
        ip(node, f"ip xfrm policy add src {A}/32 dst {B}/32 dir out priority 5")
    assert err.value.errno_name == "EEXIST"


def test_seed_rule_separates_offloaded_and_software_priorities() -> None:
    # Seed 001 patch 6 (__xfrm_policy_check_hw_priority): per direction, -EINVAL when
    # max(software) >= offloaded, or software >= min(offloaded).
    node = make_node(FakeDevice("wan"))
    ip(node, f"ip xfrm policy add src {A}/32 dst {B}/32 dir out priority 0")
    with pytest.raises(KernelError, match="must be above every software priority") as err:
        ip(
            node,
            f"ip xfrm policy add src {A}/32 dst {B}/32 proto udp dir out priority 0 "
            "offload packet dev wan",
        )
    assert err.value.errno_name == "EINVAL"
    hw = ip(
        node,
        f"ip xfrm policy add src {A}/32 dst {B}/32 proto udp dir out priority 1000 "
        "offload packet dev wan",
    ).policies[0]
    with pytest.raises(KernelError, match="must be below every offloaded priority"):
        ip(node, "ip xfrm policy add src 10.0.0.0/8 dir out priority 1000")
    ip(node, "ip xfrm policy add src 10.0.0.0/8 dir out priority 999")
    # Other directions are separate; the rule orders lookups by priority only.
    ip(node, "ip xfrm policy add src 10.0.0.0/8 dir in priority 5000")
    assert node.lookup_policy(UDP, "out") is not hw
    assert node.lookup_policy(UDP, "out") is node.policies[-1]


def test_priority_and_exact_versus_inexact() -> None:
    node = make_node()
    exact = ip(node, f"ip xfrm policy add src {A} dst {B} dir out priority 10").policies[0]
    wide = ip(node, "ip xfrm policy add src 198.51.100.0/24 dir out priority 5").policies[0]
    # An inexact candidate wins only with a lower priority...
    assert node.lookup_policy(UDP, "out") is wide
    ip(node, "ip xfrm policy update src 198.51.100.0/24 dir out priority 10")
    # ...or an equal one and an older position (xfrm_policy_eval_candidates).
    assert node.lookup_policy(UDP, "out") is exact
    assert node.lookup_policy(Flow(A, ip_address("203.0.113.99")), "out") is node.policies[0]
    assert node.lookup_policy(Flow(ip_address("192.0.2.77"), B), "out") is None
    assert node.lookup_policy(UDP, "in") is None


def test_selector_ports_mark_and_if_id() -> None:
    node = make_node()
    dns = ip(node, "ip xfrm policy add proto udp dport 53 dir out mark 1").policies[0]
    assert node.lookup_policy(Flow(A, B, proto=17, dport=53, mark=1), "out") is dns
    assert node.lookup_policy(Flow(A, B, proto=17, dport=53), "out") is None
    assert node.lookup_policy(Flow(A, B, proto=17, dport=54, mark=1), "out") is None
    xfrmi = ip(node, "ip xfrm policy add dir in if_id 5").policies[0]
    assert node.lookup_policy(Flow(A, B, if_id=5), "in") is xfrmi
    assert node.lookup_policy(Flow(A, B), "in") is None


def test_template_without_a_state_counts_out_no_states() -> None:
    node = make_node()
    ip(node, f"ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out {TMPL}")
    decision = node.resolve_output(UDP)
    assert decision.verdict == "no-state" and decision.states == ()
    assert decision.counter == "XfrmOutNoStates" and node.mib["XfrmOutNoStates"] == 1
    ip(node, "ip xfrm state add " + TUNNEL_SA.format(spi="0x3000"))
    decision = node.resolve_output(UDP)
    assert decision.verdict == "ipsec" and decision.states[0].spi == 0x3000
    assert node.mib["XfrmOutNoStates"] == 1


def test_fact_6_24_software_policy_never_selects_a_packet_state() -> None:
    wan, lan1 = FakeDevice("wan"), FakeDevice("lan1")
    node = make_node(wan, lan1, rule="mainline")
    ip(
        node,
        "ip xfrm state add " + TUNNEL_SA.format(spi="0x3000") + " offload packet dev wan dir out",
    )
    sw = ip(node, f"ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out {TMPL}")
    assert node.lookup_state_output(UDP, sw.policies[0], sw.policies[0].templates[0]) is None
    assert node.resolve_output(UDP).verdict == "no-state"
    assert node.mib["XfrmOutNoStates"] == 1
    # A packet-offload policy selects packet states on its own device only.
    ip(node, "ip xfrm policy flush")
    hw = ip(
        node,
        f"ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out {TMPL} "
        "offload packet dev lan1",
    ).policies[0]
    assert node.lookup_state_output(UDP, hw, hw.templates[0]) is None
    ip(
        node,
        "ip xfrm state add " + TUNNEL_SA.format(spi="0x3001") + " offload packet dev lan1 dir out",
    )
    found = node.lookup_state_output(UDP, hw, hw.templates[0])
    assert found is not None and found.spi == 0x3001


def test_crypto_offload_states_serve_software_policies() -> None:
    node = make_node(FakeDevice("wan"))
    ip(node, "ip xfrm state add " + TUNNEL_SA.format(spi="0x3000") + " offload dev wan dir out")
    ip(node, f"ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out {TMPL}")
    assert node.resolve_output(UDP).verdict == "ipsec"


def test_newest_matching_state_wins_and_transport_uses_flow_addresses() -> None:
    ticks = iter(range(100, 200))
    node = make_node()
    node.clock = lambda: next(ticks)
    ip(node, f"ip xfrm policy add src {A} dst {B} dir out tmpl proto esp reqid 1")
    ip(node, f"ip xfrm state add src {A} dst {B} proto esp spi 1 reqid 1 {GCM}")
    ip(node, f"ip xfrm state add src {A} dst {B} proto esp spi 2 reqid 1 {GCM}")
    ip(node, f"ip xfrm state add src {A} dst {B} proto esp spi 3 reqid 2 {GCM}")
    decision = node.resolve_output(UDP)
    assert [x.spi for x in decision.states] == [2]


def test_block_and_optional_templates() -> None:
    node = make_node()
    ip(node, f"ip xfrm policy add src {A} dst {B} dir out action block")
    assert node.resolve_output(UDP).verdict == "block"
    assert node.mib["XfrmOutPolBlock"] == 1
    ip(node, f"ip xfrm policy update src {A} dst {B} dir out tmpl proto esp level use")
    assert node.resolve_output(UDP).verdict == "ipsec"
    assert node.resolve_output(Flow(B, A)).verdict == "bypass"


def test_output_lookup_refuses_an_input_sa() -> None:
    node = make_node()
    ip(node, f"ip xfrm policy add src {A} dst {B} dir out tmpl proto esp reqid 1")
    ip(node, f"ip xfrm state add src {A} dst {B} proto esp spi 1 reqid 1 {GCM} dir in")
    decision = node.resolve_output(UDP)
    assert decision.verdict == "error" and node.mib["XfrmOutStateDirError"] == 1


def test_input_lookup_by_daddr_spi_proto_mark() -> None:
    node = make_node()
    x = ip(node, f"ip xfrm state add src {A} dst {B} proto esp spi 0x77 {GCM} mark 3").states[0]
    assert node.lookup_state_input(B, 0x77, 50, mark=3) is x
    assert node.lookup_state_input(B, 0x77, 50) is None
    assert node.lookup_state_input(B, 0x78, 50, mark=3) is None
    assert node.lookup_state_input(A, 0x77, 50, mark=3) is None
