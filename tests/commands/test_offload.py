"""The four datapaths on the journey, and the offload rules of seed 001 / 000."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import KernelError, NotFound
from esplab.model.stage import Journey
from tests.commands import seed
from tests.commands.results import journey as send

IV = "000102030405060708090a0b0c0d0e0f"
CRYPTO = " offload dev wan dir out"
PACKET = " offload packet dev wan dir out"
PACKET_POLICY = " priority 10 offload packet dev wan"


def session(offload: str = "", policy: str = "") -> Session:
    s = Session()
    for line in (
        seed.SA_OUT + offload,
        seed.POL_OUT + policy,
        "host " + seed.SA_OUT,
        "host " + seed.POL_IN_HOST,
    ):
        s.execute(line)
    return s


def wire(j: Journey, tap: str = "wan.wire") -> bytes:
    stage = j.stage(tap)
    assert stage is not None and stage.data is not None, j.taps()
    return stage.data


def test_seed_scenario_same_wire_bytes_offload_off_and_on() -> None:
    # DESIGN.md: with the same SA, IV and sequence number the datapaths give the same
    # bytes on the wire; the host (software XFRM) authenticates all of them.
    line = f"send ap wan {seed.UDP} seq 7 iv {IV}"
    journeys = [
        send(session(), line),
        send(session(CRYPTO), line),
        send(session(PACKET, PACKET_POLICY), line),
    ]
    assert all(j.delivered for j in journeys), [j.verdict for j in journeys]
    assert wire(journeys[0]) == wire(journeys[1]) == wire(journeys[2])
    assert "ap.esp" in journeys[0].taps()
    for j in journeys[1:]:
        taps = j.taps()
        assert "ap.esp" not in taps
        assert [t for t in taps if t.startswith("eip93.")][:5] == [
            "eip93.driver",
            "eip93.cdr",
            "eip93.sa",
            "eip93.in",
            "eip93.out",
        ]


def test_state_add_programs_an_sa_record() -> None:
    s = session(CRYPTO)
    (journey,) = list(s.lab.journeys)
    assert journey.origin.startswith("xdo_dev_state_add wan spi 0x1000")
    sa = s.execute("eip93 sa 0x1000")
    # eip93.md 4.1: AES-128-CBC + HMAC-SHA1-96 outbound.
    assert sa.packet.sa_cmd0 == 0x133A1310 and sa.packet.sa_cmd1 == 0x22001101  # type: ignore[attr-defined]


def test_aead_state_falls_back_to_software_silently() -> None:
    s = Session()
    result = s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000 reqid 2 "
        "mode transport aead 'rfc4106(gcm(aes))' "
        "0x000102030405060708090a0b0c0d0e0fdeadbeef 128 offload dev wan dir out"
    )
    assert "not offloaded" in result.summary and "GCM" in result.summary
    (state,) = s.lab.node("ap").xfrm.states
    assert state.offload is None  # no "crypto offload parameters" line (fact 6.10/6.11)


def test_aead_packet_offload_fails_with_the_drivers_error() -> None:
    s = Session()
    with pytest.raises(KernelError) as info:
        s.execute(
            "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000 reqid 2 "
            "mode transport aead 'rfc4106(gcm(aes))' "
            "0x000102030405060708090a0b0c0d0e0fdeadbeef 128 offload packet dev wan dir out"
        )
    assert info.value.errno_name == "EOPNOTSUPP"
    assert s.lab.node("ap").xfrm.states == ()


def test_crypto_offload_too_big_takes_software_packet_offload_drops() -> None:
    big = 'IP(dst="192.0.2.2", flags="DF")/UDP(dport=9)/Raw(b"x"*1460)'
    j = send(session(CRYPTO), f"send ap wan {big}")
    xfrmdev = j.stage("wan.xfrmdev")
    assert xfrmdev is not None and "offload_ok: no" in xfrmdev.decision
    assert "ap.esp" in j.taps()  # software fallback, which then hits the MTU
    s = session(PACKET, PACKET_POLICY)
    j = send(s, f"send ap wan {big}")
    assert j.dropped is not None and j.dropped.counters == {"XfrmOutError": 1}
    assert s.lab.node("ap").xfrm.mib["XfrmOutError"] == 1  # airoha-dsa-xfrm.md 6.18


def test_fragments_are_dropped_under_packet_offload() -> None:
    frag = 'IP(dst="192.0.2.2", flags="MF", frag=0)/UDP(dport=9)/Raw(b"x"*16)'
    s = session(PACKET, PACKET_POLICY)
    j = send(s, f"send ap wan {frag}")
    assert j.dropped is not None and "fragments" in j.dropped.why
    assert s.lab.node("ap").xfrm.mib["XfrmOutError"] == 1


def test_esp_hw_offload_toggle_is_busy_with_offloaded_sas() -> None:
    s = session(CRYPTO)
    with pytest.raises(KernelError) as info:
        s.execute("ethtool -K wan esp-hw-offload off")
    assert info.value.errno_name == "EBUSY"
    assert s.lab.node("ap").devs["wan"].features["esp-hw-offload"] is True


def test_device_down_flushes_offloaded_states_and_policies() -> None:
    s = session(PACKET, PACKET_POLICY)
    s.execute("host " + seed.SA_IN)
    result = s.execute("ip link set wan down")
    assert "flushed 2" in result.summary
    assert s.lab.node("ap").xfrm.states == ()
    assert s.lab.node("ap").xfrm.policies == ()
    assert s.lab.node("host").xfrm.states != ()  # the host's software SAs stay


def test_offload_rx_on_the_ap() -> None:
    s = Session()
    s.execute(seed.SA_IN + " offload dev wan dir in")
    s.execute("host " + seed.SA_IN)
    s.execute("host " + seed.POL_BACK_HOST)
    j = send(s, 'host send eth0 IP(dst="192.0.2.1")/UDP(dport=5201)/Raw(b"hello")')
    assert j.delivered, j.verdict
    assert "eip93.rdr" in j.taps()
    rx = j.stage("ap.xfrm")
    assert rx is not None and rx.meta["datapath"] == "crypto"


def test_offload_rx_bad_icv_counts_proto_error() -> None:
    s = Session()
    s.execute(seed.SA_IN + " offload dev wan dir in")
    s.execute("host " + seed.SA_IN.replace(seed.AUTH, seed.AUTH[:-2] + "ff"))
    s.execute("host " + seed.POL_BACK_HOST)
    # The host authenticates with another key: the engine reports AUTH_ERR alone
    # (eip93.md 7.9) and the driver maps it to auth-failed (airoha-dsa-xfrm.md 3.10).
    j = send(s, 'host send eth0 IP(dst="192.0.2.1")/UDP(dport=5201)/Raw(b"hello")')
    assert not j.delivered
    rdr = j.stage("eip93.rdr")
    assert rdr is not None and "AUTH_ERR" in rdr.decision
    assert s.lab.node("ap").xfrm.mib["XfrmInStateProtoError"] == 1
    (state,) = s.lab.node("ap").xfrm.states
    assert state.stats.integrity_failed == 1


def test_offload_rx_wrong_cipher_key_is_a_padding_error() -> None:
    s = Session()
    s.execute(seed.SA_IN + " offload dev wan dir in")
    s.execute("host " + seed.SA_IN.replace(seed.ENC, "0x0f0e0d0c0b0a09080706050403020100"))
    s.execute("host " + seed.POL_BACK_HOST)
    # The ICV is good but the plaintext is garbage: PAD_ERR, mapped to an invalid
    # packet, counted as XfrmInBufferError (airoha-dsa-xfrm.md 3.8, 6.19).
    j = send(s, 'host send eth0 IP(dst="192.0.2.1")/UDP(dport=5201)/Raw(b"hello")')
    assert j.stages[-1].counters == {"XfrmInBufferError": 1}
    assert s.lab.node("ap").xfrm.mib["XfrmInBufferError"] == 1


def test_lan_port_borrows_the_conduits_engine() -> None:
    s = Session()
    pc1 = "198.51.100.2"
    s.execute(
        f"ip xfrm state add src 198.51.100.1 dst {pc1} proto esp spi 0x3000 reqid 3 "
        f"mode transport auth sha1 {seed.AUTH} enc aes {seed.ENC} offload dev lan1 dir out"
    )
    s.execute(
        f"ip xfrm policy add src 198.51.100.1/32 dst {pc1}/32 dir out "
        f"tmpl src 198.51.100.1 dst {pc1} proto esp reqid 3 mode transport"
    )
    s.execute(
        f"pc1 ip xfrm state add src 198.51.100.1 dst {pc1} proto esp spi 0x3000 reqid 3 "
        f"mode transport auth sha1 {seed.AUTH} enc aes {seed.ENC}"
    )
    j = send(s, f'send ap lan1 IP(dst="{pc1}")/UDP(dport=7)/Raw(b"x"*20)')
    assert j.delivered, j.verdict
    taps = j.taps()
    assert taps.index("eip93.out") < taps.index("lan1.tagger") < taps.index("eth0.wire")


def test_sw_aead_datapath_same_bytes_and_engine_stages() -> None:
    line = f"send ap wan {seed.UDP} seq 7 iv {IV}"
    plain = send(session(), line)
    s = session()
    s.execute("set crypto-provider eip93")
    aead = send(s, line)
    assert aead.delivered, aead.verdict
    assert wire(aead) == wire(plain)
    assert "eip93.cdr" in aead.taps() and "ap.esp" not in aead.taps()


NATT = " encap espinudp 4500 4500 0.0.0.0"


@pytest.mark.parametrize("provider", ["software", "eip93"])
def test_esp_in_udp_runs_on_generic_software_crypto_under_sw_aead(provider: str) -> None:
    # The lab's authenc path finds ESP right after the IP header only, so an SA with
    # UDP encapsulation takes generic software ESP both ways [M], whatever the provider.
    s = Session()
    s.execute(f"set crypto-provider {provider}")
    for line in (seed.SA_OUT + NATT, seed.SA_IN + NATT, seed.POL_OUT, seed.POL_BACK_HOST):
        s.execute(line)
    s.execute("host " + seed.SA_OUT + NATT)
    s.execute("host " + seed.SA_IN + NATT)
    out = send(s, f"send ap wan {seed.UDP}")
    back = send(s, 'send host eth0 IP(dst="192.0.2.1")/UDP(sport=5,dport=6)/Raw(b"r"*48)')
    assert out.delivered and back.delivered, (out.verdict, back.verdict)
    assert "ap.esp" in out.taps() and "eip93.cdr" not in out.taps()
    assert "eip93.cdr" not in back.taps()


@pytest.mark.parametrize(
    ("provider", "offload", "policy"),
    [
        ("software", "", ""),
        ("eip93", "", ""),
        ("software", " offload dev wan dir out", ""),
        ("software", " offload packet dev wan dir out", " priority 10 offload packet dev wan"),
    ],
)
def test_a_bad_pinned_iv_is_refused_before_the_sa_counts(
    provider: str, offload: str, policy: str
) -> None:
    # Software ESP refuses a pin before it counts anything (esp.check_pins); so do the
    # engine's datapaths, whose IV size is the engine's.
    s = session(offload, policy)
    s.execute(f"set crypto-provider {provider}")
    j = send(s, f"send ap wan {seed.UDP} iv 0x0001020304050607")  # AES-CBC takes 16
    assert j.dropped is not None and "IV of 8 bytes" in j.dropped.decision
    (state,) = [x for x in s.lab.node("ap").xfrm.states if x.spi == 0x1000]
    assert (state.replay.oseq, state.curlft.packets, state.curlft.bytes) == (0, 0, 0)
    sent = send(s, f"send ap wan {seed.UDP}")  # and the next packet is the first
    assert sent.delivered and state.curlft.packets == 1


def test_deleting_a_sw_aead_state_frees_its_engine_transform() -> None:
    # esp_destroy frees the AEAD; the eip93 driver's cra_exit unmaps and frees the
    # transform's SA record (eip93-aead.c eip93_aead_cra_exit).
    s = session()
    s.execute("set crypto-provider eip93")
    assert send(s, f"send ap wan {seed.UDP}").delivered
    drv = s.lab.eip93
    (tfm,) = drv.tfms.values()
    assert drv.memory.region(tfm.sa_out, 128) is not None
    (held,) = [x for x in s.lab.node("ap").xfrm.states if x.runtime.aead is tfm]
    frees = drv.memory.frees
    s.execute("ip xfrm state flush")
    assert drv.tfms == {} and held.runtime.aead is None
    assert drv.memory.frees == frees + 3
    assert drv.memory.region(tfm.sa_out, 128) is None
    with pytest.raises(NotFound, match="0x1000"):
        s.execute("eip93 sa 0x1000")
    # The same SA added again gets a new transform, and the packet still goes through.
    s.execute(seed.SA_OUT)
    assert send(s, f"send ap wan {seed.UDP}").delivered
    assert len(drv.tfms) == 1 and tfm.handle not in drv.tfms


def test_update_rebuilds_the_software_sa_from_the_state() -> None:
    s = session()
    assert send(s, f"send ap wan {seed.UDP}").delivered
    runtime = s.lab.sa_runtime("ap")
    (state,) = s.lab.node("ap").xfrm.states
    before = runtime.get(state)
    s.execute(seed.SA_OUT.replace("state add", "state update") + " limit packet-hard 100")
    after = runtime.get(state)
    assert after is not before and after.oseq == before.oseq == 1


def test_sw_aead_rx_on_the_ap() -> None:
    s = Session()
    s.lab.settings.crypto_provider = "eip93"
    for line in (seed.SA_IN, "host " + seed.SA_IN, "host " + seed.POL_BACK_HOST):
        s.execute(line)
    j = send(s, 'host send eth0 IP(dst="192.0.2.1")/UDP(dport=5201)/Raw(b"hello")')
    assert j.delivered, j.verdict
    rx = j.stage("ap.xfrm")
    assert rx is not None and rx.meta["datapath"] == "sw+aead"


def test_explain_says_why_an_aead_sa_runs_in_software() -> None:
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000 reqid 2 "
        "mode transport aead 'rfc4106(gcm(aes))' "
        "0x000102030405060708090a0b0c0d0e0fdeadbeef 128 offload dev wan dir out"
    )
    s.execute(
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 2 mode transport"
    )
    j = send(s, f"send ap wan {seed.UDP}")
    esp = j.stage("ap.esp")
    assert esp is not None
    assert "has no GCM" in esp.why and "EOPNOTSUPP" in esp.why


def test_counters_and_the_replay_window_have_one_home() -> None:
    # Crypto offload RX counts in software after the engine (airoha-dsa-xfrm.md 3.2):
    # four packets are four packets in ip -s xfrm state.
    s = Session()
    s.execute(seed.SA_IN + " offload dev wan dir in")
    s.execute("host " + seed.SA_IN)
    s.execute("host " + seed.POL_BACK_HOST)
    back = 'host send eth0 IP(dst="192.0.2.1")/UDP(dport=5201)/Raw(b"hello")'
    for _ in range(4):
        assert send(s, back).delivered
    (state,) = s.lab.node("ap").xfrm.states
    assert state.curlft.packets == 4
    # The host's software SA with a window: a replay is counted, and updating the SA
    # (which builds its software SA again) keeps the window and the counters.
    window = seed.SA_OUT + " replay-window 32"
    s.execute(seed.SA_OUT)
    s.execute(seed.POL_OUT)
    s.execute("host " + window)
    line = f"send ap wan {seed.UDP} seq {{}}"
    for n in (1, 2, 3, 4):
        assert send(s, line.format(n)).delivered
    assert not send(s, line.format(3)).delivered
    host_sa = next(x for x in s.lab.node("host").xfrm.states if x.spi == 0x1000)
    assert host_sa.stats.replay == 1 and host_sa.replay.seq == 4
    s.execute("host " + window.replace(" add ", " update ", 1))
    assert not send(s, line.format(2)).delivered
    assert host_sa.stats.replay == 2 and host_sa.curlft.packets == 4
    assert send(s, line.format(5)).delivered and host_sa.curlft.packets == 5


def test_tunnel_mode_offload_is_checked_for_the_tunnels_device() -> None:
    # The inner destination is behind lan1, the tunnel endpoint behind wan: the ESP
    # packet leaves by wan, so the SA offloaded to wan applies (and wan's MTU, not lan1's).
    s = Session()
    tunnel = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000 reqid 2 "
        f"mode tunnel auth sha1 {seed.AUTH} enc aes {seed.ENC}"
    )
    s.execute(tunnel + " offload dev wan dir out")
    s.execute(
        "ip xfrm policy add src 0.0.0.0/0 dst 198.51.100.2/32 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 2 mode tunnel"
    )
    s.execute("ip link set lan1 mtu 576")
    j = send(s, 'send ap lan1 IP(dst="198.51.100.2")/UDP(dport=5201)/Raw(b"x"*600)')
    offload = j.stage("wan.xfrmdev")
    assert offload is not None and offload.decision.startswith("offload_ok: yes"), j.taps()
    assert "wan.wire" in j.taps() and not any("pmtu" in tap for tap in j.taps())


@pytest.mark.parametrize(("offload", "policy"), [("", ""), (CRYPTO, ""), (PACKET, PACKET_POLICY)])
def test_a_pinned_seq_past_the_sequence_space_is_an_overflow_on_every_datapath(
    offload: str, policy: str
) -> None:
    # The kernel checks the sequence number before the device sees the packet
    # (airoha-dsa-xfrm.md 3.9): every datapath counts the same error, and packet
    # offload does not cut 2**32 + 5 down to the engine's 32-bit counter.
    s = session(offload, policy)
    j = send(s, f"send ap wan {seed.UDP} seq {2**32 + 5}")
    assert not j.delivered and "0x100000005" in j.verdict
    assert s.lab.node("ap").xfrm.mib["XfrmOutStateSeqError"] == 1
    assert s.lab.node("ap").xfrm.mib["XfrmOutStateProtoError"] == 0


def test_explain_lists_the_offload_checks_that_passed() -> None:
    s = session(CRYPTO)
    j = send(s, f"send ap wan {seed.UDP}")
    stage = j.stage("wan.xfrmdev")
    assert stage is not None and stage.decision == "offload_ok: yes (crypto offload to wan)"
    for check in ("bound to the device", "esp-hw-offload on", "fits its MTU", "IPv4 options"):
        assert check in stage.why
