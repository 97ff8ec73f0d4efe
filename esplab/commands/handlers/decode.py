"""decode LAYER HEX: dissect any esplab layer (or a common Scapy one) from pasted hex."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from esplab.commands.base import Session
from esplab.commands.hexinput import is_dump_line, parse_hex
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import PacketResult, Result
from esplab.errors import BadArgument, DecodeError

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = ["COMMANDS", "decodable_layers", "resolve_layer"]

# Short names users type for the records they meet most.
ALIASES = {
    "cdr": "EIP93CommandDescriptor",
    "cmd": "EIP93CommandDescriptor",
    "rdr": "EIP93ResultDescriptor",
    "result": "EIP93ResultDescriptor",
    "sa": "EIP93SARecord",
    "state": "EIP93StateRecord",
    "mtk": "MTKEther",
    "mtk-rx": "MTKEtherRx",
    "qdma": "QDMADescriptor",
    "trailer": "ESPTrailer",
    "offload": "XfrmOffload",
    "xdp": "XDPDesc",
}

# Fixed-size records: bytes past their end are not part of them.
_RECORDS = frozenset(
    {
        "EIP93CommandDescriptor",
        "EIP93ResultDescriptor",
        "EIP93SARecord",
        "EIP93StateRecord",
        "XDPDesc",
    }
)

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")

# Headers whose shortest valid form is not what an all-default instance builds.
_MIN_LEN = {"ESPTrailer": 2, "Ether": 14, "IP": 20, "IPv6": 40, "ESP": 8, "UDP": 8}


@cache
def decodable_layers() -> dict[str, type[Packet]]:
    """esplab's layers plus the Scapy headers a capture starts with (imported on first use)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.ipsec import ESP
    from scapy.layers.l2 import Ether

    from esplab.layers import LAYERS

    return {**LAYERS, "Ether": Ether, "IP": IP, "IPv6": IPv6, "ESP": ESP, "UDP": UDP}


def layer_choices(session: Session | None = None) -> list[str]:
    return [*decodable_layers(), *ALIASES]


def resolve_layer(name: str) -> type[Packet]:
    layers = decodable_layers()
    lowered = {k.lower(): v for k, v in layers.items()}
    key = ALIASES.get(name.lower(), name).lower()
    if key in lowered:
        return lowered[key]
    raise BadArgument(f"unknown layer '{name}'", valid=[*ALIASES, *layers], value=name)


def _is_layer(name: str) -> bool:
    try:
        resolve_layer(name)
    except BadArgument:
        return False
    return True


def _glued(inv: Invocation) -> tuple[str, str] | None:
    """A dump pasted straight after 'decode sa' arrives as 'sa08000000: 133a1310 ...':
    the layer name and the text from the dump's first address on, when exactly one
    split gives a known layer followed by a dump line (address column included)."""
    name = inv.args["layer"]
    if _is_layer(name):
        return None
    token = next((t for t in inv.tokens[1:] if t.value == name and t.raw == name), None)
    if token is None:
        return None
    after = inv.line[token.col + len(token.raw) :]
    readings = []
    longest = max(len(n) for n in layer_choices())  # only a layer name's length can cut
    for cut in range(1, min(len(name), longest + 1)):
        head, address = name[:cut], name[cut:]
        if address[0] not in _HEX_DIGITS or not _is_layer(head):
            continue
        text = address + after
        if is_dump_line(text.splitlines()[0]):
            readings.append((head, text))
    return readings[0] if len(readings) == 1 else None


def min_length(cls: type[Packet]) -> int:
    name = cls.__name__
    if name in _MIN_LEN:
        return _MIN_LEN[name]
    return len(bytes(cls()))


def _decode(session: Session, inv: Invocation) -> Result:
    glued = _glued(inv)
    name, raw = glued if glued else (inv.args["layer"], inv.rest_raw)
    cls = resolve_layer(name)
    words: bool | None = True if inv.args["words"] else False if inv.args["bytes"] else None
    if inv.args["words"] and inv.args["bytes"]:
        raise BadArgument("--words and --bytes exclude each other", valid="one of them, or none")
    # A dump with address columns is read as pasted (lines, and the spaces before an
    # ASCII column); anything else as its words, quotes removed as everywhere.
    dump = any(is_dump_line(line) for line in raw.splitlines())
    data = parse_hex(raw if dump else " ".join(inv.args["hex"]), words=words)
    need = min_length(cls)
    if len(data) < need:
        raise DecodeError(
            f"{cls.__name__} needs at least {need} bytes, got {len(data)}",
            hint="paste the whole record",
        )
    try:
        packet = cls(data)
    except Exception as exc:  # scapy raises many kinds; the user sees one line
        raise DecodeError(f"{cls.__name__} cannot dissect these {len(data)} bytes: {exc}") from exc
    notes = []
    if cls.__name__ in _RECORDS and len(data) > need:
        notes.append(f"{len(data) - need} bytes after the {need}-byte record are shown as payload")
    return PacketResult(
        summary=f"{cls.__name__}, {len(data)} bytes",
        packet=packet,
        title=f"{cls.__name__} ({len(data)} bytes)",
        notes=notes,
        data={"layer": cls.__name__, "length": len(data), "hex": data.hex()},
    )


COMMANDS = (
    Command(
        name="decode",
        summary="dissect a layer from hex pasted from a board (record, descriptor or frame)",
        handler=_decode,
        params=(
            Param(
                "layer",
                help="layer name or alias (sa, cdr, rdr, mtk, ...)",
                choices=layer_choices,
                validate_choices=False,
            ),
            Param("words", kind="flag", help="read 32-bit little-endian words"),
            Param("bytes", kind="flag", help="read bytes in order"),
            Param("hex", kind="rest", metavar="HEX", help="the hex dump"),
        ),
        example="decode rdr 1fb70000: 06001112 1000002c 10000014 08000000 00000000 00000000 "
        "00050001 00800074",
        details=(
            "HEX may be plain hex, an xxd/hexdump -C dump, or a memory dump of 32-bit words "
            "(u-boot md.l or devmem output, read as little-endian words). A dump of several "
            "lines may be pasted whole after 'decode LAYER': its address and ASCII columns "
            "are dropped, whatever characters they hold."
        ),
        raw_rest=True,
    ),
)
