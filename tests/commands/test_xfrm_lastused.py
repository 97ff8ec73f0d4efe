"""Traffic sets an SA's lastused and its lifetime use time, printed as iproute2 does."""

from __future__ import annotations

from esplab.commands.session import Session
from esplab.model.kernel.xfrm.tables import DEFAULT_EPOCH
from tests.commands import seed
from tests.commands.results import journey as send
from tests.commands.results import text


def test_a_packet_sets_lastused_and_use_time() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(seed.POL_OUT)
    s.execute("host " + seed.SA_OUT)
    (state,) = s.lab.node("ap").xfrm.states
    before = text(s, "ip -s xfrm state")
    assert state.lastused == 0 and "\tlastused" not in before
    assert "\t  add 2026-01-01 00:00:00 use -\n" in before
    assert send(s, f"send ap wan {seed.UDP}").delivered
    # xfrm_output_one: x->lastused with each packet; xfrm_state_check_expire sets
    # curlft.use_time on first use; iproute2 prints XFRMA_LASTUSED (xfrm_xfrma_print)
    # after the algorithms and the "use" time under -s.
    assert state.lastused == DEFAULT_EPOCH and state.curlft.use_time == DEFAULT_EPOCH
    plain = text(s, "ip xfrm state")
    assert (
        "\tenc cbc(aes) 0x000102030405060708090a0b0c0d0e0f\n\tlastused 2026-01-01 00:00:00\n"
        in plain
    )
    stats = text(s, "ip -s xfrm state")
    assert "\t  add 2026-01-01 00:00:00 use 2026-01-01 00:00:00\n" in stats
    # The receiving SA too (xfrm_input).
    (host_sa,) = s.lab.node("host").xfrm.states
    assert host_sa.lastused == DEFAULT_EPOCH and host_sa.curlft.use_time == DEFAULT_EPOCH
