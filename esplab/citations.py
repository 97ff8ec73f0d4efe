"""Where each cited fact comes from, in sources a user can open, and the one place
every citation is rendered.

The model was built from three reference notes (on the EIP-93, on the Airoha ports,
the DSA tag and the kernel's XFRM side, and on AF_XDP) that are not in this
repository. Docstrings and comments may name their sections (``eip93.md 5.2``);
user-visible text must not, since nobody can follow them. :data:`SECTIONS` maps
each section cited to the public sources the note gives for it: a kernel file and
function (``drivers/crypto/inside-secure/eip93/eip93-common.c: eip93_hmac_setkey``),
an RFC section, or a mailing-list post by subject, author and date. Sources the
notes name but nobody can open (vendor code without a public repository) are
said to be so.

:func:`cite` rewrites every ``NOTE.md SECTION[, SECTION...]`` in a text into those
sources; journey stages (:class:`esplab.model.stage.Stage`) and messages pass
their text through it, and ``help sources`` lists the table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from esplab.citation_sources import SECTIONS

__all__ = ["NOTES", "SECTIONS", "cite", "sources_of"]

#: The notes, as cited, and what each is about.
NOTES: Mapping[str, str] = MappingProxyType(
    {
        "eip93.md": "the Inside Secure EIP-93 packet engine",
        "airoha-dsa-xfrm.md": "the Airoha EN7581 ports, the MediaTek DSA tag and XFRM offload",
        "af_xdp.md": "XDP and AF_XDP",
    }
)

#: A citation: a note, then section numbers ("5.2", "3.4, 3.10", "2.6-2.8", "6.20");
#: an optional "check N" after a section (``3.4 check 2``) is kept as its own words.
_CITATION = re.compile(
    r"(?:reference/)?(eip93|airoha-dsa-xfrm|af_xdp)\.md`*\s*"
    r"(\d+(?:\.\d+)?(?:\s*(?:,|-|\u2013|and)\s*\d+(?:\.\d+)?)*)"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def sources_of(note: str, section: str) -> tuple[str, ...]:
    """The sources of one section (its parent's when the section is not listed: a
    fact list item such as ``7.18`` falls back to section 7)."""
    key = f"{note} {section}"
    while key not in SECTIONS and "." in key.rsplit(" ", 1)[1]:
        key = key.rsplit(".", 1)[0]
    return SECTIONS.get(key, ())


def _numbers(text: str) -> list[str]:
    """The sections of "3.2, 3.9" or "2.6-2.8" (a range within one major section)."""
    out: list[str] = []
    for part in re.split(r"\s*(?:,|and)\s*", text):
        ends = _NUMBER.findall(part)
        if len(ends) == 2 and "." in ends[0] and ends[0].split(".")[0] == ends[1].split(".")[0]:
            major, lo = ends[0].split(".")
            hi = int(ends[1].split(".")[1])
            out.extend(f"{major}.{n}" for n in range(int(lo), hi + 1))
        else:
            out.extend(ends)
    return out


def _render(match: re.Match[str]) -> str:
    note = match.group(1) + ".md"
    found: list[str] = []
    for number in _numbers(match.group(2)):
        for source in sources_of(note, number):
            if source not in found:
                found.append(source)
    return "; ".join(found[:4]) if found else NOTES.get(note, note)


@lru_cache(maxsize=8192)
def cite(text: str) -> str:
    """``text`` with every note citation replaced by the public sources it stands for
    (pure; texts are mostly the same literals, hence the cache)."""
    if ".md" not in text:
        return text
    return _CITATION.sub(_render, text)
