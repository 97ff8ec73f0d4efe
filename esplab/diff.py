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
* :func:`field_spans` (from :mod:`esplab.spans`) maps every byte of a packet to the
  field it belongs to, from Scapy's own field codecs; the hexdumps and the byte view
  use it.
* :func:`open_esp` is a stateless ESP opener for display: it decrypts even when
  the ICV does not verify (and says so), which ``esplab.model.kernel.esp.core.decrypt`` (the
  receive path, with its counters and replay window) rightly refuses to do.

Scapy and the ESP core are imported inside the functions that need them, so
importing this module costs nothing at start-up.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any

from esplab.spans import (
    ROLES,
    TRAILER_LAYER,
    EspLayout,
    FieldSpan,
    field_spans,
    layer_chain,
    redissect,
)

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.model.kernel.esp.sa import EspSA

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
    "ignorable_fields",
    "layer_chain",
    "open_esp",
    "present_fields",
]

_ESP_HEADER = 8  # SPI and sequence number, RFC 4303 2.1 and 2.2
_INNER = "inner "


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
        return (
            self.layer,
            self.field,
            self.left_text or format_value(self.left),
            self.right_text or format_value(self.right),
        )


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
        return {
            "padding": self.padding,
            "pad_len": self.pad_len,
            "nh": self.next_header,
            "icv": self.icv,
            "icv_ok": self.icv_ok,
        }

    def as_data(self) -> dict[str, Any]:
        """Plain data for a result (labs, JSON) and for the renderer's colours."""
        return {
            **self.layout.as_data(),
            "spi": f"{self.spi:#010x}",
            "seq": self.seq,
            "iv": self.iv.hex(),
            "padding": self.padding.hex(),
            "next_header": self.next_header,
            "icv": self.icv.hex(),
            "icv_ok": self.icv_ok,
        }


# --------------------------------------------------------------------------- values


def present_fields(layer: Packet) -> list[Any]:
    """The fields a layer has on the wire: a conditional field whose condition does not
    hold (ICMP's timestamps on an echo) is left out, as Scapy's ``show`` leaves it."""
    from scapy.fields import ConditionalField

    return [
        f for f in layer.fields_desc if not isinstance(f, ConditionalField) or f._evalcond(layer)
    ]


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
    first = next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
        min(len(left), len(right)),
    )
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


def byte_ranges(
    left: bytes, right: bytes, *, skip: Iterable[tuple[int, int]] = ()
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
    iv, icv = esp[_ESP_HEADER : _ESP_HEADER + ivs], esp[end:]
    ct = esp[_ESP_HEADER + ivs : end]
    if sa.aead is not None:
        aad = esp[:4] + seq_hi + esp[4:8] if sa.esn else esp[:8]
        opened = sa.aead.open(iv, esp[_ESP_HEADER + ivs :], aad)
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
    return EspOpened(offset, spi, seq, iv, plain[:cut], plain[cut:-2], pad_len, nh, icv, icv_ok)


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


def _diff_esp(
    name: str,
    pair: tuple[EspOpened, EspOpened],
    rules: IgnoreRules,
    sa: SaSource,
    out: list[FieldDiff],
    prefix: str,
) -> None:
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


def _diff_chain(
    left: Packet, right: Packet, rules: IgnoreRules, sa: SaSource, out: list[FieldDiff], prefix: str
) -> None:
    chain_l, chain_r = layer_chain(left, prefix), layer_chain(right, prefix)
    total_l, total_r = len(bytes(left)), len(bytes(right))
    for i in range(max(len(chain_l), len(chain_r))):
        a = chain_l[i] if i < len(chain_l) else None
        b = chain_r[i] if i < len(chain_r) else None
        if a is None or b is None or type(a[1]) is not type(b[1]):
            name = a[0] if a is not None else b[0] if b is not None else ""
            if not rules.layer(name):
                out.append(FieldDiff(name, "(layer)", a[0] if a else None, b[0] if b else None))
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
        for fld in present_fields(la):
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


def ignorable_fields(left: Packet, right: Packet, *, sa: SaSource = None) -> dict[str, list[str]]:
    """What ``--ignore`` may name for these two packets: each layer class of either
    (through ESP that ``sa`` opens: ESP's ``iv``, the ``ESPTrailer`` fields, the inner
    layers) mapped to its field names, in packet order."""
    out: dict[str, list[str]] = {}

    def walk(packet: Packet, depth: int) -> None:
        total = len(bytes(packet))
        for _, layer in layer_chain(packet):
            names = out.setdefault(layer.__class__.__name__, [])
            names.extend(f.name for f in present_fields(layer) if f.name not in names)
            if sa is None or depth > 4 or layer.__class__.__name__ != "ESP":
                continue
            opened = _open_layer(layer, total - len(bytes(layer)), sa)
            if opened is not None:
                if "iv" not in names:
                    names.append("iv")
                out.setdefault(TRAILER_LAYER, list(opened.trailer()))
                walk(_inner(opened), depth + 1)

    walk(redissect(left), 0)
    walk(redissect(right), 0)
    return out


def diff_packets(
    left: Packet, right: Packet, *, ignore: Iterable[str] | IgnoreRules = (), sa: SaSource = None
) -> list[FieldDiff]:
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
    _diff_chain(redissect(left), redissect(right), rules, sa, out, "")
    return out
