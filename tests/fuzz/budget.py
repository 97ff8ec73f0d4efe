"""The fuzz tests' settings and the checks every entry point shares.

Every test draws its inputs from a fixed seed (``derandomize``) with a fixed budget, so
CI sees the same inputs on every run; the profile ``esplab-fuzz`` holds what they
share. ``ESPLAB_FUZZ_SCALE=N`` multiplies each budget (``bench/fuzz.py`` runs the long
campaign that way); a scaled run draws different inputs from the same fixed seed.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from typing import TypeVar

from hypothesis import HealthCheck, settings

from esplab.commands.tokens import tokenize
from esplab.errors import EsplabError

__all__ = ["SECONDS", "Tally", "budget", "clean_failure", "names_the_input"]

T = TypeVar("T")

settings.register_profile(
    "esplab-fuzz",
    derandomize=True,
    deadline=None,  # time is checked per input by clean_failure, with room for a busy CI
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

#: The most one input may take (the issue's bar for "hangs").
SECONDS = 5.0


def budget(examples: int) -> settings:
    """The profile with ``examples`` inputs (or ESPLAB_FUZZ_EXAMPLES)."""
    campaign = os.environ.get("ESPLAB_FUZZ_EXAMPLES")
    count = int(campaign) if campaign else examples
    return settings(settings.get_profile("esplab-fuzz"), max_examples=count)


def clean_failure(call: Callable[[], T], shown: str) -> T | EsplabError:
    """Run ``call``: its value, or the EsplabError it raised, whose message must be one
    non-empty text with no traceback. Any other exception propagates (the test fails),
    and so does an input that takes more than :data:`SECONDS`. ``shown`` names the input
    in a failure."""
    start = time.perf_counter()
    try:
        value: T | EsplabError = call()
    except EsplabError as exc:
        message = str(exc)
        assert message.strip(), f"an empty message for {shown!r}"
        assert "Traceback" not in message, f"a traceback in the message for {shown!r}"
        value = exc
    took = time.perf_counter() - start
    assert took < SECONDS, f"{shown!r} took {took:.1f} s"
    return value


class Tally:
    """Inputs tried by a property run inside a test (Hypothesis reports no statistics
    for those): ``bench/fuzz.py`` reads the line :meth:`report` prints."""

    def __init__(self) -> None:
        self.inputs = 0

    def report(self) -> None:
        print(f"esplab-fuzz: {self.inputs} inputs")


#: Messages about what is missing, or about the session's state, name no typed value.
_ABSENCE = (
    "needs", "missing", "required", "not complete", "empty", "expected", "which command",
    "not stepping", "no lab", "usage", "at least", "nothing",
)  # fmt: skip


def names_the_input(text: str, message: str) -> bool:
    """Whether ``message`` points at what was wrong in ``text``: it quotes a part of it
    or one of its words (the start of a long one, as messages shorten them), gives a
    column, or says what is missing."""
    lowered = message.lower()
    if "column" in lowered or lowered.startswith("no ") or any(w in lowered for w in _ABSENCE):
        return True
    for quoted in re.findall(r"'([^']+)'|\"([^\"]+)\"", message):
        value = (quoted[0] or quoted[1]).split("...")[0]
        if value and (value in text or value in _escaped(text)):
            return True
    words = [w.strip("'\"()[],") for w in text.split()]
    words += re.split(r"[\s:,;=/|\-]+", text)  # a hex group, a field's value
    with contextlib.suppress(EsplabError):
        words += [token.value for token in tokenize(text)]
    # (a message shows a character that does not print escaped, as repr does, and may
    # give a number in decimal: 0xffffffff as 4294967295)
    shown = [w for word in words for w in (word, _escaped(word), _decimal(word))]
    return any((w.strip() and w[:16] in message) or f"'{w}'" in message for w in shown)


def _decimal(word: str) -> str:
    try:
        return str(int(word, 0)) if len(word) < 40 else ""
    except ValueError:
        return ""


def _escaped(word: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in word)
