"""The words of ``ip xfrm policy ...`` (iproute2 ``ip/xfrm_policy.c``; reference 5.2)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from esplab.errors import ToolUsageError
from esplab.model.kernel.xfrm.objects import (
    POLICY_FLAGS,
    LifetimeCfg,
    PolicyId,
    Selector,
    XfrmMark,
    XfrmOffload,
    XfrmPolicy,
    XfrmTemplate,
)
from esplab.model.tools.iproute2.xfrm_filters import PolicyFilter
from esplab.model.tools.iproute2.xfrm_words import (
    ID_WORDS,
    INCOMPLETE,
    SELECTOR_WORDS,
    Cursor,
    XfrmId,
    bad,
    parse_choice,
    parse_flags,
    parse_id,
    parse_limit,
    parse_mark,
    parse_mode,
    parse_selector,
    parse_uint,
    required,
    unknown,
)

__all__ = [
    "DEFAULT_ACTIONS",
    "DIRS",
    "LEVELS",
    "POLICY_FILTER_WORDS",
    "POLICY_ID_WORDS",
    "POLICY_WORDS",
    "PTYPES",
    "TMPL_WORDS",
    "parse_defaults",
    "parse_flush_ptype",
    "parse_policy_add",
    "parse_policy_filter",
    "parse_policy_id",
]

DIRS = ("in", "out", "fwd")
POLICY_WORDS: tuple[str, ...] = ("dir", "mark", "index", "ptype", "action", "priority", "flag")
POLICY_WORDS += ("limit", "tmpl")
POLICY_WORDS += ("if_id", "offload", *SELECTOR_WORDS)

POLICY_ID_WORDS = ("dir", "mark", "index", "ptype", "if_id", *SELECTOR_WORDS)
PTYPES = ("main", "sub")
LEVELS = ("required", "use")
# xfrm_tmpl_parse: ID [mode MODE] [reqid REQID] [level LEVEL]
TMPL_WORDS = (*ID_WORDS, "mode", "reqid", "level")
POLICY_FILTER_WORDS = (
    "dir",
    "index",
    "ptype",
    "action",
    "priority",
    "flag",
    "nosock",
    *SELECTOR_WORDS,
)


def _pdir(word: str) -> Literal["in", "out", "fwd"]:
    d = parse_choice(word, DIRS, "DIR")
    return "in" if d == "in" else "out" if d == "out" else "fwd"


def _ptype(word: str) -> Literal["main", "sub"]:
    return "sub" if parse_choice(word, PTYPES, "PTYPE") == "sub" else "main"


@dataclass(frozen=True)
class _Tmpl:
    xid: XfrmId
    mode: str = "transport"
    reqid: int = 0
    level: Literal["required", "use"] = "required"

    def build(self, family: int) -> XfrmTemplate:
        """Unset addresses are zero of the policy's family (kernel ``validate_tmpl``)."""
        src, dst = self.xid.addresses(family)
        return XfrmTemplate(
            src, dst, self.xid.proto or 0, self.xid.spi or 0, self.reqid, self.mode, self.level
        )


def _tmpl(cur: Cursor) -> _Tmpl:
    """``xfrm_tmpl_parse``: ``ID [mode MODE] [reqid REQID] [level required|use]``."""
    xid: XfrmId | None = None
    mode, reqid = "transport", 0
    level: Literal["required", "use"] = "required"
    start = cur.i
    while (word := cur.peek()) is not None:
        if word == "mode":
            cur.take()
            mode = parse_mode(cur.value(word))
        elif word == "reqid":
            cur.take()
            reqid = parse_uint(cur.value(word), 32, "REQID value")
        elif word == "level":
            cur.take()
            use = parse_choice(cur.value(word), LEVELS, "LEVEL") == "use"
            level = "use" if use else "required"
        elif word in ID_WORDS and xid is None:
            xid = parse_id(cur, loose=False)
        else:
            break
    if cur.i == start:
        raise required("TMPL")
    if xid is None:
        raise required("XFRM-PROTO", hint="a template needs proto esp (or ah, comp)")
    return _Tmpl(xid, mode, reqid, level)


