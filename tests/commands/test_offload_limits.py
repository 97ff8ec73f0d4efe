"""The kernel's checks before the device sees a packet hold under crypto offload too:
a state past its hard limit, or out of sequence numbers, drops the packet with its
counter (xfrm_output_one: xfrm_state_check_expire, xfrm_replay_overflow_offload)."""

from __future__ import annotations

import pytest

from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from tests.commands import seed


@pytest.mark.parametrize(
    ("extra", "counter", "delivered"),
    [
        ("limit packet-hard 2", "XfrmOutStateExpired", 2),
        # 0xffffffff is the last number without ESN: one packet, then none.
        ("replay-oseq 0xfffffffe", "XfrmOutStateSeqError", 1),
    ],
)
def test_crypto_offload_drops_and_counts_what_xfrm_output_refuses(
    extra: str, counter: str, delivered: int
) -> None:
    s = Session()
    s.execute(f"{seed.SA_OUT} {extra} offload dev wan dir out")
    s.execute("host " + seed.SA_OUT)
    s.execute(seed.POL_OUT)
    result = s.execute(f"send ap wan {seed.UDP} count 3")
    assert isinstance(result, JourneyResult)
    assert result.summary.startswith(f"3 packets: {delivered} delivered")
    # The run's count; "delivered" itself is the last journey's, as for one packet.
    assert result.data["delivered_count"] == delivered
    assert result.data["delivered"] is False
    last = s.lab.journeys.get(result.data["journeys"][-1])
    assert last is not None and last.dropped is not None
    assert last.dropped.counters == {counter: 1}
    assert s.lab.node("ap").xfrm.mib[counter] == 3 - delivered
    # One packet's data has the same keys (a lab checks a run the same way).
    one = s.execute(f"send ap wan {seed.UDP}")
    assert isinstance(one, JourneyResult)
    assert {k: one.data[k] for k in ("sent", "delivered_count", "interrupted")} == {
        "sent": 1,
        "delivered_count": 0,
        "interrupted": False,
    }
    assert one.data["journeys"] == [one.data["id"]]


def test_a_state_past_its_hard_limit_is_deleted() -> None:
    # xfrm_state_check_expire marks it expired and xfrm_timer_handler deletes it at once
    # (__xfrm_state_delete): the next packet finds no state (XfrmOutNoStates).
    s = Session()
    s.execute(f"{seed.SA_OUT} limit packet-hard 1")
    s.execute(seed.POL_OUT)
    s.execute(f"send ap wan {seed.UDP} count 2")
    ap = s.lab.node("ap").xfrm
    assert ap.mib["XfrmOutStateExpired"] == 1 and not ap.states
    s.execute(f"send ap wan {seed.UDP}")
    assert ap.mib["XfrmOutNoStates"] == 1


def test_an_inbound_state_past_its_hard_limit_is_deleted() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(f"host {seed.SA_OUT} limit packet-hard 1")
    s.execute(seed.POL_OUT)
    s.execute(f"send ap wan {seed.UDP} count 2")
    host = s.lab.node("host").xfrm
    assert host.mib["XfrmInStateExpired"] == 1 and not host.states
    s.execute(f"send ap wan {seed.UDP}")
    assert host.mib["XfrmInNoStates"] == 1


def test_crypto_offload_rx_keeps_the_sas_lifetime() -> None:
    # xfrm_input checks the lifetime after CRYPTO_DONE too (airoha-dsa-xfrm.md 3.9).
    s = Session()
    s.execute(f"{seed.SA_IN} replay-window 32 limit packet-hard 2 offload dev wan dir in")
    s.execute("host " + seed.SA_IN)
    s.execute("host " + seed.POL_BACK_HOST)
    packet = 'IP(src="192.0.2.2", dst="192.0.2.1")/UDP()/Raw(b"x"*64)'
    s.execute(f"send host eth0 {packet} count 3")
    ap = s.lab.node("ap").xfrm
    assert ap.mib["XfrmInStateExpired"] == 1
    assert not [x for x in ap.states if x.spi == 0x1001]
