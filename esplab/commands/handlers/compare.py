"""compare SPI PACKET: one packet through every datapath the SA allows, then diffed.

The same plaintext, SA, IV and sequence number go through

* ``sw``: the kernel's software ESP (esplab.model.kernel.esp.core);
* ``sw+aead``: the kernel's ESP with the EIP-93 as ``authenc`` (basic mode);
* ``crypto``: crypto offload as the seed-000 series' packet-engine backend does it
  (the kernel writes SPI and sequence number, the engine builds padding, trailer and
  ICV in ESP mode; mainline's esp_xmit would write the trailer itself);
* ``packet``: packet offload (the engine does everything, including the number).

Each offload path runs on an engine of its own (same seed), so the lab's engine,
rings and counters are untouched, programmed with the lab's live state: the
driver's settings and, when the SA is offloaded, the live SA record in DMA memory
(an injected fault included) and the SA's injected faults. ``--scratch`` programs
the record the driver would write instead, and the output says which it used.
Beside the bytes, the live SA record is compared field by field with the record
the driver writes for that state. Identical bytes are the expected answer
(DESIGN.md); any difference is shown down to the field.

``id N`` and ``ttl N`` pin the outer IPv4 header's identification and TTL on
every datapath (tunnel mode: the outer header; transport: the packet's own), so
whole packets compare where only the ESP was meant to.
"""

from __future__ import annotations

from typing import Any

from esplab.commands.base import Session
from esplab.commands.parser import Invocation, packet_options, parse_int, parse_iv, parse_seq
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import Result
from esplab.errors import BadArgument, EsplabError, KernelError, NotFound

__all__ = ["COMMANDS", "DATAPATHS", "live_sa", "pin_outer", "run_datapaths"]

DATAPATHS = ("sw", "sw+aead", "crypto", "packet")


def outbound(node: Any, state: Any) -> bool:
    """Whether ``state`` protects what ``node`` sends: marked ``dir out``, or without a
    direction and from one of the node's addresses (an offload binding ``dir in``
    says otherwise)."""
    if state.offload is not None and state.offload.dir == "in":
        return False
    return bool(state.sa_dir == "out" or (state.sa_dir is None and node.owns(state.src)))


def _outbound_state(session: Session, node_name: str | None, spi: int) -> Any:
    node = session.lab.node(node_name)
    states = [x for x in node.xfrm.states if x.spi == spi and x.proto == 50]
    if not states:
        spis = sorted({f"{x.spi:#x}" for x in node.xfrm.states})
        raise NotFound(f"{node.name} has no ESP state with SPI {spi:#x}", valid=spis)
    sending = [x for x in states if outbound(node, x)]
    if not sending:
        spis = sorted({f"{x.spi:#x}" for x in node.xfrm.states if outbound(node, x)})
        raise BadArgument(
            f"SPI {spi:#x} on {node.name} is an inbound SA (to {states[0].dst})",
            valid=spis or "an outbound SA: from one of the node's addresses",
            hint="compare what the node sends",
        )
    return node, sending[0]


