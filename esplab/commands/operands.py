"""What commands name packets with, and what they make of them: an operand (a name
from ``let``, a capture's ``TAP#N``, a packet expression, hex), the bytes of a packet
to route from a node, the ESP a packet carries opened with the SAs the session's
nodes hold, and the diff of two packets as a result.

``send``, ``diff``, ``compare`` and ``capture show`` share these; the lab pages
(:mod:`esplab.picture`) show ESP with :func:`esp_details` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from esplab.commands.base import Session
from esplab.commands.parser import parse_int
from esplab.commands.result import ByteView, DiffResult
from esplab.errors import BadArgument, EsplabError, NoSuchPacket, PacketExpressionError

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.diff import EspOpened
    from esplab.model.kernel.esp.sa import EspSA
    from esplab.model.stage import Captured

__all__ = [
    "Operand",
    "build_diff",
    "esp_details",
    "esp_spi",
    "is_frame",
    "named_packet",
    "operand_pair",
    "packet_bytes",
    "resolve_operand",
    "resolve_ref",
    "routed_bytes",
    "session_sas",
]


# --------------------------------------------------------------------------- packets


def named_packet(session: Session, expr: str) -> Any:
    """The packet an expression (or a name given with let) stands for, as a fresh copy."""
    from esplab.commands.packetexpr import build_packet

    named = session.named
    return named[expr].copy() if expr in named else build_packet(expr, named)


def is_frame(packet: Any) -> bool:
    """Whether ``packet`` is an Ethernet frame to send as given: its Ethernet header
    says something (a field given, or dissected from a capture), it carries a VLAN tag,
    or what it carries is not IP. A bare ``Ether()`` over IP is only the header the
    kernel writes itself, so that packet is routed."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether

    if not isinstance(packet, Ether):
        return False
    tagged = Dot1Q in packet or Dot1AD in packet
    return bool(packet.fields) or tagged or not isinstance(packet.payload, (IP, IPv6))


def packet_bytes(session: Session, expr: str, node: str, dev: str | None) -> bytes:
    """The IP packet ``expr`` stands for, ready to route from ``node`` (``compare``'s
    and ``send``'s): see :func:`routed_bytes`."""
    return routed_bytes(session, expr, named_packet(session, expr), node, dev)


def routed_bytes(session: Session, expr: str, packet: Any, node: str, dev: str | None) -> bytes:
    """An IP packet to route; an IP source left unset becomes the node's address on the
    way out (as the kernel would choose), never the address of the machine running the
    lab. A bare ``Ether()`` in front is dropped (the kernel writes the Ethernet header);
    an Ethernet header with fields is refused, since routing would replace them."""
    from ipaddress import ip_address

    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether

    from esplab.commands.packetexpr import detached

    if is_frame(packet):
        raise BadArgument(
            f"'{expr}' is an Ethernet frame with its own header, which routing would replace",
            valid="an IP packet: IP(...) or IPv6(...), under a bare Ether() at most",
        )
    if isinstance(packet, Ether):
        packet = packet.payload
    if isinstance(packet, (Dot1Q, Dot1AD)):
        raise BadArgument(
            f"'{expr}' is a VLAN tag without an Ethernet header",
            valid="Ether()/Dot1Q(vlan=N)/... to send a tagged frame as given",
        )
    if not isinstance(packet, (IP, IPv6)):
        raise BadArgument(
            f"'{expr}' is not an IP packet",
            valid="an expression starting with IP(...) or IPv6(...)",
        )
    if "dst" not in packet.fields:
        raise BadArgument(
            f"'{expr}' has no destination", hint='give dst=, e.g. IP(dst="192.0.2.2")'
        )
    if "src" not in packet.fields:
        the_node = session.lab.node(node)
        dst = ip_address(packet.dst)
        route = the_node.route(dst)
        out_dev = dev or (route.dev if route else None)
        src = route.src if route is not None and route.dev == out_dev and route.src else None
        if src is None and out_dev is not None:
            src = the_node.source_for(out_dev, dst.version)
        if src is None:
            raise BadArgument(
                f"{node} has no IPv{dst.version} address to send {dst} from",
                hint="give src= in the packet",
            )
        packet.src = str(src)
    return bytes(detached(packet))


def resolve_ref(session: Session, ref: str) -> Captured:
    """``TAP#N`` (N from 1; negative from the end) or ``TAP`` (the last record)."""
    tap, _, index = ref.partition("#")
    records = session.lab.captures.get(tap)
    if not records:
        raise NoSuchPacket(f"tap {tap} has captured nothing yet")
    n = parse_int(index, "packet number") if index else -1
    if n == 0 or abs(n) > len(records):
        raise NoSuchPacket(f"{tap} has no packet #{n}", valid=f"#1 to #{len(records)}")
    return records[n - 1 if n > 0 else n]


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


def operand_pair(session: Session, left: str, right: str) -> tuple[Operand, Operand]:
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


def esp_spi(packet: Packet) -> int | None:
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
    spi = esp_spi(packet)
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
        if esp_spi(other.packet) is None:
            notes.append(
                f"only {opened.label} carries ESP ({other.label} has none), so the "
                "packets are compared as they are"
            )
        else:
            notes.append(
                f"only {opened.label}'s ESP could be opened ({other.label}'s, SPI "
                f"{esp_spi(other.packet):#x}, could not); the ciphertext is compared"
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
