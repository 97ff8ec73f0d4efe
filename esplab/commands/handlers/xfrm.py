"""xfrm stat / cat /proc/net/xfrm_stat, and load FILE (``ip xfrm`` lines from a file).

``ip xfrm`` itself (:mod:`esplab.commands.handlers.net_xfrm`) is handed as typed to the
XFRM model of the node (``esplab.model.kernel.xfrm``), which parses iproute2's grammar,
applies the kernel's rules and prints exactly what iproute2 prints.
"""

from __future__ import annotations

from typing import Any

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TableResult, TextResult
from esplab.errors import BadArgument

__all__ = ["COMMANDS"]


def _proc(session: Session, inv: Invocation) -> Result:
    """/proc/net/xfrm_stat exactly as the kernel prints it."""
    node = session.lab.node(inv.node)
    text = node.xfrm.mib.render()
    return TextResult(
        summary=f"{node.name}: /proc/net/xfrm_stat",
        text=text.rstrip("\n"),
        data=dict(node.xfrm.mib),
    )


def _algos(x: Any) -> str:
    parts = []
    for algo in (x.aead, x.enc, x.auth):
        if algo is not None:
            parts.append(algo.name + (f"/{algo.icv_bits}" if algo.icv_bits else ""))
    return " + ".join(parts)


def _xfrm(session: Session, inv: Invocation) -> Result:
    """xfrm stat | states | policies: the node's XFRM side as tables."""
    node = session.lab.node(inv.node)
    what = inv.args["what"]
    if what == "stat":
        counters = dict(node.xfrm.mib)
        rows: list[tuple[str, ...]] = [
            (name, str(value)) for name, value in counters.items() if value or inv.args["all"]
        ]
        return TableResult(
            summary=f"{node.name}: {sum(1 for v in counters.values() if v)} XFRM counter(s) "
            "moved" + ("" if inv.args["all"] else " (--all shows every counter)"),
            title=f"{node.name} /proc/net/xfrm_stat",
            columns=("counter", "value"),
            rows=rows,
            data=counters,
        )
    if what == "states":
        rows = [
            (
                f"{x.spi:#010x}",
                f"{x.src} > {x.dst}",
                x.mode,
                _algos(x),
                f"{x.offload.type} {x.offload.dev} {x.offload.dir}" if x.offload else "-",
                f"{x.curlft.packets}/{x.curlft.bytes}",
                f"{x.stats.replay}/{x.stats.replay_window}/{x.stats.integrity_failed}",
            )
            for x in node.xfrm.states
        ]
        return TableResult(
            summary=f"{node.name}: {len(rows)} state(s)",
            title=f"{node.name} SAD",
            columns=(
                "spi",
                "src > dst",
                "mode",
                "algorithms",
                "offload",
                "pkts/bytes",
                "replay/win/failed",
            ),
            rows=rows,
            data={"states": [r[0] for r in rows]},
        )
    rows = [
        (
            p.dir,
            f"{p.sel.src} > {p.sel.dst}",
            str(p.priority),
            p.action,
            ", ".join(f"{t.src} > {t.dst} reqid {t.reqid} {t.mode}" for t in p.templates) or "-",
            f"packet {p.offload.dev}" if p.offload else "-",
        )
        for p in node.xfrm.policies
    ]
    return TableResult(
        summary=f"{node.name}: {len(rows)} policy(ies)",
        title=f"{node.name} SPD",
        columns=("dir", "selector", "priority", "action", "templates", "offload"),
        rows=rows,
        data={"policies": len(rows)},
    )


def _cat(session: Session, inv: Invocation) -> Result:
    path = inv.args["path"]
    if path != "/proc/net/xfrm_stat":
        raise BadArgument(
            f"cat: {path}: not available in the lab", valid=["/proc/net/xfrm_stat"], value=path
        )
    return _proc(session, inv)


def _load(session: Session, inv: Invocation) -> Result:
    from esplab.model.tools.iproute2.xfrm_load import load_xfrm

    node = session.lab.node(inv.node)
    from esplab.files import read_input

    path = inv.args["file"]
    data = read_input(path, "file")  # a regular file of at most MAX_TEXT_BYTES
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadArgument(
            f"cannot read {path}: line {line} is not text (invalid UTF-8)",
            hint="give the path of a text file of ip xfrm commands or output",
        ) from exc
    report = load_xfrm(node.xfrm, text, source=str(path))
    session.files.reading(path, "a file loaded with load")  # (a failed load keeps nothing)
    return MessageResult(
        summary=f"{node.name}: loaded {len(report.states)} state(s) and "
        f"{len(report.policies)} policy(ies) from {path} ({report.commands} command(s))",
        data={"states": len(report.states), "policies": len(report.policies)},
    )


COMMANDS = (
    Command(
        name="xfrm",
        summary="the node's XFRM side as tables: counters, states, policies",
        handler=_xfrm,
        params=(
            Param("what", choices=("stat", "states", "policies"), help="what to show"),
            Param("all", kind="flag", help="stat: every counter, not only those that moved"),
        ),
        usage_text="[NODE] xfrm stat [--all] | states | policies",
        example="host xfrm stat",
        details="cat /proc/net/xfrm_stat prints the counters exactly as the kernel does; "
        "ip xfrm state/policy print exactly as iproute2 does.",
    ),
    Command(
        name="cat",
        summary="show /proc/net/xfrm_stat, as on a board",
        handler=_cat,
        params=(Param("path", choices=("/proc/net/xfrm_stat",), validate_choices=False),),
        usage_text="[NODE] cat /proc/net/xfrm_stat",
        example="cat /proc/net/xfrm_stat",
    ),
    Command(
        name="load",
        summary="recreate states and policies from ip xfrm commands or pasted ip xfrm output",
        handler=_load,
        params=(Param("file", help="a text file"),),
        usage_text="[NODE] load FILE",
        example="host load board-states.txt",
        details="Like ip -batch, loading stops at the first error (FILE:LINE:COL) and what "
        "ran before it stays; printed objects go in bottom-up, as a dump lists the newest "
        "first.",
    ),
)
