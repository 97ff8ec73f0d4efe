"""ip xfrm ..., xfrm stat / cat /proc/net/xfrm_stat, and load FILE.

``ip xfrm`` is handed as typed to the XFRM model of the node (``esplab.model.xfrm``),
which parses iproute2's grammar, applies the kernel's rules and prints exactly what
iproute2 prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TableResult, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.model.node import Node

__all__ = ["COMMANDS", "run_ip_xfrm", "xfrm_completions"]

_STATE_WORDS = ["add", "update", "delete", "get", "list", "flush", "count", "deleteall"]
_STATE_KEYS = [
    "src",
    "dst",
    "proto",
    "spi",
    "reqid",
    "mode",
    "replay-window",
    "flag",
    "sel",
    "dir",
    "enc",
    "auth",
    "auth-trunc",
    "aead",
    "encap",
    "offload",
    "limit",
    "mark",
    "if_id",
    "tfcpad",
    "extra-flag",
]
_POLICY_KEYS = [
    "src",
    "dst",
    "dir",
    "priority",
    "action",
    "tmpl",
    "offload",
    "proto",
    "index",
    "mark",
    "ptype",
    "flag",
]
_ALGOS = [
    "cbc(aes)",
    "rfc3686(ctr(aes))",
    "cbc(des3_ede)",
    "cbc(des)",
    "ecb(cipher_null)",
    "hmac(md5)",
    "hmac(sha1)",
    "hmac(sha256)",
    "hmac(sha384)",
    "hmac(sha512)",
    "rfc4106(gcm(aes))",
]


def run_ip_xfrm(session: Session, node: Node, argv: list[str]) -> Result:
    """``[NODE] ip [OPTIONS] xfrm WORDS...`` on ``node``: ``argv`` is what follows ``ip``,
    options included (the grammar reads them: ``-s`` repeated, ``-4``/``-6``, ``-f``)."""
    from esplab.model.xfrm.ipxfrm import run_ip_xfrm as model_run

    out = model_run(node.xfrm, argv)
    cmd = out.command
    data = {
        "node": node.name,
        "object": cmd.obj,
        "verb": cmd.verb,
        "states": [f"{x.spi:#010x}" for x in out.states],
        "policies": len(out.policies),
        "text": out.text,
    }
    if out.text or cmd.verb == "list":
        # A dump prints what it finds; iproute2 prints nothing for an empty one.
        return TextResult(
            summary=f"{node.name}: ip xfrm {cmd.obj} {cmd.verb}",
            text=out.text.rstrip("\n"),
            data=data,
        )
    done = {
        "add": "added",
        "update": "updated",
        "delete": "deleted",
        "flush": "flushed",
        "deleteall": "deleted",
    }.get(cmd.verb, cmd.verb)
    offload = ""
    if cmd.obj == "state" and cmd.verb in ("add", "update") and out.states:
        x = out.states[0]
        if x.offload is not None:
            offload = f", {x.offload.type} offload on {x.offload.dev} dir {x.offload.dir}"
        elif cmd.offload is not None:
            port = session.lab.port(node.name, cmd.offload.dev)
            why = port.refused if port is not None and port.refused else "no xfrmdev_ops"
            offload = f", not offloaded (software fallback: {why})"
    count = len(out.states) if cmd.obj == "state" else len(out.policies)
    summary = (
        f"{node.name}: {cmd.obj} {done}"
        + (f" ({count})" if cmd.verb in ("flush", "deleteall") else "")
        + offload
    )
    return MessageResult(summary=summary, data=data)


def xfrm_completions(session: Session, words: list[str]) -> list[str]:
    if not words:
        return ["state", "policy"]
    if len(words) == 1:
        return _STATE_WORDS
    last = words[-1]
    if last in ("enc", "auth", "auth-trunc", "aead"):
        return _ALGOS
    if last == "dev":
        return list(session.lab.node().devs)
    if last == "mode":
        return ["transport", "tunnel"]
    if last == "dir":
        return ["in", "out"] if words[0].startswith("s") else ["in", "out", "fwd"]
    if last == "offload":
        return ["crypto", "packet", "dev"]
    if last == "spi":
        return [f"{x.spi:#x}" for x in session.lab.node().xfrm.states]
    return _STATE_KEYS if words[0].startswith("s") else _POLICY_KEYS


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
    from esplab.model.xfrm.loader import load_xfrm

    node = session.lab.node(inv.node)
    path = Path(inv.args["file"])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadArgument(
            f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}",
            hint="give the path of a text file of ip xfrm commands or output",
        ) from exc
    report = load_xfrm(node.xfrm, text, source=str(path))
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
    ),
)
