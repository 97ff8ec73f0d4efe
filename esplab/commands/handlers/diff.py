"""diff A B [--ignore FIELD,...]: two packets compared field by field and byte by byte.

A and B are captured packets (``wan.wire#3``, or a tap for its last packet),
names given with ``let``, packet expressions, or hex. When a packet carries ESP
whose SPI belongs to a state on some node, the comparison goes through the
encryption: IV, padding, pad length, next header and ICV, then the inner layers
(:func:`esplab.diff.diff_packets`). ``compare`` builds on :func:`build_diff`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import ByteView, DiffResult, Result
from esplab.errors import BadArgument, EsplabError, NoSuchPacket, PacketExpressionError

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.diff import EspOpened
    from esplab.model.kernel.esp.sa import EspSA

__all__ = [
    "COMMANDS",
    "ByteView",
    "DiffResult",
    "Operand",
    "build_diff",
    "esp_details",
    "resolve_operand",
    "session_sas",
]


@dataclass(frozen=True)
class Operand:
    """One side of a diff: what the user typed, and the packet it names."""

    label: str
    packet: Packet


# --------------------------------------------------------------------------- operands


def _from_hex(text: str, like: Packet | None) -> Packet:
    """Hex dissected as ``like``'s class, else IP/IPv6 by the version nibble, else Ether."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    from esplab.commands.hexinput import parse_hex

    try:
        data = parse_hex(text)
    except EsplabError as exc:  # read as hex, it is not: say what else an operand can be
        raise NoSuchPacket(
            f"'{text}' is not a packet ({exc.what})",
            valid="TAP#N from capture list, a name from let, a packet "
            "expression, or whole hex bytes",
        ) from None
    if like is not None:
        cls: Any = like.__class__
    else:
        cls = {4: IP, 6: IPv6}.get(data[0] >> 4, Ether)
    try:
        packet: Packet = cls(data)
    except Exception:  # bytes that do not dissect as that class are compared raw
        packet = Raw(data)
    return packet


_OPERANDS = (
    "a name from let ({names}), a tap or TAP#N ({taps}), a packet expression "
    "(IP()/UDP()), or whole hex bytes"
)
_HEX_CHARS = frozenset("0123456789abcdefABCDEFxX: \n\t")


def resolve_operand(session: Session, text: str) -> Operand | str:
    """The packet ``text`` names; hex comes back as is (str) until its class is known.

    Tried in order: a name from ``let``, a capture reference (``TAP#N`` or a tap
    for its last packet), hex digits, then a packet expression (whose error
    lists the valid names when nothing matches).
    """
    from esplab.commands.packetexpr import build_packet, detached

    # detached: the bytes compared come from the packet as written, never from the
    # host's routes or neighbours (an Ether() without dst, an IP() without src).
    if text in session.named:
        return Operand(text, detached(session.named[text]))
    if "#" in text or text in session.lab.captures.known:
        from esplab.commands.handlers.capture import resolve_ref

        return Operand(text, resolve_ref(session, text).packet())
    if "(" not in text and set(text) <= _HEX_CHARS and any(c.isdigit() for c in text):
        return text
    if "(" in text or "/" in text:
        return Operand(text, detached(build_packet(text, session.named)))
    try:
        return Operand(text, detached(build_packet(text, session.named)))
    except PacketExpressionError:
        from esplab.errors import did_you_mean

        names, taps = list(session.named), session.lab.captures.taps()
        guess = did_you_mean(text, [*names, *taps]) if text.strip() else None
        raise NoSuchPacket(
            f"'{text}' is not a packet" if text.strip() else "an empty operand is not a packet",
            valid=_OPERANDS.format(
                names=", ".join(names) or "none yet", taps=", ".join(taps) or "none yet"
            ),
            hint=f"did you mean {guess}?" if guess and guess != text else None,
        ) from None


def _operands(session: Session, left: str, right: str) -> tuple[Operand, Operand]:
    a = resolve_operand(session, left)
    b = resolve_operand(session, right)
    if isinstance(a, str):
        a = Operand(a, _from_hex(a, b.packet if isinstance(b, Operand) else None))
    if isinstance(b, str):
        b = Operand(b, _from_hex(b, a.packet))
    return a, b


# --------------------------------------------------------------------------- ESP


