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
    last = s.lab.journeys.get()
    assert last is not None and last.dropped is not None
    assert last.dropped.counters == {counter: 1}
    assert s.lab.node("ap").xfrm.mib[counter] == 3 - delivered
