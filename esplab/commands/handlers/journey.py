"""send, ping, let: making packets and sending them (trace and stepping: :mod:`.trace`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from esplab.commands.base import Session
from esplab.commands.interrupt import between_packets
from esplab.commands.operands import is_frame, named_packet, packet_bytes, routed_bytes
from esplab.commands.parser import (
    SEQ_MAX,
    Invocation,
    packet_options,
    parse_int,
    parse_iv,
    parse_seq,
)
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import JourneyResult, MessageResult, Result, journey_data
from esplab.errors import BadArgument, DecodeError, NotFound
from esplab.model.journey.l2 import ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6

__all__ = [
    "COMMANDS",
    "packet_bytes",
]

_OPTIONS = ("count", "seq", "iv")


@dataclass
class SendRequest:
    node: str
    dev: str | None
    expr: str
    count: int = 1
    seq: int | None = None
    iv: bytes | None = None


_SEND_OPTIONS = ("count", "seq", "iv")


def parse_send(session: Session, inv: Invocation) -> SendRequest:
    """``send [NODE] DEV PACKET [count N] [seq N] [iv HEX]`` (NODE may also prefix the line)."""
    tokens = inv.tokens[1:]
    node = inv.node or session.lab.current
    explicit = inv.node is not None
    if tokens and tokens[0].value in session.lab.nodes and not explicit:
        node = tokens[0].value
        tokens = tokens[1:]
        explicit = True
    devs = session.lab.node(node).devs
    if not tokens:
        raise BadArgument(
            "send needs a device and a packet",
            valid=list(devs),
            hint='e.g. send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)',
        )
    dev = tokens[0].value
    if dev not in devs:
        nodes = (
            ""
            if explicit
            else f" and no node is called that (nodes: {', '.join(session.lab.nodes)})"
        )
        raise NotFound(f"{node} has no device '{dev}'{nodes}", valid=list(devs), value=dev)
    expr, options = packet_options(inv.line, tokens[1:], _OPTIONS, "send")
    req = SendRequest(node, dev, expr)
    if "count" in options:
        req.count = parse_int(options["count"], "count")
        if not 1 <= req.count <= 100000:
            raise BadArgument(f"count {req.count}", valid="1 to 100000")
    if "seq" in options:
        req.seq = parse_seq(options["seq"])
        last = req.seq + req.count - 1
        if last > SEQ_MAX:
            raise BadArgument(
                f"seq {req.seq} with count {req.count} reaches {last:#x}",
                valid=f"sequence numbers up to {SEQ_MAX:#x} (64 bits with ESN)",
            )
    if "iv" in options:
        req.iv = parse_iv(options["iv"])
    return req


_VLAN_TYPES = (ETH_P_8021Q, ETH_P_8021AD)


def _frame_bytes(session: Session, node: str, dev: str, packet: Any) -> bytes:
    """An Ethernet frame as given, with what it leaves unset filled from the lab (never
    from the machine running it): the source MAC is the device's, the destination the
    link peer's (broadcast when nothing is connected), an IP source the device's
    address. Behind an IPv4 or IPv6 EtherType (after any VLAN tags) must be a whole IP
    packet; a frame of any other EtherType goes as it is, and a node that receives it
    has no handler for it (``rx_dropped``): the nodes model no other protocol."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6

    from esplab.commands.packetexpr import detached
    from esplab.model.kernel.esp.ip import parse_ip

    the_node = session.lab.node(node)
    out = the_node.dev(dev)
    if "src" not in packet.fields:
        packet.src = out.mac
    if "dst" not in packet.fields:
        peer = session.lab.peer_of(node, out.name)
        packet.dst = session.lab.node(peer[0]).devs[peer[1]].mac if peer else "ff:ff:ff:ff:ff:ff"
    for layer, version in ((IP, 4), (IPv6, 6)):
        inner = packet.getlayer(layer)
        if inner is not None and "src" not in inner.fields:
            src = the_node.source_for(out.name, version)
            if src is not None:
                inner.src = str(src)
    frame = bytes(detached(packet))
    start = 14
    while int.from_bytes(frame[start - 2 : start], "big") in _VLAN_TYPES:
        start += 4
    etype = int.from_bytes(frame[start - 2 : start], "big")
    if etype not in (ETH_P_IP, ETH_P_IPV6):
        return frame
    try:
        parse_ip(frame[start:])
    except DecodeError as exc:
        family = 4 if etype == ETH_P_IP else 6
        nibble = frame[start] >> 4 if len(frame) > start else family
        detail = exc.what if nibble == family else f"its first byte says IPv{nibble}: {exc.what}"
        raise BadArgument(
            f"EtherType {etype:#06x} announces IPv{family}, but what follows is not an IP "
            f"packet the lab's nodes can receive ({detail})",
            valid="Ether(...)/IP(...) or Ether(...)/IPv6(...), VLAN tags between them; "
            "a frame of another EtherType goes as it is",
            value=f"{etype:#06x}",
        ) from None
    return frame


