"""Which field every byte of a packet belongs to: the colours of the hexdumps.

:func:`field_spans` walks a packet's layers with Scapy's own field codecs on the
packet's bytes and returns one :class:`FieldSpan` per field (fields sharing a byte
are merged). Given an :class:`EspLayout` (where the IV, padding, trailer and ICV of
an ESP packet lie, which only the SA knows) it splits the ESP payload too.
:func:`layer_chain` names the layers (``IP``, ``IP[2]``, ``inner IP``) the same way
for the spans and for :mod:`esplab.diff`.

Scapy is imported inside the functions that need it, so importing this module
costs nothing at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = [
    "ROLES",
    "TRAILER_LAYER",
    "EspLayout",
    "FieldSpan",
    "field_spans",
    "layer_chain",
    "redissect",
]

#: Byte roles the hexdumps colour the same way wherever they appear.
ROLES = ("esp-header", "iv", "payload", "padding", "pad-len", "next-header", "icv", "mtk-tag")
#: The layer name the decrypted ESP trailer fields are reported under.
TRAILER_LAYER = "ESPTrailer"

_ESP_HEADER = 8  # SPI and sequence number, RFC 4303 2.1 and 2.2
_MTK_TAG_FIELDS = frozenset({"tpid_sel", "unused", "sa_dis", "port_mask", "pcp", "dei", "vid"})
_TRAILER_ROLES = {
    "data": "payload",
    "padding": "padding",
    "pad_len": "pad-len",
    "nh": "next-header",
    "icv": "icv",
}


@dataclass(frozen=True)
class FieldSpan:
    """Bytes ``[start, end)`` of a packet belong to ``layer.field``.

    ``depth`` is the layer's position in the packet (the colour of the tree);
    ``role`` is one of :data:`ROLES` for bytes every view colours alike.
    """

    layer: str
    field: str
    start: int
    end: int
    depth: int = 0
    role: str = ""


@dataclass(frozen=True)
class EspLayout:
    """Where the parts of one ESP packet lie: enough to colour its bytes.

    ``offset`` is where the ESP header starts in the packet's bytes; ``pad_len``
    is None when the payload could not be decrypted.
    """

    offset: int
    iv_len: int
    icv_len: int
    pad_len: int | None = None

    def as_data(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "iv_len": self.iv_len,
            "icv_len": self.icv_len,
            "pad_len": self.pad_len,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> EspLayout | None:
        """The layout in a result's ``data["esp"]``; None when absent or malformed."""
        if not data:
            return None
        try:
            pad = data.get("pad_len")
            return cls(
                int(data["offset"]),
                int(data["iv_len"]),
                int(data["icv_len"]),
                None if pad is None else int(pad),
            )
        except (KeyError, TypeError, ValueError):
            return None


def layer_chain(packet: Packet, prefix: str = "") -> list[tuple[str, Packet]]:
    """``(name, layer)`` for each layer; a repeated class is numbered (``IP[2]``)."""
    out: list[tuple[str, Packet]] = []
    seen: dict[str, int] = {}
    layer: Any = packet
    while layer is not None and len(out) < 64:
        if layer.__class__.__name__ == "NoPayload":
            break
        base = layer.__class__.__name__
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}[{seen[base]}]"
        out.append((prefix + name, layer))
        layer = layer.payload
    return out


def redissect(packet: Packet) -> Packet:
    """A dissected copy, so built and captured packets compare alike."""
    try:
        return packet.__class__(bytes(packet))
    except Exception:  # a packet that does not round-trip is compared as built
        return packet


