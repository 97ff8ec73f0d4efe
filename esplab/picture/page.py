"""A lab's journeys as one self-contained HTML page (``esplab run LAB --html DIR``).

The page holds, per journey, its picture (:mod:`esplab.picture.svg`) and, per stage,
a ``<details id="jJ-sN" class="stage-detail">``: the decision, the decoded packet
(each Scapy layer's fields) and the hex, where every byte has the class of its role
(``r-esp-header``, ``r-iv``, ``r-payload`` for the ciphertext, ``r-padding``,
``r-pad-len``, ``r-next-header`` for the trailer, ``r-icv``) and the bytes this
stage changed from the stage before it (:func:`changed`) the class ``chg``.
Clicking a stage in the picture opens its details. Styles and the few lines of
script are inline: no server, no network.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from esplab.model.stage import Journey, Stage
from esplab.picture.svg import DROP, ROLE_COLOURS, journey_svg

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.lab.runner import LabRun

__all__ = [
    "MAX_JOURNEYS",
    "EspMemory",
    "changed",
    "journey_html",
    "lab_page",
    "write_lab_page",
]

#: Journeys drawn in one page at most (a flood lab sends thousands): the last ones.
MAX_JOURNEYS = 60

EspOf = Callable[["Packet"], "dict[str, Any] | None"]

_CSS = """
body{font-family:sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:2em;border-top:1px solid #ccc;padding-top:1em}
.verdict.good{color:#2a7a2a} .verdict.bad{color:%(drop)s;font-weight:bold}
svg.journey{border:1px solid #ddd;background:#fff;max-width:100%%;height:auto}
details.stage-detail{margin:.3em 0;padding:.2em .6em;border-left:4px solid #1f5fa8}
details.stage-detail.drop{border-left-color:%(drop)s}
details.stage-detail[open]{background:#f8fbff}
.reason{color:%(drop)s;font-weight:bold}
table.fields{border-collapse:collapse;font-size:12px;margin:.4em 0}
table.fields td,table.fields th{border:1px solid #ddd;padding:1px 6px;text-align:left}
pre.hex{font-size:12px;line-height:1.5}
pre.hex span.b{padding:0 1px}
pre.hex span.chg{outline:2px solid #000;font-weight:bold}
.legend span{display:inline-block;padding:0 .5em;margin-right:.4em;color:#fff}
%(roles)s
"""

_JS = """
document.querySelectorAll('a.stage-link').forEach(function(a){
  a.addEventListener('click',function(){
    var d=document.getElementById(a.getAttribute('href').slice(1));
    if(d){d.open=true;}
  });
});
if(location.hash){var d=document.getElementById(location.hash.slice(1));if(d){d.open=true;}}
"""

_NAMES = {
    "esp-header": "ESP header",
    "iv": "IV",
    "payload": "ciphertext",
    "padding": "padding",
    "pad-len": "pad length",
    "next-header": "next header",
    "icv": "ICV",
    "mtk-tag": "MTK tag",
}


class EspMemory:
    """The ESP layout of every stage's packet, taken while its SAs still exist (a lab
    may delete or replace them later): call :meth:`remember` after each step."""

    def __init__(self) -> None:
        self.layouts: dict[tuple[int, int], dict[str, Any] | None] = {}
        self.seen: set[int] = set()

    def remember(self, run: LabRun) -> None:
        from esplab.commands.operands import esp_details

        log = run.session.lab.journeys
        for jid in log.ids():
            journey = log.get(jid)
            if jid in self.seen or journey is None:
                continue
            self.seen.add(jid)
            for n, stage in enumerate(journey.stages):
                if stage.data:
                    try:
                        packet = stage.packet()
                        found = esp_details(run.session, packet) if packet else None
                    except Exception:  # colouring is a help, never a failure
                        found = None
                    self.layouts[(jid, n)] = found


def _css() -> str:
    roles = "\n".join(
        f"pre.hex span.r-{role}{{background:{colour};color:#fff}}"
        for role, colour in ROLE_COLOURS.items()
    )
    return _CSS % {"drop": DROP, "roles": roles}


def changed(before: bytes | None, after: bytes) -> set[int]:
    """Offsets of ``after`` that a stage changed from ``before``: all of them when there
    was nothing before; else those replaced or inserted (difflib's opcodes)."""
    if before is None:
        return set(range(len(after)))
    if len(before) == len(after):
        return {i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    out: set[int] = set()
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "insert"):
            out.update(range(j1, j2))
    return out


def _roles(packet: Packet | None, esp: dict[str, Any] | None, size: int) -> list[str]:
    from esplab.spans import EspLayout, field_spans

    roles = [""] * size
    if packet is None:
        return roles
    try:
        spans = field_spans(packet, EspLayout.from_data(esp))
    except Exception:  # a packet whose fields cannot be mapped: plain bytes
        return roles
    for span in spans:
        if span.role:
            for i in range(max(span.start, 0), min(span.end, size)):
                roles[i] = span.role
    return roles


def _hex(data: bytes, roles: Sequence[str], marks: set[int]) -> str:
    lines = []
    for row in range(0, len(data), 16):
        cells = []
        for i in range(row, min(row + 16, len(data))):
            cls = "b" + (f" r-{roles[i]}" if roles[i] else "") + (" chg" if i in marks else "")
            cells.append(f'<span class="{cls}" data-off="{i}">{data[i]:02x}</span>')
        lines.append(f"{row:04x}  " + " ".join(cells))
    return '<pre class="hex">' + "\n".join(lines) + "</pre>"


def _fields(packet: Packet) -> str:
    from esplab.lab.runner import packet_layers

    rows = []
    for layer, fields in packet_layers(packet).items():
        for name, value in fields.items():
            rows.append(
                f"<tr><th>{escape(layer)}</th><td>{escape(name)}</td>"
                f"<td>{escape(str(value)[:120])}</td></tr>"
            )
    return '<table class="fields">' + "".join(rows) + "</table>"


def _stage(jid: str, n: int, stage: Stage, before: bytes | None, esp_of: EspOf | None) -> str:
    """A stage's details; ``n`` counts from 1."""
    drop = " drop" if stage.drop else ""
    head = f"{n}. {stage.tap} ({stage.device}): {stage.decision}"
    body = [f"<summary>{escape(head)}</summary>"]
    if stage.drop:
        body.append(f'<p class="reason">dropped: {escape(stage.drop)}</p>')
    if stage.why:
        body.append(f"<p>{escape(stage.why)}</p>")
    body.append(f"<p>fidelity {escape(str(stage.fidelity))}</p>")
    if stage.data:
        try:
            packet = stage.packet()
        except Exception:  # an undecodable snapshot: the hex still shows
            packet = None
        esp = None
        if packet is not None and esp_of is not None:
            try:
                esp = esp_of(packet)
            except Exception:  # colouring is a help, never a failure
                esp = None
        if packet is not None:
            body.append(f"<p>{escape(packet.summary())}</p>{_fields(packet)}")
        roles = _roles(packet, esp, len(stage.data))
        body.append(_hex(stage.data, roles, changed(before, stage.data)))
    return f'<details id="{jid}-s{n}" class="stage-detail{drop}">{"".join(body)}</details>'


def journey_html(
    journey: Journey, esp_of: EspOf | None = None, memory: EspMemory | None = None
) -> str:
    """One journey's section: its picture and every stage's details."""
    jid = f"j{journey.id}"
    verdict = "good" if journey.delivered else "bad"
    parts = [
        f'<section class="journey-section" id="{jid}"><h2>journey {journey.id}: '
        f"{escape(journey.origin)}</h2>",
        f'<p class="verdict {verdict}">{escape(journey.verdict)}</p>',
        journey_svg(journey),
    ]
    before: bytes | None = None
    for n, stage in enumerate(journey.stages, 1):
        known = memory.layouts.get((journey.id, n - 1)) if memory else None
        layout: EspOf | None = esp_of if known is None else (lambda _p, k=known: k)
        parts.append(_stage(jid, n, stage, before, layout))
        if stage.data:
            before = stage.data
    parts.append("</section>")
    return "\n".join(parts)


def _legend() -> str:
    seen: list[tuple[str, str]] = []
    for role, colour in ROLE_COLOURS.items():
        name = "trailer" if role in ("padding", "pad-len", "next-header") else _NAMES[role]
        if name not in [s for s, _ in seen]:
            seen.append((name, colour))
    spans = "".join(f'<span style="background:{c}">{escape(n)}</span>' for n, c in seen)
    return f'<p class="legend">{spans} bytes a stage changed are outlined</p>'


def page(
    title: str,
    intro: str,
    journeys: Sequence[Journey],
    esp_of: EspOf | None,
    memory: EspMemory | None = None,
) -> str:
    shown = list(journeys)[-MAX_JOURNEYS:]
    left = len(journeys) - len(shown)
    sections = "\n".join(journey_html(j, esp_of, memory) for j in shown if j.stages)
    more = f"<p>({left} earlier journeys not drawn)</p>" if left else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_css()}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{escape(intro)}</p>{_legend()}{more}"
        f"{sections}<script>{_JS}</script></body></html>\n"
    )


def lab_page(run: LabRun, memory: EspMemory | None = None) -> str:
    """The HTML page of a lab that ran: every journey of its session (``memory``: the
    ESP layouts taken while it ran, else what the SAs at its end reveal)."""
    from esplab.commands.operands import esp_details

    log = run.session.lab.journeys
    journeys = [j for j in (log.get(i) for i in log.ids()) if j is not None]
    report = run.report()
    counts = report.counts()
    intro = (
        f"{run.lab.file}, seed {run.lab.seed:#x}: {counts['passed']} of "
        f"{len(report.steps)} steps passed. Click a numbered stage to see its packet."
    )
    memory = memory or EspMemory()
    memory.remember(run)
    return page(
        f"esplab lab: {run.lab.name}",
        intro,
        journeys,
        lambda p: esp_details(run.session, p),
        memory,
    )


def write_lab_page(run: LabRun, directory: Path, memory: EspMemory | None = None) -> Path:
    """Write ``directory/<lab stem>.html`` (the directory is made if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = run.session.files.target(
        directory / f"{run.lab.stem or 'lab'}.html", "--html file", force=True
    )
    target.write_text(lab_page(run, memory), encoding="utf-8")
    return Path(target)
