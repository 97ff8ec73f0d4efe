"""``ip xfrm state`` / ``ip xfrm policy`` output, byte for byte as iproute2 prints it.

Reference ``airoha-dsa-xfrm.md`` 5.4 and the worked examples 5.5 [C] (iproute2
``ip/ipxfrm.c``: ``xfrm_state_info_print``, ``xfrm_policy_info_print``,
``xfrm_xfrma_print``, ``xfrm_selector_print``, ``xfrm_lifetime_print``;
``ip/xfrm_state.c`` ``print_sadinfo``; ``ip/xfrm_policy.c`` ``print_spdinfo``).
Every line but an object's first starts with a TAB; the trailing spaces are
iproute2's. Times print in UTC (iproute2 uses the local zone; the lab has none).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from esplab.model.kernel.esp.replay import circular_bitmap
from esplab.model.kernel.xfrm.algos import XfrmAlgo
from esplab.model.kernel.xfrm.objects import (
    POLICY_FLAGS,
    STATE_EXTRA_FLAGS,
    STATE_FLAGS,
    XFRM_INF,
    XFRM_PROTOS,
    Address,
    LifetimeCfg,
    LifetimeCur,
    Prefix,
    Selector,
    XfrmPolicy,
    XfrmState,
    XfrmTemplate,
    proto_name,
)

__all__ = [
    "format_addr",
    "format_policy",
    "format_sad_count",
    "format_selector",
    "format_spd_count",
    "format_state",
    "format_time",
    "xfrm_proto_name",
]

_XFRM_PROTO_NAMES = {v: k for k, v in XFRM_PROTOS.items()}
# xfrm_state_hashmax / xfrm_policy_hashmax: the "Max" of ``ip -s xfrm ... count``.
_HASH_MAX = 1 << 20


def xfrm_proto_name(proto: int) -> str:
    """``strxf_xfrmproto``: esp, ah, comp, route2, hao, else the number."""
    return _XFRM_PROTO_NAMES.get(proto, "ipsec-any" if proto == 255 else str(proto))


def format_time(t: int) -> str:
    """``strxf_time``: ``-`` for 0, else ``%Y-%m-%d %T`` (UTC here)."""
    if t == 0:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def format_addr(a: Address) -> str:
    """An address as iproute2's ``rt_addr_n2a`` prints it: ``inet_ntop``.

    glibc ``inet_ntop6`` (resolv/inet_ntop.c, 2.36) compresses the longest zero run as
    Python does, but writes an "encapsulated IPv4" tail in dotted quad when that run
    starts the address and is 6 words (``::a.b.c.d``, IPv4-compatible) or 5 words
    followed by ``ffff`` (``::ffff:a.b.c.d``, IPv4-mapped); ``::2`` and ``::ffff`` stay
    hex. Python's ``ipaddress`` prints the two shapes in hex (``::ffff:c000:201``).
    """
    if a.version == 4:
        return str(a)
    words = [int.from_bytes(a.packed[i : i + 2], "big") for i in range(0, 16, 2)]
    run = 0
    while run < 8 and words[run] == 0:
        run += 1
    # A leading run of 5 or 6 words is always glibc's "best": no room for a longer one.
    if run == 6 or (run == 5 and words[5] == 0xFFFF):
        tail = ".".join(str(b) for b in a.packed[12:])
        return "::ffff:" + tail if run == 5 else "::" + tail
    return str(a)


def _hash_x(v: int) -> str:
    """C's ``%#x``: ``0`` for zero, ``0x..`` otherwise."""
    return f"0x{v:x}" if v else "0"


def _seq_as_printed(seq: int) -> int:
    """``xsinfo->seq`` as iproute2 prints it on a little-endian board.

    ip/xfrm_state.c ``xfrm_seq_parse`` stores ``seq SEQ`` with ``get_be32`` (network
    order); the kernel keeps it as is (``x->km.seq``) and dumps it back; ipxfrm.c
    ``xfrm_state_info_print`` then prints the raw word with
    ``fprintf(fp, "seq 0x%08u ", xsinfo->seq)``: no ``ntohl``, decimal digits after
    "0x". So ``seq 255`` prints ``seq 0x4278190080`` (0xff000000) on an LE CPU.
    """
    return int.from_bytes(seq.to_bytes(4, "big"), "little")