def session_sas(session: Session, spis: set[int]) -> dict[int, EspSA]:
    """A fresh software SA for each SPI that some node has an ESP state for.

    Fresh, so the lab's own SAs (their replay windows and counters) are never
    touched; a state with the packet's SPI on the first node that has one wins.
    """
    from esplab.model.kernel.esp.runtime import build_esp_sa

    found: dict[int, EspSA] = {}
    for node in session.lab.nodes.values():
        for state in node.xfrm.states:
            if state.proto != 50 or state.spi not in spis or state.spi in found:
                continue
            try:
                found[state.spi] = build_esp_sa(state, f"diff:{state.spi:#x}")
            except EsplabError:
                continue  # a state the software core cannot key (compression only)
    return found


def _spi(packet: Packet) -> int | None:
    from esplab.diff import find_esp

    hit = find_esp(packet)
    if hit is None or len(hit[1]) < 4:
        return None
    return int.from_bytes(hit[1][:4], "big")


def _opened(packet: Packet, sas: dict[int, EspSA]) -> EspOpened | None:
    from esplab.diff import find_esp, open_esp

    hit = find_esp(packet)
    if hit is None or len(hit[1]) < 4:
        return None
    sa = sas.get(int.from_bytes(hit[1][:4], "big"))
    return None if sa is None else open_esp(sa, hit[1], hit[0])


def esp_details(session: Session, packet: Packet) -> dict[str, Any] | None:
    """What the lab's SAs reveal about ``packet``'s ESP (for ``data["esp"]``), or None.

    The renderer colours IV, padding, pad length, next header and ICV from it.
    """
    spi = _spi(packet)
    if spi is None:
        return None
    opened = _opened(packet, session_sas(session, {spi}))
    return None if opened is None else opened.as_data()


# --------------------------------------------------------------------------- diff


def build_diff(
    a: Operand,
    b: Operand,
    *,
    ignore: list[str] | None = None,
    sas: dict[int, EspSA] | None = None,
    title: str = "",
) -> DiffResult:
    """The diff of two packets as a result: rows, the wire bytes, and the plaintext
    bytes when both sides carry ESP that ``sas`` opens."""
    from esplab.diff import IgnoreRules, byte_ranges, diff_packets, field_spans

    rules = IgnoreRules(ignore or [])
    sas = sas or {}
    diffs = diff_packets(a.packet, b.packet, ignore=rules, sa=sas)
    left, right = bytes(a.packet), bytes(b.packet)
    oa, ob = _opened(a.packet, sas), _opened(b.packet, sas)
    spans = field_spans(a.packet, oa.layout if oa is not None else None)
    skip = [(s.start, s.end) for s in spans if rules(s.layer, s.field)]
    views = [ByteView("bytes", left, right, tuple(byte_ranges(left, right, skip=skip)))]
    notes: list[str] = []
    if oa is not None and ob is not None:
        pa = oa.data + oa.padding + bytes((oa.pad_len, oa.next_header))
        pb = ob.data + ob.padding + bytes((ob.pad_len, ob.next_header))
        views.append(
            ByteView(f"decrypted ESP payload (SPI {oa.spi:#x})", pa, pb, tuple(byte_ranges(pa, pb)))
        )
        notes.append(
            f"ESP compared through SPI {oa.spi:#x}"
            + (f" and {ob.spi:#x}" if ob.spi != oa.spi else "")
        )
    elif oa is not None or ob is not None:
        opened, other = (a, b) if oa is not None else (b, a)
        if _spi(other.packet) is None:
            notes.append(
                f"only {opened.label} carries ESP ({other.label} has none), so the "
                "packets are compared as they are"
            )
        else:
            notes.append(
                f"only {opened.label}'s ESP could be opened ({other.label}'s, SPI "
                f"{_spi(other.packet):#x}, could not); the ciphertext is compared"
            )
    rows = [d.row() for d in diffs]
    changed = sum(v.changed for v in views[:1])
    summary = (
        "identical"
        if not rows and not changed
        else f"{len(rows)} field(s) differ; {changed} byte(s) in {len(views[0].ranges)} range(s)"
    )
    return DiffResult(
        summary=f"{a.label} vs {b.label}: {summary}",
        title=title or f"diff {a.label} {b.label}",
        columns=("layer", "field", a.label, b.label),
        rows=rows,
        views=views,
        left_label=a.label,
        right_label=b.label,
        notes=notes,
        data={
            "identical": not rows and not changed,
            "fields": [
                {"layer": d.layer, "field": d.field, "left": r[2], "right": r[3]}
                for d, r in zip(diffs, rows, strict=True)
            ],
            "bytes": [list(r) for r in views[0].ranges],
            "esp": [o.as_data() if o else None for o in (oa, ob)],
        },
    )


