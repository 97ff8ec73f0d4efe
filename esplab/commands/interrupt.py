"""Ctrl-C between two packets: a loop of sends stops at a packet boundary.

A long ``send ... count N`` or ``ping -c N`` is interrupted with Ctrl-C. Stopping in
the middle of a packet would leave a journey half walked and the model half changed
(a sequence number taken, a counter moved, nothing delivered), and the session's
history could no longer replay what happened. Inside :func:`between_packets` Ctrl-C
only asks to stop: the packet in flight finishes, the loop checks ``requested`` and
ends, and the command says how many packets it sent.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Stop", "between_packets"]


class Stop:
    """Whether Ctrl-C asked the loop to stop."""

    __slots__ = ("requested",)

    def __init__(self) -> None:
        self.requested = False


@contextmanager
def between_packets() -> Iterator[Stop]:
    """Ctrl-C inside the block sets ``Stop.requested`` instead of raising. Only the main
    thread receives signals; elsewhere the block runs as it is."""
    stop = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def asked(signum: int, frame: FrameType | None) -> None:
        stop.requested = True

    previous = signal.signal(signal.SIGINT, asked)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