def parse_policy_add(cur: Cursor, family: int) -> tuple[XfrmPolicy, XfrmOffload | None]:
    """``xfrm_policy_modify``: the words of ``ip xfrm policy add|update``."""
    pdir: Literal["in", "out", "fwd"] | None = None
    sel: Selector | None = None
    mark: XfrmMark | None = None
    index = priority = if_id = 0
    ptype: Literal["main", "sub"] = "main"
    block = False
    flags: frozenset[str] = frozenset()
    lft = LifetimeCfg()
    tmpls: list[_Tmpl] = []
    offload_dev: str | None = None
    while cur.more():
        word = cur.take()
        if word == "dir":
            if pdir is not None:
                raise ToolUsageError(f'duplicate "dir": "{cur.peek()}" is the second value.')
            pdir = _pdir(cur.value(word))
        elif word == "mark":
            mark = parse_mark(cur)
        elif word == "index":
            index = parse_uint(cur.value(word), 32, "INDEX value")
        elif word == "priority":
            priority = parse_uint(cur.value(word), 32, "PRIORITY value")
        elif word == "if_id":
            if_id = parse_uint(cur.value(word), 32, "IF_ID value")
        elif word == "ptype":
            ptype = _ptype(cur.value(word))
        elif word == "action":
            block = parse_choice(cur.value(word), ("allow", "block"), "ACTION") == "block"
        elif word == "flag":
            flags = parse_flags(cur, POLICY_FLAGS, word)
        elif word == "limit":
            lft = parse_limit(cur, lft)
        elif word == "tmpl":
            tmpls.append(_tmpl(cur))
        elif word == "offload":
            mode = cur.value(word)
            if mode != "packet":
                raise bad(mode, "Invalid offload mode", valid=("packet",))
            keyword = cur.value(mode)
            if keyword != "dev":
                raise bad(keyword, "Missing dev keyword", valid="offload packet dev DEV")
            offload_dev = cur.value("dev")
        elif word in SELECTOR_WORDS and sel is None:
            cur.i -= 1
            sel = parse_selector(cur, family)
        else:
            raise unknown(word, POLICY_WORDS)
    if pdir is None:
        raise ToolUsageError("Not enough information: DIR is required.", hint="add dir in|out|fwd")
    # xfrm_policy_modify: no family anywhere means AF_INET.
    fam = (sel.family if sel else 0) or family or 4
    policy = XfrmPolicy(
        sel=(sel or Selector.zero()).with_family(fam),
        dir=pdir,
        priority=priority,
        action="block" if block else "allow",
        index=index,
        ptype=ptype,
        flags=flags,
        mark=mark if mark and mark.mask else None,
        if_id=if_id,
        lifetime=lft,
        templates=tuple(t.build(fam) for t in tmpls),
    )
    offload = XfrmOffload("packet", offload_dev, pdir) if offload_dev else None
    return policy, offload


def parse_policy_id(cur: Cursor, family: int) -> PolicyId:
    """``xfrm_policy_get_or_delete``: ``{SELECTOR | index INDEX} dir DIR ...``."""
    pdir: Literal["in", "out", "fwd"] | None = None
    sel: Selector | None = None
    index: int | None = None
    mark: XfrmMark | None = None
    if_id = 0
    ptype: Literal["main", "sub"] = "main"
    while cur.more():
        word = cur.take()
        if word == "dir":
            pdir = _pdir(cur.value(word))
        elif word == "mark":
            mark = parse_mark(cur)
        elif word == "index":
            index = parse_uint(cur.value(word), 32, "INDEX value")
        elif word == "ptype":
            ptype = _ptype(cur.value(word))
        elif word == "if_id":
            if_id = parse_uint(cur.value(word), 32, "IF_ID value")
        elif word in SELECTOR_WORDS and sel is None:
            cur.i -= 1
            sel = parse_selector(cur, family)
        else:
            raise unknown(word, POLICY_ID_WORDS)
    if pdir is None:
        raise ToolUsageError("Not enough information: DIR is required.")
    if sel is None and index is None:
        raise ToolUsageError("Not enough information: either SELECTOR or INDEX is required.")
    if sel is not None and index is not None:
        raise ToolUsageError('either "SELECTOR" or "INDEX" is duplicate.')
    fam = (sel.family if sel else 0) or family or 4
    return PolicyId(
        dir=pdir,
        sel=sel.with_family(fam) if sel else None,
        index=index or 0,
        # iproute2 sends XFRMA_MARK only when mark & mask is non-zero.
        mark=mark if mark and mark.value & mark.mask else None,
        if_id=if_id,
        ptype=ptype,
    )


