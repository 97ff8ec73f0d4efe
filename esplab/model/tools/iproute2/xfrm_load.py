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

import calendar
import re
import shlex
import time
from dataclasses import dataclass, field, replace
from ipaddress import ip_address
from typing import Literal

from esplab.errors import EsplabError, LabFileError, shorten
from esplab.model.kernel.esp.replay import shifted_bitmap
from esplab.model.kernel.xfrm.algos import AlgoKind, XfrmAlgo, lookup_algo
from esplab.model.kernel.xfrm.objects import (
    POLICY_FLAGS,
    STATE_EXTRA_FLAGS,
    STATE_FLAGS,
    XFRM_INF,
    XFRM_PROTOS,
    LifetimeCfg,
    LifetimeCur,
    ReplayState,
    Selector,
    StateStats,
    XfrmEncap,
    XfrmMark,
    XfrmOffload,
    XfrmPolicy,
    XfrmState,
    XfrmTemplate,
)
from esplab.model.kernel.xfrm.offload import DeviceResolver
from esplab.model.kernel.xfrm.tables import XfrmNode
from esplab.model.tools.iproute2.xfrm import run_ip_xfrm
from esplab.model.tools.iproute2.xfrm_words import Cursor, parse_selector

__all__ = ["LoadReport", "load_xfrm"]

Line = tuple[int, str]


@dataclass
class LoadReport:
    """What a load did: commands run, and the states/policies it created."""

    commands: int = 0
    states: list[XfrmState] = field(default_factory=list)
    policies: list[XfrmPolicy] = field(default_factory=list)


class _LineError(Exception):
    def __init__(self, line: int, what: str, col: int = 1) -> None:
        super().__init__(what)
        self.line = line
        self.what = what
        self.col = col


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


def _time(text: str) -> int:
    """``strxf_time`` back to seconds (UTC, as the lab prints)."""
    if text == "-":
        return 0
    return calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S"))


def _num(text: str) -> int:
    return XFRM_INF if text == "(INF)" else int(text)


_ID = re.compile(
    r"proto (\S+) (?:spi 0x([0-9a-f]+)(?:\(\d+\))? )?reqid (\d+)(?:\(0x[0-9a-f]+\))? mode (\S+)"
)
_LIMIT = re.compile(r"limit: soft (\S+)\((bytes|packets)\), hard (\S+)\((?:bytes|packets)\)")
_EXPIRE = re.compile(r"expire (add|use): soft (\d+)\(sec\), hard (\d+)\(sec\)")
_CURRENT = re.compile(r"(\d+)\(bytes\), (\d+)\(packets\)")
_USED = re.compile(r"add (-|\S+ \S+) use (-|\S+ \S+)")
_STATS = re.compile(r"replay-window (\d+) replay (\d+) failed (\d+)")
# iproute2 before 6.2 printed no mode (XFRM_OFFLOAD_PACKET came with 6.2): such a
# line is crypto offload ("crypto offload parameters: dev wan dir out").
_OFFLOAD = re.compile(
    r"crypto offload parameters: dev (\S+)(?: dir (in|out))?(?: mode (crypto|packet))?"
)
# Printed attributes the lab does not model (xfrm_xfrma_print, xfrm_*_info_print).
_NOT_MODELLED = {
    "security": "security contexts (ctx) are not modelled by esplab",
    "coa": "care-of addresses (coa) are not modelled by esplab",
}


def _proto(word: str) -> int:
    return XFRM_PROTOS[word] if word in XFRM_PROTOS else int(word)


def _col(raw: str, word: str) -> int:
    """The 1-based column of ``word`` in ``raw`` (1 if absent)."""
    return raw.find(word) + 1 if word in raw else 1


def _unreadable(line: int, raw: str, what: str) -> None:
    """A printed line the loader cannot turn back into a request: say why."""
    text = raw.strip()
    word = text.split()[0] if text else ""
    why = _NOT_MODELLED.get(word, "")
    raise _LineError(
        line,
        f"cannot read this line of {what}: {text!r}" + (f"; {why}" if why else ""),
        _col(raw, word),
    )


# The form of each printed line whose words are read by position (xfrm_state_print).
_FORMS = {
    "replay-window": "replay-window N replay N failed N, or replay-window N flag ...",
    "anti-replay": "anti-replay context: seq 0xN, oseq 0xN, bitmap 0xN",
    "seq-hi": "seq-hi 0xN, seq 0xN, oseq-hi 0xN, oseq 0xN",
    "replay_window": "replay_window N, bitmap-length N",
    "encap": "encap type espinudp sport PORT dport PORT addr ADDR",
    "if_id": "if_id N",
    "tfcpad": "tfcpad N",
    "tmpl": "tmpl src ADDR dst ADDR",
    "level": "level required|use",
    "sel": "sel src PREFIX dst PREFIX ...",
    "enc": "enc NAME 0xKEY",
    "auth": "auth NAME 0xKEY",
    "auth-trunc": "auth-trunc NAME 0xKEY BITS",
    "aead": "aead NAME 0xKEY BITS",
    "comp": "comp NAME",
}


