"""The flow cache: many journeys of one packet, each walked once and the rest replayed.

``send DEV PACKET count N`` walks the same packet N times. Most of each walk is the
same every time: the route, the policy lookup, offload_ok, the neighbour, the device
counters, the peer's receive and delivery. What differs is the ESP work (sequence
number, IV, keystream, ICV, replay window, lifetime), which the walk does in ESP
steps (:data:`~esplab.model.journey.walk.EspStep`): :func:`~esplab.model.journey.esp_output.
esp_output_step` and :func:`~esplab.model.journey.esp_input.esp_input_step` take the
decisions and return the step, which the walk then runs on the packet.

A :class:`Recorder` rides along one real walk (the second of the run, so the first
has built every cache and flow entry) and cuts it into alternating parts: fixed
stretches (the stages they added, and the counter moves :mod:`~esplab.model.accel.statediff`
finds between snapshots of the whole lab) and live steps (the ESP steps the walk
ran). The result is a :class:`FlowPlan`. Replaying it adds the same stages (shared,
as a fixed stretch's stages are the same for every packet of the flow), makes the
same counter moves, and runs the same ESP steps for real.

A stretch that changed anything but integers, a walk that started another journey
(an ICMP error), a live step that dropped, a live step that took a packet the walk
changed after the step before it (ESP forwarded between its ends: a TTL one lower),
or a change to any node's SAD or SPD (``Lab.xfrm_epoch``) means no plan, or the end
of one: the next packet is walked for real.

Each live step's result is checked against the recorded one before the next fixed
stretch is replayed: the ESP packet must have the recorded length and headers up to
its SPI (an IPv4 header's identification and checksum, and ESP in UDP's checksum,
aside), the decapsulated packet the recorded bytes. If it does not, the rest of the
journey is walked for real from that point (the same continuation the walk calls)
and the plan is dropped.

This is a design of the lab's own (no hardware or kernel behaviour is modelled by
it): journeys come out as the real walk would make them, with tracing off. With
tracing on every journey is walked for real, as its snapshots differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from esplab.model.accel import statediff
from esplab.model.journey.walk import EspStep, SendOptions, Walk
from esplab.model.kernel.esp.ip import parse_ip
from esplab.model.stages import Journey, Stage, built_stages

if TYPE_CHECKING:
    from esplab.model.journey.datapath import Datapath
    from esplab.model.kernel.stack.netdev import NetDev
    from esplab.model.kernel.xfrm.tables import Epoch
    from esplab.model.lab import Lab

__all__ = ["FlowCache", "FlowPlan", "Recorder"]

#: How often one run records a plan again after losing one (a state that expired,
#: a live step whose result differed): past that it walks every packet.
RECORD_TRIES = 4
#: The shortest run that records a plan: recording snapshots the whole lab six times
#: (tens of milliseconds with the engine's DMA memory), about what a thousand walks
#: save by being replayed. A design choice of the lab's.
MIN_RUN = 1000


@dataclass
class _Fixed:
    """A stretch of the walk that is the same for every packet of the flow: its stages
    and its counter moves (:func:`statediff.as_moves`)."""

    stages: list[Stage]
    moves: list[tuple[Any, Any, int]]
    attr_moves: list[statediff.Delta]


@dataclass
class _Live:
    """An ESP step (:data:`~esplab.model.journey.walk.EspStep`) the replay runs for real:
    ``output``, ESP output, else input; ``chained``: its packet is the previous live
    step's result rather than the recorded ``packet``."""

    output: bool
    step: EspStep
    packet: bytes
    chained: bool
    result: bytes
    # What the walk calls after the step, without its packet (for a replay whose
    # result differs from the recorded one).
    then: tuple[Any, ...]
    secpath: list[Any]
    arrived: bytes | None
    # ESP output: the result must keep the recorded length and headers up to the SPI
    # (where the IP headers end, where the SPI ends).
    prefix: tuple[int, int] = (0, 0)


@dataclass
class FlowPlan:
    """One flow's journey, cut into fixed stretches and live steps."""

    items: list[_Fixed | _Live]
    verdict: str
    delivered: bool
    # The lab's count of SAD and SPD changes, and its value when the plan was recorded.
    epoch: Epoch
    at: int
    origin: str
    # The device the packets are sent out of, when the send names one.
    dev: NetDev | None = None


