"""Packet expressions in Scapy's syntax, built from a whitelist; nothing is evaluated.

``Ether()/IP(dst="192.0.2.2")/UDP(dport=5001)/Raw(b"x"*64)`` is parsed with
``ast.parse`` (which only parses) and then walked: the only things allowed are

* calls of whitelisted layer classes (Scapy's and esplab's) with literal
  arguments (numbers, strings, bytes, None, booleans, and lists/tuples of them);
* ``/`` between layers or named packets;
* ``*`` between bytes (or a string) and a small integer, ``+`` between bytes;
* ``hex("4500...")`` and ``bytes.fromhex("4500...")`` for bytes from hex;
* names of packets the session already knows (``let p1 = ...``).

Anything else (attribute access, other calls, comprehensions, lambdas, names
outside the whitelist) is refused with the position and the reason, before any
object is created. Lab files go through the same function.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from esplab.errors import PacketExpressionError

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = ["MAX_BYTES", "build_packet", "layer_whitelist"]

# A packet expression may not conjure more than this many bytes (b"x" * n).
MAX_BYTES = 65535

_SCAPY_LAYERS = {
    "scapy.layers.l2": ("Ether", "Dot1Q", "Dot1AD", "ARP", "CookedLinux", "CookedLinuxV2"),
    "scapy.layers.inet": ("IP", "UDP", "TCP", "ICMP", "IPOption", "IPOption_RR"),
    "scapy.layers.inet6": (
        "IPv6",
        "IPv6ExtHdrHopByHop",
        "IPv6ExtHdrRouting",
        "IPv6ExtHdrDestOpt",
        "IPv6ExtHdrFragment",
        "ICMPv6EchoRequest",
        "ICMPv6EchoReply",
        "ICMPv6PacketTooBig",
    ),
    "scapy.layers.ipsec": ("ESP", "AH"),
    "scapy.packet": ("Raw", "Padding"),
}


@cache
def layer_whitelist() -> dict[str, type[Packet]]:
    """Every layer class a packet expression may call, by name."""
    import importlib

    from esplab.layers import LAYERS

    table: dict[str, type[Packet]] = {}
    for module_name, names in _SCAPY_LAYERS.items():
        module = importlib.import_module(module_name)
        for layer_name in names:
            table[layer_name] = getattr(module, layer_name)
    table.update(LAYERS)
    return table


def _where(node: ast.AST) -> str:
    col = getattr(node, "col_offset", None)
    return f" at column {col + 1}" if col is not None else ""


class _Builder:
    def __init__(self, text: str, named: Mapping[str, Any]) -> None:
        self.text = text
        self.named = named
        self.layers = layer_whitelist()

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
        if right < 0 or len(left) * right > MAX_BYTES:
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

    # -- packets ----------------------------------------------------------
    def packet(self, node: ast.AST) -> Packet:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self.packet(node.left)
            right = self.packet(node.right)
            return left / right
        if isinstance(node, ast.Name):
            if node.id in self.named:
                value = self.named[node.id]
                return value.copy() if hasattr(value, "copy") else value  # type: ignore[no-any-return]
            if node.id in self.layers:
                return self.layers[node.id]()
            raise self.fail(
                node,
                f"unknown name '{node.id}'",
                valid=sorted([*self.layers, *self.named]),
                value=node.id,
            )
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            return self.layers["Raw"](load=node.value)
        raise self.fail(
            node,
            f"'{ast.unparse(node)}' is not a layer",
            valid="layer calls joined by '/', such as IP(dst=\"192.0.2.2\")/UDP()",
        )

    def call(self, node: ast.Call) -> Packet:
        func = node.func
        if not isinstance(func, ast.Name):
            raise self.fail(node, f"'{ast.unparse(func)}' cannot be called", valid="layer names")
        cls = self.layers.get(func.id)
        if cls is None:
            raise self.fail(
                node,
                f"'{func.id}' is not a layer",
                valid=sorted(self.layers),
                value=func.id,
            )
        if len(node.args) > 1:
            raise self.fail(node, f"{func.id}() takes at most one positional argument (its bytes)")
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(kw.value, "'**' is not allowed")
            kwargs[kw.arg] = self.check_size(kw.value, self.literal(kw.value))
        fields = {f.name for f in cls.fields_desc}
        unknown = [k for k in kwargs if k not in fields]
        if unknown:
            raise self.fail(
                node,
                f"{func.id} has no field '{unknown[0]}'",
                valid=[f.name for f in cls.fields_desc],
                value=unknown[0],
            )
        args: list[Any] = [self.literal(a) for a in node.args]
        if args and not isinstance(args[0], (bytes, str)):
            raise self.fail(node, f"{func.id}(...) takes bytes as its positional argument")
        return self.construct(node, cls, args, kwargs)

    def construct(
        self, node: ast.AST, cls: Callable[..., Packet], args: list[Any], kwargs: dict[str, Any]
    ) -> Packet:
        try:
            return cls(*args, **kwargs)
        except Exception as exc:  # scapy's own checks: bad address, bad enum name, ...
            raise self.fail(node, f"{ast.unparse(node)} is refused by Scapy: {exc}") from exc


def build_packet(text: str, named: Mapping[str, Any] | None = None) -> Packet:
    """The packet ``text`` describes, or a PacketExpressionError; never evaluates code."""
    source = text.strip()
    if not source:
        raise PacketExpressionError("empty packet expression", valid='e.g. IP(dst="192.0.2.2")')
    try:
        tree = ast.parse(source, mode="eval")
        packet = _Builder(source, named or {}).packet(tree.body)
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise PacketExpressionError(
            f"packet expression does not parse{col}: {exc.msg}",
            valid='Scapy syntax, e.g. IP(dst="192.0.2.2")/UDP(dport=5001)/Raw(b"x"*64)',
        ) from None
    except (RecursionError, MemoryError):
        raise PacketExpressionError(
            f"packet expression of {len(source)} characters nests too deeply",
            valid="a few layers joined with /, as Scapy writes them",
        ) from None
    try:
        bytes(packet)
    except Exception as exc:
        raise PacketExpressionError(f"'{source}' does not build: {exc}") from exc
    return packet