def _damaged(line: int, raw: str, what: str) -> _LineError:
    """A line of a known kind whose words are missing or not numbers where they must be."""
    text = raw.strip()
    word = text.split()[0] if text else ""
    form = _FORMS.get(word)
    shown = shorten(text, 80)
    return _LineError(
        line,
        f"cannot read this line of {what}: {shown!r} is cut short or damaged"
        + (f"; expected '{form}'" if form else ""),
        _col(raw, word),
    )


def _mark(words: list[str], line: int, raw: str) -> tuple[XfrmMark | None, XfrmMark | None]:
    """``mark V/M`` and ``output-mark V/M`` (xfrm_xfrma_print, XFRMA_SET_MARK): iproute2
    puts the output mark after the mark on the same line, or on a line of its own
    without a mark [K]. Returns (mark, output mark)."""
    found: dict[str, XfrmMark] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if (
            word not in ("mark", "output-mark")
            or i + 1 >= len(words)
            or words[i + 1].count("/") != 1
        ):
            raise _LineError(
                line,
                f"expected 'mark VALUE/MASK [output-mark VALUE/MASK]', not {raw.strip()!r}",
                _col(raw, word),
            )
        value, mask = words[i + 1].split("/")
        found[word] = XfrmMark(int(value, 0), int(mask, 0))
        i += 2
    return found.get("mark"), found.get("output-mark")


def _selector(words: list[str]) -> Selector:
    """A printed selector, read with the grammar's selector parser."""
    if "uid" in words:
        words = words[: words.index("uid")]
    return parse_selector(Cursor(words))


def _flags(words: list[str], table: dict[str, int], line: int) -> frozenset[str]:
    for word in words:
        if word not in table:
            raise _LineError(line, f"unknown flag '{word}'")
    return frozenset(words)


@dataclass
class _Life:
    """The ``-s`` lifetime blocks, shared by states and policies."""

    cfg: LifetimeCfg = field(default_factory=LifetimeCfg)
    cur: LifetimeCur | None = None

    def feed(self, text: str) -> bool:
        if m := _LIMIT.fullmatch(text):
            soft, hard = _num(m.group(1)), _num(m.group(3))
            if m.group(2) == "bytes":
                self.cfg = replace(self.cfg, soft_byte_limit=soft, hard_byte_limit=hard)
            else:
                self.cfg = replace(self.cfg, soft_packet_limit=soft, hard_packet_limit=hard)
        elif m := _EXPIRE.fullmatch(text):
            kind, soft, hard = m.group(1), int(m.group(2)), int(m.group(3))
            self.cfg = replace(
                self.cfg,
                **{f"soft_{kind}_expires_seconds": soft, f"hard_{kind}_expires_seconds": hard},
            )
        elif m := _CURRENT.fullmatch(text):
            self.cur = self.cur or LifetimeCur()
            self.cur.bytes, self.cur.packets = int(m.group(1)), int(m.group(2))
        elif m := _USED.fullmatch(text):
            self.cur = self.cur or LifetimeCur()
            self.cur.add_time, self.cur.use_time = _time(m.group(1)), _time(m.group(2))
        else:
            return text in ("lifetime config:", "lifetime current:")
        return True


