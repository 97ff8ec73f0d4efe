"""A duplicate through a crypto-offload inbound SA, end to end: the driver ignores the
engine's SEQNUM_ERR (eip93.md 2.2, 4.6) and xfrm_input's software replay check decides,
as for the same SA without offload (airoha-dsa-xfrm.md 3.2, 3.9, 6.20)."""

from __future__ import annotations

import pytest

from esplab.commands.result import JourneyResult, TextResult
from esplab.commands.session import Session
from esplab.model.stage import Journey

KEYS = (
    "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
    "enc aes 0x000102030405060708090a0b0c0d0e0f"
)
SA = (
    "ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x2000 reqid 2 "
    "mode transport " + KEYS
)
POLICY = (
    "host ip xfrm policy add src 192.0.2.2/32 dst 192.0.2.1/32 dir out "
    "tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 2 mode transport"
)
SEND = "send host eth0 IP(dst='192.0.2.1')/UDP() seq {}"


def session(window: int, offload: str) -> Session:
    s = Session()
    extra = f" replay-window {window}" if window else ""
    for line in (SA + extra + offload, "host " + SA, POLICY):
        s.execute(line)
    return s


def send(s: Session, seq: int) -> Journey:
    result = s.execute(SEND.format(seq))
    assert isinstance(result, JourneyResult)
    return result.journeys[0]


OFFLOADS = {"crypto": " offload dev wan dir in", "software": ""}


@pytest.mark.parametrize("offload", OFFLOADS)
def test_duplicate_without_a_window_is_delivered(offload: str) -> None:
    # replay-window 0: the kernel keeps no replay state, so the duplicate goes up.
    s = session(0, OFFLOADS[offload])
    assert send(s, 5).delivered
    again = send(s, 5)
    assert again.delivered, again.taps()
    mib = s.lab.node("ap").xfrm.mib
    assert mib["XfrmInBufferError"] == 0 and mib["XfrmInStateSeqError"] == 0
    (state,) = s.lab.node("ap").xfrm.states
    assert state.curlft.packets == 2 and state.stats.replay == 0
    if offload == "crypto":
        rdr = [st for st in again.stages if st.tap == "eip93.rdr"]
        assert rdr and "SEQNUM_ERR" in rdr[0].decision
        driver = [st for st in again.stages if st.tap == "eip93.driver"]
        assert "SEQNUM_ERR ignored" in driver[-1].decision


@pytest.mark.parametrize("offload", OFFLOADS)
def test_duplicate_with_a_window_is_a_seq_error(offload: str) -> None:
    s = session(32, OFFLOADS[offload])
    assert send(s, 5).delivered
    again = send(s, 5)
    assert not again.delivered
    drop = again.dropped
    assert drop is not None and drop.tap == "ap.xfrm" and "replay" in drop.decision
    assert drop.counters == {"XfrmInStateSeqError": 1}
    mib = s.lab.node("ap").xfrm.mib
    assert mib["XfrmInStateSeqError"] == 1 and mib["XfrmInBufferError"] == 0
    (state,) = s.lab.node("ap").xfrm.states
    assert state.stats.replay == 1 and state.stats.replay_window == 0
    assert state.curlft.packets == 1
    shown = s.execute("ip -s xfrm state")
    assert isinstance(shown, TextResult)
    assert "replay-window 0 replay 1 failed 0" in shown.text


def test_crypto_offload_too_old_is_counted_by_the_software_window() -> None:
    # Inside the engine's 64-packet window but left of the SA's 32: the engine passes
    # it, software refuses it as too old (replay_window +1, airoha-dsa-xfrm.md 6.20).
    s = session(32, OFFLOADS["crypto"])
    assert send(s, 100).delivered
    old = send(s, 50)
    assert not old.delivered and old.dropped is not None
    assert old.dropped.counters == {"XfrmInStateSeqError": 1}
    # Left of the engine's window too: SEQNUM_ERR, ignored, same software verdict.
    older = send(s, 20)
    assert not older.delivered and older.dropped is not None
    assert older.dropped.counters == {"XfrmInStateSeqError": 1}
    (state,) = s.lab.node("ap").xfrm.states
    assert state.stats.replay_window == 2 and state.stats.replay == 0
    assert s.lab.node("ap").xfrm.mib["XfrmInBufferError"] == 0
    assert send(s, 99).delivered  # inside both windows, not seen yet
