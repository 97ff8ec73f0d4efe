"""LazyStage: a journey Stage whose decision is formatted when read."""

from __future__ import annotations

import dataclasses

from esplab.model.stage import LazyStage, Stage


class _Counted:
    def __init__(self) -> None:
        self.calls = 0

    def __format__(self, spec: str) -> str:
        self.calls += 1
        return "x"


def test_decision_is_formatted_once_when_read() -> None:
    arg = _Counted()
    stage = LazyStage("eip93.cdr", "ap", "CDR[{}]: {:#06x} {}", "why", "C", args=(3, 0x20, arg))
    assert arg.calls == 0
    assert isinstance(stage, Stage)
    assert stage.decision == "CDR[3]: 0x0020 x"
    assert stage.decision == "CDR[3]: 0x0020 x" and arg.calls == 1
    assert stage.counters == {} and stage.meta == {} and stage.kind == "ip"
    stage.decision = "rewritten"
    assert stage.decision == "rewritten"


def test_behaves_like_a_stage() -> None:
    stage = LazyStage(
        "eip93.rdr", "ap", "RDR[{}]", "why", "D", None, b"\x01" * 32, "rdr", None, {"slot": 1}, (1,)
    )
    assert "RDR[1]" in repr(stage)
    copy = dataclasses.replace(stage, data=None)
    assert copy.decision == "RDR[1]" and copy.data is None and copy.meta == {"slot": 1}
    assert type(stage.packet()).__name__ == "EIP93ResultDescriptor"
    plain = LazyStage("t", "ap", "50% {literal}")  # no args: taken as it is
    assert plain.decision == "50% {literal}"


def test_the_crypto_tx_stage_says_whose_contract_it_is() -> None:
    # Mainline esp_xmit -> esp_output_head writes the trailer before the driver sees
    # the skb (net/ipv4/esp4_offload.c); the engine padding is the seed-000 series'
    # design, so the stage is M and says both (issue #21 item 3).
    from esplab.commands.session import Session
    from tests.commands import seed
    from tests.commands.results import journey

    s = Session()
    for line in seed.software(" offload dev wan dir out"):
        s.execute(line)
    j = journey(s, f"send ap wan {seed.UDP}")
    first = next(st for st in j.stages if st.tap == "eip93.driver")
    assert "trailer left to the engine" in first.decision and first.fidelity == "M"
    assert "esp_output_head" in first.why and "seed-000" in first.why