def _state_block(block: list[Line]) -> tuple[XfrmState, XfrmOffload | None, _Life, StateStats]:
    """A printed SA back to a request, its offload, and its runtime values."""
    first = block[0][1].split()
    if len(first) != 4 or first[0] != "src" or first[2] != "dst":
        raise _LineError(block[0][0], "expected 'src ADDR dst ADDR'")
    req = XfrmState(src=ip_address(first[1]), dst=ip_address(first[3]))
    algos: dict[str, XfrmAlgo] = {}
    life, stats = _Life(), StateStats()
    offload: XfrmOffload | None = None
    legacy_window, esn_window = 0, -1
    replay = ReplayState()
    bitmap_words = 0  # ESN bitmap words still to read, most significant first
    line, raw = block[0]
    try:
        for line, raw in block[1:]:
            text = raw.strip()
            words = text.split()
            if bitmap_words > 0:
                replay.bitmap = (replay.bitmap << (32 * len(words))) | int("".join(words), 16)
                bitmap_words -= len(words)
            elif m := _ID.fullmatch(text):
                req.proto, req.spi = _proto(m.group(1)), int(m.group(2) or "0", 16)
                req.reqid, req.mode = int(m.group(3)), m.group(4)
            elif m := _STATS.fullmatch(text):
                stats = StateStats(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            elif words[0] == "replay-window":
                legacy_window = int(words[1])
                rest = " ".join(words[2:]).replace("extra_flag", " extra_flag ")
                if m := re.search(r"seq 0x(\d+)", rest):
                    # The byte-swapped decimal iproute2 prints (printer._seq_as_printed).
                    word = int(m.group(1)) & 0xFFFFFFFF
                    req.seq = int.from_bytes(word.to_bytes(4, "little"), "big")
                rest = re.sub(r"seq 0x\d+|\(0x[01]+\)", "", rest)
                flag_part, _, extra_part = rest.partition("extra_flag")
                names = flag_part.split()[1:] if flag_part.split()[:1] == ["flag"] else []
                req.flags = _flags(names, dict(STATE_FLAGS), line)
                req.extra_flags = _flags(extra_part.split(), dict(STATE_EXTRA_FLAGS), line)
            elif words[0] in ("mark", "output-mark"):
                req.mark, req.output_mark = _mark(words, line, raw)
            elif words[0] in ("auth", "auth-trunc", "aead", "enc", "comp"):
                algos[_KINDS[words[0]]] = _algo(words, line)
            elif words[0] == "encap":
                req.encap = _encap(words)
            elif words[0] == "lastused":
                req.lastused = _time(" ".join(words[1:]))
            elif text.startswith("anti-replay context:"):
                seq, oseq, bitmap = re.findall(r"0x([0-9a-f]+)", text)
                replay = ReplayState(seq=int(seq, 16), oseq=int(oseq, 16), bitmap=int(bitmap, 16))
            elif text == "anti-replay esn context:":
                continue
            elif words[0] == "seq-hi":
                hi, seq, ohi, oseq = (int(v, 16) for v in re.findall(r"0x([0-9a-f]+)", text))
                replay = ReplayState(seq=seq, oseq=oseq, seq_hi=hi, oseq_hi=ohi)
            elif words[0] == "replay_window":
                esn_window, bitmap_words = int(words[1].rstrip(",")), int(words[3])
            elif m := _OFFLOAD.fullmatch(text):
                kind: Literal["crypto", "packet"] = "packet" if m.group(3) == "packet" else "crypto"
                offload = XfrmOffload(kind, m.group(1), "in" if m.group(2) == "in" else "out")
            elif words[0] == "if_id":
                req.if_id = int(words[1], 0)
            elif words[0] == "tfcpad":
                req.tfcpad = int(words[1])
            elif words[0] == "dir" and len(words) == 2 and words[1] in ("in", "out"):
                req.sa_dir = "in" if words[1] == "in" else "out"
            elif words[0] == "sel":
                req.sel = _selector(words[1:])
            elif not (life.feed(text) or text == "stats:"):
                _unreadable(line, raw, "an SA")
    except (ValueError, IndexError) as exc:
        raise _damaged(line, raw, "an SA") from exc
    req.replay_window = esn_window if esn_window >= 0 else legacy_window
    if esn_window >= 0:  # listed circular, as Linux keeps it; the model keeps it shifted
        replay.bitmap = shifted_bitmap(replay.bitmap, replay.seq, esn_window)
    req.replay = replay
    req.lifetime = life.cfg
    req.auth, req.enc = algos.get("auth"), algos.get("enc")
    req.aead, req.comp = algos.get("aead"), algos.get("comp")
    return req, offload, life, stats


_KINDS: dict[str, AlgoKind] = {
    "auth": "auth",
    "auth-trunc": "auth",
    "aead": "aead",
    "enc": "enc",
    "comp": "comp",
}


def _encap(words: list[str]) -> XfrmEncap:
    """``encap type T sport P dport P addr A``."""
    sport, dport, oaddr = int(words[4]), int(words[6]), ip_address(words[8])
    if words[2] == "espinudp":
        return XfrmEncap("espinudp", sport, dport, oaddr)
    if words[2] == "espinudp-nonike":
        return XfrmEncap("espinudp-nonike", sport, dport, oaddr)
    if words[2] == "espintcp":
        return XfrmEncap("espintcp", sport, dport, oaddr)
    raise ValueError(f"unknown encap type {words[2]}")


def _algo(words: list[str], line: int) -> XfrmAlgo:
    """``auth-trunc NAME 0xKEY [(N bits)] TRUNC`` and its siblings."""
    rest = [w for w in words[2:] if not re.fullmatch(r"\(\d+|bits\)", w)]
    if rest[:1] == ["<<Keys"]:
        raise _LineError(line, "keys are hidden (nokeys output); they cannot be loaded")
    key = b""
    if rest and rest[0].startswith("0x"):
        key = bytes.fromhex(rest.pop(0)[2:])
    icv = int(rest[0]) if rest else 0
    return XfrmAlgo(lookup_algo(_KINDS[words[0]], words[1]).name, key, icv)


def _policy_block(block: list[Line]) -> tuple[XfrmPolicy, XfrmOffload | None, _Life]:
    """A printed policy back to a request, its offload, and its lifetime values."""
    sel = _selector(block[0][1].split())
    head = block[1][1].split()
    if len(head) < 2 or head[0] not in ("dir", "socket"):
        if head and head[0] in _NOT_MODELLED:
            _unreadable(*block[1], "a policy")
        raise _LineError(
            block[1][0], f"expected 'dir DIR ...' or 'socket DIR ...', not {block[1][1].strip()!r}"
        )
    pdir: Literal["in", "out", "fwd"] = "in" if head[1] == "in" else "out"
    if head[1] == "fwd":
        pdir = "fwd"
    req = XfrmPolicy(sel=sel.with_family(sel.family or 4), dir=pdir, socket=head[0] == "socket")
    words = [w for w in head[2:] if not re.fullmatch(r"\(0x[01]+\)", w)]
    if "flag" in words:
        req.flags = _flags(words[words.index("flag") + 1 :], dict(POLICY_FLAGS), block[1][0])
        words = words[: words.index("flag")]
    pairs = dict(zip(words[::2], words[1::2], strict=False))
    req.priority = int(pairs.get("priority", "0"))
    req.index = int(pairs.get("index", "0"))
    req.action = "block" if pairs.get("action") == "block" else "allow"
    req.ptype = "sub" if pairs.get("ptype") == "sub" else "main"
    life = _Life()
    offload: XfrmOffload | None = None
    tmpls: list[XfrmTemplate] = []
    line, raw = block[0]
    try:
        for line, raw in block[2:]:
            text = raw.strip()
            words = text.split()
            if words[0] == "tmpl":
                tmpls.append(XfrmTemplate(ip_address(words[2]), ip_address(words[4])))
            elif (m := _ID.fullmatch(text)) and tmpls:
                spi = int(m.group(2) or "0", 16)
                tmpls[-1] = replace(
                    tmpls[-1],
                    proto=_proto(m.group(1)),
                    spi=spi,
                    reqid=int(m.group(3)),
                    mode=m.group(4),
                )
            elif words[0] == "level" and tmpls:
                tmpls[-1] = replace(tmpls[-1], level="use" if words[1] == "use" else "required")
            elif words[0] == "enc-mask":
                continue
            elif words[0] == "mark":
                req.mark = _mark(words, line, raw)[0]
            elif m := _OFFLOAD.fullmatch(text):
                offload = XfrmOffload("packet", m.group(1), req.dir)
            elif words[0] == "if_id":
                req.if_id = int(words[1], 0)
            elif not life.feed(text):
                _unreadable(line, raw, "a policy")
    except (ValueError, IndexError) as exc:
        raise _damaged(line, raw, "a policy") from exc
    req.templates = tuple(tmpls)
    req.lifetime = life.cfg
    return req, offload, life


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
                raise _LineError(n, "an indented line outside a printed state or policy")
            block.append((n, raw))
        elif text.split()[0] in ("ip", "sudo"):
            close()
            items.append(("cmd", [(n, text)]))
        elif text.startswith("src "):
            close()
            block.append((n, raw))
        else:
            raise _LineError(n, "expected an 'ip xfrm' command or 'ip xfrm state|policy' output")
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
    except _LineError as exc:
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
            req, offload, life, stats = _state_block(lines)
            _check_dev(offload, resolve, line)
            x = node.add_state(req, offload, resolve=resolve)
            if life.cur is not None:
                x.curlft = life.cur
            x.stats = stats
            report.states.append(x)
        else:
            preq, offload, life = _policy_block(lines)
            _check_dev(offload, resolve, line)
            p = node.add_policy(preq, offload, resolve=resolve)
            if life.cur is not None:
                p.curlft = life.cur
            report.policies.append(p)
    except _LineError as exc:
        raise LabFileError(source, exc.line, exc.col, exc.what) from exc
    except (EsplabError, ValueError, IndexError) as exc:
        what = f"this {kind} cannot be recreated: {exc}"
        raise LabFileError(source, line, 1, what) from exc


def _check_dev(offload: XfrmOffload | None, resolve: DeviceResolver, line: int) -> None:
    if offload is not None and resolve(offload.dev) is None:
        raise _LineError(line, f"no netdev {offload.dev} on this node (Invalid device name)")
