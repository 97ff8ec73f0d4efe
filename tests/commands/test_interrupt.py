"""Ctrl-C during a loop of packets stops it between two packets (send count, ping -c),
and stepping ends when its journey leaves the ring."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import pytest

from esplab.commands.handlers.settings import saved_steps
from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.errors import NoSuchPacket
from esplab.repl.app import _Toolbar


def _ctrl_c_on_call(session: Session, n: int) -> list[int]:
    """Deliver SIGINT to this process inside the n-th Datapath.send (1-based)."""
    calls = [0]
    send: Callable[..., Any] = session.lab.datapath.send

    def sending(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == n:
            os.kill(os.getpid(), signal.SIGINT)  # handled before the next bytecode
        return send(*args, **kwargs)

    session.lab.datapath.send = sending
    return calls


def test_an_interrupted_send_stops_between_packets_and_says_how_far_it_got() -> None:
    s = Session()
    calls = _ctrl_c_on_call(s, 3)
    line = 'send ap wan IP(dst="192.0.2.2")/UDP(dport=9) count 10'
    result = s.execute(line)
    assert isinstance(result, JourneyResult)
    assert calls[0] == 3 and result.data["sent"] == 3 and result.data["interrupted"]
    assert result.summary.startswith("interrupted after 3 of 10 packets: 3 delivered")
    # Every journey is whole; none is left half walked.
    assert [j.delivered for j in s.lab.journeys] == [True, True, True]
    # The history (and so save) holds what was done: three packets.
    assert s.history[-1] == 'send ap wan IP(dst="192.0.2.2")/UDP(dport=9) count 3'
    assert [step["run"] for step in saved_steps(s)][-1] == s.history[-1]
    assert len(s.lab.node("host").flows) == 1
    assert next(iter(s.lab.node("host").flows.values())).packets == 3


def test_an_interrupted_ping_reports_what_it_sent() -> None:
    s = Session()
    _ctrl_c_on_call(s, 3)  # the second request (each echo is a request and a reply)
    result = s.execute("ping -c 5 192.0.2.2")
    assert result.summary == "2 packets transmitted, 2 received, 0% packet loss"
    assert s.history[-1] == "ping -c 2 192.0.2.2"


def test_sigint_is_its_usual_self_after_the_loop() -> None:
    s = Session()
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP() count 2')
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)


def test_stepping_ends_when_its_journey_leaves_the_ring() -> None:
    s = Session()
    s.execute("set journeys 2")
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP()')
    s.execute("step")
    for _ in range(3):
        s.execute('send ap wan IP(dst="192.0.2.2")/UDP()')
    assert not any("stepping" in text for _, text in _Toolbar(s).parts())
    with pytest.raises(NoSuchPacket, match="journey 1 has left the ring of the last 2"):
        s.execute("next")
    assert s.stepping is None
    with pytest.raises(NoSuchPacket, match="not stepping"):
        s.execute("continue")
