"""help and quit."""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import HelpEntry, HelpResult, QuitResult, Result

__all__ = ["COMMANDS"]


def _entry(command: Command) -> HelpEntry:
    return HelpEntry(
        name=command.name,
        summary=command.summary,
        usage=command.usage,
        example=command.example,
        details=command.details,
        aliases=command.aliases,
    )


def _help(session: Session, inv: Invocation) -> Result:
    topic = inv.args.get("command")
    if topic == "sources":
        return _sources()
    if topic == "glossary":
        return _glossary()
    if topic:
        # An alias (help exit, help ?) is a name of its command; a name is matched
        # whatever its case, as completion offers it.
        # An unknown topic is refused as typed.
        registry = session.registry
        lowered = topic.lower()
        command = registry.lookup(
            lowered if topic not in registry and lowered in registry else topic
        )
        entry = _entry(command)
        return HelpResult(
            summary=f"{command.name}: {command.summary}",
            detail=entry,
            data={"command": command.name, "usage": entry.usage, "example": entry.example},
        )
    entries = [_entry(c) for c in session.registry]
    return HelpResult(
        summary=f"{len(entries)} commands",
        entries=entries,
        data={"commands": [e.name for e in entries]},
    )


def _glossary() -> Result:
    """help glossary: the words the course uses (esplab.glossary)."""
    from esplab.commands.result import TableResult
    from esplab.glossary import GLOSSARY

    rows = [(term, text) for term, text in GLOSSARY.items()]
    return TableResult(
        summary=f"{len(rows)} terms of the course",
        title="glossary",
        columns=("term", "meaning"),
        rows=rows,
        data={"glossary": dict(GLOSSARY)},
    )


def _sources() -> Result:
    """help sources: every reference section the lab's texts cite, with the public
    sources a user can open for it (esplab.citations)."""
    from esplab.citation_sources import SECTIONS
    from esplab.citations import NOTES
    from esplab.commands.result import TableResult

    # The notes are not in the repository: a section is named, not cited (no ".md").
    rows = [
        (key.replace(".md ", " section "), "; ".join(sources)) for key, sources in SECTIONS.items()
    ]
    return TableResult(
        summary=f"{len(rows)} sections of {len(NOTES)} reference notes, each with its public "
        "sources; explain, trace and messages cite these sources in their place",
        title="sources: what each cited fact rests on (Linux paths: in the kernel tree)",
        columns=("section", "public sources"),
        rows=rows,
        data={"sections": {key: list(sources) for key, sources in SECTIONS.items()}},
    )


def _quit(session: Session, inv: Invocation) -> Result:
    return QuitResult(summary="bye")


COMMANDS = (
    Command(
        name="help",
        nodeless="it acts on the lab as a whole",
        summary="list the commands, or show one command's usage and an example; help "
        "sources lists the public sources behind every cited fact",
        handler=_help,
        aliases=("?",),
        params=(
            Param(
                "command",
                optional=True,
                help="a command name or alias, or sources",
                # The names complete; the handler resolves aliases too (Registry.lookup).
                choices=lambda s: [*s.registry.names(), "sources"],
                validate_choices=False,
            ),
        ),
        example="help decode",
    ),
    Command(
        name="quit",
        nodeless="it acts on the lab as a whole",
        summary="leave esplab (Ctrl-D does the same)",
        handler=_quit,
        aliases=("exit",),
        example="quit",
    ),
)
