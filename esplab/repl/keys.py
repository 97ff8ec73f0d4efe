"""Key bindings of the REPL, one small function per key.

prompt-toolkit's Emacs defaults stay (history search, word motion, Ctrl-L). The
bindings here make the two keys everyone presses behave the way they expect.
"""

from __future__ import annotations

from prompt_toolkit import search
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

__all__ = ["build_key_bindings"]


def drop_line(event: KeyPressEvent) -> None:
    """Ctrl-C: throw away the line being typed and start a fresh prompt. Inside a
    history search (Ctrl-R) the search ends first, as Ctrl-G ends it: the session is
    reused by the next prompt, and a search left open would keep the focus on its
    field, where Enter, typed text and Ctrl-D do nothing."""
    if event.app.layout.is_searching:
        search.stop_search()
    event.app.exit(exception=KeyboardInterrupt, style="class:aborting")


def quit_on_empty(event: KeyPressEvent) -> None:
    """Ctrl-D: leave esplab on an empty line; otherwise delete the character under the cursor."""
    buffer = event.current_buffer
    if buffer.text:
        buffer.delete(1)
    else:
        event.app.exit(exception=EOFError, style="class:exiting")


def start_completion(event: KeyPressEvent) -> None:
    """Ctrl-Space: open the completion menu without typing anything."""
    event.current_buffer.start_completion(select_first=False)


def build_key_bindings() -> KeyBindings:
    kb = KeyBindings()
    kb.add("c-c")(drop_line)
    kb.add("c-d")(quit_on_empty)
    kb.add("c-space")(start_completion)
    return kb
