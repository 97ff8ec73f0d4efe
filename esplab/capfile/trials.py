"""What diagnose's trials share: a failing packet kept for diagnosis (:class:`Suspect`),
a what-if check (:class:`Trial`), the keyed openers every trial maker draws on
(:class:`TrialContext`) and the test that a decrypt looks right (:func:`plausible`:
RFC 4303 2.4 padding and a payload its next header names). The table of mistakes
and their trial makers is ``hypotheses``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from esplab.capfile.opener import BAD, GOOD, Opener, make_opener
from esplab.capfile.safile import SaSpec
from esplab.errors import EsplabError

__all__ = [
    "DECRYPT_PROBLEMS",
    "Suspect",
    "Trial",
    "TrialContext",
    "decrypting",
    "labelled",
    "plausible",
]


#: Problems of packets whose ICV is good but whose plaintext is not: the cipher or its
#: key is wrong. Their trials decrypt instead of authenticating.
DECRYPT_PROBLEMS = frozenset({"bad-decrypt"})
_PAD = bytes(range(1, 256))


def plausible(plain: bytes | None) -> bool:
    """Decrypted with the right key, by the look of it: a pad length that leaves a
    payload, the default padding 1, 2, 3.. (RFC 4303 2.4), and a payload that is what
    its next header says: an IP packet that fits (4, 41), UDP whose length is the
    payload's (17), TCP with a sound data offset (6), ICMP (1, 58) or a dummy (59).
    A wrong key passes this by chance far less often than the trailer check alone."""
    if plain is None or len(plain) < 2:
        return False
    pad, nh = plain[-2], plain[-1]
    size = len(plain) - 2 - pad
    if size <= 0 or plain[size:-2] != _PAD[:pad]:
        return False
    if nh == 59:
        return True
    if nh == 4:
        ihl = (plain[0] & 0x0F) * 4
        total = int.from_bytes(plain[2:4], "big") if size >= 20 else 0
        return plain[0] >> 4 == 4 and 20 <= ihl <= total <= size
    if nh == 41:
        return size >= 40 and plain[0] >> 4 == 6 and 40 + int.from_bytes(plain[4:6], "big") <= size
    if nh == 17:
        return size >= 8 and int.from_bytes(plain[4:6], "big") == size
    if nh == 6:
        return size >= 20 and 20 <= (plain[12] >> 4) * 4 <= size
    return nh in (1, 58) and size >= 4


@dataclass(frozen=True)
class Suspect:
    """A failing packet kept for diagnosis: its ESP bytes and what decode made of it.

    ``seq`` is the full sequence number decode inferred (ESN high half included),
    ``sa`` the SA index decode chose (0: none), ``problem`` decode's status.
    """

    frame: int
    esp: bytes
    spi: int
    seq: int
    sa: int
    problem: str
    encap: tuple[int, int] | None


@dataclass(frozen=True)
class Trial:
    """One what-if check: ``label`` completes "with ..., N/M packets authenticate"."""

    label: str
    check: Callable[[Suspect], bool]


class TrialContext:
    """What trial makers share: every SA of the file and keyed openers, made once."""

    def __init__(self, sas: Sequence[SaSpec]) -> None:
        self.sas = list(sas)
        self._openers: dict[SaSpec, Opener | None] = {}

    def opener(self, spec: SaSpec) -> Opener | None:
        """The opener of an SA or a what-if variant; None if the variant cannot exist."""
        if spec not in self._openers:
            try:
                self._openers[spec] = make_opener(spec)
            except (EsplabError, ValueError):
                self._openers[spec] = None
        return self._openers[spec]

    def authenticates(self, spec: SaSpec, hi: Callable[[Suspect], int] | None = None) -> Trial:
        """A trial body: the packet's ICV verifies with ``spec`` (``hi``: the ESN high
        half to use, by default decode's)."""
        opener = self.opener(spec)

        def check(s: Suspect) -> bool:
            if opener is None:
                return False
            return opener(s.esp, hi(s) if hi else s.seq >> 32)[0] == GOOD

        return Trial("", check)

    def decrypts(self, spec: SaSpec) -> Trial:
        """A trial body for ``bad-decrypt``: with ``spec`` the packet authenticates (or
        has no ICV to check) and decrypts to a plausible plaintext."""
        opener = self.opener(spec)

        def check(s: Suspect) -> bool:
            if opener is None:
                return False
            icv, plain = opener(s.esp, s.seq >> 32)
            return icv != BAD and plausible(plain)

        return Trial("", check)


def decrypting(sample: Sequence[Suspect]) -> bool:
    """The sample's packets authenticate but decrypt badly (their trials decrypt)."""
    return bool(sample) and sample[0].problem in DECRYPT_PROBLEMS


def labelled(label: str, body: Trial) -> Trial:
    """``body``'s check under ``label``."""
    return Trial(label, body.check)