def _send(session: Session, inv: Invocation) -> Result:
    from esplab.model.journey.datapath import SendOptions, SendRun

    req = parse_send(session, inv)
    dev = req.dev or ""
    packet = named_packet(session, req.expr)
    run = SendRun()
    if is_frame(packet):
        # Sent as given, like Scapy's sendp: no routing, no XFRM; the DSA tagger
        # merges with an inline VLAN header (airoha-dsa-xfrm.md 2.2).
        if req.seq is not None or req.iv is not None:
            raise BadArgument(
                "seq and iv pin the ESP of a routed packet, and an Ethernet frame is sent "
                "as given (no routing, no XFRM)",
                hint="to route it, leave out Ether(...) or give it no fields",
            )
        frame = _frame_bytes(session, req.node, dev, packet)
        with between_packets() as stop:
            for _ in range(req.count):
                run.add(session.lab.datapath.send_frame(req.node, dev, frame))
                if stop.requested:
                    break
    else:
        data = routed_bytes(session, req.expr, packet, req.node, req.dev)
        pins = None
        if req.seq is not None or req.iv is not None:
            first, iv = req.seq, req.iv

            def pins(n: int) -> SendOptions:
                return SendOptions(seq=None if first is None else first + n, iv=iv)

        with session.progress(f"send {req.count}", req.count) as tick, between_packets() as stop:
            done = 0

            def check() -> bool:
                """After each packet: stop on Ctrl-C; the bar moves every 256 packets."""
                nonlocal done
                done += 1
                if not done & 0xFF:
                    tick(256)
                return stop.requested

            run = session.lab.datapath.send_many(req.node, req.dev, data, req.count, pins, check)
    last = run.last
    assert last is not None  # count is at least 1, and the first packet always goes
    sent = len(run.ids)
    result_data = {
        "journeys": run.ids,
        # ("delivered" is the last journey's, from journey_data below)
        "delivered_count": run.delivered,
        "sent": sent,
        "interrupted": sent < req.count,
        **journey_data(last),
    }
    if req.count == 1:
        return JourneyResult(
            summary=f"journey {last.id}: {last.verdict}", journeys=[last], data=result_data
        )
    head = f"{sent} packets"
    if sent < req.count:
        head = f"interrupted after {sent} of {req.count} packets"
        session.replay = _with_count(inv, sent)
    return JourneyResult(
        summary=f"{head}: {run.delivered} delivered; last journey {last.id}: {last.verdict}",
        journeys=[last],
        show_summary=True,
        data=result_data,
    )


def _with_count(inv: Invocation, count: int) -> str:
    """``inv``'s line with its count option (``count N``, ``-c N``, ``-cN``) set to
    ``count``: what replays a loop that stopped early."""
    line, tokens = inv.line, inv.tokens
    for i in range(len(tokens) - 1, -1, -1):
        tok = tokens[i]
        if tok.value in ("count", "-c") and i + 1 < len(tokens):
            value = tokens[i + 1]
            return f"{line[: value.col]}{count}{line[value.col + len(value.raw) :]}"
        if tok.value.startswith("-c") and tok.value[2:].isdigit():
            return f"{line[: tok.col]}-c{count}{line[tok.col + len(tok.raw) :]}"
    return line