def _limit(v: int) -> str:
    return "(INF)" if v == XFRM_INF else str(v)


def _prefix(p: Prefix) -> str:
    return f"{format_addr(p.ip)}/{p.network.prefixlen}"


def _flag_words(flags: frozenset[str], order: Iterable[str]) -> str:
    """``XFRM_FLAG_PRINT``: names in bit order, space-separated, none trailing."""
    return " ".join(name for name in order if name in flags)


def _mask8(flags: frozenset[str]) -> str:
    """``strxf_mask8``: the flag byte as eight binary digits."""
    value = sum(STATE_FLAGS[f] for f in flags)
    return f"{value:08b}"


def format_selector(sel: Selector, *, stats: int = 0) -> str:
    """``xfrm_selector_print`` without the prefix, ending in a newline."""
    out = f"src {_prefix(sel.src)} dst {_prefix(sel.dst)} "
    if sel.proto:
        out += f"proto {proto_name(sel.proto)} "
    if sel.proto in (1, 58):
        if sel.sport_mask:
            out += f"type {sel.sport} "
        if sel.dport_mask:
            out += f"code {sel.dport} "
    elif sel.proto == 47:
        if sel.sport_mask or sel.dport_mask:
            out += f"key {(sel.sport << 16) + sel.dport} "
    elif sel.proto == 135:
        if sel.sport_mask:
            out += f"type {sel.sport} "
        if sel.dport_mask and stats:
            out += f"(dport) 0x{sel.dport:04x} "
    else:
        if sel.sport_mask:
            out += f"sport {sel.sport} "
        if sel.dport_mask:
            out += f"dport {sel.dport} "
    if sel.dev is not None:
        out += f"dev {sel.dev} "
    if stats:
        out += "uid 0"
    return out + "\n"


def _algo_line(kind: str, algo: XfrmAlgo, *, stats: int, nokeys: bool, icv: bool) -> str:
    """``__xfrm_algo_print`` (+ `` ICV`` for auth-trunc and aead)."""
    out = f"\t{kind} {algo.name} "
    if nokeys:
        out += "<<Keys hidden>>"
    elif algo.key:
        out += "0x" + algo.key.hex()
        if stats:
            out += f" ({algo.key_bits} bits)"
    if icv:
        out += f" {algo.icv_bits}"
    return out + "\n"


def _lifetime(cfg: LifetimeCfg, cur: LifetimeCur) -> str:
    """``xfrm_lifetime_print`` with the one-TAB prefix."""
    return (
        "\tlifetime config:\n"
        f"\t  limit: soft {_limit(cfg.soft_byte_limit)}(bytes),"
        f" hard {_limit(cfg.hard_byte_limit)}(bytes)\n"
        f"\t  limit: soft {_limit(cfg.soft_packet_limit)}(packets),"
        f" hard {_limit(cfg.hard_packet_limit)}(packets)\n"
        f"\t  expire add: soft {cfg.soft_add_expires_seconds}(sec),"
        f" hard {cfg.hard_add_expires_seconds}(sec)\n"
        f"\t  expire use: soft {cfg.soft_use_expires_seconds}(sec),"
        f" hard {cfg.hard_use_expires_seconds}(sec)\n"
        "\tlifetime current:\n"
        f"\t  {cur.bytes}(bytes), {cur.packets}(packets)\n"
        f"\t  add {format_time(cur.add_time)} use {format_time(cur.use_time)}\n"
    )


def _id_line(
    proto: int, spi: int, reqid: int, mode: str, *, stats: int, force_spi: bool, indent: str
) -> str:
    """The second half of ``xfrm_id_info_print``: ``proto ... mode ...``."""
    out = f"{indent}proto {xfrm_proto_name(proto)} "
    if stats or force_spi or spi:
        out += f"spi 0x{spi:08x}" + (f"({spi})" if stats else "") + " "
    out += f"reqid {reqid}" + (f"(0x{reqid:08x})" if stats else "") + " "
    return out + f"mode {mode}\n"


