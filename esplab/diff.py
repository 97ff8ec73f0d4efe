"""Comparing packets: field by field, byte by byte, and through ESP when the SA is known.

Everything here is a pure function of its arguments; nothing prints, nothing in
the lab changes, and an ``EspSA`` handed in is only read (its replay window and
counters stay as they were).

* :func:`diff_packets` walks two Scapy packets layer by layer and returns one
  :class:`FieldDiff` ``(layer, field, left, right)`` per field that differs.
  With an SA it also opens both ESP payloads and compares what RFC 4303 section 2
  hides under the encryption: the IV, the padding, the pad length, the next
  header and the ICV (as the fields of an ``ESPTrailer`` layer), then the inner
  packets layer by layer (named ``inner IP``, ...).
* :func:`byte_ranges` gives the ranges of differing bytes of two byte strings.
* :func:`field_spans` maps every byte of a packet to the field it belongs to,
  from Scapy's own field codecs; the hexdumps and the byte view use it.
* :func:`open_esp` is a stateless ESP opener for display: it decrypts even when
  the ICV does not verify (and says so), which ``esplab.model.esp.decrypt`` (the
  receive path, with its counters and replay window) rightly refuses to do.

Scapy and the ESP core are imported inside the functions that need them, so
importing this module costs nothing at start-up.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.model.esp_sa import EspSA

__all__ = [
    "ROLES",
    "TRAILER_LAYER",
    "EspLayout",
    "EspOpened",
    "FieldDiff",
    "FieldSpan",
    "IgnoreRules",
    "byte_ranges",
    "diff_packets",
    "field_spans",
    "find_esp",
    "format_value",
    "layer_chain",
    "open_esp",
]

#: Byte roles the hexdumps colour the same way wherever they appear.
ROLES = ("esp-header", "iv", "payload", "padding", "pad-len", "next-header", "icv", "mtk-tag")
#: The layer name the decrypted ESP trailer fields are reported under.
TRAILER_LAYER = "ESPTrailer"

_ESP_HEADER = 8  # SPI and sequence number, RFC 4303 2.1 and 2.2
_INNER = "inner "
_MTK_TAG_FIELDS = frozenset({"tpid_sel", "unused", "sa_dis", "port_mask", "pcp", "dei", "vid"})
_TRAILER_ROLES = {"data": "payload", "padding": "padding", "pad_len": "pad-len",
                  "nh": "next-header", "icv": "icv"}


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class FieldDiff:
    """One field that differs: ``(layer, field, left, right)``.

    ``left``/``right`` are the field values (None when the layer is missing on
    that side); ``left_text``/``right_text`` are how Scapy shows them and take no
    part in equality.
    """

    layer: str
    field: str
    left: Any
    right: Any
    left_text: str = dataclass_field(default="", compare=False, repr=False)
    right_text: str = dataclass_field(default="", compare=False, repr=False)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.layer, self.field, self.left, self.right))

    def row(self) -> tuple[str, str, str, str]:
        """The four cells of a table row."""
        return (self.layer, self.field, self.left_text or format_value(self.left),
                self.right_text or format_value(self.right))


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
        return {"offset": self.offset, "iv_len": self.iv_len, "icv_len": self.icv_len,
                "pad_len": self.pad_len}

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> EspLayout | None:
        """The layout in a result's ``data["esp"]``; None when absent or malformed."""
        if not data:
            return None
        try:
            pad = data.get("pad_len")
            return cls(int(data["offset"]), int(data["iv_len"]), int(data["icv_len"]),
                       None if pad is None else int(pad))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class EspOpened:
    """One ESP packet opened with its SA (RFC 4303 section 2, figure 1)."""

    offset: int
    spi: int
    seq: int
    iv: bytes
    data: bytes
    padding: bytes
    pad_len: int
    next_header: int
    icv: bytes
    icv_ok: bool

    @property
    def layout(self) -> EspLayout:
        return EspLayout(self.offset, len(self.iv), len(self.icv), self.pad_len)

    def trailer(self) -> dict[str, Any]:
        """The decrypted trailer as the fields of an ``ESPTrailer`` layer."""
        return {"padding": self.padding, "pad_len": self.pad_len, "nh": self.next_header,
                "icv": self.icv, "icv_ok": self.icv_ok}

    def as_data(self) -> dict[str, Any]:
        """Plain data for a result (labs, JSON) and for the renderer's colours."""
        return {**self.layout.as_data(), "spi": f"{self.spi:#010x}", "seq": self.seq,
                "iv": self.iv.hex(), "padding": self.padding.hex(),
                "next_header": self.next_header, "icv": self.icv.hex(),
                "icv_ok": self.icv_ok}


