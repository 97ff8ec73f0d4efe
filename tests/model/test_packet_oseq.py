"""replay-oseq under packet offload (issue #21 item 8): the engine numbers packets
from its own counter (sa_seqnum, programmed 0), as the out-of-tree mtk-eip93 ipsec
branch does, while software ESP and crypto offload start after replay-oseq. The
choice is visible: the add warns, a stage says so, and ``ip xfrm state`` shows the
engine's number."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from tests.commands import seed
from tests.commands.results import journey, text

OSEQ = " replay-oseq 100"


def _session(offload: str) -> tuple[Session, str]:
    s = Session()
    lines = seed.software(OSEQ + offload)
    if "packet" in offload:  # packet offload takes an offloaded policy too
        lines[1] += " offload packet dev wan"
    added = s.execute(lines[0]).summary
    for line in lines[1:]:
        s.execute(line)
    return s, added


@pytest.mark.parametrize(
    ("offload", "first"),
    [("", 101), (" offload dev wan dir out", 101), (" offload packet dev wan dir out", 1)],
)
def test_the_first_number_each_datapath_sends(offload: str, first: int) -> None:
    s, added = _session(offload)
    assert ("warning: replay-oseq 0x64 ignored" in added) is (first == 1)
    if first == 1:
        assert "oseq 0x0," in text(s, "ip xfrm state list src 192.0.2.1")
    j = journey(s, f"send ap wan {seed.UDP}")
    assert j.delivered
    assert f"seq {first} " in next(st for st in j.stages if st.tap == "host.xfrm").decision
    assert f"oseq {first:#x}," in text(s, "ip xfrm state list src 192.0.2.1")


def test_the_add_journey_has_a_stage_that_says_why() -> None:
    s, _ = _session(" offload packet dev wan dir out")
    add = s.lab.journeys.get(1)
    assert add is not None
    stage = add.stages[-1]
    assert stage.fidelity == "M" and "replay-oseq 0x64 ignored" in stage.decision
    assert "sa_seqnum" in stage.why and "crypto offload start after" in stage.why