def _replay_lines(x: XfrmState) -> str:
    rp = x.replay
    if not x.uses_esn_replay:
        return (
            f"\tanti-replay context: seq 0x{rp.seq:x}, oseq 0x{rp.oseq:x}, "
            f"bitmap 0x{rp.bitmap & 0xFFFFFFFF:08x}\n"
        )
    out = (
        "\tanti-replay esn context:\n"
        f"\t seq-hi 0x{rp.seq_hi:x}, seq 0x{rp.seq:x}, "
        f"oseq-hi 0x{rp.oseq_hi:x}, oseq 0x{rp.oseq:x}\n"
        f"\t replay_window {x.replay_window}, bitmap-length {x.bmp_len}"
    )
    bitmap = circular_bitmap(rp.bitmap, rp.seq, x.replay_window)
    for j, i in enumerate(range(x.bmp_len, 0, -1)):
        if j % 8 == 0:
            out += "\n\t "
        out += f"{(bitmap >> (32 * (i - 1))) & 0xFFFFFFFF:08x} "
    return out + "\n"


def _mark_line(x: XfrmState | XfrmPolicy) -> str:
    """``mark V/M `` then, for a state, ``output-mark V/M`` on the same line (a line of
    its own without a mark), as iproute2 6.15 prints them [K]."""
    out = "" if x.mark is None else f"\tmark {_hash_x(x.mark.value)}/{_hash_x(x.mark.mask)} "
    output = getattr(x, "output_mark", None)
    if output is not None:
        out = (out or "\t") + f"output-mark 0x{output.value:x}/0x{output.mask:x}"
    return out + "\n" if out else ""


def format_state(
    x: XfrmState, *, stats: int = 0, nokeys: bool = False, replay_attr: bool = True
) -> str:
    """One SA as ``ip [-s] xfrm state list|get`` prints it; ``replay_attr``: the
    message carries the replay state (an expire's does not)."""
    out = f"src {format_addr(x.src)} dst {format_addr(x.dst)}\n"
    out += _id_line(x.proto, x.spi, x.reqid, x.mode, stats=stats, force_spi=True, indent="\t")
    legacy_window = 0 if x.uses_esn_replay else x.replay_window
    out += f"\treplay-window {legacy_window} "
    if stats:
        out += f"seq 0x{_seq_as_printed(x.seq):08d} "
    if stats or x.flags:
        out += "flag " + _flag_words(x.flags, STATE_FLAGS)
    if stats and x.extra_flags:
        out += "extra_flag " + _flag_words(x.extra_flags, STATE_EXTRA_FLAGS)
    if stats:
        out += f" (0x{_mask8(x.flags)})"
    out += "\n" + _mark_line(x)
    if x.auth:
        out += _algo_line("auth-trunc", x.auth, stats=stats, nokeys=nokeys, icv=True)
    if x.aead:
        out += _algo_line("aead", x.aead, stats=stats, nokeys=nokeys, icv=True)
    if x.enc:
        out += _algo_line("enc", x.enc, stats=stats, nokeys=nokeys, icv=False)
    if x.comp:
        out += _algo_line("comp", x.comp, stats=stats, nokeys=nokeys, icv=False)
    if x.encap:
        e = x.encap
        out += (
            f"\tencap type {e.type} sport {e.sport} dport {e.dport} addr {format_addr(e.oaddr)}\n"
        )
    if x.lastused:
        out += f"\tlastused {format_time(x.lastused)}\n"
    if replay_attr:
        out += _replay_lines(x)
    if x.offload:
        o = x.offload
        out += f"\tcrypto offload parameters: dev {o.dev} dir {o.dir} mode {o.type}\n"
    if x.if_id:
        out += f"\tif_id {_hash_x(x.if_id)}\n"
    if x.tfcpad:
        out += f"\ttfcpad {x.tfcpad}\n"
    if x.sa_dir:
        out += f"\tdir {x.sa_dir}\n"
    if not x.sel.is_zero:
        out += "\tsel " + format_selector(x.sel, stats=stats)
    if stats:
        out += _lifetime(x.lifetime, x.curlft)
        s = x.stats
        out += "\tstats:\n"
        out += (
            f"\t  replay-window {s.replay_window} replay {s.replay} failed {s.integrity_failed}\n"
        )
    return out


