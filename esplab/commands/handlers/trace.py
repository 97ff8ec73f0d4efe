"""trace, explain, step/next/continue: following a journey stage by stage."""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.parser import Invocation, parse_int
from esplab.commands.registry import Command, Param
from esplab.commands.result import JourneyResult, MessageResult, Result, journey_data
from esplab.errors import BadArgument, NoSuchPacket, NotFound
from esplab.model.stage import FIDELITY, Journey

__all__ = ["COMMANDS"]


def _journey(session: Session, jid: int | None) -> Journey:
    journey = session.lab.journeys.get(jid)
    if journey is None:
        ids = session.lab.journeys.ids()
        if not ids:
            raise NoSuchPacket("no journey yet", hint="send a packet first")
        raise NoSuchPacket(f"no journey {jid}", valid=[str(i) for i in ids[-20:]])
    return journey


def _no_stages(session: Session, journey: Journey) -> tuple[str, str]:
    """What to say of a journey with no stages (an import's): the plain fact, and where
    its packets are (the taps its records are in; an import's verdict names them too)."""
    jid = journey.id
    taps = [
        tap
        for tap in session.lab.captures.taps()
        if any(r.journey == jid for r in session.lab.captures.get(tap))
    ]
    what = "is an import" if journey.origin.startswith("import ") else "was recorded"
    text = f"journey {jid} ({journey.origin}) {what} with no stages"
    if not taps:
        return text, "trace, explain and step follow journeys of sent packets"
    return text, f"its packets are in {', '.join(taps)}: capture show {taps[0]} shows them"


def _trace(session: Session, inv: Invocation) -> Result:
    journey = _journey(session, inv.args["id"])
    if not journey.stages:
        text, where = _no_stages(session, journey)
        return MessageResult(
            summary=f"{text}; {where}",
            data=journey_data(journey),
        )
    data = journey_data(journey)
    summary = f"journey {journey.id}: {journey.verdict}"
    if inv.args.get("svg"):
        from esplab.picture.svg import journey_svg

        path = session.files.target(inv.args["svg"], "--svg file", force=inv.args["force"])
        try:
            path.write_text(journey_svg(journey), encoding="utf-8")
        except OSError as exc:
            raise BadArgument(f"cannot write {inv.args['svg']}: {exc.strerror or exc}") from exc
        summary += f"; drawn in {path}"
        data["svg"] = str(path)
    return JourneyResult(summary=summary, journeys=[journey], data=data)


