"""set (show or change the session's settings) and save (the session as a lab file)."""

from __future__ import annotations

from typing import Any

from esplab.commands.base import Session
from esplab.commands.parser import Invocation, ring_size
from esplab.commands.registry import NOT_LAB_STEPS, Command, Param
from esplab.commands.result import MessageResult, Result, TableResult
from esplab.errors import BadArgument, EsplabError

__all__ = ["COMMANDS", "SETTINGS", "lab_document", "lab_text", "saved_steps"]

# name -> (what it is, the values it takes)
SETTINGS: dict[str, tuple[str, str]] = {
    "tracing": ("keep a snapshot of every stage (captures, trace bytes)", "on|off"),
    "journeys": ("how many journeys the journey ring keeps", "1-10000"),
    "captures": ("how many packets each tap's capture ring keeps", "1-100000"),
    "policy-priority": ("the XFRM policy priority rule of the node", "mainline|rfc"),
    "sub-policy": (
        "CONFIG_XFRM_SUB_POLICY on the node: ptype main on every policy, ptype sub "
        "accepted (Debian's and Ubuntu's kernels have it)",
        "on|off",
    ),
    "crypto-provider": (
        "who does the ap's software ESP crypto: generic code, or the "
        "EIP-93 as authenc (the sw+aead datapath)",
        "software|eip93",
    ),
    "hmac-long-key": (
        "how the EIP-93 driver keys an HMAC key over 64 bytes: as mainline does (the "
        "digest cut to the ICV length, so a peer's ICV differs) or fixed (RFC 2104)",
        "mainline|fixed",
    ),
    "output": (
        "how results print: text, one JSON object a command (what expect: paths see), or "
        "board: what a board prints (iproute2's own error words, esplab's advice on a dim "
        "line of its own, nothing for a successful ip or ethtool change)",
        "text|json|board",
    ),
    "seed": ("the seed of IVs, MACs and every random choice (read-only)", "--seed N at start"),
}
_RULES = ("mainline", "rfc")
_OUTPUTS = ("text", "json", "board")
# Settings of one node (a node prefix picks it); the rest are the whole lab's.
_NODE_SETTINGS = ("policy-priority", "sub-policy")
_PROVIDERS = ("software", "eip93")
# Commands that change nothing, that would rewrite the file, or that a lab refuses.
_NOT_SAVED = frozenset({"save", "help", *NOT_LAB_STEPS})


def _values(session: Session, node: str) -> dict[str, str]:
    s = session.lab.settings
    return {
        "tracing": "on" if s.tracing else "off",
        "journeys": str(session.lab.journeys.size),
        "captures": str(session.lab.captures.size),
        "policy-priority": session.lab.node(node).xfrm.settings.policy_priority_rule,
        "sub-policy": "on" if session.lab.node(node).xfrm.settings.sub_policy else "off",
        "crypto-provider": s.crypto_provider,
        "hmac-long-key": session.lab.eip93.settings.hmac_long_key,
        "output": session.output,
        "seed": f"{session.options.seed:#x}",
    }


def _show(session: Session, node: str, only: str | None = None) -> Result:
    values = _values(session, node)
    names = [only] if only else list(SETTINGS)
    rows = [
        (
            n,
            values[n] + (f" ({node})" if n in _NODE_SETTINGS else ""),
            SETTINGS[n][1],
            SETTINGS[n][0],
        )
        for n in names
    ]
    summary = "; ".join(f"{n} {values[n]}" for n in names)
    return TableResult(
        summary=summary,
        title="settings",
        columns=("setting", "value", "takes", "what"),
        rows=rows,
        data={n: values[n] for n in names} | {"node": node},
    )


def _on_off(text: str, name: str = "tracing") -> bool:
    lowered = text.lower()
    if lowered in ("on", "yes", "1", "true"):
        return True
    if lowered in ("off", "no", "0", "false"):
        return False
    raise BadArgument(f"{name} '{text}'", valid=["on", "off"], value=text)


def _set(session: Session, inv: Invocation) -> Result:
    name, value = inv.args.get("name"), inv.args.get("value")
    node = inv.node or session.lab.current
    if name is None:
        return _show(session, node)
    if value is None:
        return _show(session, node, name)
    if inv.node is not None and name not in _NODE_SETTINGS:
        raise BadArgument(
            f"{name} is a setting of the whole lab, not of {inv.node}",
            valid="a node prefix only with " + " or ".join(_NODE_SETTINGS),
            hint=f"set {name} {value}",
        )
    lab = session.lab
    if name == "tracing":
        lab.settings.tracing = _on_off(value)
    elif name == "journeys":
        lab.settings.journey_ring = ring_size("journey", value)
        lab.journeys.resize(lab.settings.journey_ring)
    elif name == "captures":
        lab.resize_captures(ring_size("capture", value))
    elif name == "policy-priority":
        rule = value.lower()
        if rule not in _RULES:
            raise BadArgument(f"policy priority rule '{value}'", valid=list(_RULES), value=value)
        lab.node(node).xfrm.settings.policy_priority_rule = rule
    elif name == "sub-policy":
        lab.node(node).xfrm.settings.sub_policy = _on_off(value, name)
    elif name == "crypto-provider":
        provider = value.lower()
        if provider not in _PROVIDERS:
            raise BadArgument(f"crypto provider '{value}'", valid=list(_PROVIDERS), value=value)
        lab.settings.crypto_provider = provider
    elif name == "hmac-long-key":
        rule = value.lower()
        if rule not in ("mainline", "fixed"):
            raise BadArgument(f"hmac-long-key '{value}'", valid=["mainline", "fixed"], value=value)
        lab.eip93.settings.hmac_long_key = rule
        lab.free_aead_tfms()  # keyed again on next use
    elif name == "output":
        output = value.lower()
        if output not in _OUTPUTS:
            raise BadArgument(f"output '{value}'", valid=list(_OUTPUTS), value=value)
        session.output = output
    else:  # seed: the parser admits only known names
        raise BadArgument(
            f"seed is read-only (it is {session.options.seed:#x})",
            hint="start esplab with --seed N, or give seed: in a lab file",
        )
    shown = _values(session, node)[name]
    where = f" on {node}" if name in _NODE_SETTINGS else ""
    return MessageResult(
        summary=f"{name} {shown}{where}", data={"setting": name, "value": shown, "node": node}
    )