# --------------------------------------------------------------------------- values


def format_value(value: Any, limit: int = 24) -> str:
    """A short, readable form of a field value: bytes as hex, cut after ``limit`` bytes."""
    if value is None:
        return "-"
    if isinstance(value, (bytes, bytearray)):
        if not value:
            return "(empty)"
        if len(value) <= limit:
            return bytes(value).hex()
        return f"{bytes(value[:limit]).hex()}... ({len(value)} bytes)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    summary = getattr(value, "summary", None)
    if callable(summary) and hasattr(value, "fields_desc"):
        return str(summary())
    return str(value)


def _shown(layer: Packet, name: str, value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return format_value(value)
    try:
        return str(layer.get_field(name).i2repr(layer, value))
    except Exception:  # a value Scapy cannot show still shows, plainly
        return format_value(value)


def _bytes_texts(left: bytes, right: bytes, window: int = 12) -> tuple[str, str]:
    """Long byte strings shown around their first difference."""
    if max(len(left), len(right)) <= 24:
        return format_value(left), format_value(right)
    first = next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
                 min(len(left), len(right)))
    lo = max(0, first - 4)

    def show(value: bytes) -> str:
        part = value[lo : lo + window].hex()
        more = "..." if lo + window < len(value) else ""
        return f"{'...' if lo else ''}{part}{more} ({len(value)} bytes, differ from {first})"

    return show(left), show(right)


def _same(left: Any, right: Any) -> bool:
    if hasattr(left, "fields_desc") or hasattr(right, "fields_desc"):
        return bytes(left) == bytes(right) if type(left) is type(right) else False
    try:
        return bool(left == right)
    except Exception:  # exotic values: compare what they look like
        return repr(left) == repr(right)


# --------------------------------------------------------------------------- layers


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


def _redissect(packet: Packet) -> Packet:
    """A dissected copy, so built and captured packets compare alike."""
    try:
        return packet.__class__(bytes(packet))
    except Exception:  # a packet that does not round-trip is compared as built
        return packet


class IgnoreRules:
    """``NAME`` (a field in any layer, or a whole layer), ``LAYER.FIELD``, ``LAYER.*``.

    Names are case-insensitive; a layer name also matches the same layer inside
    ESP (``IP.ttl`` covers ``inner IP``).
    """

    def __init__(self, specs: Iterable[str] = ()) -> None:
        self.fields: set[str] = set()
        self.pairs: set[tuple[str, str]] = set()
        self.layers: set[str] = set()
        for spec in specs:
            raw = spec.strip()
            text = raw.lower()
            layer, dot, name = text.rpartition(".")
            if not text:
                continue
            if not dot:  # a bare name: a field in any layer, or a whole layer
                self.fields.add(text)
                self.layers.add(text)
            elif name in ("*", ""):
                self.layers.add(layer)
            else:
                self.pairs.add((layer, name))

    @staticmethod
    def _bases(layer: str) -> tuple[str, ...]:
        low = layer.lower()
        return (low, low.removeprefix(_INNER))

    def layer(self, layer: str) -> bool:
        return any(b in self.layers for b in self._bases(layer))

    def __call__(self, layer: str, name: str) -> bool:
        low = name.lower()
        if low in self.fields or self.layer(layer):
            return True
        return any((b, low) in self.pairs for b in self._bases(layer))


# --------------------------------------------------------------------------- bytes


def byte_ranges(left: bytes, right: bytes, *, skip: Iterable[tuple[int, int]] = ()
                ) -> list[tuple[int, int]]:
    """Ranges ``[start, end)`` where the bytes differ; a longer tail is one range.

    Positions inside ``skip`` ranges never count as different.
    """
    masked: set[int] = set()
    for start, end in skip:
        masked.update(range(start, end))
    common = min(len(left), len(right))
    out: list[tuple[int, int]] = []
    start = -1
    for i in range(common):
        differs = left[i] != right[i] and i not in masked
        if differs and start < 0:
            start = i
        elif not differs and start >= 0:
            out.append((start, i))
            start = -1
    if start >= 0:
        out.append((start, common))
    if len(left) != len(right):
        if out and out[-1][1] == common:
            out[-1] = (out[-1][0], max(len(left), len(right)))
        else:
            out.append((common, max(len(left), len(right))))
    return out


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
    parts = [("data", len(bytes(data)) if data is not None else 0),
             ("padding", len(layer.getfieldval("padding") or b"")),
             ("pad_len", 1), ("nh", 1), ("icv", len(layer.getfieldval("icv") or b""))]
    out: list[tuple[str, int, int]] = []
    pos = 0
    for name, size in parts:
        if size:
            out.append((name, pos, pos + size))
        pos += size
    return out