def _explain(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    jid = None
    if words and words[0].lstrip("-").isdigit():
        jid = parse_int(words.pop(0), "journey id")
    elif len(words) > 1:  # ID TAP with an ID that is no number: the ID is what is wrong
        raise BadArgument(
            f"journey id '{words[0]}' is not a number",
            valid=_journey_ids(session)[-20:] or "none yet: send a packet first",
            hint="usage: explain [ID] [TAP]",
        )
    tap = words.pop(0) if words else None
    if words:
        raise BadArgument(f"unexpected '{words[0]}'", hint="usage: explain [ID] [TAP]")
    journey = _journey(session, jid)
    if not journey.stages:
        text, where = _no_stages(session, journey)
        if tap is not None:
            raise NotFound(f"{text}, so no stage '{tap}'", hint=where, value=tap)
        return MessageResult(
            summary=f"{text}; {where}",
            data=journey_data(journey),
        )
    if tap is not None and journey.stage(tap) is None:
        raise NotFound(
            f"journey {journey.id} has no stage '{tap}'", valid=journey.taps(), value=tap
        )
    return JourneyResult(
        summary=f"journey {journey.id}: {journey.verdict}",
        journeys=[journey],
        explain=True,
        only=tap,
        data={**journey_data(journey), "fidelity": FIDELITY},
    )


def _step(session: Session, inv: Invocation) -> Result:
    journey = _journey(session, inv.args["id"])
    if not journey.stages:
        text, where = _no_stages(session, journey)
        raise NoSuchPacket(f"{text}, so none to step through", hint=where)
    session.stepping = (journey.id, 0)
    return _show_step(session, journey, 0)


def _show_step(session: Session, journey: Journey, index: int) -> Result:
    stage = journey.stages[index]
    more = index + 1 < len(journey.stages)
    return JourneyResult(
        summary=f"journey {journey.id} stage {index + 1}/{len(journey.stages)}: {stage.tap}"
        + ("" if more else " (last)"),
        journeys=[journey],
        explain=True,
        start=index,
        stop=index + 1,
        data={"stage": index, "tap": stage.tap, "decision": stage.decision},
    )


def _stepped(session: Session) -> tuple[Journey, int]:
    """The journey being stepped through and the stage shown; stepping ends, with the
    reason, when there is none or its journey has left the ring."""
    if session.stepping is None:
        raise NoSuchPacket("not stepping through a journey", hint="start with: step [ID]")
    jid, index = session.stepping
    journey = session.lab.journeys.get(jid)
    if journey is None:
        session.stepping = None
        raise NoSuchPacket(
            f"journey {jid} has left the ring of the last {session.lab.journeys.size} "
            "journeys, so stepping through it ended",
            hint="step ID starts again on a kept journey; set journeys N keeps more",
        )
    return journey, index


def _next(session: Session, inv: Invocation) -> Result:
    journey, index = _stepped(session)
    jid = journey.id
    if index + 1 >= len(journey.stages):
        session.stepping = None
        return MessageResult(summary=f"journey {jid} has no more stages: {journey.verdict}")
    session.stepping = (jid, index + 1)
    return _show_step(session, journey, index + 1)


def _continue(session: Session, inv: Invocation) -> Result:
    journey, index = _stepped(session)
    jid = journey.id
    session.stepping = None
    return JourneyResult(
        summary=f"journey {jid}: {journey.verdict}",
        journeys=[journey],
        explain=True,
        start=index + 1,
        data=journey_data(journey),
    )


def _journey_ids(session: Session) -> list[str]:
    return [str(i) for i in session.lab.journeys.ids()]


def _explain_complete(session: Session, args: list[str]) -> list[str]:
    journey = session.lab.journeys.get()
    ids = [str(i) for i in session.lab.journeys.ids()[-20:]]
    if not args:
        return [*ids, *(journey.taps() if journey else [])]
    if len(args) == 1 and args[0].isdigit():
        chosen = session.lab.journeys.get(int(args[0]))
        return chosen.taps() if chosen else []
    return []


COMMANDS = (
    Command(
        name="trace",
        nodeless="journeys belong to the lab, not to a node",
        summary="show a journey stage by stage (the last one by default)",
        handler=_trace,
        params=(
            Param("id", kind="int", optional=True, choices=_journey_ids, validate_choices=False),
            Param(
                "svg",
                kind="option",
                optional=True,
                metavar="FILE",
                help="also draw the journey on the topology, as SVG, in FILE",
            ),
            Param("force", kind="flag", help="let --svg replace FILE"),
        ),
        example="trace",
        details="trace ID --svg FILE also draws the journey on the topology as SVG: a "
        "numbered circle per stage in its device, arrows between them, drops in red with "
        "their reason (esplab run LAB --html DIR draws every journey of a lab, with packets).",
    ),
    Command(
        name="explain",
        nodeless="journeys belong to the lab, not to a node",
        summary="why each decision of a journey was taken, with its fidelity tag",
        handler=_explain,
        complete=_explain_complete,
        params=(Param("args", kind="rest", optional=True, metavar="[ID] [TAP]"),),
        usage_text="explain [ID] [TAP]",
        example="explain 3 wan.xfrmdev",
    ),
    Command(
        name="step",
        nodeless="journeys belong to the lab, not to a node",
        summary="walk a journey one stage at a time (then next, continue)",
        handler=_step,
        params=(
            Param("id", kind="int", optional=True, choices=_journey_ids, validate_choices=False),
        ),
        example="step",
    ),
    Command(
        name="next",
        nodeless="journeys belong to the lab, not to a node",
        summary="the next stage while stepping",
        handler=_next,
        example="next",
    ),
    Command(
        name="continue",
        nodeless="journeys belong to the lab, not to a node",
        summary="the remaining stages while stepping",
        handler=_continue,
        example="continue",
    ),
)
