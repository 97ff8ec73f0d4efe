"""The flow cache replays a flow's walk: every journey, counter, SA and byte of engine
memory must come out as walking each packet does. Each scenario runs the same packets
through two labs set up alike, one walking every packet and one through the cache,
and compares the journeys and then the whole of the two labs, value by value."""

from __future__ import annotations

from typing import Any

import pytest

from esplab.commands.handlers.journey import packet_bytes
from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.model.accel.flowcache import MIN_RUN, FlowCache, _Live
from esplab.model.stages import Journey
from tests.commands import seed
from tests.model.labstate import differences

AUTH, ENC = seed.AUTH, seed.ENC
ALGOS = f"auth sha1 {AUTH} enc aes {ENC}"
N = 24


def _sa(src: str, dst: str, spi: int, mode: str = "transport", extra: str = "") -> str:
    return (
        f"ip xfrm state add src {src} dst {dst} proto esp spi {spi:#x} reqid {spi} "
        f"mode {mode} {ALGOS}{extra}"
    )


def _pol(sel: str, src: str, dst: str, spi: int, d: str, mode: str = "transport") -> str:
    return (
        f"ip xfrm policy add {sel} dir {d} "
        f"tmpl src {src} dst {dst} proto esp reqid {spi} mode {mode}"
    )


def _packet_offload(extra: str = "") -> list[str]:
    """The ap's packet offload SA (with ``extra``) and policy on wan, the host's SA."""
    return [
        _sa(*V4, 0x1000, extra=extra + PKT + " dir out"),
        _pol(SEL4, *V4, 0x1000, "out") + " priority 10" + PKT,
        "host " + _sa(*V4, 0x1000),
    ]


def _software(ap: str = "", host: str = "") -> list[str]:
    """The ap's software SA (with ``ap``) and policy, the host's SA (with ``host``)."""
    return [
        _sa(*V4, 0x1000, extra=ap),
        _pol(SEL4, *V4, 0x1000, "out"),
        "host " + _sa(*V4, 0x1000, extra=host),
    ]


V4 = ("192.0.2.1", "192.0.2.2")
V6 = ("2001:db8:2::1", "2001:db8:2::2")
SEL4 = "src 192.0.2.1/32 dst 192.0.2.2/32"
SEL6 = "src 2001:db8:2::1/128 dst 2001:db8:2::2/128"
TUN_SEL = "src 198.51.100.64/26 dst 203.0.113.0/24"
LAN = ("198.51.100.65", "198.51.100.66")
PKT = " offload packet dev wan"
PC2_HOST = ("198.51.100.66", "192.0.2.2")
PC2_SEL = "src 198.51.100.66/32 dst 192.0.2.2/32"
UDP6 = 'IPv6(dst="2001:db8:2::2")/UDP(sport=1234,dport=5201)/Raw(b"y"*40)'
TO_DUMMY = 'IP(dst="203.0.113.1")/UDP(sport=7,dport=9)/Raw(b"z"*100)'