def _esp_spans(name: str, depth: int, start: int, end: int, esp: EspLayout
               ) -> list[FieldSpan]:
    """The ESP payload split by what the SA says: IV, data, padding, trailer, ICV."""
    body = start + _ESP_HEADER
    icv = max(body, end - esp.icv_len)
    iv = min(icv, body + esp.iv_len)
    spans = [FieldSpan(name, "iv", body, iv, depth, "iv")]
    if esp.pad_len is not None and icv - iv >= 2 + esp.pad_len:
        pad = icv - 2 - esp.pad_len
        spans += [FieldSpan(name, "data", iv, pad, depth, "payload"),
                  FieldSpan(TRAILER_LAYER, "padding", pad, icv - 2, depth, "padding"),
                  FieldSpan(TRAILER_LAYER, "pad_len", icv - 2, icv - 1, depth, "pad-len"),
                  FieldSpan(TRAILER_LAYER, "nh", icv - 1, icv, depth, "next-header")]
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
    dissected = _redissect(packet)
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
            spans.append(FieldSpan(name, fname, start + lo, start + hi, depth,
                                   _role(layer, fname)))
    return spans


# --------------------------------------------------------------------------- ESP


def find_esp(packet: Packet) -> tuple[int, bytes] | None:
    """``(offset, ESP bytes)`` of the first ESP header in ``packet``, or None."""
    data = bytes(packet)
    for _, layer in layer_chain(packet):
        if layer.__class__.__name__ == "ESP":
            esp = bytes(layer)
            return len(data) - len(esp), esp
    return None


def open_esp(sa: EspSA, esp: bytes, offset: int = 0) -> EspOpened | None:
    """Decrypt one ESP packet (SPI onwards) with ``sa``, without changing ``sa``.

    The ICV is checked and the verdict kept in ``icv_ok``; the payload is
    decrypted either way (for AEAD ciphers, which are counter modes, with the
    key stream the cipher gives for zeros). None when the bytes are too short
    for the SA's IV and ICV, or the ciphertext is not whole blocks.
    """
    ivs, icv_len = sa.iv_size, sa.icv_len
    end = len(esp) - icv_len
    if len(esp) < _ESP_HEADER or end - _ESP_HEADER - ivs < 2:
        return None
    spi, seq_lo = struct.unpack_from("!II", esp)
    seq = sa.replay.infer(seq_lo)
    seq_hi = (seq >> 32).to_bytes(4, "big") if sa.esn else b""
    iv, icv = esp[_ESP_HEADER:_ESP_HEADER + ivs], esp[end:]
    ct = esp[_ESP_HEADER + ivs:end]
    if sa.aead is not None:
        aad = esp[:4] + seq_hi + esp[4:8] if sa.esn else esp[:8]
        opened = sa.aead.open(iv, esp[_ESP_HEADER + ivs:], aad)
        icv_ok = opened is not None
        if opened is None:
            stream = sa.aead.seal(iv, bytes(len(ct)), aad)
            opened = bytes(a ^ b for a, b in zip(ct, stream, strict=False))
        plain = opened
    else:
        assert sa.enc is not None
        icv_ok = sa.auth is None or not icv_len or sa.auth.verify(esp[:end], icv, seq_hi)
        if len(ct) % sa.block_size:
            return None
        plain = sa.enc.decrypt(iv, ct)
    pad_len, nh = plain[-2], plain[-1]
    cut = max(0, len(plain) - 2 - pad_len)
    return EspOpened(offset, spi, seq, iv, plain[:cut], plain[cut:-2], pad_len, nh, icv,
                     icv_ok)


SaSource = Any  # EspSA, or a mapping of SPI to EspSA


def _sa_for(sa: SaSource, spi: int) -> EspSA | None:
    if sa is None:
        return None
    if isinstance(sa, Mapping):
        found: EspSA | None = sa.get(spi)
        return found
    return sa if getattr(sa, "spi", None) == spi else None


