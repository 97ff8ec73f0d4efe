"""``load``: recreate XFRM states and policies from text.

The text may mix ``ip xfrm ...`` command lines (``#`` comments, backslash
continuations, an optional ``sudo``) and output pasted from a board
(``ip [-s] xfrm state`` / ``ip [-s] xfrm policy``, TAB- or space-indented).
Commands run through :func:`run_ip_xfrm`; printed objects are turned back into
requests and go through the same kernel checks (device offload included), then
get the runtime values the output shows (replay counters, lifetime use,
statistics). A dump lists the newest object first, so each run of printed
objects is inserted bottom-up and prints back in the same order.

Like ``ip -batch``, loading stops at the first error; what ran before stays.
Errors are ``LabFileError`` naming the source, the line and why, chained to the
underlying ``ToolUsageError``/``KernelError``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from esplab.errors import EsplabError, LabFileError
from esplab.model.kernel.xfrm.objects import (
    XfrmOffload,
    XfrmPolicy,
    XfrmState,
)
from esplab.model.kernel.xfrm.offload import DeviceResolver
from esplab.model.kernel.xfrm.tables import XfrmNode
from esplab.model.tools.iproute2.xfrm import run_ip_xfrm
from esplab.model.tools.iproute2.xfrm_blocks import Line, LineError, policy_block, state_block

__all__ = ["LoadReport", "load_xfrm"]


@dataclass
class LoadReport:
    """What a load did: commands run, and the states/policies it created."""

    commands: int = 0
    states: list[XfrmState] = field(default_factory=list)
    policies: list[XfrmPolicy] = field(default_factory=list)


def _logical_lines(text: str) -> list[Line]:
    """Join backslash continuations; keep the number of each logical line's first line."""
    out: list[Line] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        start = start or n
        if raw.endswith("\\"):
            buf += raw[:-1] + " "
            continue
        out.append((start, buf + raw))
        buf, start = "", 0
    if buf:
        out.append((start, buf))
    return out


def _blocks(lines: list[Line]) -> list[tuple[str, list[Line]]]:
    """Split into ('cmd', [line]) and ('state'|'policy', block) items, in order."""
    items: list[tuple[str, list[Line]]] = []
    block: list[Line] = []

    def close() -> None:
        if block:
            kind = (
                "state" if len(block) > 1 and block[1][1].strip().startswith("proto ") else "policy"
            )
            items.append((kind, list(block)))
            block.clear()

    for n, raw in lines:
        text = raw.strip()
        if not text or text.startswith("#"):
            close()
        elif raw[:1] in (" ", "\t"):
            if not block:
                raise LineError(n, "an indented line outside a printed state or policy")
            block.append((n, raw))
        elif text.split()[0] in ("ip", "sudo"):
            close()
            items.append(("cmd", [(n, text)]))
        elif text.startswith("src "):
            close()
            block.append((n, raw))
        else:
            raise LineError(n, "expected an 'ip xfrm' command or 'ip xfrm state|policy' output")
    close()
    return items


def load_xfrm(
    node: XfrmNode,
    text: str,
    *,
    source: str = "<load>",
    resolve_dev: DeviceResolver | None = None,
) -> LoadReport:
    """Run the commands and recreate the printed objects of ``text`` on ``node``."""
    report = LoadReport()
    resolve = resolve_dev or node.resolve_dev
    try:
        items = _blocks(_logical_lines(text))
    except LineError as exc:
        raise LabFileError(source, exc.line, exc.col, exc.what) from exc
    try:
        _run(node, items, report, resolve, source)
    except LabFileError as exc:
        if not (report.commands or report.states or report.policies):
            raise
        # What ran before the bad line stays, as ``ip -batch`` leaves it (ip.c batch():
        # it stops at the first failing command and undoes nothing); the error says so.
        kept = (
            f"the load stopped there; what came before line {exc.line} stays, as ip -batch "
            f"leaves it: {report.commands} command(s) run, {len(report.states)} state(s) "
            f"and {len(report.policies)} policy(ies) added"
        )
        error = LabFileError(exc.file, exc.line, exc.col, exc.what, valid=exc.valid, hint=kept)
        raise error from exc.__cause__ or exc
    return report


def _run(
    node: XfrmNode,
    items: list[tuple[str, list[Line]]],
    report: LoadReport,
    resolve: DeviceResolver,
    source: str,
) -> None:
    # Runs of printed objects go in bottom-up (a dump lists the newest first).
    pending: list[tuple[str, list[Line]]] = []
    for kind, lines in [*items, ("end", [])]:
        if kind in ("state", "policy"):
            pending.append((kind, lines))
            continue
        for obj_kind, obj_lines in reversed(pending):
            _apply(node, obj_kind, obj_lines, report, resolve, source)
        pending.clear()
        if kind == "cmd":
            line, cmd = lines[0]
            try:
                argv = shlex.split(cmd, comments=True)
                if argv[:1] == ["sudo"]:
                    argv = argv[1:]
                result = run_ip_xfrm(node, argv, resolve_dev=resolve)
            except (EsplabError, ValueError) as exc:
                raise LabFileError(source, line, 1, str(exc)) from exc
            report.commands += 1
            if result.command.verb in ("add", "update"):
                report.states.extend(result.states)
                report.policies.extend(result.policies)


def _apply(
    node: XfrmNode,
    kind: str,
    lines: list[Line],
    report: LoadReport,
    resolve: DeviceResolver,
    source: str,
) -> None:
    line = lines[0][0]
    try:
        if kind == "state":
            req, offload, life, stats = state_block(lines)
            _check_dev(offload, resolve, line)
            x = node.add_state(req, offload, resolve=resolve)
            if life.cur is not None:
                x.curlft = life.cur
            x.stats = stats
            report.states.append(x)
        else:
            preq, offload, life = policy_block(lines)
            _check_dev(offload, resolve, line)
            p = node.add_policy(preq, offload, resolve=resolve)
            if life.cur is not None:
                p.curlft = life.cur
            report.policies.append(p)
    except LineError as exc:
        raise LabFileError(source, exc.line, exc.col, exc.what) from exc
    except (EsplabError, ValueError, IndexError) as exc:
        what = f"this {kind} cannot be recreated: {exc}"
        raise LabFileError(source, line, 1, what) from exc


def _check_dev(offload: XfrmOffload | None, resolve: DeviceResolver, line: int) -> None:
    if offload is not None and resolve(offload.dev) is None:
        raise LineError(line, f"no netdev {offload.dev} on this node (Invalid device name)")
