"""node: show or change the current node, the one commands act on by default."""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import MessageResult, Result

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


def _node_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: the node exists; the lines after this one act on it."""
    name = inv.args["name"]
    if name is None:
        return
    token = inv.tokens[1]
    if check.holds_reference(token.col, token.col + len(token.raw)):
        check.current = None  # known at run time
        return
    check.session.lab.node(str(name))
    check.current = str(name)


COMMANDS = (
    Command(
        name="node",
        nodeless="node NAME picks the current node",
        summary="show or change the current node (commands act on it by default)",
        handler=_node,
        check=_node_check,
        params=(
            Param(
                "name", optional=True, choices=lambda s: list(s.lab.nodes), validate_choices=False
            ),
        ),
        example="node host",
    ),
)
