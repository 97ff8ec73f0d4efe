"""Reading bytes from the hex a user pastes: plain hex, hexdumps, and memory dumps.

Accepted forms (one or many lines):

* plain hex, in any grouping: ``10133a13 01110022``, ``10 13 3a 13``, ``10:13:3a``;
  read as bytes in the order written;
* dumps with an address column ending in ``:`` (``xxd``, u-boot ``md``): the
  address is dropped, and so is a trailing ASCII column (after two or more spaces);
* ``hexdump -C`` lines (offset, bytes, ``|ascii|``);
* 32-bit words: groups that are all exactly 8 digits *after an address column*
  (u-boot ``md.l``), or all written ``0x`` + 8 digits (``devmem`` output), are
  little-endian u32 words, because both the EN7581 and the MT7621 are
  little-endian (eip93.md 5.2). ``words=True``/``False`` forces the reading.

A paste is read in time linear in its length, and is bounded: at most
:data:`MAX_PASTE_CHARS` characters (checked before anything else is done with it),
giving at most :data:`MAX_PASTE_BYTES` bytes, the largest IP packet (RFC 791 3.1: a
16-bit total length); a dump of that is some 300,000 characters as ``hexdump -C``
writes it.
"""

from __future__ import annotations

import re
import struct

from esplab.errors import DecodeError, shorten

__all__ = ["MAX_PASTE_BYTES", "MAX_PASTE_CHARS", "is_dump_line", "parse_hex"]

#: The most bytes a paste may give: an IPv4 packet's 16-bit total length (RFC 791 3.1).
MAX_PASTE_BYTES = 65535
#: The longest paste read, in characters: room for MAX_PASTE_BYTES as any dump writes them.
MAX_PASTE_CHARS = 1 << 20

_ADDR = re.compile(r"^\s*(?:0x)?[0-9a-fA-F]+:\s?")
_HEXDUMP_C = re.compile(r"^\s*[0-9a-fA-F]{4,16}\s+(?P<body>.*?)\s*\|.*\|\s*$")
_HEX = set("0123456789abcdefABCDEF")
_INNER_ADDR = re.compile(r"(?:^|\s)(?:0x)?[0-9a-fA-F]{4,16}:(?=\s|$)")


def is_dump_line(line: str) -> bool:
    """Whether ``line`` is one line of a dump with an address column: ``ADDR: hex...``
    (xxd, u-boot ``md``) or ``hexdump -C`` (offset, bytes, ``|ascii|``)."""
    if _HEXDUMP_C.match(line):
        return True
    am = _ADDR.match(line)
    if am is None:
        return False
    body = re.split(r"\s{2,}", line[am.end() :].strip())[0]
    groups = [g for g in re.split(r"[\s:,\-]+", body) if g]
    return bool(groups) and all(set(g.removeprefix("0x")) <= _HEX for g in groups)


def _groups(text: str) -> tuple[list[str], bool]:
    """Split the pasted text into hex groups; say whether an address column was seen."""
    groups: list[str] = []
    saw_address = False
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _HEXDUMP_C.match(line)
        if m:
            body = m.group("body")
            saw_address = True
        else:
            am = _ADDR.match(line)
            if am and len(line.split()) > 1:
                saw_address = True
                body = re.split(r"\s{2,}", line[am.end() :].strip())[0]
            else:
                body = line
        if saw_address:  # dump lines joined into one: the later address columns go too
            body = _INNER_ADDR.sub(" ", body)
        groups.extend(g for g in re.split(r"[\s:,\-]+", body) if g)
    return groups, saw_address


def parse_hex(text: str, *, words: bool | None = None) -> bytes:
    """The bytes that ``text`` denotes, or a DecodeError saying what is wrong and where."""
    if len(text) > MAX_PASTE_CHARS:
        raise DecodeError(
            f"the paste is {len(text):,} characters long",
            valid=f"up to {MAX_PASTE_CHARS:,} characters, giving up to {MAX_PASTE_BYTES:,} bytes",
            hint="decode one record or packet at a time",
        )
    groups, saw_address = _groups(text)
    if not groups:
        raise DecodeError("no hex digits given", valid="hex bytes such as 10 13 3a 13 or 10133a13")
    stripped = [g[2:] if g[:2].lower() == "0x" else g for g in groups]
    for raw, digits in zip(groups, stripped, strict=True):
        bad = next((c for c in digits if c not in _HEX), None)
        if bad is not None or not digits:
            raise DecodeError(
                f"'{shorten(raw, 40)}' is not hex (bad character {bad!r})"
                if bad
                else f"'{shorten(raw, 40)}' has no digits",
                valid="digits 0-9 and a-f, optionally 0x-prefixed",
            )
    if words is None:
        all_eight = all(len(d) == 8 for d in stripped)
        all_prefixed = all(g[:2].lower() == "0x" for g in groups)
        words = all_eight and (saw_address or all_prefixed)
    if words:
        short = [g for g, d in zip(groups, stripped, strict=True) if len(d) > 8]
        if short:
            raise DecodeError(
                f"'{shorten(short[0], 40)}' is longer than a 32-bit word",
                valid="groups of up to 8 hex digits when reading words",
            )
        _check_size(4 * len(stripped))
        return b"".join(struct.pack("<I", int(d, 16)) for d in stripped)
    digits = "".join(stripped)
    _check_size(len(digits) // 2)
    if len(digits) % 2:
        raise DecodeError(
            f"odd number of hex digits ({len(digits)})",
            valid="two digits per byte",
            hint="a digit is missing or one too many",
        )
    return bytes.fromhex(digits)


def _check_size(count: int) -> None:
    if count > MAX_PASTE_BYTES:
        raise DecodeError(
            f"the paste gives {count:,} bytes",
            valid=f"up to {MAX_PASTE_BYTES:,} bytes (the largest IP packet)",
            hint="decode one record or packet at a time",
        )