def lab_text(line: str) -> str:
    """``line`` as a lab's ``run:`` text that means the same line: in a lab ``${...}`` is a
    saved-value reference and ``$${`` a literal ``${`` (esplab.lab.refs), while a REPL line
    has no references, so each ``${`` it holds is written ``$${``."""
    return line.replace("${", "$${")


def saved_steps(session: Session) -> list[dict[str, str]]:
    """``{name, run}`` for each command line of the history worth replaying; ``run`` is
    the line as lab text (:func:`lab_text`)."""
    steps: list[dict[str, str]] = []
    for line in session.history:
        try:
            command = session.parse(line).command.name
        except EsplabError:
            command = ""  # parsed when it ran; keep it whatever the registry says now
        if command in _NOT_SAVED:
            continue
        short = " ".join(line.split()[:4])
        short = short if len(short) <= 48 else short[:45] + "..."
        steps.append({"name": f"{len(steps) + 1}: {short}", "run": lab_text(line)})
    return steps


def lab_document(session: Session, name: str, description: str | None = None) -> dict[str, Any]:
    """The session as a lab file: name, description, seed, and its steps."""
    steps = saved_steps(session)
    return {
        "name": name,
        "description": description or f"{len(steps)} command(s) saved from an esplab session",
        "seed": session.options.seed,
        "steps": steps,
    }


def _save(session: Session, inv: Invocation) -> Result:
    import yaml

    path = session.files.target(inv.args["file"], "lab file", force=inv.args["force"])
    name = inv.args.get("name") or path.stem
    doc = lab_document(session, name, inv.args.get("description"))
    if not doc["steps"]:
        raise BadArgument(
            f"nothing to save to {path} yet: no command has run",
            hint="a lab needs at least one step; type some commands first",
        )
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=4096)
    try:
        path.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise BadArgument(
            f"cannot write lab file {path}: {getattr(exc, 'strerror', None) or exc}",
            hint="give a path in a directory that exists and that you may write to",
        ) from exc
    count = len(doc["steps"])
    return MessageResult(
        summary=f"{count} step(s) saved to {path} (run it with: esplab run {path})",
        data={"file": str(path), "steps": count, "name": name},
    )


def _set_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return list(SETTINGS)
    if len(words) == 1:
        return {
            "tracing": ["on", "off"],
            "policy-priority": list(_RULES),
            "sub-policy": ["on", "off"],
            "crypto-provider": list(_PROVIDERS),
            "hmac-long-key": ["mainline", "fixed"],
            "output": list(_OUTPUTS),
            "journeys": ["256"],
            "captures": ["1024"],
        }.get(words[0], [])
    return []


def _check_name(session: Session) -> list[str]:
    return list(SETTINGS)


COMMANDS = (
    Command(
        name="set",
        summary="show the settings, or change one: tracing, journeys, captures, "
        "policy-priority, crypto-provider (seed is shown only)",
        handler=_set,
        params=(
            Param("name", optional=True, choices=_check_name, metavar="SETTING"),
            Param("value", optional=True, metavar="VALUE"),
        ),
        usage_text="[NODE] set [tracing on|off | journeys N | captures N | "
        "policy-priority rfc|mainline | crypto-provider software|eip93 | seed]",
        example="set captures 4096",
        details="journeys and captures resize the rings (the newest entries stay); "
        "policy-priority applies to the current node, or to NODE when the line starts with "
        "one (host set policy-priority mainline).",
        complete=_set_complete,
    ),
    Command(
        name="save",
        summary="save the commands typed so far, with the seed, as a lab file (YAML)",
        handler=_save,
        params=(
            Param("file", metavar="FILE", help="the lab file to write"),
            Param("name", kind="option", metavar="NAME", help="the lab's name"),
            Param("description", kind="option", metavar="TEXT", help="what the lab shows"),
            Param("force", kind="flag", help="overwrite FILE if it exists"),
        ),
        example="save my-offload.yaml",
        details="Every successful command line becomes a step {name, run}; help, quit and "
        "save are left out. The file runs with esplab run FILE. An existing FILE is "
        "overwritten only with --force.",
    ),
)
