"""Ctrl-C in the middle of a long ``send ... count N`` leaves every count consistent, on
every datapath, with tracing on or off: the packets sent
are those delivered plus those dropped, and each SA counts exactly the packets the wire
carried."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

from esplab.commands.session import Session

AUTH = "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314"
ENC = "enc aes 0x000102030405060708090a0b0c0d0e0f"
SA = "src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode transport"
SEL = "src 192.0.2.1/32 dst 192.0.2.2/32 dir out"
TMPL = "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(dport=9)/Raw(b"x"*64) count 100000'

#: datapath -> (what the ap's state adds, what its policy adds)
DATAPATHS = {
    "sw": ("", ""),
    "sw+aead": ("", ""),
    "crypto": (" offload dev wan dir out", ""),
    "packet": (" offload packet dev wan dir out", " offload packet dev wan"),
}


@contextmanager
def ctrl_c_after(seconds: float) -> Iterator[None]:
    """SIGINT to this process ``seconds`` from now, once a loop has taken Ctrl-C over
    (before that, the alarm tries again a little later)."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.setitimer(signal.ITIMER_REAL, 0.02)
        else:
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _lab(datapath: str, *, tracing: bool, host_sa: bool = True) -> Session:
    session = Session()
    if not tracing:
        session.execute("set tracing off")
    if datapath == "sw+aead":
        session.execute("set crypto-provider eip93")
    state, policy = DATAPATHS[datapath]
    session.execute(f"ip xfrm state add {SA} {AUTH} {ENC}{state}")
    session.execute(f"ip xfrm policy add {SEL} {TMPL}{policy}")
    if host_sa:
        session.execute(f"host ip xfrm state add {SA} {AUTH} {ENC}")
    return session


@pytest.mark.parametrize("tracing", [False, True], ids=["tracing-off", "tracing-on"])
@pytest.mark.parametrize("datapath", list(DATAPATHS))
def test_an_interrupted_run_counts_every_packet_once(datapath: str, tracing: bool) -> None:
    session = _lab(datapath, tracing=tracing)
    with ctrl_c_after(0.3):
        result = session.execute(SEND)
    data = result.data
    sent, delivered = data["sent"], data["delivered_count"]
    assert data["interrupted"] and 0 < sent < 100000
    assert result.summary.startswith(f"interrupted after {sent} of 100000 packets")
    ap, host = session.lab.node("ap"), session.lab.node("host")
    out_sa, in_sa = ap.xfrm.states[0], host.xfrm.states[0]
    wire = ap.dev("wan").counters.tx_packets
    assert delivered == sent  # nothing on this path drops
    assert out_sa.curlft.packets == wire == sent
    assert host.dev("eth0").counters.rx_packets == wire
    assert in_sa.curlft.packets == delivered
    assert [flow.packets for flow in host.flows.values()] == [delivered]
    assert session.history[-1] == SEND.replace("count 100000", f"count {sent}")


@pytest.mark.parametrize("tracing", [False, True], ids=["tracing-off", "tracing-on"])
def test_an_interrupted_run_of_drops_counts_them(tracing: bool) -> None:
    # The host has no SA: every packet is dropped there (XfrmInNoStates).
    session = _lab("crypto", tracing=tracing, host_sa=False)
    with ctrl_c_after(0.3):
        result = session.execute(SEND)
    sent, delivered = result.data["sent"], result.data["delivered_count"]
    assert result.data["interrupted"] and 0 < sent < 100000
    stat = session.execute("host cat /proc/net/xfrm_stat").data
    dropped = stat["XfrmInNoStates"]
    assert delivered == 0 and sent == delivered + dropped
    ap = session.lab.node("ap")
    assert ap.xfrm.states[0].curlft.packets == ap.dev("wan").counters.tx_packets == sent
