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

Field values are checked before Scapy sees them, and refused in one line with the
argument's column: an integer must fit its field and a name must be one the field
knows; a list goes only where the field holds a list (Scapy would make a set of
packets of it); an address field takes literal addresses only (Scapy would resolve a
name through the host's resolver, or expand a network).

Nothing is taken from the machine running the lab: :func:`detached` fixes the fields
Scapy would fill from the host's routes, interfaces and neighbours.
"""

from __future__ import annotations

import ast
import ipaddress
import re
import struct
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from esplab.commands.packetliterals import LiteralReader
from esplab.commands.tokens import shown_text
from esplab.errors import PacketExpressionError, shorten

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = ["build_packet", "detached", "layer_whitelist"]

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


_MAC = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")
_EXAMPLE = {"IPv4": "192.0.2.2", "IPv6": "2001:db8::2", "MAC": "02:00:00:00:00:01"}


def _concrete(fld: Any) -> list[Any]:
    """The fields a declared field may stand for: every choice of a MultipleTypeField,
    the field inside a ConditionalField or Emph."""
    from scapy.fields import MultipleTypeField, _FieldContainer

    if isinstance(fld, MultipleTypeField):
        found = [f for choice in [*(f for f, _ in fld.flds), fld.dflt] for f in _concrete(choice)]
        return found
    while isinstance(fld, _FieldContainer):
        fld = fld.fld
    return [fld]


def _address_kind(fld: Any) -> tuple[str, bool] | None:
    """(IPv4/IPv6/MAC, a list of them) for an address field, else None."""
    from scapy.fields import FieldListField, IP6Field, IPField, MACField
    from scapy.layers.inet6 import IP6ListField

    if isinstance(fld, IPField):
        return "IPv4", False
    if isinstance(fld, IP6Field):
        return "IPv6", False
    if isinstance(fld, MACField):
        return "MAC", False
    if isinstance(fld, IP6ListField):
        return "IPv6", True
    if isinstance(fld, FieldListField):
        inner = _address_kind(fld.field)
        return (inner[0], True) if inner is not None else None
    return None


def _is_address(kind: str, text: str) -> bool:
    if kind == "MAC":
        return _MAC.fullmatch(text) is not None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return address.version == (4 if kind == "IPv4" else 6) and "%" not in text


def _int_range(fld: Any) -> tuple[int, int] | None:
    """The integers a field can hold on the wire, or None for a field of another kind."""
    from scapy.fields import FieldListField, PacketField, PacketListField, StrField, _BitField

    if isinstance(fld, _BitField):
        return 0, (1 << abs(fld.size)) - 1
    # Strings, packets and lists carry a struct format too ("H"), but hold no number.
    if isinstance(fld, (StrField, PacketField, PacketListField, FieldListField)) or getattr(
        fld, "islist", False
    ):
        return None
    fmt = getattr(fld, "fmt", "")
    if not isinstance(fmt, str) or not fmt or fmt[-1] not in "bBhHiIlLqQ":
        return None
    bits = 8 * struct.calcsize(fmt)
    if fmt[-1].islower():
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _flag_names(cls: Any, name: str) -> str | None:
    """What a flags field takes, for its error message."""
    from scapy.fields import FlagsField

    fld = next((f for f in getattr(cls, "fields_desc", ()) if f.name == name), None)
    base = _concrete(fld)[0] if fld is not None else None
    if not isinstance(base, FlagsField):
        return None
    names = [n for n in base.names if n]
    if all(len(n) == 1 for n in names):
        return f"letters from {''.join(names)}, or a number"
    return f"names from {', '.join(names)} joined with +, or a number"


def _reason(exc: BaseException) -> str:
    """Scapy's complaint on one line, without its RawVal advice."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = " ".join(line for line in lines if "RawVal" not in line)
    return text or type(exc).__name__


def detached(packet: Packet) -> Packet:
    """A copy of ``packet`` whose fields that Scapy would fill from the machine running
    the lab (its routes, interfaces and neighbours: an Ethernet or ARP source MAC, an
    Ethernet destination, an IP or IPv6 source) are fixed instead: zeros for a source,
    broadcast for an Ethernet destination (what Scapy uses when no neighbour answers).
    Fields given a value are kept; ``packet`` is not changed."""
    from scapy.fields import MultipleTypeField, SourceIP6Field, SourceIPField
    from scapy.layers.l2 import DestMACField, SourceMACField

    fixed = (
        (DestMACField, "ff:ff:ff:ff:ff:ff"),
        (SourceMACField, "00:00:00:00:00:00"),
        (SourceIPField, "0.0.0.0"),
        (SourceIP6Field, "::"),
    )
    copy = packet.copy()
    layer: Any = copy
    while layer:
        for fld in layer.fields_desc:
            if layer.fields.get(fld.name) is not None:
                continue
            if isinstance(fld, MultipleTypeField):
                fld = fld._find_fld_pkt_val(layer, None)[0]
            base = _concrete(fld)[0]
            value = next((v for cls, v in fixed if isinstance(base, cls)), None)
            if value is not None:
                layer.setfieldval(fld.name, value)
        layer = layer.payload
    return copy


class _Builder(LiteralReader):
    def __init__(self, text: str, named: Mapping[str, Any]) -> None:
        super().__init__(text)
        self.named = named
        self.layers = layer_whitelist()

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
                # the names `let` made come first: the layers are many
                valid=[*sorted(self.named), *sorted(self.layers)],
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
        declared = {f.name: f for f in cls.fields_desc}
        keywords = {kw.arg: kw for kw in node.keywords if kw.arg is not None}
        for key, value in kwargs.items():
            self.check_value(keywords[key], func.id, declared[key], value)
        packet = self.construct(node, cls, args, kwargs, keywords)
        for key, value in kwargs.items():
            if value is not None:
                self.check_built(keywords[key], func.id, packet, value)
        return packet

    # -- field values -------------------------------------------------------
    def bad_value(
        self, kw: ast.keyword, layer: str, what: str, **extra: Any
    ) -> PacketExpressionError:
        return self.fail(kw, f"{layer} {kw.arg} {self.typed(kw)} {what}", **extra)

    def typed(self, kw: ast.keyword) -> str:
        """A keyword argument's value as typed (0x10000 stays hex)."""
        return ast.get_source_segment(self.text, kw.value) or ast.unparse(kw.value)

    def span(self, kw: ast.keyword, bounds: tuple[int, int]) -> str:
        """A field's range, in hex when the value was typed in hex."""
        if self.typed(kw).lower().startswith(("0x", "-0x")):
            return f"{bounds[0]:#x}..{bounds[1]:#x}"
        return f"{bounds[0]}..{bounds[1]}"

    def check_value(self, kw: ast.keyword, layer: str, fld: Any, value: Any) -> None:
        """Refuse, before Scapy sees it, a value Scapy would resolve on the host, expand
        into several packets, or truncate or refuse only when building."""
        from scapy.fields import StrField

        if value is None:
            return
        choices = _concrete(fld)
        if isinstance(value, (list, tuple)) and not any(f.islist for f in choices):
            raise self.bad_value(
                kw, layer, "is a list", valid="one value: a packet expression makes one packet"
            )
        kinds = [k for k in map(_address_kind, choices) if k is not None]
        if kinds:
            self.check_address(
                kw, layer, kinds, value, any(isinstance(f, StrField) for f in choices)
            )
            return
        if len(choices) != 1:
            return
        base = choices[0]
        bounds = _int_range(base)
        if bounds is None or isinstance(value, bool):
            return
        valid = self.span(kw, bounds)
        if isinstance(value, int):
            if not bounds[0] <= value <= bounds[1]:
                raise self.bad_value(kw, layer, "out of range", valid=valid)
        elif isinstance(value, str) and isinstance(getattr(base, "s2i", None), dict):
            if value not in base.s2i:
                raise self.bad_value(
                    kw,
                    layer,
                    "is not a name this field knows",
                    valid=[*base.s2i, valid],
                    value=value,
                )
        elif isinstance(value, (float, bytes)):
            raise self.bad_value(kw, layer, "is not a whole number", valid=valid)

    def check_address(
        self, kw: ast.keyword, layer: str, kinds: list[tuple[str, bool]], value: Any, raw: bool
    ) -> None:
        """An address field takes literal addresses: Scapy resolves a name (through the
        host's resolver) or expands a network into several packets."""
        if raw and isinstance(value, bytes):
            return  # the raw-bytes choice of a MultipleTypeField (ARP with odd lengths)
        names = sorted({k for k, _ in kinds}, key=list(_EXAMPLE).index)
        many = all(is_list for _, is_list in kinds)
        items = value if many and isinstance(value, (list, tuple)) else [value]
        if many and not isinstance(value, (list, tuple)):
            items = [None]
        for item in items:
            if isinstance(item, str) and any(_is_address(k, item) for k in names):
                continue
            kind = " or ".join(names)
            example = _EXAMPLE[names[0]]
            valid = (
                f"a list of {kind} addresses such as [{example!r}]"
                if many
                else (f"a literal {kind} address such as {example}")
            )
            shown = self.typed(kw)
            hint: str | None = "the lab does not resolve names"
            if isinstance(item, str) and "/" in item:
                hint = "a network would make one packet per address; give one address"
            elif names == ["MAC"]:
                hint = None
            article = "a" if kind == "MAC" else "an"
            what = (
                f"is not a list of {kind} addresses" if many else f"is not {article} {kind} address"
            )
            raise self.fail(kw, f"{layer} {kw.arg} {shown} {what}", valid=valid, hint=hint)

    def check_built(self, kw: ast.keyword, layer: str, packet: Packet, typed: Any) -> None:
        """The field, as Scapy holds it, must go on the wire (an enum or flag name it
        took, a length that does not fit...); an address must be of the kind the
        layer's other fields select (ARP's ptype and plen)."""
        from scapy.fields import MultipleTypeField

        name = kw.arg or ""
        value = packet.getfieldval(name)
        fld: Any = packet.get_field(name)
        if isinstance(fld, MultipleTypeField):
            chosen = _concrete(fld._find_fld_pkt_val(packet, typed)[0])[0]
            if isinstance(typed, str) and _address_kind(chosen) is None:
                kinds = " or ".join(
                    sorted({k[0] for k in map(_address_kind, _concrete(fld)) if k is not None})
                )
                raise self.bad_value(
                    kw,
                    layer,
                    f"does not fit the address kind {layer}'s other fields select",
                    valid=f"an {kinds} address matching them (e.g. ARP ptype 0x86dd for IPv6)",
                )
            fld = chosen
        fld = _concrete(fld)[0]
        try:
            fld.addfield(packet, b"", value)
        except Exception as exc:  # Scapy's struct or conversion errors
            bounds = _int_range(fld)
            valid = self.span(kw, bounds) if bounds else None
            raise self.bad_value(kw, layer, f"does not build: {_reason(exc)}", valid=valid) from exc

    def construct(
        self,
        node: ast.AST,
        cls: Callable[..., Packet],
        args: list[Any],
        kwargs: dict[str, Any],
        keywords: Mapping[str, ast.keyword],
    ) -> Packet:
        try:
            return cls(*args, **kwargs)
        except Exception as exc:  # scapy's own checks: bad enum or flag name, ...
            for key, value in kwargs.items():
                try:
                    cls(**{key: value})
                except Exception as alone:  # this argument is the culprit
                    layer = getattr(cls, "__name__", "layer")
                    what = f"is refused by Scapy: {_reason(alone)}"
                    raise self.bad_value(
                        keywords[key], layer, what, valid=_flag_names(cls, key)
                    ) from exc
            what = f"{ast.unparse(node)} is refused by Scapy: {_reason(exc)}"
            raise self.fail(node, what) from exc


def build_packet(text: str, named: Mapping[str, Any] | None = None) -> Packet:
    """The packet ``text`` describes, or a PacketExpressionError; never evaluates code."""
    source = text.strip()
    if not source:
        raise PacketExpressionError("empty packet expression", valid='e.g. IP(dst="192.0.2.2")')
    try:
        tree = ast.parse(source, mode="eval")
        packet = _Builder(source, named or {}).packet(tree.body)
    except SyntaxError as exc:
        col = f"at column {exc.offset}" if exc.offset else "at its end"
        raise PacketExpressionError(
            f"packet expression '{shorten(source, 60)}' does not parse {col}: {exc.msg}",
            valid='Scapy syntax, e.g. IP(dst="192.0.2.2")/UDP(dport=5001)/Raw(b"x"*64)',
        ) from None
    except UnicodeEncodeError as exc:  # a lone surrogate: a byte that was not UTF-8
        raise PacketExpressionError(
            f"packet expression holds '{shown_text(source[exc.start : exc.end])}' at column "
            f"{exc.start + 1}, which is not text",
            valid="UTF-8 text",
        ) from None
    except (RecursionError, MemoryError):
        raise PacketExpressionError(
            f"packet expression of {len(source)} characters nests too deeply",
            valid="a few layers joined with /, as Scapy writes them",
        ) from None
    try:
        bytes(detached(packet))
    except Exception as exc:
        raise PacketExpressionError(f"'{source}' does not build: {_reason(exc)}") from exc
    return packet
