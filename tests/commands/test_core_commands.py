from __future__ import annotations

from esplab.commands.result import ErrorResult, HelpResult, QuitResult
from esplab.commands.session import Session
from esplab.lab.command import every_command


def test_help_lists_every_registered_command() -> None:
    session = Session(every_command())
    result = session.execute("help")
    assert isinstance(result, HelpResult)
    names = [e.name for e in result.entries]
    assert names == session.registry.names()
    assert {"help", "quit", "decode", "lab"} <= set(names)


def test_the_core_session_has_every_command_but_lab() -> None:
    """``lab`` runs labs over the lab runner: the front ends' registry has it
    (esplab.lab.command), a session of the command core alone does not."""
    assert set(every_command().names()) - set(Session().registry.names()) == {"lab"}
    assert set(Session().registry.names()) <= set(every_command().names())
    assert Session().run("lab").summary.startswith("unknown command 'lab'")


def test_every_command_has_usage_summary_and_example() -> None:
    session = Session(every_command())
    for command in session.registry:
        result = session.execute(f"help {command.name}")
        assert isinstance(result, HelpResult)
        assert result.detail is not None
        assert command.name in result.detail.usage.split()
        assert result.detail.summary
        assert result.detail.example, f"{command.name} has no example"


def test_help_of_unknown_command_fails_with_suggestion() -> None:
    result = Session().run("help decod")
    assert isinstance(result, ErrorResult)
    assert "did you mean decode?" in result.summary
    # The topic is named as it was typed.
    assert Session().run("help NOSUCH").summary.startswith("unknown command 'NOSUCH'")


def test_quit_and_alias() -> None:
    session = Session()
    assert isinstance(session.execute("quit"), QuitResult)
    assert isinstance(session.execute("exit"), QuitResult)


def test_history_records_only_successful_commands() -> None:
    session = Session()
    session.run("help")
    session.run("nonsense")
    assert session.history == ["help"]


def test_help_of_an_alias_shows_its_command() -> None:
    session = Session()
    for alias, name in (("exit", "quit"), ("?", "help")):
        result = session.run(f"help {alias}")
        assert isinstance(result, HelpResult), result.summary
        assert result.detail is not None and result.detail.name == name
        assert alias in result.detail.aliases


def test_help_takes_a_command_name_in_any_case() -> None:
    result = Session().run("help DECODE")
    assert isinstance(result, HelpResult)
    assert result.detail is not None and result.detail.name == "decode"
