"""The literals of a packet expression: what a layer's arguments may be.

A literal is a number, a string, bytes, None, True or False, a signed number, a
list or tuple of literals, ``*`` between bytes (or a string) and a small integer,
``+`` between bytes or between strings, or ``hex("4500...")`` /
``bytes.fromhex("4500...")``. It is read from the tree ``ast.parse`` made; nothing is
evaluated. ``*`` and ``+`` may not make more than :data:`MAX_BYTES` bytes or
characters. :mod:`esplab.commands.packetexpr` reads the layers and packets on top.
"""

from __future__ import annotations

import ast
from typing import Any

from esplab.errors import PacketExpressionError

__all__ = ["MAX_BYTES", "LiteralReader"]

# A packet expression may not conjure more than this many bytes (b"x" * n).
MAX_BYTES = 65535


def _where(node: ast.AST) -> str:
    col = getattr(node, "col_offset", None)
    return f" at column {col + 1}" if col is not None else ""


class LiteralReader:
    """Reads the literals of the expression ``text``; each refusal names its column."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: ast.AST, what: str, **kw: Any) -> PacketExpressionError:
        return PacketExpressionError(f"{what}{_where(node)} in '{self.text}'", **kw)

    # -- literals ---------------------------------------------------------
    def literal(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float, str, bytes, bool)) or node.value is None:
                return node.value
            raise self.fail(node, f"literal {node.value!r} is not allowed")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.literal(node.operand)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise self.fail(node, "a sign goes only in front of a number")
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.literal(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            return self.repeat(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.literal(node.left), self.literal(node.right)
            if type(left) is not type(right) or not isinstance(left, (bytes, str)):
                raise self.fail(node, "'+' joins only bytes with bytes or text with text")
            return self.check_size(node, left + right)
        if isinstance(node, ast.Call) and self.is_hex_call(node):
            return self.hex_bytes(node)
        raise self.fail(
            node,
            f"'{ast.unparse(node)}' is not a literal",
            valid="numbers, strings, bytes, None, True/False, lists of them, b'x'*N, hex('..')",
        )

    def check_size(self, node: ast.AST, value: Any) -> Any:
        if isinstance(value, (bytes, str)) and len(value) > MAX_BYTES:
            raise self.fail(node, f"{len(value)} bytes is too large", valid=f"at most {MAX_BYTES}")
        return value

    def repeat(self, node: ast.BinOp) -> Any:
        left, right = self.literal(node.left), self.literal(node.right)
        if isinstance(left, int) and not isinstance(left, bool):
            left, right = right, left
        if not isinstance(left, (bytes, str)) or not isinstance(right, int):
            raise self.fail(node, "'*' repeats bytes or text by a whole number")
        if right < 0:
            raise self.fail(
                node,
                f"{len(left)} x {right} bytes: the count {right} is negative",
                valid=f"0 to {MAX_BYTES // max(len(left), 1)}",
            )
        if len(left) * right > MAX_BYTES:
            raise self.fail(
                node, f"{len(left)} x {right} bytes is too large", valid=f"at most {MAX_BYTES}"
            )
        return left * right

    @staticmethod
    def is_hex_call(node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "hex":
            return True
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "fromhex"
            and isinstance(func.value, ast.Name)
            and func.value.id == "bytes"
        )

    def hex_bytes(self, node: ast.Call) -> bytes:
        if len(node.args) != 1 or node.keywords:
            raise self.fail(node, "hex() takes one string of hex digits")
        text = self.literal(node.args[0])
        if not isinstance(text, str):
            raise self.fail(node, "hex() takes one string of hex digits")
        try:
            return bytes.fromhex(text.replace(":", " "))
        except ValueError:
            raise self.fail(node, f"'{text}' is not hex", valid="pairs of hex digits") from None