def _open_layer(layer: Packet, offset: int, sa: SaSource) -> EspOpened | None:
    esp = bytes(layer)
    if len(esp) < _ESP_HEADER:
        return None
    chosen = _sa_for(sa, int.from_bytes(esp[:4], "big"))
    return None if chosen is None else open_esp(chosen, esp, offset)


def _inner(opened: EspOpened) -> Packet:
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.packet import Raw

    cls = {4: IP, 41: IPv6, 17: UDP, 6: TCP, 1: ICMP}.get(opened.next_header, Raw)
    try:
        return cls(opened.data)
    except Exception:  # what does not dissect stays bytes, as Scapy does
        return Raw(opened.data)


# --------------------------------------------------------------------------- diff


def _verdict(ok: bool) -> str:
    return "verifies" if ok else "does not verify"


def _diff_esp(name: str, pair: tuple[EspOpened, EspOpened], rules: IgnoreRules,
              sa: SaSource, out: list[FieldDiff], prefix: str) -> None:
    a, b = pair
    if a.iv != b.iv and not rules(name, "iv"):
        out.append(FieldDiff(name, "iv", a.iv, b.iv))
    trailer = prefix + TRAILER_LAYER
    ta, tb = a.trailer(), b.trailer()
    for key in ta:
        if ta[key] == tb[key] or rules(trailer, key):
            continue
        texts = (_verdict(ta[key]), _verdict(tb[key])) if key == "icv_ok" else ("", "")
        out.append(FieldDiff(trailer, key, ta[key], tb[key], *texts))
    _diff_chain(_inner(a), _inner(b), rules, sa, out, _INNER + prefix)


def _diff_chain(left: Packet, right: Packet, rules: IgnoreRules, sa: SaSource,
                out: list[FieldDiff], prefix: str) -> None:
    chain_l, chain_r = layer_chain(left, prefix), layer_chain(right, prefix)
    total_l, total_r = len(bytes(left)), len(bytes(right))
    for i in range(max(len(chain_l), len(chain_r))):
        a = chain_l[i] if i < len(chain_l) else None
        b = chain_r[i] if i < len(chain_r) else None
        if a is None or b is None or type(a[1]) is not type(b[1]):
            name = a[0] if a is not None else b[0] if b is not None else ""
            if not rules.layer(name):
                out.append(FieldDiff(name, "(layer)", a[0] if a else None,
                                     b[0] if b else None))
            return  # layers after a mismatch no longer line up
        name, la = a
        lb = b[1]
        if rules.layer(name):
            continue
        pair = None
        if sa is not None and la.__class__.__name__ == "ESP":
            oa = _open_layer(la, total_l - len(bytes(la)), sa)
            ob = _open_layer(lb, total_r - len(bytes(lb)), sa)
            pair = (oa, ob) if oa is not None and ob is not None else None
        for fld in la.fields_desc:
            if pair is not None and fld.name == "data":
                continue
            va, vb = la.getfieldval(fld.name), lb.getfieldval(fld.name)
            if _same(va, vb) or rules(name, fld.name):
                continue
            if isinstance(va, bytes) and isinstance(vb, bytes):
                texts = _bytes_texts(va, vb)
            else:
                texts = (_shown(la, fld.name, va), _shown(lb, fld.name, vb))
            out.append(FieldDiff(name, fld.name, va, vb, *texts))
        if pair is not None:
            _diff_esp(name, pair, rules, sa, out, prefix)


def diff_packets(left: Packet, right: Packet, *, ignore: Iterable[str] | IgnoreRules = (),
                 sa: SaSource = None) -> list[FieldDiff]:
    """The fields that differ between two packets, layer by layer, in packet order.

    ``ignore``: field names to leave out (see :class:`IgnoreRules`). ``sa``: an
    ``EspSA`` or a mapping ``{spi: EspSA}``; ESP layers whose SPI it knows are
    compared through the encryption (IV, ``ESPTrailer`` padding, pad_len, nh,
    icv, icv_ok, then the inner layers) instead of as ciphertext. Both packets
    are re-dissected from their bytes first, so a built packet and its capture
    compare equal. Identical packets give an empty list.
    """
    rules = ignore if isinstance(ignore, IgnoreRules) else IgnoreRules(ignore)
    out: list[FieldDiff] = []
    _diff_chain(_redissect(left), _redissect(right), rules, sa, out, "")
    return out