def _bit_field_ranges(layer: Packet, header: bytes) -> list[tuple[str, int, int]]:
    """``(field, start, end)`` byte ranges inside one layer's header bytes.

    Fields sharing a byte are merged (``version/ihl``); a little-endian bit-field
    word (``tot_size``) is one range, since its bits are scattered over its bytes.
    """
    from scapy.fields import _BitField

    total = len(header)
    rest: Any = header
    bit = 0
    ranges: list[tuple[list[str], int, int]] = []
    group_end = -1
    for fld in layer.fields_desc:
        if isinstance(rest, bytes) and not rest and bit:
            break
        if isinstance(fld, _BitField) and fld.rev and fld.tot_size > 1 and bit % 8 == 0:
            group_end = bit // 8 + fld.tot_size
        rest, value = fld.getfield(layer, rest)
        left = len(rest[0]) if isinstance(rest, tuple) else len(rest)
        new_bit = (total - left) * 8 + (rest[1] if isinstance(rest, tuple) else 0)
        if new_bit == bit or (fld.isconditional and value is None):
            continue
        start, end = bit // 8, -(-new_bit // 8)
        if start < group_end:
            start, end = min(start, group_end - 1), max(end, group_end)
        if ranges and start < ranges[-1][2]:
            names, first, last = ranges[-1]
            ranges[-1] = ([*names, fld.name], first, max(last, end))
        else:
            ranges.append(([fld.name], start, end))
        bit = new_bit
    if bit < total * 8:
        ranges.append((["(rest)"], -(-bit // 8), total))
    return [(_join(names), start, end) for names, start, end in ranges]


def _join(names: Sequence[str]) -> str:
    return "/".join(names) if len(names) <= 3 else f"{names[0]}/.../{names[-1]}"


def _role(layer: Packet, name: str) -> str:
    cls = layer.__class__.__name__
    if cls == "ESP" and name in ("spi", "seq"):
        return "esp-header"
    if cls == "ESP" and name == "data":
        return "payload"
    if cls == "MTKEther" and any(n in _MTK_TAG_FIELDS for n in name.split("/")):
        return "mtk-tag"
    if cls.startswith(TRAILER_LAYER):
        return _TRAILER_ROLES.get(name, "")
    return ""


def _trailer_ranges(layer: Any) -> list[tuple[str, int, int]]:
    """ESPTrailer dissects from its end; its fields are laid out by their lengths."""
    data = layer.getfieldval("data")
    parts = [
        ("data", len(bytes(data)) if data is not None else 0),
        ("padding", len(layer.getfieldval("padding") or b"")),
        ("pad_len", 1),
        ("nh", 1),
        ("icv", len(layer.getfieldval("icv") or b"")),
    ]
    out: list[tuple[str, int, int]] = []
    pos = 0
    for name, size in parts:
        if size:
            out.append((name, pos, pos + size))
        pos += size
    return out


def _esp_spans(name: str, depth: int, start: int, end: int, esp: EspLayout) -> list[FieldSpan]:
    """The ESP payload split by what the SA says: IV, data, padding, trailer, ICV."""
    body = start + _ESP_HEADER
    icv = max(body, end - esp.icv_len)
    iv = min(icv, body + esp.iv_len)
    spans = [FieldSpan(name, "iv", body, iv, depth, "iv")]
    if esp.pad_len is not None and icv - iv >= 2 + esp.pad_len:
        pad = icv - 2 - esp.pad_len
        spans += [
            FieldSpan(name, "data", iv, pad, depth, "payload"),
            FieldSpan(TRAILER_LAYER, "padding", pad, icv - 2, depth, "padding"),
            FieldSpan(TRAILER_LAYER, "pad_len", icv - 2, icv - 1, depth, "pad-len"),
            FieldSpan(TRAILER_LAYER, "nh", icv - 1, icv, depth, "next-header"),
        ]
    else:
        spans.append(FieldSpan(name, "data", iv, icv, depth, "payload"))
    spans.append(FieldSpan(TRAILER_LAYER, "icv", icv, end, depth, "icv"))
    return [s for s in spans if s.end > s.start]


def field_spans(packet: Packet, esp: EspLayout | None = None) -> list[FieldSpan]:
    """Which field each byte of ``bytes(packet)`` belongs to, layer by layer.

    Built from Scapy's field codecs on the packet's own bytes. A layer whose
    fields cannot be walked is one span named after the layer. With ``esp``, the
    ESP payload is split into IV, data, padding, pad length, next header and ICV.
    """
    data = bytes(packet)
    total = len(data)
    dissected = redissect(packet)
    spans: list[FieldSpan] = []
    for depth, (name, layer) in enumerate(layer_chain(dissected)):
        try:
            start = total - len(bytes(layer))
            end = total - len(bytes(layer.payload))
        except Exception:  # a layer that does not build: leave its bytes uncoloured
            continue
        if end <= start:
            continue
        is_esp = layer.__class__.__name__ == "ESP"
        if is_esp and esp is not None and esp.offset == start:
            spans.append(FieldSpan(name, "spi", start, start + 4, depth, "esp-header"))
            spans.append(FieldSpan(name, "seq", start + 4, start + 8, depth, "esp-header"))
            spans.extend(_esp_spans(name, depth, start, end, esp))
            continue
        try:
            if layer.__class__.__name__.startswith(TRAILER_LAYER):
                ranges = _trailer_ranges(layer)
            else:
                ranges = _bit_field_ranges(layer, data[start:end])
        except Exception:  # fields Scapy cannot re-read from the bytes: one span
            ranges = [("(layer)", 0, end - start)]
        for fname, lo, hi in ranges:
            spans.append(FieldSpan(name, fname, start + lo, start + hi, depth, _role(layer, fname)))
    return spans