#: name -> (setup lines, sending node, device, packet, whether the cache replays)
SCENARIOS: dict[str, tuple[list[str], str, str | None, str, bool]] = {
    "plain": ([], "ap", "wan", seed.UDP, True),
    "sw": (seed.software(), "ap", "wan", seed.UDP, True),
    "crypto offload": (seed.software(" offload dev wan dir out"), "ap", "wan", seed.UDP, True),
    "packet offload": (
        _packet_offload(),
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "sw+aead": (
        ["set crypto-provider eip93", *seed.software()],
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "crypto offload RX on the ap": (
        [
            seed.SA_IN + " offload dev wan dir in",
            "host " + seed.SA_IN,
            "host " + seed.POL_BACK_HOST,
        ],
        "host",
        "eth0",
        'IP(dst="192.0.2.1")/UDP(sport=5,dport=6)/Raw(b"r"*48)',
        True,
    ),
    "ipv6 sw": (
        [_sa(*V6, 0x3000), _pol(SEL6, *V6, 0x3000, "out"), "host " + _sa(*V6, 0x3000)],
        "ap",
        "wan",
        UDP6,
        True,
    ),
    "nat-t": (
        [
            _sa(*V4, 0x4000, extra=" encap espinudp 4500 4500 0.0.0.0"),
            _pol(SEL4, *V4, 0x4000, "out"),
            "host " + _sa(*V4, 0x4000, extra=" encap espinudp 4500 4500 0.0.0.0"),
        ],
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "forwarded into a packet offload tunnel": (
        [
            _sa(*V4, 0x2000, "tunnel", PKT + " dir out"),
            _pol(TUN_SEL, *V4, 0x2000, "out", "tunnel") + " priority 10" + PKT,
            "host " + _sa(*V4, 0x2000, "tunnel"),
            "host " + _pol(TUN_SEL, *V4, 0x2000, "in", "tunnel"),
        ],
        "pc2",
        "eth0",
        TO_DUMMY,
        True,
    ),
    "packet offload on lan2": (
        [
            _sa(*LAN, 0x5000, extra=" offload packet dev lan2 dir out"),
            _pol(f"src {LAN[0]}/32 dst {LAN[1]}/32", *LAN, 0x5000, "out")
            + " priority 10 offload packet dev lan2",
            "pc2 " + _sa(*LAN, 0x5000),
        ],
        "ap",
        "lan2",
        'IP(dst="198.51.100.66")/UDP(sport=1,dport=2)/Raw(b"l"*64)',
        True,
    ),
    "ipv6 nat-t (the udp checksum changes per packet)": (
        [
            _sa(*V6, 0x3100, extra=" encap espinudp 4500 4500 ::"),
            _pol(SEL6, *V6, 0x3100, "out"),
            "host " + _sa(*V6, 0x3100, extra=" encap espinudp 4500 4500 ::"),
        ],
        "ap",
        "wan",
        UDP6,
        True,
    ),
    "sw+aead sequence numbers run out": (
        ["set crypto-provider eip93", *_software(" replay-oseq 0xfffffff0")],
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    # ESP that the ap forwards between its ends (TTL minus one on the way): the host's
    # step takes what the ap changed, which a replay cannot make again.
    "esp forwarded through the ap": (
        [
            "pc2 " + _sa(*PC2_HOST, 0x6000, extra=" replay-window 32"),
            "pc2 " + _pol(PC2_SEL, *PC2_HOST, 0x6000, "out"),
            "host " + _sa(*PC2_HOST, 0x6000, extra=" replay-window 32"),
            "host " + _pol(PC2_SEL, *PC2_HOST, 0x6000, "in"),
        ],
        "pc2",
        "eth0",
        'IP(dst="192.0.2.2")/UDP(sport=1,dport=2)/Raw(b"f"*50)',
        False,
    ),
    "no neighbour: a drop": ([], "ap", "wan", 'IP(dst="192.0.2.99")/UDP()', True),
    "packet offload hard limit mid-run": (
        _packet_offload(" limit packet-hard 10"),
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "soft limit mid-run": (
        _software(" limit packet-soft 5"),
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "receiver's hard limit mid-run": (
        _software(host=" limit packet-hard 7"),
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "esn with a replay window": (
        _software(" flag esn replay-window 64", " flag esn replay-window 64"),
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    "sequence numbers run out": (
        _software(" replay-oseq 0xfffffff0"),
        "ap",
        "wan",
        seed.UDP,
        True,
    ),
    # An ICMP error is a journey of its own: such a walk is never replayed.
    "ttl runs out (icmp time exceeded)": (
        [],
        "pc2",
        "eth0",
        'IP(dst="192.0.2.2",ttl=1)/UDP()',
        False,
    ),
    "too big for packet offload (offload_ok drops it)": (
        _packet_offload(),
        "ap",
        "wan",
        'IP(dst="192.0.2.2",flags="DF")/UDP()/Raw(b"b"*1460)',
        True,
    ),
    # The first packet's ICMP teaches pc2 the path MTU; the others stop at pc2.
    "too big for a tunnel (icmp, then the learned path mtu)": (
        [
            _sa(*V4, 0x2000, "tunnel"),
            _pol(TUN_SEL, *V4, 0x2000, "out", "tunnel"),
            "host " + _sa(*V4, 0x2000, "tunnel"),
            "host " + _pol(TUN_SEL, *V4, 0x2000, "in", "tunnel"),
        ],
        "pc2",
        "eth0",
        'IP(dst="203.0.113.1",flags="DF")/UDP()/Raw(b"t"*1460)',
        True,
    ),
}


def _view(j: Journey) -> tuple[Any, ...]:
    stages = [
        (s.tap, s.device, s.decision, s.why, s.fidelity, s.counters, s.meta, s.drop, s.kind, s.data)
        for s in j.stages
    ]
    return (j.id, j.origin, j.verdict, j.delivered, stages)


def _lab(setup: list[str]) -> Session:
    s = Session()
    s.execute("set tracing off")
    for line in setup:
        s.execute(line)
    return s


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_replayed_journeys_and_lab_match_walking_each_packet(name: str) -> None:
    setup, node, dev, expr, replays = SCENARIOS[name]
    fast, slow = _lab(setup), _lab(setup)
    data = packet_bytes(fast, expr, node, dev)
    cache = FlowCache(fast.lab.datapath, node, dev, data)
    for _ in range(N):
        cache.send()
    for _ in range(N):
        slow.lab.datapath.send(node, dev, data)
    assert [_view(j) for j in fast.lab.journeys] == [_view(j) for j in slow.lab.journeys]
    assert differences(fast.lab, slow.lab) == []
    assert (cache.replayed > 0) is replays, (cache.walked, cache.replayed)


def test_send_count_goes_through_the_cache_and_reports_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    offload = seed.software(" offload dev wan dir out")
    fast, slow = _lab(offload), _lab(offload)
    slow.execute("set tracing on")
    calls: list[int] = []
    original = FlowCache._replay

    def counted(self: FlowCache, *args: Any) -> Journey:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(FlowCache, "_replay", counted)
    fast_result = fast.execute(f"send ap wan {seed.UDP} count {MIN_RUN}")
    slow_result = slow.execute(f"send ap wan {seed.UDP} count {MIN_RUN}")
    assert isinstance(fast_result, JourneyResult) and isinstance(slow_result, JourneyResult)
    # The first walked, the second walked and recorded, the rest replayed; the lab with
    # tracing on walks them all.
    assert len(calls) == MIN_RUN - 2
    assert fast_result.summary == slow_result.summary
    assert fast_result.summary.startswith(f"{MIN_RUN} packets: {MIN_RUN} delivered; last")
    short = fast.execute(f"send ap wan {seed.UDP} count {MIN_RUN - 1}")
    assert isinstance(short, JourneyResult)
    assert len(calls) == MIN_RUN - 2  # a shorter run walks every packet


def test_pinned_sequence_numbers_are_walked_every_time() -> None:
    s = _lab(seed.software())
    s.execute(f"set journeys {MIN_RUN}")
    result = s.execute(f"send ap wan {seed.UDP} count {MIN_RUN} seq 100")
    assert isinstance(result, JourneyResult)
    seqs = []
    for jid in result.data["journeys"]:
        journey = s.lab.journeys.get(jid)
        esp = journey.stage("ap.esp") if journey is not None else None
        seqs.append(esp.meta["seq"] if esp is not None else None)
    assert seqs == list(range(100, 100 + MIN_RUN))


def test_a_replayed_step_finds_the_walk_as_the_recorded_one_did() -> None:
    # The secpath an input step finds is the one before it ran (empty here), not the
    # one it left.
    s = _lab(seed.software())
    data = packet_bytes(s, seed.UDP, "ap", "wan")
    cache = FlowCache(s.lab.datapath, "ap", "wan", data)
    cache.send()
    cache.send()
    assert cache.plan is not None
    steps = [item for item in cache.plan.items if isinstance(item, _Live)]
    assert [(step.output, step.secpath) for step in steps] == [(True, []), (False, [])]
    journey = cache.send()
    assert journey.delivered and cache.replayed == 1


def test_sw_aead_counts_a_refused_packet_and_goes_on() -> None:
    # Sequence numbers exhausted (XfrmOutStateSeqError) under the engine's authenc, as
    # under generic software ESP: a drop with its counter, not a failed command.
    s = _lab(["set crypto-provider eip93", seed.SA_OUT + " replay-oseq 0xfffffffe"])
    s.execute(seed.POL_OUT)
    s.execute("host " + seed.SA_OUT)
    result = s.execute(f"send ap wan {seed.UDP} count 3")
    assert isinstance(result, JourneyResult)
    assert result.summary.startswith("3 packets: 1 delivered")
    assert s.lab.node("ap").xfrm.mib["XfrmOutStateSeqError"] == 2


def test_only_an_attached_xdp_program_keeps_a_run_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    original = FlowCache._replay

    def counted(self: FlowCache, *args: Any) -> Journey:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(FlowCache, "_replay", counted)
    s = _lab(seed.software())
    s.execute("xsk list")  # brings the XDP side into being, attaches nothing
    s.execute(f"send ap wan {seed.UDP} count {MIN_RUN}")
    assert len(calls) == MIN_RUN - 2
    s.execute("xdp attach lan2 skb pass")  # a program (on a port this flow never uses)
    s.execute(f"send ap wan {seed.UDP} count {MIN_RUN}")
    assert len(calls) == MIN_RUN - 2  # every packet walked
