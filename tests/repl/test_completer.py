from __future__ import annotations

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from esplab.commands.complete import candidates
from esplab.commands.session import Session
from esplab.repl.completer import EsplabCompleter


def complete(text: str) -> list[str]:
    completer = EsplabCompleter(Session())
    doc = Document(text, cursor_position=len(text))
    return [c.text for c in completer.get_completions(doc, CompleteEvent())]


def test_first_word_completes_commands_and_aliases() -> None:
    assert complete("he") == ["help"]
    assert set(complete("")) >= {"help", "quit", "exit", "decode", "?"}


def test_help_completes_command_names() -> None:
    assert complete("help de") == ["decode"]


def test_options_complete_after_dash() -> None:
    assert complete("decode sa --w") == ["--words"]
    assert set(complete("decode sa --")) == {"--words", "--bytes"}


def test_completion_start_position_replaces_the_partial_word() -> None:
    completer = EsplabCompleter(Session())
    doc = Document("help dec", cursor_position=8)
    (only,) = list(completer.get_completions(doc, CompleteEvent()))
    assert only.start_position == -3


def test_only_the_last_command_after_a_semicolon_is_completed() -> None:
    assert complete("help; qu") == ["quit"]


def test_nothing_for_unknown_commands_or_unbalanced_text() -> None:
    assert complete("frobnicate ") == []
    assert candidates(Session(), "decode IP(") == []


def test_ip_link_set_and_route_flush_complete() -> None:
    assert {"up", "down", "mtu"} <= set(complete("ip link set lan1 "))
    assert "flush" in complete("ip route ")
    assert complete("ip route flush ") == ["cache"]
    assert "flows" in complete("fl")