def run_datapaths(
    session: Session,
    node_name: str,
    state: Any,
    packet: bytes,
    seq: int,
    iv: bytes,
    *,
    scratch: bool = False,
) -> dict[str, bytes | str]:
    """The ESP packet each datapath makes (bytes), or why it cannot (str).

    The offload paths run on an engine of their own (so the lab's rings, counters and
    sequence numbers are untouched) programmed with the lab's live state: its driver
    settings and, when the SA is offloaded, its live SA record (faults and all) and
    injected faults. ``scratch`` asks for the record the driver writes instead."""
    from dataclasses import replace

    from esplab.model.journey.engine_path import build_skb
    from esplab.model.kernel.drivers.eip93 import new_eip93
    from esplab.model.kernel.esp import core as esp_core
    from esplab.model.kernel.esp.layout import esp_head_len
    from esplab.model.kernel.esp.runtime import build_esp_sa
    from esplab.model.kernel.esp.tfc import tfc_len

    seed = session.lab.settings.seed
    live = session.lab.eip93
    hw = None if scratch else live_sa(state)
    out: dict[str, bytes | str] = {}
    sa = build_esp_sa(state, f"compare:{seed}")
    mtu = _route_mtu(session, node_name, state) if sa.tfcpad else None
    try:
        out["sw"] = esp_core.encrypt(sa, packet, seq=seq, iv=iv, mtu=mtu)
    except EsplabError as exc:
        return dict.fromkeys(DATAPATHS, f"software ESP refused the packet: {exc}")
    spare = build_esp_sa(state, f"compare-skb:{seed}")
    skb, off, proto = build_skb(spare, packet, seq)
    # sw+aead runs esp_output too: its TFC zeros precede the padding (esp_tfc) [C].
    skb += bytes(tfc_len(sa, len(skb) - off - esp_head_len(sa.iv_size), mtu))
    if state.aead is not None:
        why = f"{state.aead.name} is AEAD: the EIP-93ies has no AES-GCM"
        return {**out, "sw+aead": why, "crypto": why, "packet": why}
    assert state.enc is not None
    auth = state.auth
    drv = new_eip93(seed, settings=replace(live.settings))
    if "esn" in state.flags:
        out["sw+aead"] = AUTHENCESN
    else:
        out.update(_sw_aead(drv, state, skb, off, proto, iv))
    for kind in ("crypto", "packet"):
        if state.tfcpad:
            out[kind] = TFC_NOT_OFFLOADED
            continue
        drv = new_eip93(seed, settings=replace(live.settings))
        add = drv.state_add(
            dev="wan",
            direction="out",
            spi=state.spi,
            mode=state.mode,
            enc=state.enc.name,
            enc_key=state.enc.key,
            auth=auth.name if auth else None,
            auth_key=auth.key if auth else b"",
            auth_trunc_bits=auth.icv_bits if auth else None,
            offload=kind,
            family=state.family,
            encap=state.encap is not None,
            esn="esn" in state.flags,
            tfcpad=state.tfcpad,
        )
        if not add.ok:
            out[kind] = f"the driver refuses the SA: {add.errno} ({add.reason})"
            continue
        sa_hw = add.sa
        assert sa_hw is not None
        if hw is not None:  # the lab's live record, and its faults, on this engine
            drv.memory.write(sa_hw.sa_addr, live.memory.read(hw.sa_addr, 0x80))
            sa_hw.faults = dict(hw.faults)
        if kind == "packet":
            drv.memory.write(sa_hw.sa_addr + 0x6C, ((seq - 1) & 0xFFFFFFFF).to_bytes(4, "little"))
        tx = drv.crypto_tx if kind == "crypto" else drv.packet_tx
        res = tx(sa_hw, skb, proto=proto, esp_offset=off, iv=iv)
        out[kind] = bytes(res.data) if res.ok else f"engine: {res.reason}"
    return {k: (v if isinstance(v, str) else bytes(v)) for k, v in out.items()}


def live_sa(state: Any) -> Any:
    """The lab's offloaded SA (``OffloadedSA``) of ``state``, or None."""
    return state.runtime.offloaded


#: Why no offload path pads for TFC: the kernel refuses before any driver is asked
#: (net/xfrm/xfrm_device.c xfrm_dev_state_add), and esp_xmit has tfclen = 0 [C].
TFC_NOT_OFFLOADED = (
    "xfrm_dev_state_add refuses to offload an SA with tfcpad (EINVAL: TFC padding can't "
    "be offloaded); esp_xmit has no TFC padding (tfclen = 0)"
)


def _route_mtu(session: Session, node_name: str, state: Any) -> int | None:
    """The MTU of the node's route to the SA's destination (a learned path MTU first),
    which bounds TFC padding as ``dst->child_mtu_cached`` does; None without a route."""
    node = session.lab.node(node_name)
    route = node.route(state.dst)
    learned: int | None = node.path_mtu(state.dst)
    return learned or (node.dev(route.dev).mtu if route is not None else None)


#: Why sw+aead has nothing for an ESN SA: esp4/esp6 then ask the crypto API for
#: ``authencesn(...)``, and the eip93 driver registers ``authenc(...)`` only
#: (drivers/crypto/inside-secure/eip93/eip93-aead.c) [D].
AUTHENCESN = (
    "an ESN SA takes authencesn(...), and the EIP-93 driver registers authenc(...) only: "
    "software crypto runs"
)