def _ignore_list(inv: Invocation) -> list[str]:
    """Every ``--ignore`` of the line (the parser keeps only the last), each a comma list."""
    words = inv.tokens[1:]
    texts = [words[i + 1].value for i, tok in enumerate(words[:-1]) if tok.raw == "--ignore"]
    if not texts and inv.args.get("ignore") is not None:
        texts = [inv.args["ignore"]]
    items = [t.strip() for text in texts for t in text.split(",") if t.strip()]
    if texts and not items:
        raise BadArgument(
            "--ignore needs field names",
            valid="FIELD, LAYER.FIELD or LAYER, comma separated (ttl,IP.chksum)",
        )
    return items


def _check_ignore(items: list[str], known: dict[str, list[str]]) -> None:
    """Refuse a name that is no layer or field of either packet, naming it and the
    valid ones (case-insensitive; ``inner `` and ``[N]`` as :class:`IgnoreRules` take
    them)."""
    import re

    layers = {name.lower(): name for name in known}
    every = "; ".join(f"{layer} ({', '.join(fields)})" for layer, fields in known.items())
    for item in items:
        layer, dot, name = item.rpartition(".")
        base = re.sub(r"\[\d+\]$", "", layer.strip().lower().removeprefix("inner "))
        if not dot:
            anywhere = {f.lower() for fs in known.values() for f in fs}
            if item.lower() in layers or item.lower() in anywhere:
                continue
            raise BadArgument(
                f"--ignore '{item}' is no layer or field of either packet",
                valid=every,
            )
        if base not in layers:
            raise BadArgument(
                f"--ignore '{item}': neither packet has a layer '{layer}'", valid=every
            )
        fields = known[layers[base]]
        if name in ("", "*") or name.lower() in {f.lower() for f in fields}:
            continue
        raise BadArgument(
            f"--ignore '{item}': {layers[base]} has no field '{name}'",
            valid=[f"{layers[base]}.{f}" for f in fields],
            value=item,
        )


def _diff(session: Session, inv: Invocation) -> Result:
    from esplab.diff import ignorable_fields

    ignore = _ignore_list(inv)
    a, b = _operands(session, inv.args["left"], inv.args["right"])
    spis = {s for s in (_spi(a.packet), _spi(b.packet)) if s is not None}
    sas = session_sas(session, spis) if spis else {}
    if ignore:
        _check_ignore(ignore, ignorable_fields(a.packet, b.packet, sa=sas))
    return build_diff(a, b, ignore=ignore, sas=sas)


def _complete(session: Session, words: list[str]) -> list[str]:
    positional = [w for w in words if not w.startswith("--")]
    if words and words[-1] == "--ignore":
        return ["ttl", "chksum", "id", "IP.chksum", "Ether", "ESPTrailer.icv"]
    if len(positional) >= 2:
        return ["--ignore"]
    refs = [
        f"{tap}#{len(session.lab.captures.get(tap))}"
        for tap in session.lab.captures.taps()
        if session.lab.captures.get(tap)
    ]
    return [*session.named, *session.lab.captures.taps(), *refs]


def _diff_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: an operand that is a packet expression."""
    for key, token in zip(("left", "right"), inv.tokens[1:3], strict=False):
        text = str(inv.args[key])
        if (
            text in check.named
            or "#" in text
            or text in check.session.lab.captures.known
            or ("(" not in text and "/" not in text)
        ):
            continue  # a capture, a name or hex: which it is shows only at run time
        check.packet(text, token.col)


def _operand_at(session: Session, args: list[str]) -> str:
    return "maybe" if len(args) < 2 else ""


COMMANDS = (
    Command(
        name="diff",
        nodeless="it compares captures and packets of the whole lab",
        summary="compare two packets field by field and byte by byte (through ESP when an "
        "SA is known)",
        handler=_diff,
        check=_diff_check,
        packet_at=_operand_at,
        params=(
            Param("left", metavar="A", help="TAP#N, a name from let, a packet expression or hex"),
            Param("right", metavar="B", help="the packet to compare A with"),
            Param(
                "ignore",
                kind="option",
                metavar="FIELD,...",
                help="fields to leave out: FIELD, LAYER.FIELD or LAYER (comma separated; "
                "--ignore may be repeated)",
            ),
        ),
        example="diff wan.wire#1 wan.wire#2 --ignore IP.id,IP.chksum",
        details="A packet whose ESP SPI belongs to a state on any node is compared "
        "through the encryption: IV, ESPTrailer padding, pad_len, nh, icv and icv_ok, then "
        "the inner layers (named 'inner IP', ...). Hex takes the other side's layer class.",
        complete=_complete,
    ),
)
