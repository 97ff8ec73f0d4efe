"""Crypto offload of an ESN SA on the ap's ports.

JM patch 3 (airoha_xfrm.c) sets ``.xdo_dev_state_advance_esn`` in
``airoha_xfrmdev_ops``, backed by patch 2's ``eip93_ipsec_state_advance_esn``
(eip93-ipsec.c), so the XFRM core's "crypto offload + ESN needs advance_esn" check
(reference 3.5 row 7, fact 6.14) passes. airoha-dsa-xfrm.md 3.10 does not mention
ESN, and eip93.md 3.1 has drivers write 0 into sa_seqnum[1]; both describe other
code than these patches. The model's EIP-93 backend then declines the SA (its engine does
not put sa_seqnum[1] into the ICV), and crypto offload stays in software (fact 6.11).
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP
from scapy.layers.ipsec import ESP, IPSecIntegrityError, SecurityAssociation

from esplab.citations import cite
from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.model.kernel.drivers.eip93.sa_add import ESN_NOT_OFFLOADED_WHY
from esplab.model.stage import Journey
from tests.commands import seed
from tests.commands.results import journey as send

ESN = " flag esn replay-window 32"
# The command of airoha-dsa-xfrm.md 5.5 (a) with ESN, offloaded to wan (the brief's line).
ADD_OUT = seed.SA_OUT + ESN + " offload dev wan dir out"
ADD_IN = seed.SA_IN + ESN + " offload dev wan dir in"
BACK = 'host send eth0 IP(dst="192.0.2.1")/UDP(sport=1234,dport=5201)/Raw(b"y"*40)'


def esn_session() -> Session:
    """Both ends with ESN SAs: the ap's asked for crypto offload on wan, the host's in
    software."""
    s = Session()
    for line in (
        ADD_OUT,
        seed.POL_OUT,
        "host " + seed.SA_OUT + ESN,
        "host " + seed.POL_IN_HOST,
        ADD_IN,
        "host " + seed.SA_IN + ESN,
        "host " + seed.POL_BACK_HOST,
    ):
        s.execute(line)
    return s


def test_ports_with_the_series_ops_have_advance_esn_peers_do_not() -> None:
    lab = Session().lab
    for dev in ("wan", "lan1", "lan4"):
        port = lab.port("ap", dev)
        assert port is not None and port.supports_advance_esn, dev
    peer = lab.port("host", "eth0")
    assert peer is None or not peer.supports_advance_esn


def test_the_esn_add_is_accepted_and_runs_in_software() -> None:
    s = Session()
    result = s.execute(ADD_OUT)
    assert "not offloaded" in result.summary and "sa_seqnum[1]" in result.summary
    (state,) = s.lab.node("ap").xfrm.states
    assert state.esn and state.offload is None
    assert "sa_seqnum[1]" in (state.runtime.refused or "")
    shown = s.execute("ip xfrm state")
    assert isinstance(shown, TextResult)
    assert "flag esn" in shown.text and "anti-replay esn context:" in shown.text
    assert "crypto offload parameters" not in shown.text


@pytest.mark.parametrize("dev", ["wan", "lan2"])
@pytest.mark.parametrize("direction", ["in", "out"])
def test_esn_is_not_refused_by_the_core_on_any_ap_port(dev: str, direction: str) -> None:
    s = Session()
    s.execute(f"{seed.SA_OUT}{ESN} offload dev {dev} dir {direction}")
    (state,) = s.lab.node("ap").xfrm.states
    assert state.offload is None and state.esn


@pytest.mark.parametrize(("dev", "direction"), [("wan", "out"), ("lan2", "in")])
def test_the_driver_stage_records_eopnotsupp_as_a_model_choice(dev: str, direction: str) -> None:
    # The series would program the SA [C]; the model's backend declines it [M], and the
    # core keeps it in software with the driver's reason (fact 6.11).
    s = Session()
    s.execute(f"{seed.SA_OUT}{ESN} offload dev {dev} dir {direction}")
    journey = s.lab.journeys.get()
    assert journey is not None and journey.origin == f"xdo_dev_state_add {dev} spi 0x1000"
    (stage,) = journey.stages
    assert (stage.tap, stage.fidelity, stage.meta) == ("eip93.driver", "M", {"errno": "EOPNOTSUPP"})
    assert stage.why == cite(ESN_NOT_OFFLOADED_WHY)  # the notes' sections as public sources
    (state,) = s.lab.node("ap").xfrm.states
    assert state.offload is None
    reason = "ESN is not offloaded: the modelled engine ignores sa_seqnum[1]"
    assert state.runtime.refused == reason
    assert stage.decision == f"xdo_dev_state_add({dev}, spi 0x1000): EOPNOTSUPP ({reason})"


def test_without_esn_the_driver_stage_programs_the_sa() -> None:
    # The same SA without ESN: the driver writes an SA record and returns a handle; no
    # errno and no model choice.
    s = Session()
    s.execute(seed.SA_OUT + " offload dev wan dir out")
    journey = s.lab.journeys.get()
    assert journey is not None
    (stage,) = journey.stages
    assert stage.fidelity != "M" and "errno" not in stage.meta and "handle" in stage.meta
    (state,) = s.lab.node("ap").xfrm.states
    assert state.offload is not None and state.runtime.refused is None


def _esp_on_wire(j: Journey, tap: str) -> bytes:
    stage = j.stage(tap)
    assert stage is not None and stage.data is not None, j.taps()
    return stage.data[14:]  # past the Ethernet header


def _icv_needs_seq_hi(packet: bytes, spi: int) -> None:
    """The wire ESP verifies with ESN (seq-hi 0 in the ICV, RFC 4303 2.2.1) and not
    without it."""
    key, auth = bytes.fromhex(seed.ENC[2:]), bytes.fromhex(seed.AUTH[2:])

    def sa(esn: bool) -> SecurityAssociation:
        return SecurityAssociation(
            ESP,
            spi=spi,
            crypt_algo="AES-CBC",
            crypt_key=key,
            auth_algo="HMAC-SHA1-96",
            auth_key=auth,
            esn_en=esn,
            esn=0,
        )

    ip = IP(packet)
    assert ip.haslayer(ESP)
    sa(True).decrypt(ip)
    with pytest.raises(IPSecIntegrityError):
        sa(False).decrypt(IP(packet))


def test_esn_journeys_both_ways_reach_the_host_and_back() -> None:
    s = esn_session()
    out = send(s, f"send ap wan {seed.UDP}")
    assert out.delivered, out.verdict
    assert "ap.esp" in out.taps()  # software ESP: the offload was declined
    _icv_needs_seq_hi(_esp_on_wire(out, "wan.wire"), 0x1000)
    back = send(s, BACK)
    assert back.delivered, back.verdict
    _icv_needs_seq_hi(_esp_on_wire(back, "host.wire"), 0x1001)
    assert not [t for t in out.taps() + back.taps() if t.startswith("eip93.")]
    host_in = [x for x in s.lab.node("host").xfrm.states if x.spi == 0x1000]
    ap_in = [x for x in s.lab.node("ap").xfrm.states if x.spi == 0x1001]
    assert [x.stats.integrity_failed for x in host_in + ap_in] == [0, 0]