def _icmp_echo(src: str, dst: str, ident: int, seq: int, reply: bool = False) -> bytes:
    from scapy.layers.inet import ICMP, IP
    from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
    from scapy.packet import Raw

    payload = Raw(bytes(range(56)))
    if ":" in dst:
        icmp6 = ICMPv6EchoReply if reply else ICMPv6EchoRequest
        return bytes(IPv6(src=src, dst=dst) / icmp6(id=ident, seq=seq) / payload)
    icmp = ICMP(type=0 if reply else 8, id=ident, seq=seq)
    return bytes(IP(src=src, dst=dst, flags="DF") / icmp / payload)


def _ping(session: Session, inv: Invocation) -> Result:
    from ipaddress import IPv4Address, IPv6Address, ip_address

    node = session.lab.node(inv.node)
    dst_text = inv.args["dst"]
    try:
        dst = ip_address(dst_text)
    except ValueError:
        raise BadArgument(
            f"ping: '{dst_text}' is not an address", valid="an IPv4 or IPv6 address"
        ) from None
    count = parse_int(inv.args["count"], "count") if inv.args["count"] else 1
    if not 1 <= count <= 10000:
        raise BadArgument(f"ping count {count}", valid="1 to 10000")
    route = node.route(dst)
    src: IPv4Address | IPv6Address | None = dst  # local: answered from itself (local table)
    if not node.owns(dst):
        if route is None:
            raise BadArgument(f"ping: no route to {dst} from {node.name}")
        src = route.src or node.source_for(route.dev, dst.version)
    if src is None:
        raise BadArgument(f"ping: {node.name} has no address on {route.dev if route else dst}")
    received = 0
    journeys = []
    # Its own address (and the loopback network every node has) answers on the node.
    owner = node if node.owns(dst) else None
    owner = owner or next((n for n in session.lab.nodes.values() if n.owns(dst)), None)
    sent = 0
    with between_packets() as stop:
        for n in range(1, count + 1):
            j = session.lab.datapath.send(node.name, None, _icmp_echo(str(src), str(dst), 1, n))
            journeys.append(j)
            sent = n
            if j.delivered and owner is not None:
                back = session.lab.datapath.send(
                    owner.name, None, _icmp_echo(str(dst), str(src), 1, n, reply=True)
                )
                journeys.append(back)
                received += back.delivered
            if stop.requested:
                break
    if sent < count:  # ping prints its statistics on Ctrl-C, for what it sent
        session.replay = _with_count(inv, sent)
    summary = (
        f"{sent} packets transmitted, {received} received, "
        f"{100 * (sent - received) // sent}% packet loss"
    )
    return JourneyResult(
        summary=summary,
        journeys=journeys[-2:],
        show_summary=True,
        data={
            "transmitted": sent,
            "received": received,
            "journeys": [j.id for j in journeys],
            # Why each journey ended, so a lab can check a lost ping's drop in one step.
            "verdicts": [j.verdict for j in journeys],
        },
    )


def _let(session: Session, inv: Invocation) -> Result:
    from esplab.commands.packetexpr import build_packet, detached

    words = inv.tokens[1:]
    if len(words) < 3 or words[1].value != "=":
        raise BadArgument("let needs NAME = PACKET", hint='e.g. let p1 = IP(dst="192.0.2.2")')
    name = words[0].value
    if not name.isidentifier() or name in session.registry:
        raise BadArgument(
            f"'{name}' cannot name a packet",
            valid="a Python-style identifier that is not a command",
        )
    expr = inv.line[words[2].col :].strip()
    packet = build_packet(expr, session.named)
    session.named[name] = packet
    shown = detached(packet)  # what the host would fill stays unset, for send to fill
    size = len(bytes(shown))
    return MessageResult(
        summary=f"{name} = {shown.summary()} ({size} bytes)", data={"name": name, "len": size}
    )