def parse_policy_filter(cur: Cursor, family: int) -> PolicyFilter:
    """``xfrm_policy_list_or_deleteall``: only the words given are compared."""
    filt = PolicyFilter(family=family)
    while cur.more():
        word = cur.take()
        if word == "dir":
            filt = replace(filt, dir=_pdir(cur.value(word)))
        elif word == "index":
            filt = replace(filt, index=parse_uint(cur.value(word), 32, "INDEX value"))
        elif word == "priority":
            filt = replace(filt, priority=parse_uint(cur.value(word), 32, "PRIORITY value"))
        elif word == "ptype":
            filt = replace(filt, ptype=_ptype(cur.value(word)))
        elif word == "action":
            filt = replace(filt, action=parse_choice(cur.value(word), ("allow", "block"), "ACTION"))
        elif word == "flag":
            filt = replace(filt, flags=parse_flags(cur, POLICY_FLAGS, word))
        elif word == "nosock":
            filt = replace(filt, nosock=True)
        elif word in SELECTOR_WORDS:
            start = cur.i - 1
            cur.i = start
            sel = parse_selector(cur, family)
            said = set(cur.tokens[start : cur.i])
            filt = replace(
                filt,
                family=sel.family or family,
                src=sel.src if "src" in said else None,
                dst=sel.dst if "dst" in said else None,
                dev=sel.dev if "dev" in said else None,
                proto=sel.proto if "proto" in said else None,
                sport=sel.sport if "sport" in said else None,
                dport=sel.dport if "dport" in said else None,
            )
        else:
            raise unknown(word, POLICY_FILTER_WORDS)
    return filt


def parse_flush_ptype(cur: Cursor) -> Literal["main", "sub"]:
    """``ip xfrm policy flush [ptype PTYPE]``."""
    if not cur.more():
        return "main"
    word = cur.take()
    if word != "ptype":
        raise unknown(word, ("ptype",))
    ptype = _ptype(cur.value(word))
    if cur.more():
        raise unknown(cur.take(), ())
    return ptype


#: ip xfrm policy setdefault's actions (xfrm_str_to_policy: allow is accept).
DEFAULT_ACTIONS = {"accept": "accept", "allow": "accept", "block": "block"}


def parse_defaults(cur: Cursor) -> tuple[tuple[str, str], ...]:
    """``xfrm_spd_setdefault``: ``[in ACTION] [fwd ACTION] [out ACTION]``, any order;
    nothing given changes nothing (the kernel still answers, and tells a monitor)
    [C: iproute2 6.15 on Linux 6.12]."""
    given: dict[str, str] = {}
    while cur.more():
        word = cur.take()
        if word not in DIRS:
            raise bad(word, "unknown direction", valid=DIRS)
        if word in given:
            raise ToolUsageError(f'duplicate "{word}": "{word}" is the second value.')
        if not cur.more():
            raise ToolUsageError(INCOMPLETE, hint=f'"{word}" needs accept or block')
        action = cur.take()
        if action not in DEFAULT_ACTIONS:
            raise bad(action, f"{word} policy value is invalid", valid=("accept", "block"))
        given[word] = DEFAULT_ACTIONS[action]
    return tuple(given.items())
