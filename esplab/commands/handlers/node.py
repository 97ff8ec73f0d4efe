"""node: show or change the current node, the one commands act on by default."""

from __future__ import annotations

from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result
from esplab.commands.session import Session

__all__ = ["COMMANDS"]


def _node(session: Session, inv: Invocation) -> Result:
    name = inv.args["name"]
    if name is None:
        return MessageResult(
            summary=f"current node: {session.lab.current}", data={"node": session.lab.current}
        )
    session.lab.node(name)
    session.lab.current = name
    return MessageResult(summary=f"current node: {name}", data={"node": name})


COMMANDS = (
    Command(
        name="node",
        nodeless="node NAME picks the current node",
        summary="show or change the current node (commands act on it by default)",
        handler=_node,
        params=(
            Param(
                "name", optional=True, choices=lambda s: list(s.lab.nodes), validate_choices=False
            ),
        ),
        example="node host",
    ),
)
