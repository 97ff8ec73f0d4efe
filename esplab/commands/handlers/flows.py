"""flows: the sink of each node, which counts what was delivered to it, per flow.

A packet delivered locally (UDP, TCP, ICMP or anything else addressed to the node)
is counted under (protocol, source, source port, destination, destination port)
with its IP length, so a lab can check that traffic arrived, and how much of it.
"""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TableResult
from esplab.model.kernel.node import Node

__all__ = ["COMMANDS"]

_PROTOS = {1: "icmp", 6: "tcp", 17: "udp", 50: "esp", 58: "icmpv6"}


def _endpoint(addr: object, port: int, proto: int) -> str:
    text = f"[{addr}]" if ":" in str(addr) else str(addr)
    return f"{text}:{port}" if proto in (6, 17) else text


def _flows(session: Session, inv: Invocation) -> Result:
    nodes: list[Node] = (
        [session.lab.node(inv.node)] if inv.node else list(session.lab.nodes.values())
    )
    what = inv.args["action"]
    if what == "clear":
        n = sum(len(node.flows) for node in nodes)
        for node in nodes:
            node.flows.clear()
        return MessageResult(summary=f"{n} flow(s) cleared", data={"cleared": n})
    rows: list[tuple[str, ...]] = []
    data: list[dict[str, object]] = []
    for node in nodes:
        for (src, dst, proto, sport, dport), flow in sorted(
            node.flows.items(), key=lambda item: (item[0][2], str(item[0][0]), item[0][3:])
        ):
            name = _PROTOS.get(proto, str(proto))
            rows.append(
                (
                    node.name,
                    name,
                    _endpoint(src, sport, proto),
                    _endpoint(dst, dport, proto),
                    str(flow.packets),
                    str(flow.bytes),
                )
            )
            data.append(
                {
                    "node": node.name,
                    "proto": proto,
                    "src": str(src),
                    "sport": sport,
                    "dst": str(dst),
                    "dport": dport,
                    "packets": flow.packets,
                    "bytes": flow.bytes,
                }
            )
    where = nodes[0].name if len(nodes) == 1 else "all nodes"
    return TableResult(
        summary=f"{where}: {len(rows)} flow(s) delivered",
        title="flows delivered to the sink",
        columns=("node", "proto", "from", "to", "packets", "bytes"),
        rows=rows,
        data={"flows": data},
    )


COMMANDS = (
    Command(
        name="flows",
        summary="what each node's sink received, per flow (packets and IP bytes), or clear it",
        handler=_flows,
        params=(Param("action", optional=True, choices=("clear",)),),
        usage_text="[NODE] flows [clear]",
        example="host flows",
        details="Without a node prefix every node is shown (or cleared): flows, host flows, "
        "flows clear, pc1 flows clear.",
    ),
)
