"""A layer's fields as a register view: words with their value, fields with bit ranges.

A run of bit fields is shown as the word it makes (a little-endian word, whose first
field is its most significant bits, or a big-endian group up to a byte boundary,
as ``esplab.layers._fixed`` groups them): one row with its offset and its value in
hex of the word's width (``+0x00  word0  0x133a1310``), then one row per field with
its bit range (``27:26``). Every other field gets its offset. Numbers sit in a
right-aligned column, hex numbers zero-filled to their field's width
(``0x00000008``); names of codes, addresses and byte strings go in the column after
it. Rendering only: nothing here changes a packet.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = ["FieldRow", "layer_rows"]


@dataclass(frozen=True)
class FieldRow:
    """One row: ``where`` an offset (``+0x68``) or bit range (``31:30``), ``number``
    the value as a number (right-aligned), ``meaning`` what it names or the value
    when it is not a number; ``word`` marks the row of a whole word."""

    where: str
    name: str
    number: str
    meaning: str
    word: bool = False
    inner: bool = False  # a field inside a word


def _repr(fld: Any, layer: Packet, value: Any) -> str:
    try:
        return str(fld.i2repr(layer, value))
    except Exception:  # a malformed value still shows, raw
        return repr(value)


def _is_hex(fld: Any) -> bool:
    return type(fld).__name__.startswith("X")


def _number(fld: Any, layer: Packet, value: Any, bits: int) -> tuple[str, str]:
    """(number, meaning) of an integer field ``bits`` wide."""
    shown = _repr(fld, layer, value)
    flags = getattr(fld, "names", None)
    if flags and value is not None and not isinstance(value, int):
        value = int(value)  # scapy's FlagValue
    if not isinstance(value, int) or isinstance(value, bool):
        return "", shown
    if _is_hex(fld) or flags:
        number = f"0x{value & ((1 << bits) - 1):0{(bits + 3) // 4}x}" if value >= 0 else str(value)
    else:
        number = str(value)
    if flags:
        return number, "" if shown in ("", "0", str(value)) else shown
    if shown in (str(value), hex(value)) or shown.startswith("0x"):
        return number, ""
    return number, shown


def _int_bits(fld: Any) -> int:
    """Width in bits of a plain integer field, 0 when it is not one."""
    from scapy.fields import StrField

    if isinstance(fld, StrField):
        return 0
    fmt = getattr(fld, "fmt", "")
    code = fmt.lstrip("<>!=@")
    if len(code) == 1 and code in "bBhHiIqQ" and isinstance(fld.default, (int, type(None))):
        return 8 * struct.calcsize(fmt)
    return 0


def _bit_run(fields: Sequence[Any]) -> tuple[list[Any], int, bool]:
    """The bit fields that make one item from the start of ``fields``: (fields, size in
    bytes, little-endian)."""
    first = fields[0]
    span = 8 * first.tot_size if first.rev else 8
    bits = 0
    taken = []
    for fld in fields:
        taken.append(fld)
        bits += fld.size
        if bits % span == 0:
            break
    return taken, (bits + 7) // 8, bool(first.rev)


def _where(offset: int | None) -> str:
    return "" if offset is None else f"+0x{offset:02x}"


def _word_rows(
    layer: Packet, run: list[Any], size: int, little: bool, offset: int | None, raw: bytes
) -> list[FieldRow]:
    width = 8 * size
    rows: list[FieldRow] = []
    if len(run) > 1 and offset is not None and offset + size <= len(raw):
        word = int.from_bytes(raw[offset : offset + size], "little" if little else "big")
        name = f"word{offset // 4}" if little and size == 4 and offset % 4 == 0 else "bits"
        rows.append(FieldRow(_where(offset), name, f"0x{word:0{2 * size}x}", "", word=True))
    top = width
    for fld in run:
        value = layer.getfieldval(fld.name)
        high, low = top - 1, top - fld.size
        top = low
        where = f"{high}" if high == low else f"{high}:{low}"
        if len(run) == 1:
            where = _where(offset)
        number, meaning = _number(fld, layer, value, fld.size)
        rows.append(FieldRow(where, fld.name, number, meaning, inner=len(run) > 1))
    return rows


def layer_rows(layer: Packet, fields: Sequence[Any]) -> list[FieldRow]:
    """The rows of one layer's ``fields`` (the ones it has on the wire)."""
    from scapy.fields import _BitField

    try:
        raw = bytes(layer)
    except Exception:  # a packet that does not build still shows its fields
        raw = b""
    rows: list[FieldRow] = []
    offset: int | None = 0
    rest: Any = raw
    i = 0
    while i < len(fields):
        fld = fields[i]
        if isinstance(fld, _BitField):
            run, size, little = _bit_run(fields[i:])
            rows += _word_rows(layer, run, size, little, offset, raw)
            i += len(run)
            offset = None if offset is None else offset + size
            rest = rest[size:] if isinstance(rest, bytes) else b""
            continue
        value = layer.getfieldval(fld.name)
        bits = _int_bits(fld)
        if bits:
            number, meaning = _number(fld, layer, value, bits)
        else:
            number, meaning = "", _repr(fld, layer, value)
        rows.append(FieldRow(_where(offset), fld.name, number, meaning))
        i += 1
        if offset is not None:
            # The field's size in these bytes, read with its own codec, as Scapy does.
            try:
                after, _ = fld.getfield(layer, rest)
                offset += len(rest) - len(after)
                rest = after
            except Exception:
                offset = None
    return rows
