"""The session's core: one model, the registry of commands it is given, one seed. No
module-level state.

``Session.execute`` is the single way in for the REPL, the lab runner and the CLI:
parse (pure), then run the handler (which changes the model and returns a Result,
never printing). A failed command raises an EsplabError and leaves the model as it
was; ``Session.run`` turns that into an ErrorResult for callers that want a value.

Handlers see this class; it knows no command. A session with every command of the
core (those a lab step may run, :func:`esplab.commands.handlers.all_commands`) is
:class:`esplab.commands.session.Session`; the front ends give theirs ``lab`` too
(:func:`esplab.lab.command.every_command`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from esplab.commands.parser import Invocation, parse
from esplab.commands.registry import Registry
from esplab.commands.result import ErrorResult, Result, TextResult
from esplab.errors import EsplabError, PeerError
from esplab.files import FilePolicy
from esplab.model.lab import Lab, LabSettings
from esplab.progress import Progress, silent

__all__ = ["DEFAULT_SEED", "Session", "SessionOptions", "cite_result", "run_on_peer"]

DEFAULT_SEED = 0x5EED


@dataclass
class SessionOptions:
    """Settings a user may change with ``set`` or a lab's top level."""

    seed: int = DEFAULT_SEED


@dataclass
class Session:
    """A lab session: the registry of commands and everything they act on."""

    registry: Registry = field(default_factory=Registry)
    options: SessionOptions = field(default_factory=SessionOptions)
    named: dict[str, Any] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)
    last: Result | None = None
    stepping: tuple[int, int] | None = None
    # A handler's rewrite of its own line for the history (see execute), if any.
    replay: str | None = None
    # The lab being walked with ``lab step`` (an esplab.lab.runner.LabRun), if any.
    lab_walk: Any = None
    # Where commands may write, and the files read that nothing may overwrite.
    files: FilePolicy = field(default_factory=FilePolicy)
    # How a real peer's QEMU guest uses KVM: "auto" (tried, then TCG), "on", "off".
    peer_kvm: str = "auto"
    # How a long run (send ... count N) shows its progress: a front end on a terminal
    # sets a bar (esplab.progress.for_console); nothing by default.
    progress: Progress = field(default=silent)
    # What the session has to say that is no command's result (a real peer that could
    # not start, so its node stayed emulated); front ends print and clear it.
    notes: list[str] = field(default_factory=list)
    # How results are printed: "text", "json" (``set output json``, ``esplab --json``),
    # or "board" (what a board's own tools print; esplab.batch.board_error).
    output: str = "text"

    def __post_init__(self) -> None:
        self.lab = Lab(LabSettings(seed=self.options.seed))

    def reset(self, seed: int) -> None:
        """Start over from ``seed``: a fresh device model, no names, no history (what
        ``save`` writes starts here, under this seed)."""
        self.options = SessionOptions(seed=seed)
        self.close_peers()
        self.lab = Lab(LabSettings(seed=seed))
        self.named.clear()
        self.history.clear()
        self.stepping = None
        self.last = None
        self.lab_walk = None

    def close_peers(self) -> None:
        """Shut down every real peer (their nodes are emulated again)."""
        lab = getattr(self, "lab", None)
        if lab is None:
            return
        while lab.real_peers:
            _, peer = lab.real_peers.popitem()
            peer.close()

    def node_names(self) -> list[str]:
        """Names a command line may start with to address another node."""
        return list(self.lab.nodes)

    def parse(self, line: str) -> Invocation:
        return parse(line, self.registry, session=self, nodes=self.node_names())

    def execute(self, line: str) -> Result:
        """Parse and run one command; raises EsplabError on a user error. A ``--json``
        word anywhere on the line (or ``set output json``) marks the result for JSON."""
        from esplab.commands.tokens import json_flag

        line, as_json = json_flag(line)
        result = self._execute(line)
        if as_json or self.output == "json":
            result.output = "json"
        return result

    def _execute(self, line: str) -> Result:
        real = self.lab.real_peers
        first, _, rest = line.strip().partition(" ")
        if real and first in real and rest.strip():
            self.replay = None
            result = run_on_peer(self, first, rest.strip())
            self.history.append(line)
            self.last = result
            return result
        invocation = self.parse(line)
        self.replay = None
        result = cite_result(invocation.command.handler(self, invocation))
        events = self.lab.drain_monitors()
        if events:
            result.monitor = events
            result.data["monitor"] = events
        # What the command did, as a line that replays it (``save``): the line itself,
        # or the handler's rewrite of it (an interrupted send: the count it reached).
        self.history.append(self.replay or line)
        self.last = result
        return result

    def run(self, line: str) -> Result:
        """Like execute, but a user error comes back as an ErrorResult."""
        try:
            return self.execute(line)
        except EsplabError as exc:
            return ErrorResult(summary=str(exc), error=exc, line=line)


def run_on_peer(session: Session, node: str, line: str) -> Result:
    """``NODE LINE`` where NODE is a real kernel: run LINE there (see bridge.PROGRAMS),
    then walk every frame it sent."""
    peer = session.lab.real_peers[node]
    first = session.lab.journeys.next_id
    try:
        done = peer.run_line(line, datapath=session.lab.datapath)
    except PeerError as exc:
        if peer.client.alive:
            raise  # the line itself (a program not allowed, ...)
        peer.gone(session.lab, None, str(exc))
        raise PeerError(f"{exc}; {node} is emulated again", hint=f"peer {node} kernel") from exc
    peer.answer(session.lab.datapath)
    journeys = [j for j in session.lab.journeys if j.id >= first]
    peer.client.read_counters()
    data = {
        "node": node,
        "rc": done.rc,
        "stdout": done.out,
        "stderr": done.err,
        "journeys": [j.id for j in journeys],
    }
    if done.timed_out:
        raise PeerError(f"'{line}' did not end within 30 s on the real {node}; it was killed")
    if done.rc != 0:
        said = (done.err or done.out).strip() or f"exit status {done.rc}"
        raise PeerError(f"{said} (exit {done.rc} on the real {node})")
    text = done.out.rstrip("\n")
    if journeys:
        text += (
            ("\n" if text else "")
            + f"({len(journeys)} frame(s) from {node}: journeys "
            + (", ".join(str(j.id) for j in journeys) + ")")
        )
    return TextResult(summary=f"{node}: {line}", text=text, data=data)


def cite_result(result: Result) -> Result:
    """``result`` with every reference-note citation in its text (summary, title, text,
    notes, rows) rendered as the public sources it stands for (:mod:`esplab.citations`).
    Journey stages cite their own when they are made."""
    from esplab.citations import cite

    for name in ("summary", "title", "text"):
        value = getattr(result, name, None)
        if isinstance(value, str) and ".md" in value:
            setattr(result, name, cite(value))
    notes = getattr(result, "notes", None)
    if isinstance(notes, list):
        result.notes = [cite(n) if isinstance(n, str) else n for n in notes]  # type: ignore[attr-defined]
    rows = getattr(result, "rows", None)
    if isinstance(rows, list) and any(".md" in str(c) for r in rows for c in r):
        result.rows = [tuple(cite(c) if isinstance(c, str) else c for c in r) for r in rows]  # type: ignore[attr-defined]
    return result
