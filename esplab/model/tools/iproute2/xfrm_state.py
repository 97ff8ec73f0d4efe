"""The words of ``ip xfrm state ...`` (iproute2 ``ip/xfrm_state.c``; reference 5.1)."""

from __future__ import annotations

from ipaddress import ip_interface
from typing import Literal

from esplab.errors import ToolUsageError
from esplab.model.kernel.xfrm.algos import AlgoKind, XfrmAlgo, lookup_algo, parse_key
from esplab.model.kernel.xfrm.objects import (
    IPPROTO_AH,
    IPPROTO_COMP,
    IPPROTO_ESP,
    STATE_EXTRA_FLAGS,
    STATE_FLAGS,
    XFRM_PROTOS,
    LifetimeCfg,
    ReplayState,
    Selector,
    StateId,
    XfrmEncap,
    XfrmMark,
    XfrmOffload,
    XfrmState,
)
from esplab.model.kernel.xfrm.validate import XFRM_REPLAY_ESN_MAX
from esplab.model.tools.iproute2.xfrm_filters import StateFilter
from esplab.model.tools.iproute2.xfrm_words import (
    ID_WORDS,
    INCOMPLETE,
    Cursor,
    XfrmId,
    bad,
    parse_address,
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
    "ALGO_CLASH",
    "ALGO_TYPES",
    "ALLOCSPI_WORDS",
    "ENCAP_TYPES",
    "OFFLOAD_KINDS",
    "STATE_FILTER_WORDS",
    "STATE_ID_WORDS",
    "STATE_MODES",
    "STATE_PROTOS",
    "STATE_WORDS",
    "SpiRange",
    "parse_flush_proto",
    "parse_state_add",
    "parse_state_allocspi",
    "parse_state_filter",
    "parse_state_id",
]

ALGO_TYPES: dict[str, AlgoKind] = {
    "enc": "enc",
    "auth": "auth",
    "auth-trunc": "auth",
    "aead": "aead",
    "comp": "comp",
}
# xfrm_state_modify: an AEAD excludes enc and auth; each type appears once.
ALGO_CLASH: dict[str, tuple[str, ...]] = {
    "aead": ("enc", "auth", "aead"),
    "enc": ("enc", "aead"),
    "auth": ("auth", "aead"),
    "comp": ("comp",),
}
_U32_WORDS = ("reqid", "seq", "replay-window", "if_id", "tfcpad")
_REPLAY_WORDS = ("replay-seq", "replay-oseq", "replay-seq-hi", "replay-oseq-hi")
STATE_WORDS: tuple[str, ...] = (
    "mode",
    "mark",
    "output-mark",
    *_U32_WORDS,
    *_REPLAY_WORDS,
    "flag",
    "extra-flag",
)
STATE_WORDS += ("sel", "limit", "encap", "offload", "dir", *ALGO_TYPES, *ID_WORDS)
_OFFLOAD_FORM = "offload [crypto|packet] dev DEV dir in|out"
OFFLOAD_KINDS = ("crypto", "packet")
ENCAP_TYPES = ("espinudp", "espinudp-nonike", "espintcp")
# The protocols and modes an SA may have here (xfrm_state_modify's checks, _check).
STATE_PROTOS = ("esp", "ah", "comp")
STATE_MODES = ("transport", "tunnel", "beet")
STATE_ID_WORDS = ("mark", *ID_WORDS)
STATE_FILTER_WORDS = ("nokeys", "mode", "reqid", "flag", *ID_WORDS)


def _algo(word: str, cur: Cursor, have: dict[str, XfrmAlgo]) -> None:
    """One ALGO: type, name, keymat, and the ICV/truncation length where it has one."""
    kind = ALGO_TYPES[word]
    if any(k in have for k in ALGO_CLASH[kind]):
        raise ToolUsageError(f'duplicate "ALGO-TYPE": "{word}" is the second value.')
    if not cur.more():
        raise required("ALGO-NAME")
    info = lookup_algo(kind, cur.take(), word)
    key = b""
    if kind != "comp":
        if not cur.more():
            raise required("ALGO-KEYMAT")
        key = parse_key(cur.take())
    icv = 0
    if word in ("aead", "auth-trunc"):
        what = "ALGO-ICV-LEN" if word == "aead" else "ALGO-TRUNC-LEN"
        if not cur.more():
            raise required(what)
        icv = parse_uint(cur.take(), 32, f"{what} value")
    have[kind] = XfrmAlgo(info.name, key, icv)