def _send_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: the node, the device and the packet, as :func:`parse_send`
    reads them."""
    tokens = inv.tokens[1:]
    # As parse_send reads it: a node after "send" unless one starts the line.
    skip = 1 if inv.node is None and tokens and tokens[0].value in check.session.lab.nodes else 0
    if check.current is None and inv.node is None and not skip:
        return  # the current node was set from a reference
    request = parse_send(check.as_run(), inv)
    check.packet(request.expr, tokens[skip + 1].col)


def _send_packet_at(session: Session, args: list[str]) -> str:
    skip = 2 if args and args[0] in session.lab.nodes else 1
    return "packet" if len(args) == skip else ""


def _send_complete(session: Session, args: list[str]) -> list[str]:
    node = session.lab.current
    if not args:
        return [*session.node_names(), *session.lab.nodes[node].devs]
    if len(args) == 1 and args[0] in session.lab.nodes:
        return list(session.lab.nodes[args[0]].devs)
    if args[-1] in _SEND_OPTIONS:
        return []
    return [option for option in _SEND_OPTIONS if option not in args]  # each once


def _let_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: the name, and the packet expression (a name whose expression
    has references names a packet known only at run time)."""
    words = inv.tokens[1:]
    if len(words) < 3 or words[1].value != "=":
        return  # the handler says what is missing
    name = words[0].value
    check.named.pop(name, None)
    check.unknown.discard(name)
    if not name.isidentifier() or name in check.session.registry:
        check.refuse(
            BadArgument(
                f"'{name}' cannot name a packet",
                valid="a Python-style identifier that is not a command",
            ),
            words[0],
        )
    start = words[2].col
    expr = inv.line[start:].strip()
    if check.holds_reference(start, len(inv.line)):
        check.unknown.add(name)  # checked below as far as it can be; built at run time
    try:
        packet = check.packet(expr, start)
    except Exception:
        check.unknown.add(name)  # reported here, not again where it is used
        raise
    if packet is not None and name not in check.unknown:
        check.named[name] = packet


def _let_packet_at(session: Session, args: list[str]) -> str:
    return "packet" if len(args) == 2 and args[1] == "=" else ""


COMMANDS = (
    Command(
        name="send",
        summary="send a packet from a node's device and follow its journey",
        handler=_send,
        check=_send_check,
        packet_at=_send_packet_at,
        complete=_send_complete,
        complete_on_node=True,
        params=(Param("args", kind="rest", metavar="ARGS"),),
        usage_text="send [NODE] DEV PACKET [count N] [seq N] [iv HEX]",
        example='send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64)',
        details="An IP packet (under a bare Ether() at most) is routed from NODE, policy and "
        "XFRM included.\nAn Ethernet frame (Ether(...) with a field, a VLAN tag or a captured "
        "frame) is sent as given out of DEV, like Scapy's sendp: no routing, no XFRM; what it "
        "leaves unset comes from the lab.\nseq and iv pin the ESP sequence number and IV of a "
        "routed packet, so a packet captured on a board can be reproduced bit for bit.\n"
        "Ctrl-C stops a count between two packets; the history keeps the count reached.\n"
        "Every packet of a count is walked stage by stage, as one send is.",
    ),
    Command(
        name="ping",
        summary="ICMP echo from the current node (the reply is a journey too)",
        handler=_ping,
        params=(
            Param("dst", help="address"),
            Param("count", kind="option", metavar="N", short=("-c",)),
        ),
        usage_text="[NODE] ping [-c N|--count N] DST",
        example="pc1 ping 203.0.113.1",
    ),
    Command(
        name="let",
        summary="name a packet for later commands",
        handler=_let,
        check=_let_check,
        packet_at=_let_packet_at,
        params=(Param("args", kind="rest", metavar="NAME = PACKET"),),
        usage_text="let NAME = PACKET",
        example='let p1 = IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)',
    ),
)
