"""One journey drawn on the lab's topology, as SVG text.

The topology is the README's figure: pc1..pc4 on the switch's lan ports, the
switch's CPU port on eth0 (GDM1) of the EN7581 "ap", the EIP-93 beside the ap's
kernel, wan (GDM2) cabled to the host, and the AF_XDP socket on wan. Each stage is
a numbered circle in the box of the device it happened in (its tap's first word);
arrows join the stages in order; a drop is red with its reason. Every circle is a
link to ``#jJ-sN`` (the page's stage details) and carries ``data-stage``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from esplab.model.stage import Journey, Stage

__all__ = ["BOXES", "ROLE_COLOURS", "box_of", "journey_svg"]

WIDTH, HEIGHT = 960, 420
DROP = "#d62728"
#: The colours of byte roles (esplab.spans.ROLES), the same in the SVG legend and the hex.
ROLE_COLOURS = {
    "esp-header": "#1f77b4",
    "iv": "#9467bd",
    "payload": "#ff7f0e",
    "padding": "#2ca02c",
    "pad-len": "#2ca02c",
    "next-header": "#2ca02c",
    "icv": "#e377c2",
    "mtk-tag": "#8c564b",
}


@dataclass(frozen=True)
class Box:
    id: str
    label: str
    x: int
    y: int
    w: int = 150
    h: int = 56


#: The devices of the figure (README "The emulated lab"), left to right, top to bottom.
BOXES: tuple[Box, ...] = (
    *(Box(f"pc{i}", f"pc{i}", 20 + (i - 1) * 120, 20, 100) for i in range(1, 5)),
    *(
        Box(f"lan{i}", f"lan{i} (switch port {i})", 20 + (i - 1) * 120, 120, 100)
        for i in range(1, 5)
    ),
    Box("eth0", "eth0 = GDM1 (switch CPU port 6)", 20, 230, 460),
    Box("ap", "ap kernel (XFRM, routes)", 520, 230, 200),
    Box("eip93", "EIP-93 packet engine", 520, 340, 200),
    Box("wan", "wan = GDM2", 770, 230, 170),
    Box("host", "host (software XFRM)", 770, 20, 170),
    Box("xsk", "AF_XDP socket", 770, 340, 170),
)
_BY_ID = {b.id: b for b in BOXES}
_ALIASES = {"xdpsock": "xsk", "xsk0": "xsk"}


def box_of(stage: Stage) -> Box:
    """The box a stage happened in: its tap's first word, else its device, else the ap."""
    word = stage.tap.split(".")[0]
    for name in (word, _ALIASES.get(word, word), stage.device):
        if name in _BY_ID:
            return _BY_ID[name]
    return _BY_ID["ap"]


def _places(stages: Sequence[Stage]) -> list[tuple[int, int]]:
    """Where each stage's circle goes: spread along the bottom of its box."""
    seen: dict[str, int] = {}
    counts: dict[str, int] = {}
    for stage in stages:
        counts[box_of(stage).id] = counts.get(box_of(stage).id, 0) + 1
    out = []
    for stage in stages:
        box = box_of(stage)
        n = seen.get(box.id, 0)
        seen[box.id] = n + 1
        per_row = max(1, (box.w - 10) // 24)
        row, col = divmod(n, per_row)
        out.append((box.x + 16 + col * 24, box.y + box.h - 14 + row * 24))
    return out


def journey_svg(journey: Journey, *, prefix: str = "") -> str:
    """The journey as an SVG document (text); ``prefix`` makes ids unique in a page."""
    stages = journey.stages
    jid = f"{prefix}j{journey.id}"
    used = {box_of(s).id for s in stages}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="journey" id="{jid}-svg" '
        f'viewBox="0 0 {WIDTH} {HEIGHT + 30 + 20 * len(stages)}" width="{WIDTH}" '
        f'height="{HEIGHT + 30 + 20 * len(stages)}" font-family="sans-serif" font-size="12">',
        f"<title>journey {journey.id}: {escape(journey.verdict)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#444"/></marker></defs>',
        f'<rect x="10" y="215" width="{WIDTH - 20}" height="190" fill="none" stroke="#999" '
        'stroke-dasharray="6 4"/><text x="16" y="418" fill="#666">EN7581 "ap"</text>',
    ]
    for a, b in (
        ("lan1", "pc1"),
        ("lan2", "pc2"),
        ("lan3", "pc3"),
        ("lan4", "pc4"),
        ("wan", "host"),
    ):
        ba, bb = _BY_ID[a], _BY_ID[b]
        parts.append(
            f'<line class="cable" x1="{ba.x + ba.w / 2}" y1="{ba.y}" x2="{bb.x + bb.w / 2}" '
            f'y2="{bb.y + bb.h}" stroke="#bbb" stroke-width="3"/>'
        )
    for box in BOXES:
        fill = "#eef5ff" if box.id in used else "#f7f7f7"
        parts.append(
            f'<g class="device" data-device="{box.id}"><rect x="{box.x}" y="{box.y}" '
            f'width="{box.w}" height="{box.h}" rx="6" fill="{fill}" stroke="#555"/>'
            f'<text x="{box.x + 6}" y="{box.y + 15}">{escape(box.label)}</text></g>'
        )
    places = _places(stages)
    for n in range(1, len(stages)):
        (x1, y1), (x2, y2) = places[n - 1], places[n]
        if (x1, y1) == (x2, y2):
            continue
        colour = DROP if stages[n].drop else "#444"
        parts.append(
            f'<line class="hop" data-hop="{n}" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" '
            f'stroke="{colour}" stroke-width="1.5" marker-end="url(#arrow)" opacity="0.8"/>'
        )
    for n, (stage, (x, y)) in enumerate(zip(stages, places, strict=True), 1):
        colour = DROP if stage.drop else "#1f5fa8"
        drop = " drop" if stage.drop else ""
        tip = escape(f"{n}. {stage.tap}: {stage.decision}")
        parts.append(
            f'<a href="#{jid}-s{n}" class="stage-link"><g class="stage{drop}" '
            f'data-stage="{n}" data-tap="{escape(stage.tap)}"><title>{tip}</title>'
            f'<circle cx="{x}" cy="{y}" r="10" fill="{colour}"/>'
            f'<text x="{x}" y="{y + 4}" text-anchor="middle" fill="#fff" font-size="10">{n}</text>'
            "</g></a>"
        )
    y = HEIGHT + 24
    for n, stage in enumerate(stages, 1):
        style = f' fill="{DROP}" class="drop-reason"' if stage.drop else ""
        text = f"{n}. {stage.tap}: {stage.decision}"
        if stage.drop:
            text += f" - DROPPED: {stage.drop}"
        parts.append(f'<text x="16" y="{y}"{style}>{escape(text[:150])}</text>')
        y += 20
    parts.append("</svg>")
    return "\n".join(parts)