def _sw_aead(drv: Any, state: Any, skb: bytes, off: int, proto: int, iv: bytes) -> dict[str, Any]:
    """sw+aead's packet: the EIP-93's authenc transform for the SA's algorithms."""
    auth = state.auth
    try:
        tfm = drv.aead_setkey(
            enc=state.enc.name,
            enc_key=state.enc.key,
            auth=auth.name if auth else "",
            auth_key=auth.key if auth else b"",
            authsize=(auth.icv_bits // 8) if auth else 0,
            spi=state.spi,
        )
    except KernelError as exc:
        return {"sw+aead": f"no EIP-93 authenc for these algorithms ({exc.reason or exc})"}
    res = drv.sw_aead_tx(tfm, skb, proto=proto, esp_offset=off, iv=iv)
    return {"sw+aead": bytes(res.data) if res.ok else f"engine: {res.reason}"}


_OPTIONS = ("seq", "iv", "id", "ttl")
_OPTIONS_HELP = ("seq N", "iv HEX", "id N", "ttl N")


def _pins(options: dict[str, str], state: Any) -> dict[str, int]:
    pins: dict[str, int] = {}
    for key, top in (("id", 0xFFFF), ("ttl", 0xFF)):
        if key in options:
            value = parse_int(options[key], key)
            if not 0 <= value <= top:
                raise BadArgument(f"{key} {options[key]}", valid=f"0..{top:#x}", value=options[key])
            pins[key] = value
    if "id" in pins and state.family == 6 and state.mode != "transport":
        raise BadArgument("id pins an IPv4 identification; this SA's outer header is IPv6")
    return pins


def pin_outer(packet: bytes, pins: dict[str, int]) -> bytes:
    """``packet`` with its outer IPv4 identification and TTL (IPv6: hop limit) as
    pinned, the header checksum recomputed (RFC 791 3.1). Neither field is covered by
    the ESP ICV (RFC 4303 3.3.4), so the ESP is untouched."""
    from esplab.model.kernel.esp.ip import checksum

    if not pins or not packet:
        return packet
    out = bytearray(packet)
    if out[0] >> 4 == 6:
        if "ttl" in pins:
            out[7] = pins["ttl"]
        return bytes(out)
    if "id" in pins:
        out[4:6] = pins["id"].to_bytes(2, "big")
    if "ttl" in pins:
        out[8] = pins["ttl"]
    hlen = (out[0] & 0xF) * 4
    out[10:12] = b"\x00\x00"
    out[10:12] = checksum(bytes(out[:hlen])).to_bytes(2, "big")
    return bytes(out)


def _record_source(
    session: Session, state: Any, scratch: bool
) -> tuple[str, list[str], dict[str, Any]]:
    """Which SA record the offload paths used, and the live record against the one the
    driver writes, field by field (rows for the table, data for JSON)."""
    from esplab.commands.handlers.eip93_faults import record_diff

    hw = live_sa(state)
    if hw is None:
        return (
            "engine: a scratch SA record (the SA is not offloaded in the lab: no live record)",
            [],
            {"record": "scratch", "reason": "not offloaded"},
        )
    diff = record_diff(session.lab.eip93, hw)
    faults = ", ".join(f"{k} {a}".strip() for k, a in hw.faults.items()) or "none"
    rows = [
        f"SA record field {name}: live {live}, the driver writes {want}"
        for name, live, want in diff
    ]
    if not diff:
        rows = ["SA record: the live record is the one the driver writes, field by field"]
    used = (
        f"engine: --scratch, the record the driver writes (not the live one at "
        f"{hw.sa_addr:#010x}, injected faults: {faults})"
        if scratch
        else f"engine: the lab's live SA record at {hw.sa_addr:#010x}, injected faults: {faults}"
    )
    return (
        used,
        rows,
        {
            "record": "scratch" if scratch else "live",
            "sa_addr": hw.sa_addr,
            "faults": dict(hw.faults),
            "differs": {name: {"live": live, "driver": want} for name, live, want in diff},
        },
    )


def _compare(session: Session, inv: Invocation) -> Result:
    from esplab.commands.operands import Operand, build_diff, packet_bytes

    words = list(inv.args["args"])
    if len(words) < 2:
        raise BadArgument(
            "compare needs an SPI and a packet",
            hint='e.g. compare 0x1000 IP(dst="192.0.2.2")/UDP(dport=5201)',
        )
    spi = parse_int(words[0], "SPI")
    node, state = _outbound_state(session, inv.node, spi)
    tokens = [t for t in inv.tokens[2:] if t.value != "--scratch"]
    scratch = len(tokens) != len(inv.tokens[2:])
    if tokens and tokens[-1].value in _OPTIONS and len(tokens) > 1:
        key = tokens[-1].value
        raise BadArgument(f"'{key}' needs a value", valid=", ".join(_OPTIONS_HELP))
    expr, options = packet_options(inv.line, tokens, _OPTIONS, "compare")
    seq = parse_seq(options["seq"]) if "seq" in options else 1
    pins = _pins(options, state)
    if state.encap is not None:
        raise BadArgument(
            f"SPI {spi:#x} is UDP-encapsulated (encap {state.encap.type}), which compare "
            "does not model",
            valid="an SA without encap; send shows its journey",
        )
    from esplab.model.kernel.esp.runtime import build_esp_sa

    iv_size = build_esp_sa(state, "iv-size").iv_size
    # The IV this SA's cipher takes, and no other size (an SA without IV takes none).
    if "iv" in options and not iv_size:
        raise BadArgument(
            f"SPI {spi:#x}'s cipher takes no IV", valid="compare without iv", value=options["iv"]
        )
    iv = parse_iv(options["iv"], [iv_size]) if "iv" in options else b""
    packet = packet_bytes(session, expr, node.name, None)
    if not iv:
        iv = session.lab.rng.randbytes(iv_size)
    results = run_datapaths(session, node.name, state, packet, seq, iv, scratch=scratch)
    results = {k: pin_outer(v, pins) if isinstance(v, bytes) else v for k, v in results.items()}
    reference = results["sw"]
    if isinstance(reference, str):
        raise BadArgument(reference)
    rows: list[tuple[str, ...]] = []
    data: dict[str, Any] = {"spi": f"{spi:#010x}", "seq": seq, "iv": iv.hex(), "paths": {}}
    notes: list[str] = []
    details: list[str] = []
    for path in DATAPATHS:
        got = results[path]
        if isinstance(got, str):
            rows.append((path, "not available", got))
            data["paths"][path] = {"available": False, "why": got}
            continue
        same = got == reference
        data["paths"][path] = {
            "available": True,
            "identical": same,
            "hex": got.hex(),
            "len": len(got),
        }
        if path == "sw":
            rows.append((path, f"{len(got)} bytes", "the reference"))
            continue
        if same:
            rows.append((path, f"{len(got)} bytes", "identical to sw"))
            continue
        from scapy.layers.inet import IP
        from scapy.layers.inet6 import IPv6

        cls = IPv6 if got[0] >> 4 == 6 else IP
        sas = {state.spi: build_esp_sa(state, "compare-open")}
        diff = build_diff(Operand("sw", cls(reference)), Operand(path, cls(got)), sas=sas)
        rows.append((path, f"{len(got)} bytes", f"DIFFERS: {diff.summary}"))
        details.extend(f"{path}: {' / '.join(str(c) for c in row)}" for row in diff.rows)
    notes.extend(details)
    source, record_rows, record_data = _record_source(session, state, scratch)
    notes.insert(0, source)
    notes.extend(record_rows)
    data["engine"] = record_data
    data["pins"] = pins
    available = [p for p in DATAPATHS if data["paths"][p]["available"]]
    identical = all(data["paths"][p]["identical"] for p in available)
    data["identical"] = identical
    summary = f"SPI {spi:#x} seq {seq}: {len(available)} datapath(s), " + (
        "identical bytes on the wire" if identical else "the bytes differ"
    )
    from esplab.commands.result import TableResult

    return TableResult(
        summary=summary,
        title=f"compare SPI {spi:#x} seq {seq}",
        columns=("datapath", "ESP", "result"),
        rows=rows + [("", "", n) for n in notes],
        data=data,
    )


def _compare_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: the SPI, the options and the packet expression."""
    words: list[str] = list(inv.args["args"])
    if len(words) < 2:
        return  # the handler says what is missing
    try:
        parse_int(words[0], "SPI")
    except EsplabError as exc:
        check.refuse(exc, inv.tokens[1])
    expr, options = packet_options(inv.line, inv.tokens[2:], ("seq", "iv"), "compare")
    if "seq" in options:
        parse_seq(options["seq"])
    if "iv" in options:
        parse_iv(options["iv"])
    check.packet(expr, inv.tokens[2].col)


def _compare_packet_at(session: Session, args: list[str]) -> str:
    return "maybe" if len(args) < 2 else ""


def _compare_complete(session: Session, args: list[str]) -> list[str]:
    """The SPIs of the node's outbound ESP states, then packet names, then options."""
    if not args:
        the_node = session.lab.nodes[session.lab.current]
        return sorted(
            {f"{x.spi:#x}" for x in the_node.xfrm.states if x.proto == 50 and outbound(the_node, x)}
        )
    if len(args) == 1:
        return list(session.named)
    return [] if args[-1] in ("seq", "iv") else [o for o in ("seq", "iv") if o not in args[2:]]


COMMANDS = (
    Command(
        name="compare",
        summary="the same packet through sw, sw+aead, crypto and packet offload, diffed",
        handler=_compare,
        check=_compare_check,
        packet_at=_compare_packet_at,
        complete=_compare_complete,
        complete_on_node=True,
        params=(Param("args", kind="rest", metavar="SPI PACKET"),),
        usage_text="[NODE] compare SPI PACKET [seq N] [iv HEX] [id N] [ttl N] [--scratch]",
        example='compare 0x1000 IP(dst="192.0.2.2")/UDP(dport=5201)/Raw(b"x"*64) seq 7',
        details="The offload paths use the lab's live state: the driver's settings and, when "
        "the SA is offloaded, its live SA record in engine memory and its injected faults "
        "(eip93 fault), on an engine of their own, so the lab's rings, counters and sequence "
        "numbers are untouched. --scratch uses the record the driver would write instead; "
        "the output says which. Beside the bytes, the live SA record is compared field by "
        "field with the record the driver writes for the state. seq and iv pin the ESP "
        "sequence number and IV; id and ttl pin the outer IPv4 identification and TTL (IPv6: "
        "ttl is the hop limit) on every datapath, so whole packets compare.",
    ),
)