def _tmpl_lines(t: XfrmTemplate, *, stats: int) -> str:
    """``xfrm_tmpl_print`` for one template."""
    out = f"\ttmpl src {format_addr(t.src)} dst {format_addr(t.dst)}\n"
    out += _id_line(t.proto, t.spi, t.reqid, t.mode, stats=stats, force_spi=False, indent="\t\t")
    if stats or t.level == "use":
        out += "\t\t"
        if t.level == "use":
            out += "level use "
        elif stats:
            out += "level required "
        if stats:
            out += "share any "
        out += "\n"
    if stats:
        out += "\t\tenc-mask ffffffff auth-mask ffffffff comp-mask ffffffff\n"
    return out


def format_policy(p: XfrmPolicy, *, stats: int = 0, ptype_attr: bool = False) -> str:
    """One policy as ``ip [-s] xfrm policy list|get`` prints it.

    ``ptype_attr``: the kernel dumps ``XFRMA_POLICY_TYPE`` (``CONFIG_XFRM_SUB_POLICY``).
    """
    out = format_selector(p.sel, stats=stats)
    out += f"\t{'socket' if p.socket else 'dir'} {p.dir} "
    if p.action == "block":
        out += "action block "
    elif stats:
        out += "action allow "
    if stats:
        out += f"index {p.index} "
    out += f"priority {p.priority} "
    if ptype_attr:
        out += f"ptype {p.ptype} "
    if stats:
        out += "share any "
    if stats or p.flags:
        out += "flag " + _flag_words(p.flags, POLICY_FLAGS)
    if stats:
        value = sum(POLICY_FLAGS[f] for f in p.flags)
        out += f" (0x{value:08b})"
    out += "\n"
    if stats:
        out += _lifetime(p.lifetime, p.curlft)
    out += _mark_line(p)
    for t in p.templates:
        out += _tmpl_lines(t, stats=stats)
    if p.offload:
        out += f"\tcrypto offload parameters: dev {p.offload.dev} mode packet\n"
    if p.if_id:
        out += f"\tif_id {_hash_x(p.if_id)}\n"
    return out


def _buckets(n: int) -> int:
    """Hash buckets after growth from 8 (``xfrm_hash_grow_check``, approximated as
    doubling once the count exceeds the mask)."""
    size = 8
    while n > size - 1 and size < _HASH_MAX:
        size *= 2
    return size


def format_sad_count(n: int, *, stats: int = 0) -> str:
    """``ip [-s] xfrm state count`` (``print_sadinfo``)."""
    out = f"\t SAD count {n}"
    if stats:
        out += f" (buckets count {_buckets(n)} Max {_HASH_MAX})"
    return out + "\n"


def format_spd_count(counts: dict[str, int], *, stats: int = 0) -> str:
    """``ip [-s [-s]] xfrm policy count`` (``print_spdinfo``)."""
    out = f"\t SPD IN  {counts['in']} OUT {counts['out']} FWD {counts['fwd']}"
    if stats:
        out += f" (Sock: IN {counts['sock-in']} OUT {counts['sock-out']} FWD {counts['sock-fwd']})"
    out += "\n"
    if stats > 1:
        total = counts["in"] + counts["out"] + counts["fwd"]
        out += f"\t SPD buckets: count {_buckets(total)} Max {_HASH_MAX}\n"
        out += "\t SPD IPv4 thresholds: local 32 remote 32\n"
        out += "\t SPD IPv6 thresholds: local 128 remote 128\n"
    return out
