"""ip xfrm: run on a node's XFRM model (iproute2's grammar and printers, in
:mod:`esplab.model.tools.iproute2`), and its words completed from that grammar. The
``ip`` command (:mod:`esplab.commands.handlers.net`) hands its xfrm object here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from esplab.commands.base import Session
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.model.kernel.node import Node
from esplab.model.tools.iproute2.xfrm_words import ID_WORDS

__all__ = ["run_ip_xfrm", "xfrm_completions"]

_STATE_WORDS = ["add", "update", "delete", "get", "list", "flush", "count", "deleteall"]


def run_ip_xfrm(session: Session, node: Node, argv: list[str]) -> Result:
    """``[NODE] ip [OPTIONS] xfrm WORDS...`` on ``node``: ``argv`` is what follows ``ip``,
    options included (the grammar reads them: ``-s`` repeated, ``-4``/``-6``, ``-f``)."""
    from esplab.model.tools.iproute2.xfrm import run_ip_xfrm as model_run
    from esplab.model.tools.iproute2.xfrm_monitor import MONITOR_GROUPS

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
    if cmd.obj == "monitor":
        mon = node.xfrm.monitor
        groups = [g for g in MONITOR_GROUPS if mon is not None and g in mon.groups]
        data["monitor"] = groups
        summary = f"{node.name}: ip xfrm monitor " + (
            f"on ({', '.join(groups)}): each SAD/SPD event prints with the result of the "
            "command that caused it, until ip xfrm monitor off (esplab's word; a real "
            "monitor runs until Ctrl-C)"
            if groups
            else "off"
        )
        return MessageResult(summary=summary, data=data)
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
        "setdefault": "defaults set",
    }.get(cmd.verb, cmd.verb)
    offload = ""
    if cmd.obj == "state" and cmd.verb in ("add", "update") and out.states:
        x = out.states[0]
        if x.offload is not None:
            offload = f", {x.offload.type} offload on {x.offload.dev} dir {x.offload.dir}"
            port = session.lab.port(node.name, x.offload.dev)
            if port is not None and port.note:
                offload += f"; warning: {port.note}"
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


# --------------------------------------------------------------------------- completion
# What may follow each word of ``ip xfrm state|policy VERB ...``, built from the tables
# the parser (esplab.model.tools.iproute2.xfrm_grammar*) reads, so completion offers
# what it accepts.
# Algorithm names, devices, SPIs and reqids come from esplab.commands.complete, which
# offers them after enc/auth/aead/comp, dev, spi and reqid on any line.

_Choice = tuple[str, ...] | None  # the words a value may be; None: a value of the user's


@dataclass(frozen=True)
class _Opt:
    """Optional words here (``crypto|packet`` before ``dev``, ``mask M`` after ``mark N``);
    ``then``: the values that follow one; ``many``: any number of them (flag names)."""

    words: tuple[str, ...]
    then: tuple[_Choice, ...] = ()
    many: bool = False


_Slot = _Choice | _Opt


@dataclass(frozen=True)
class _Group:
    """Words given together, one after another: an ID, a selector, a template.
    ``opener`` starts it (None: any of its words does); ``again``: it may recur."""

    words: Mapping[str, tuple[_Slot, ...]]
    opener: str | None = None
    again: bool = False


@dataclass(frozen=True)
class _Grammar:
    """The words after a verb: groups first, then single words and their values."""

    words: Mapping[str, tuple[_Slot, ...]]
    groups: tuple[_Group, ...] = ()
    again: frozenset[str] = frozenset()
    clash: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _flags(names: Iterable[str]) -> tuple[_Slot, ...]:
    table = tuple(names)
    return (table, _Opt(table, many=True))


def _id_group(protos: tuple[str, ...]) -> _Group:
    return _Group({w: ((protos,) if w == "proto" else (None,)) for w in ID_WORDS})


def _words(names: Iterable[str], special: Mapping[str, tuple[_Slot, ...]]) -> dict[str, Any]:
    """``names`` (a parser's word table) with their values: ``special`` or one of the user's."""
    return {w: special.get(w, (None,)) for w in names}


@cache
def _grammars() -> dict[tuple[str, str], _Grammar]:
    from esplab.model.kernel.xfrm.objects import (
        ACTIONS,
        MODES,
        POLICY_FLAGS,
        STATE_EXTRA_FLAGS,
        STATE_FLAGS,
        XFRM_PROTOS,
    )
    from esplab.model.tools.iproute2.xfrm_policy import (
        DIRS,
        LEVELS,
        POLICY_FILTER_WORDS,
        POLICY_ID_WORDS,
        POLICY_WORDS,
        PTYPES,
        TMPL_WORDS,
    )
    from esplab.model.tools.iproute2.xfrm_state import (
        ALGO_CLASH,
        ALGO_TYPES,
        ENCAP_TYPES,
        OFFLOAD_KINDS,
        STATE_FILTER_WORDS,
        STATE_ID_WORDS,
        STATE_MODES,
        STATE_PROTOS,
        STATE_WORDS,
    )
    from esplab.model.tools.iproute2.xfrm_words import LIMIT_FIELDS, SELECTOR_WORDS, UPPER_PROTOS

    any_proto = (*XFRM_PROTOS, "ipsec-any")
    mark: tuple[_Slot, ...] = (None, _Opt(("mask",), (None,)))
    common: dict[str, tuple[_Slot, ...]] = {
        "mark": mark,
        "limit": (tuple(LIMIT_FIELDS), None),
        "nokeys": (),
        "nosock": (),
        "ptype": (PTYPES,),
        "action": (ACTIONS,),
        "level": (LEVELS,),
    }
    selector = _Group(_words(SELECTOR_WORDS, {"proto": (UPPER_PROTOS,)}))
    algos: dict[str, tuple[_Slot, ...]] = {
        w: (None,) * {"aead": 3, "auth-trunc": 3, "comp": 1}.get(w, 2) for w in ALGO_TYPES
    }
    state_add = {
        **common,
        **algos,
        "mode": (STATE_MODES,),
        "dir": (("in", "out"),),
        "flag": _flags(STATE_FLAGS),
        "extra-flag": _flags(STATE_EXTRA_FLAGS),
        "encap": (ENCAP_TYPES, None, None, None),
        "offload": (_Opt(OFFLOAD_KINDS), ("dev",), None, ("dir",), ("in", "out")),
    }
    policy = {
        **common,
        "dir": (DIRS,),
        "flag": _flags(POLICY_FLAGS),
        "offload": (("packet",), ("dev",), None),
    }
    template = _words(TMPL_WORDS, {**common, "mode": (MODES,), "proto": (STATE_PROTOS,)})
    grouped = {*ID_WORDS, *SELECTOR_WORDS, "sel", "tmpl"}
    clash = {
        w: tuple(x for x in ALGO_TYPES if ALGO_TYPES[x] in ALGO_CLASH[k])
        for w, k in ALGO_TYPES.items()
    }
    state_filter = _Grammar(
        _words(
            (w for w in STATE_FILTER_WORDS if w not in grouped),
            {**common, "mode": (MODES,), "flag": _flags(STATE_FLAGS)},
        ),
        (_id_group(any_proto),),
    )
    policy_filter = _Grammar(
        _words((w for w in POLICY_FILTER_WORDS if w not in grouped), policy),
        (_Group(selector.words, again=True),),
    )
    return {
        ("state", "add"): _Grammar(
            _words((w for w in STATE_WORDS if w not in grouped), state_add),
            (_id_group(STATE_PROTOS), _Group(selector.words, "sel")),
            frozenset({"limit"}),
            clash,
        ),
        ("state", "get"): _Grammar(
            _words((w for w in STATE_ID_WORDS if w not in grouped), common), (_id_group(any_proto),)
        ),
        ("state", "list"): state_filter,
        ("state", "flush"): _Grammar({"proto": (any_proto,)}),
        ("policy", "add"): _Grammar(
            _words((w for w in POLICY_WORDS if w not in grouped), policy),
            (selector, _Group(template, "tmpl", again=True)),
            frozenset({"limit"}),
        ),
        ("policy", "get"): _Grammar(
            _words((w for w in POLICY_ID_WORDS if w not in grouped), policy), (selector,)
        ),
        ("policy", "list"): policy_filter,
        ("policy", "flush"): _Grammar({"ptype": (PTYPES,)}),
    }


_SAME_AS = {"update": "add", "delete": "get", "deleteall": "list"}


def _take(pending: list[_Slot], word: str) -> bool:
    """Read ``word`` as the next value pending; False if none is."""
    while pending:
        slot = pending[0]
        if isinstance(slot, _Opt):
            if word not in slot.words:
                pending.pop(0)
                continue
            if not slot.many:
                pending.pop(0)
            pending[0:0] = slot.then
            return True
        pending.pop(0)
        return True
    return False


def _pending_words(pending: list[_Slot]) -> tuple[list[str], bool]:
    """The words the pending values may be, and whether a new word may come instead."""
    out: list[str] = []
    for slot in pending:
        if isinstance(slot, _Opt):
            out += slot.words
            continue
        return out + list(slot or ()), False
    return out, True


def _walk(grammar: _Grammar, words: list[str]) -> list[str]:
    """What may come after ``words`` (those after the verb)."""
    given: set[str] = set()
    pending: list[_Slot] = []
    group: _Group | None = None  # the group being given, and its words so far
    used: set[str] = set()
    done: set[int] = set()  # the groups given (by index)
    for word in words:
        if _take(pending, word):
            continue
        if group is not None and word in group.words:
            used.add(word)
            pending = list(group.words[word])
            continue
        group, used = None, set()
        for i, candidate in enumerate(grammar.groups):
            if i in done and not candidate.again:
                continue
            if candidate.opener == word or (candidate.opener is None and word in candidate.words):
                group = candidate
                done.add(i)
                break
        if group is not None and group.opener is None:
            used.add(word)
            pending = list(group.words[word])
        elif group is None:
            given.add(word)
            pending = list(grammar.words.get(word, ()))
    values, more = _pending_words(pending)
    if not more:
        return values
    if group is not None and group.opener is not None and not used:
        return list(group.words)  # sel and tmpl need at least one of their words
    own = [w for w in (group.words if group else ()) if w not in used]
    taken = set(group.words) if group else set()  # an open group reads its words itself
    out: list[str] = []
    for i, candidate in enumerate(grammar.groups):
        if candidate.opener and (i not in done or candidate.again):
            out.append(candidate.opener)
        elif candidate is not group and (i not in done or candidate.again):
            out += candidate.words
    out += [w for w in grammar.words if w not in given or w in grammar.again]
    ruled_out = taken | {x for w in given for x in grammar.clash.get(w, ())}
    return list(dict.fromkeys([*values, *own, *(w for w in out if w not in ruled_out)]))


def xfrm_completions(session: Session, words: list[str]) -> list[str]:
    """What may follow ``ip xfrm WORDS``: objects, verbs, then each verb's own words
    and their values (``proto esp``, ``flag esn``, ``tmpl ... level use``)."""
    from esplab.model.tools.iproute2.xfrm_grammar import POLICY_VERBS, STATE_VERBS
    from esplab.model.tools.iproute2.xfrm_words import matches

    if not words:
        return ["state", "policy", "monitor"]
    obj = words[0]
    if matches(obj, "monitor"):
        from esplab.model.tools.iproute2.xfrm_monitor import MONITOR_GROUPS

        return ["all", *MONITOR_GROUPS, "nokeys", "all-nsid", "off"]
    if matches(obj, "state") or matches(obj, "sa"):
        obj, verbs = "state", STATE_VERBS
    elif matches(obj, "policy"):
        obj, verbs = "policy", POLICY_VERBS
    else:
        return []
    if len(words) == 1:
        return _STATE_WORDS
    verb = next((v for name, v in verbs if matches(words[1], name)), None)
    if verb is None:
        return []
    grammar = _grammars().get((obj, _SAME_AS.get(verb, verb)))
    return _walk(grammar, words[2:]) if grammar is not None else []