def _offload(cur: Cursor) -> XfrmOffload:
    """``offload [crypto|packet] dev DEV dir in|out``; the mode defaults to crypto."""
    word = cur.value("offload")
    kind: Literal["crypto", "packet"] = "crypto"
    if word in OFFLOAD_KINDS:
        kind = "packet" if word == "packet" else "crypto"
        word = cur.value(word)
    if word != "dev":
        hint = 'the RFC called it "full"; iproute2 says "packet"' if word == "full" else None
        raise bad(word, "Missing dev keyword", valid=_OFFLOAD_FORM, hint=hint)
    dev = cur.value("dev")
    if not cur.more():  # iproute2's NEXT_ARG: "not complete"; say what is missing
        raise ToolUsageError(INCOMPLETE, hint=f'"dev {dev}" must be followed by "dir in|out"')
    word = cur.take()
    if word != "dir":
        raise bad(word, "Missing DIR keyword", valid=_OFFLOAD_FORM)
    d = parse_choice(cur.value("dir"), ("in", "out"), "DIR")
    return XfrmOffload(kind, dev, "in" if d == "in" else "out")


def _encap(cur: Cursor) -> XfrmEncap:
    """``encap {espinudp | espinudp-nonike | espintcp} SPORT DPORT OADDR``."""
    kind = parse_choice(cur.value("encap"), ENCAP_TYPES, "ENCAP-TYPE")
    sport = parse_uint(cur.value(kind), 16, 'SPORT value after "encap"')
    dport = parse_uint(cur.value("SPORT"), 16, 'DPORT value after "encap"')
    oaddr = parse_address(cur.value("DPORT"), "encap")
    if kind == "espinudp":
        return XfrmEncap("espinudp", sport, dport, oaddr)
    if kind == "espintcp":
        return XfrmEncap("espintcp", sport, dport, oaddr)
    return XfrmEncap("espinudp-nonike", sport, dport, oaddr)


def parse_state_add(cur: Cursor, family: int) -> tuple[XfrmState, XfrmOffload | None]:
    """``xfrm_state_modify``: the words of ``ip xfrm state add|update``."""
    xid: XfrmId | None = None
    mode = "transport"
    nums = dict.fromkeys(_U32_WORDS, 0)
    replay = dict.fromkeys(_REPLAY_WORDS, 0)
    flags: frozenset[str] = frozenset()
    xflags: frozenset[str] = frozenset()
    sel: Selector | None = None
    lft = LifetimeCfg()
    encap: XfrmEncap | None = None
    mark: XfrmMark | None = None
    output_mark: XfrmMark | None = None
    offload: XfrmOffload | None = None
    sa_dir: Literal["in", "out"] | None = None
    algos: dict[str, XfrmAlgo] = {}
    while cur.more():
        word = cur.take()
        if word == "mode":
            mode = parse_mode(cur.value(word))
        elif word == "mark":
            mark = parse_mark(cur)
        elif word == "output-mark":
            output_mark = parse_mark(cur, word)
        elif word in nums:
            nums[word] = parse_uint(cur.value(word), 32, f'value after "{word}"')
        elif word in replay:
            replay[word] = parse_uint(cur.value(word), 32, f'value after "{word}"')
        elif word == "flag":
            flags |= parse_flags(cur, STATE_FLAGS, word)
        elif word == "extra-flag":
            xflags |= parse_flags(cur, STATE_EXTRA_FLAGS, word)
        elif word == "sel":
            sel = parse_selector(cur)
        elif word == "limit":
            lft = parse_limit(cur, lft)
        elif word == "encap":
            encap = _encap(cur)
        elif word == "offload":
            offload = _offload(cur)
        elif word == "dir":
            sa_dir = "in" if parse_choice(cur.value(word), ("in", "out"), "DIR") == "in" else "out"
        elif word in ALGO_TYPES:
            _algo(word, cur, algos)
        elif word in ID_WORDS and xid is None:
            cur.i -= 1
            xid = parse_id(cur, loose=False, family=family)
        else:
            hint = None
            if word in ID_WORDS:
                hint = "src, dst, proto and spi form one group (the ID)"
            elif word.split("-")[0] in ("time", "byte", "packet"):
                hint = 'each LIMIT needs its own "limit": limit time-soft 10 limit byte-hard 100'
            raise unknown(word, STATE_WORDS, hint)
    if xid is None:
        raise ToolUsageError("Not enough information: ID is required", hint="add src/dst/proto/spi")
    window = nums["replay-window"]
    _check(xid, mode, algos, flags, window, sa_dir)
    src, dst = xid.addresses(family)
    # iproute2 sends seq-hi/oseq-hi only in the ESN form of the replay state.
    esn_form = "esn" in flags or window > 32
    state = XfrmState(
        src=src,
        dst=dst,
        proto=xid.proto or 0,
        spi=xid.spi or 0,
        reqid=nums["reqid"],
        mode=mode,
        replay_window=window,
        flags=flags,
        extra_flags=xflags,
        sel=sel or Selector.zero(),
        sa_dir=sa_dir,
        encap=encap,
        lifetime=lft,
        auth=algos.get("auth"),
        enc=algos.get("enc"),
        aead=algos.get("aead"),
        comp=algos.get("comp"),
        if_id=nums["if_id"],
        tfcpad=nums["tfcpad"],
        mark=mark if mark and mark.mask else None,
        output_mark=output_mark,
        seq=nums["seq"],
        replay=ReplayState(
            seq=replay["replay-seq"],
            oseq=replay["replay-oseq"],
            seq_hi=replay["replay-seq-hi"] if esn_form else 0,
            oseq_hi=replay["replay-oseq-hi"] if esn_form else 0,
        ),
    )
    return state, offload