class Recorder:
    """Cuts one real walk into a :class:`FlowPlan` (see the module's docstring)."""

    def __init__(self, lab: Lab, journey: Journey, walk: Walk) -> None:
        self.lab = lab
        self.journey = journey
        self.walk = walk
        self.items: list[_Fixed | _Live] = []
        self.ok = True
        self.mark = 0
        self.first_id = lab.journeys.next_id
        self.epoch_at = lab.xfrm_epoch.value
        self.last: bytes | None = None
        self.found: tuple[list[Any], bytes | None] = ([], None)
        self.snap = self._snapshot()

    def _snapshot(self, before: bool = True) -> statediff.Snapshot:
        lab = self.lab
        skip = (lab.journeys, lab.captures, self, self.walk)
        previous = getattr(self, "snap", None)
        return statediff.snapshot(lab, skip=skip, before=before, previous=previous)

    def enter(self, walk: Walk) -> None:
        """A live step starts: close the fixed stretch before it."""
        if not self.ok:
            return
        # What the step finds in the walk (the replay sets the same before running it).
        self.found = (list(walk.secpath), walk.arrived)
        deltas = statediff.diff(self.snap, self._snapshot(before=False))
        if deltas is None:
            self.ok = False
            return
        moves, attr_moves = statediff.as_moves(deltas)
        self.items.append(_Fixed(built_stages(walk.stages[self.mark :]), moves, attr_moves))

    def leave(
        self,
        walk: Walk,
        step: EspStep,
        packet: bytes,
        result: bytes | None,
        then: tuple[Any, ...],
        *,
        output: bool,
    ) -> None:
        """``step`` (ESP ``output``, else input) took ``packet`` and returned ``result``;
        ``then`` is what the walk does next with it."""
        if not self.ok:
            return
        if result is None:  # a live step that dropped makes no plan
            self.ok = False
            return
        if self.last is not None and packet != self.last:
            # After a live step the walk carries what it made: a later step's packet
            # that differs from it was changed on the way (a forwarded packet's TTL),
            # and a replay could not make that change again.
            self.ok = False
            return
        secpath, arrived = self.found
        live = _Live(
            output,
            step,
            packet,
            chained=self.last is not None,
            result=result,
            then=then,
            secpath=secpath,
            arrived=arrived,
        )
        if output:
            live.prefix = _esp_prefix(result)
        self.items.append(live)
        self.last = result
        self.mark = len(walk.stages)
        self.snap = self._snapshot()

    def finish(self, walk: Walk, dev: NetDev | None) -> FlowPlan | None:
        """The walk ended: the plan (of packets sent out of ``dev``, when the send named
        one), or None when it cannot be replayed."""
        self.enter(walk)
        journey = self.journey
        if (
            not self.ok
            or self.lab.journeys.next_id != self.first_id
            or self.lab.xfrm_epoch.value != self.epoch_at
            or not journey.verdict
        ):
            return None
        epoch = self.lab.xfrm_epoch
        return FlowPlan(
            self.items,
            journey.verdict,
            journey.delivered,
            epoch,
            self.epoch_at,
            journey.origin,
            dev,
        )


def _same_headers(packet: bytes, recorded: bytes, prefix: tuple[int, int]) -> bool:
    """``packet`` is as long as ``recorded`` and has its headers up to the SPI, but for
    the values that change with every packet and that no later stage of the walk
    reads: an IPv4 header's identification and checksum (a tunnel's outer header takes
    a new identification each packet) and ESP in UDP's checksum (``prefix``: where the
    IP header ends, where the SPI ends)."""
    if len(packet) != len(recorded):
        return False
    hlen, end = prefix
    if end > hlen + 8:  # ESP in UDP: the UDP header but its checksum
        if packet[hlen : hlen + 6] != recorded[hlen : hlen + 6]:
            return False
        if packet[hlen + 8 : end] != recorded[hlen + 8 : end]:
            return False
    elif packet[hlen:end] != recorded[hlen:end]:
        return False
    if packet[0] >> 4 == 4:
        return (
            packet[:4] == recorded[:4]
            and packet[6:10] == recorded[6:10]
            and packet[12:hlen] == recorded[12:hlen]
        )
    return packet[:hlen] == recorded[:hlen]


def _esp_prefix(packet: bytes) -> tuple[int, int]:
    """Where ``packet``'s IP headers end, and where its ESP SPI ends (after the UDP
    header of ESP in UDP)."""
    info = parse_ip(packet)
    return info.hlen, info.hlen + (8 if info.proto == 17 else 0) + 4


class FlowCache:
    """Sends ``packet`` from ``node`` (out of ``dev``) many times: walks it, records a
    plan, replays the plan. ``walked`` counts the journeys walked, ``replayed`` those
    that started as replays (one whose ESP step came out otherwise finished as a walk)."""

    def __init__(self, datapath: Datapath, node: str, dev: str | None, packet: bytes) -> None:
        self.datapath = datapath
        self.node, self.dev, self.packet = node, dev, packet
        self.plan: FlowPlan | None = None
        self.tries = RECORD_TRIES
        self.walked = 0
        self.replayed = 0

    def send(self) -> Journey:
        """One journey of the run (the first is walked for real, the second recorded)."""
        plan = self.plan
        if plan is not None:
            if plan.epoch.value == plan.at:
                journey = self._replay(plan)
                self.replayed += 1
                return journey
            self.plan = None
        first = not (self.walked or self.replayed)
        self.walked += 1
        if first or not self.tries:
            return self.datapath.send(self.node, self.dev, self.packet)
        self.tries -= 1
        journey, self.plan = self.datapath.record(self.node, self.dev, self.packet)
        return journey

    def _replay(self, plan: FlowPlan) -> Journey:
        datapath = self.datapath
        lab = datapath.lab
        if plan.dev is not None and not plan.dev.up:
            datapath.check_dev(self.node, self.dev)  # (ENETDOWN, as the walk's send)
        journey = lab.journeys.new(plan.origin)
        walk = Walk(lab, journey, _NO_PINS)
        stages = walk.stages
        current = b""
        for item in plan.items:
            if type(item) is _Fixed:
                stages += item.stages
                for target, key, amount in item.moves:
                    target[key] += amount
                if item.attr_moves:
                    statediff.apply(item.attr_moves)
                continue
            assert type(item) is _Live
            walk.secpath = list(item.secpath)
            walk.arrived = item.arrived
            result = item.step(walk, current if item.chained else item.packet)
            if result is None:
                return _ended(journey)
            then = item.then
            if item.output:
                if not _same_headers(result, item.result, item.prefix):
                    self.plan = None
                    datapath._protect(walk, then[0], then[1], result, *then[2:])
                    return _ended(journey)
            elif result != item.result:
                self.plan = None
                datapath._inner_input(walk, then[0], then[1], result, then[2])
                return _ended(journey)
            current = result
        journey.verdict = plan.verdict
        journey.delivered = plan.delivered
        return journey


_NO_PINS = SendOptions()


def _ended(journey: Journey) -> Journey:
    if not journey.verdict:
        journey.verdict = "no verdict"
    return journey
