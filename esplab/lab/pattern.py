"""The regular expressions of lab files (``matches:``), on an engine that runs in
linear time.

A lab's pattern is matched with RE2 (the ``google-re2`` package), whose matching
time grows linearly with the text whatever the pattern: ``(a+)+b`` against a long
line of ``a`` costs what any pattern costs, where Python's backtracking ``re`` would
take minutes (``esplab check`` matches a step's ``error:`` against the error the
parser predicts, and runs nothing else). RE2 has no backreferences (``\\1``) and no
lookaround (``(?=``, ``(?!``, ``(?<=``): such a pattern is refused with RE2's
reason. Text that is not valid UTF-8 (a lone surrogate from undecodable input) is
matched with U+FFFD in its place.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import re2

__all__ = ["PatternError", "compile_pattern", "search"]


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message is RE2's reason."""


@lru_cache(maxsize=256)
def compile_pattern(text: str) -> Any:
    """``text`` compiled by RE2 (errors are not logged to stderr); PatternError if not."""
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(_utf8(text), options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(str(reason)) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (RE2 syntax) matches anywhere in ``text``; PatternError if
    it does not compile."""
    return compile_pattern(pattern).search(_utf8(text)) is not None