def _check(
    xid: XfrmId,
    mode: str,
    algos: dict[str, XfrmAlgo],
    flags: frozenset[str],
    window: int,
    sa_dir: str | None,
) -> None:
    """The checks ``xfrm_state_modify`` makes before talking to the kernel."""
    if "esn" in flags and window == 0 and sa_dir != "out":
        raise ToolUsageError("esn flag set without replay-window", hint="add replay-window N")
    if window > XFRM_REPLAY_ESN_MAX:
        raise ToolUsageError(
            f"replay-window ({window}) > XFRMA_REPLAY_ESN_MAX ({XFRM_REPLAY_ESN_MAX})"
        )
    proto = xid.proto or 0
    name = next((n for n, v in XFRM_PROTOS.items() if v == proto), str(proto))
    if proto not in (IPPROTO_ESP, IPPROTO_AH, IPPROTO_COMP):
        raise bad(name, "XFRM-PROTO value is not modelled by esplab", valid=STATE_PROTOS)
    if mode not in ("transport", "tunnel") and not (mode == "beet" and proto == IPPROTO_ESP):
        raise ToolUsageError(f'MODE value is invalid with XFRM-PROTO value "{name}"')
    need = {IPPROTO_ESP: ("enc", "aead"), IPPROTO_AH: ("auth",), IPPROTO_COMP: ("comp",)}[proto]
    allowed = {IPPROTO_ESP: ("enc", "aead", "auth"), IPPROTO_AH: ("auth",)}.get(proto, ("comp",))
    extra = [k for k in algos if k not in allowed]
    if extra:
        raise ToolUsageError(
            f'ALGO-TYPE value "{extra[0]}" is invalid with XFRM-PROTO value "{name}"'
        )
    if not any(k in algos for k in need):
        words = " or ".join(f'"{k}"' for k in need)
        raise ToolUsageError(f'ALGO-TYPE value {words} is required with XFRM-PROTO value "{name}"')
    # iproute2 (xfrm_state_modify) refuses an IPComp SPI over 16 bits itself, before
    # the kernel sees it [K]. SPI 0 passes both, as on a board [K], although RFC 4303
    # 2.1 reserves it and no inbound packet can select such an SA.
    if proto == IPPROTO_COMP and (xid.spi or 0) >= 0x10000:
        said = f'SPI value is too large with XFRM-PROTO value "{name}"'
        error = ToolUsageError(said, hint="an IPComp CPI is 16 bits: spi 0..0xffff")
        error.board_text = said
        raise error


#: The words of ip xfrm state allocspi (xfrm_state_allocspi), ID words aside.
ALLOCSPI_WORDS = ("mode", "mark", "reqid", "seq", "min", "max", "dir", *ID_WORDS)

#: allocspi's range when no min/max is given: PF_KEY's (iproute2's defaults; 0xffff
#: for IPComp, whose CPI is 16 bits) [C: ip/xfrm_state.c].
SpiRange = tuple[int, int]


