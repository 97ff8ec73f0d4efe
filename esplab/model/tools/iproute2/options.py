"""iproute2's global options, the words between ``ip`` and the object, as ip/ip.c
``main()`` reads them: the one parser of the ``ip`` command and of the ``ip xfrm``
grammar (load files and lab run lines included).

ip.c tests each option word against its list in order and takes the first it
abbreviates (``matches(opt, "-stats")``), or equals for the ``strcmp`` ones (-4, -6,
-0, -M, -B, -echo); ``--x`` is read as ``-x``, and ``--`` ends the options; a bare
``-`` abbreviates ``-loops``. Messages are iproute2 6.15's, checked against it in the
kernel guest (which has no -D and no ipx family) [C]; options and families iproute2 has
and esplab does not model are named as such [M].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from esplab.errors import ToolUsageError
from esplab.model.tools.iproute2.xfrm_words import bad, matches

__all__ = ["FAMILIES", "MODELLED", "IpOpts", "option_meaning", "parse_options"]

#: The families ``-f`` takes that esplab models (lib/utils.c ``read_family``).
FAMILIES = {"inet": 4, "inet6": 6}

#: What ``read_family`` knows besides (iproute2 6.15): ip takes them, esplab does not
#: model them.
_OTHER_FAMILIES = ("link", "mpls", "bridge")


@dataclass
class IpOpts:
    """iproute2's global options (ip/ip.c): -s and -d count, -4/-6/-f pick a family, -br,
    -o (one line per record)."""

    stats: int = 0
    details: int = 0
    family: int | None = None
    brief: bool = False
    oneline: bool = False


# ip/ip.c main(): the options in the order it tests them, each with whether it must be
# typed in full (strcmp) and what esplab makes of it (None: iproute2 has it, esplab
# does not model it).
_OPTIONS: tuple[tuple[str, str | None, bool], ...] = (
    ("-loops", None, False),
    ("-family", "family", False),
    ("-4", "4", True),
    ("-6", "6", True),
    ("-0", None, True),
    ("-M", None, True),
    ("-B", None, True),
    ("-human", None, False),
    ("-human-readable", None, False),
    ("-iec", None, False),
    ("-stats", "stats", False),
    ("-statistics", "stats", False),
    ("-details", "details", False),
    ("-resolve", None, False),
    ("-oneline", "oneline", False),
    ("-timestamp", None, False),
    ("-tshort", None, False),
    ("-Version", None, False),
    ("-force", None, False),
    ("-batch", None, False),
    ("-brief", "brief", False),
    ("-json", None, False),
    ("-pretty", None, False),
    ("-rcvbuf", None, False),
    ("-color", None, False),
    ("-help", None, False),
    ("-netns", None, False),
    ("-Numeric", None, False),
    ("-all", None, False),
    ("-echo", None, True),
)

#: The options esplab models, as its messages list them.
MODELLED = (
    "-s[tatistics]",
    "-d[etails] (ip link, ip addr, ip xfrm)",
    "-o[neline]",
    "-4",
    "-6",
    "-f[amily] inet|inet6",
    "-br[ief]",
)


def option_meaning(opt: str) -> str:
    """What an option word (as ip.c reads it, one leading dash) means to esplab: stats,
    details, oneline, brief, family, 4 or 6; :class:`ToolUsageError` for one iproute2 does
    not know (its message) or esplab does not model."""
    for name, means, exact in _OPTIONS:
        if opt == name if exact else matches(opt, name):
            if means is None:
                named = "" if opt == name else f" ({name})"
                raise ToolUsageError(
                    f'Option "{opt}"{named} is not modelled by esplab', valid=MODELLED, value=opt
                )
            return means
    raise ToolUsageError(f'Option "{opt}" is unknown, try "ip -help".', valid=MODELLED, value=opt)


def _family(words: Sequence[str], at: int) -> int:
    """The family named by the word after ``-f``: ip.c ``missarg("family type")`` when
    there is none, ``invarg("invalid protocol family", ...)`` for a name
    ``read_family`` does not know."""
    if at >= len(words):
        raise ToolUsageError('argument "family type" is required', valid=list(FAMILIES))
    name = words[at]
    if name in FAMILIES:
        return FAMILIES[name]
    if name in _OTHER_FAMILIES:
        raise ToolUsageError(
            f'family "{name}" is not modelled by esplab', valid=list(FAMILIES), value=name
        )
    raise bad(name, "invalid protocol family", valid=list(FAMILIES))


def parse_options(words: Sequence[str]) -> tuple[IpOpts, list[str], list[str]]:
    """The global options at the start of ``words`` (what follows ``ip``): -s
    (repeated, counted), -d (counted), -4/-6, -f|-family FAMILY, -o, -br; ``--`` ends
    them. Returns the options, their words as ip.c reads them (one leading dash), and
    the words from the object on. Pure."""
    opts = IpOpts()
    read: list[str] = []
    at = 0
    while at < len(words) and words[at].startswith("-"):
        if words[at] == "--":  # ip.c: "--" ends the options, and is not one
            at += 1
            break
        opt = words[at]
        opt = opt[1:] if opt.startswith("--") else opt
        at += 1
        read.append(opt)
        means = option_meaning(opt)
        if means == "stats":
            opts.stats += 1
        elif means == "details":
            opts.details += 1
        elif means == "oneline":
            opts.oneline = True
        elif means in ("4", "6"):
            opts.family = int(means)
        elif means == "family":
            opts.family = _family(words, at)
            read.append(words[at])
            at += 1
        else:
            opts.brief = True
    return opts, read, list(words[at:])
