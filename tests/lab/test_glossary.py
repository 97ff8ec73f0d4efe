"""help glossary: the words the course uses."""

from __future__ import annotations

from esplab.commands.result import TableResult
from esplab.commands.session import Session


def test_help_glossary_names_the_course_words() -> None:
    result = Session().execute("help glossary")
    assert isinstance(result, TableResult)
    terms = [row[0] for row in result.rows]
    for word in ("journey", "tap", "SA record", "crypto offload", "packet offload", "checkpoint"):
        assert word in terms, word
    assert result.data["glossary"]["tap"].startswith("A named place a packet can be seen")