def parse_state_allocspi(cur: Cursor, family: int) -> tuple[XfrmState, SpiRange]:
    """``xfrm_state_allocspi``: ``ID [mode MODE] [mark MARK [mask MASK]] [reqid REQID]
    [dir DIR] [seq SEQ] [min SPI max SPI]``; the ID may not name an SPI. Returns the
    larval state asked for (its SPI 0) and the range. iproute2's own refusals, in its
    words [C: iproute2 6.15]."""
    xid: XfrmId | None = None
    mode = "transport"
    mark: XfrmMark | None = None
    reqid = seq = 0
    sa_dir: Literal["in", "out"] | None = None
    bounds: dict[str, int] = {}
    while cur.more():
        word = cur.take()
        if word == "mode":
            mode = parse_mode(cur.value(word))
        elif word == "mark":
            mark = parse_mark(cur)
        elif word in ("reqid", "seq"):
            value = parse_uint(cur.value(word), 32, f"{word.upper()} value")
            reqid, seq = (value, seq) if word == "reqid" else (reqid, value)
        elif word in ("min", "max"):
            if word in bounds:
                raise ToolUsageError(f'duplicate "{word}": "{word}" is the second value.')
            bounds[word] = parse_uint(cur.value(word), 32, f'value after "{word}"')
        elif word == "dir":
            sa_dir = "in" if parse_choice(cur.value(word), ("in", "out"), "DIR") == "in" else "out"
        elif xid is None and word in ID_WORDS:
            cur.i -= 1
            xid = parse_id(cur, loose=False, family=family)
            if xid.spi:
                raise ToolUsageError(
                    '"spi" is invalid', hint="allocspi chooses the SPI: drop spi N"
                )
        else:
            raise unknown(word, ALLOCSPI_WORDS)
    if xid is None:
        raise ToolUsageError("Not enough information: ID is required", hint="add src/dst/proto")
    if ("min" in bounds) != ("max" in bounds):
        missing = "max" if "min" in bounds else "min"
        raise ToolUsageError(f'"{missing}" is missing', hint="give both: min SPI max SPI")
    if bounds and bounds["min"] > bounds["max"]:
        raise ToolUsageError('value after "min" is larger than value after "max"')
    proto = xid.proto or 0
    low, high = (bounds["min"], bounds["max"]) if bounds else (0x100, 0x0FFFFFFF)
    if not bounds and proto == IPPROTO_COMP:
        high = 0xFFFF
    src, dst = xid.addresses(family)
    # __find_acq_core: a /32 (/128) selector of the two addresses [C: Linux 6.12].
    plen = 32 if dst.version == 4 else 128
    state = XfrmState(
        src=src,
        dst=dst,
        proto=proto,
        reqid=reqid,
        mode=mode,
        sel=Selector(
            ip_interface(f"{src}/{plen}"), ip_interface(f"{dst}/{plen}"), family=dst.version
        ),
        sa_dir=sa_dir,
        mark=mark if mark and mark.mask & mark.value else None,
        seq=seq,
        larval=True,
    )
    return state, (low, high)


def parse_state_id(cur: Cursor, family: int) -> StateId:
    """``xfrm_state_get_or_delete``: ``ID [mark MARK [mask MASK]]``."""
    xid: XfrmId | None = None
    mark: XfrmMark | None = None
    while cur.more():
        word = cur.take()
        if word == "mark":
            mark = parse_mark(cur)
        elif word in ID_WORDS and xid is None:
            cur.i -= 1
            xid = parse_id(cur, loose=False, family=family)
        else:
            raise unknown(word, STATE_ID_WORDS)
    if xid is None:
        raise required("ID")
    _, dst = xid.addresses(family)
    # iproute2 sends XFRMA_MARK only when mark & mask is non-zero.
    mval = mark.value & mark.mask if mark else 0
    return StateId(dst, xid.spi or 0, xid.proto or 0, mval)


def parse_state_filter(cur: Cursor, family: int) -> tuple[StateFilter, bool]:
    """``xfrm_state_list_or_deleteall``: ``[nokeys] [ID] [mode] [reqid] [flag]``;
    also returns whether ``nokeys`` was given."""
    xid: XfrmId | None = None
    nokeys = False
    mode: str | None = None
    reqid: int | None = None
    flags: frozenset[str] = frozenset()
    while cur.more():
        word = cur.take()
        if word == "nokeys":
            nokeys = True
        elif word == "mode":
            mode = parse_mode(cur.value(word))
        elif word == "reqid":
            reqid = parse_uint(cur.value(word), 32, "REQID value")
        elif word == "flag":
            flags = parse_flags(cur, STATE_FLAGS, word)
        elif word in ID_WORDS and xid is None:
            cur.i -= 1
            xid = parse_id(cur, loose=True, family=family)
        else:
            raise unknown(word, STATE_FILTER_WORDS)
    xid = xid or XfrmId()
    filt = StateFilter(
        family or xid.family, xid.src, xid.dst, xid.proto, xid.spi, mode, reqid, flags
    )
    return filt, nokeys


def parse_flush_proto(cur: Cursor) -> int | None:
    """``ip xfrm state flush [proto XFRM-PROTO]``; None: no proto (sent as 0)."""
    if not cur.more():
        return None
    word = cur.take()
    if word != "proto":
        raise unknown(word, ("proto",))
    val = cur.value(word)
    if val != "ipsec-any" and val not in XFRM_PROTOS:
        raise bad(val, "XFRM-PROTO value is invalid", valid=XFRM_PROTOS, guess_from=XFRM_PROTOS)
    if cur.more():
        raise unknown(cur.take(), ())
    # ipsec-any is IPSEC_PROTO_ANY (255), which a monitor names [D: ip/xfrm_monitor.c].
    return 255 if val == "ipsec-any" else XFRM_PROTOS[val]
