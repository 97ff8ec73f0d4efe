"""Checks on ``ip xfrm state`` text that the state loader cannot make: where each SPI
is named (a loaded state carries no line number), and the signs of a paste cut
short (an ``auth-trunc``/``aead`` line without its length, an ESP SA without a
cipher line), refused with file:line:col as the command form refuses them
(iproute2 ``xfrm_algo_print``; the kernel's ``esp_init_state``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from esplab.errors import LabFileError
from esplab.model.kernel.xfrm.objects import XfrmState

__all__ = ["check_cipher", "check_printed_lengths", "spi_lines"]

_SPI_WORD = re.compile(r"\bspi\s+(0x[0-9a-fA-F]+|\d+)")


def spi_lines(text: str) -> dict[int, list[int]]:
    """SPI value -> the lines naming it (a loaded state carries no line number)."""
    found: dict[int, list[int]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        for m in _SPI_WORD.finditer(raw):
            found.setdefault(int(m.group(1), 0), []).append(n)
    return found


#: Printed algorithm lines that end in a length, and iproute2's name for it.
_LENGTH_WORDS: Mapping[str, str] = MappingProxyType(
    {"auth-trunc": "ALGO-TRUNC-LEN", "aead": "ALGO-ICV-LEN"}
)


def check_printed_lengths(text: str, source: str) -> None:
    """``ip xfrm state`` output prints ``auth-trunc NAME 0xKEY [(N bits)] LEN`` and
    ``aead NAME 0xKEY [(N bits)] LEN`` (iproute2 ``xfrm_algo_print``): a line without
    the length is a paste cut short, refused as the command form refuses it."""
    from esplab.model.tools.iproute2.xfrm_words import required

    previous = ""
    for n, raw in enumerate(text.splitlines(), 1):
        continued, previous = previous.endswith("\\"), raw
        words = raw.split()
        if continued or raw[:1] not in (" ", "\t") or not words or words[0] not in _LENGTH_WORDS:
            continue
        rest = [w for w in words[2:] if not re.fullmatch(r"\(\d+|bits\)", w)]
        if rest[:1] == ["<<Keys"]:
            continue  # the loader says the keys are hidden
        if rest and rest[0].startswith("0x"):
            rest = rest[1:]
        if rest and rest[0].isdigit():
            continue
        what = _LENGTH_WORDS[words[0]]
        name = f"{words[0]} {words[1]}" if len(words) > 1 else words[0]
        auth = words[0] == "auth-trunc"
        raise LabFileError(
            source,
            n,
            len(raw.rstrip()) + 2,
            f"{name}: {required(what)} (the {'truncation' if auth else 'ICV'} length in "
            "bits, after the key)",
            valid="a number of bits, e.g. 96 or 128" if auth else "64, 96 or 128",
            hint="iproute2 prints it on every such line: was the paste cut short?",
        )


def check_cipher(x: XfrmState, line: int, source: str) -> None:
    """An ESP SA always has a cipher: iproute2 prints ``enc ecb(cipher_null)`` for none,
    and the kernel refuses an ESP SA with neither enc nor aead (esp_init_state: "ESP:
    AEAD or CBC must be provided"). Without the line, the paste was cut short."""
    if x.enc is None and x.aead is None:
        raise LabFileError(
            source,
            line,
            1,
            f"spi 0x{x.spi:08x}: an ESP SA without an enc or aead line",
            valid="an 'enc NAME 0xKEY' line ('enc ecb(cipher_null)' for no encryption) "
            "or an 'aead NAME 0xKEY ICV-LEN' line",
            hint="iproute2 prints the cipher of every ESP SA: was the paste cut short?",
        )
