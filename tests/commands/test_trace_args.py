"""explain ID TAP: an ID that is no number is named as the wrong value."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import BadArgument
from tests.commands import seed


def test_explain_names_a_journey_id_that_is_no_number() -> None:
    s = Session()
    with pytest.raises(BadArgument, match=r"^journey id 'x' is not a number; valid: none yet"):
        s.execute("explain x wan.wire")
    for line in seed.software():
        s.execute(line)
    s.execute(f"send ap wan {seed.UDP}")
    with pytest.raises(
        BadArgument,
        match=r"^journey id 'x' is not a number; valid: 1; usage: explain \[ID\] \[TAP\]$",
    ):
        s.execute("explain x wan.wire")
    assert s.execute("explain wan.wire").data["id"] == 1  # a tap alone is still a tap
