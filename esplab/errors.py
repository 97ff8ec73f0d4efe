"""Every error a user can cause, and can fix, in one tree.

::

    EsplabError                      base: one line, what is wrong, the value, what is valid
    ├── UsageError                   a command line that does not parse
    │   ├── UnknownCommand           no such command (with a did-you-mean)
    │   ├── BadArgument              an argument of an esplab command with the wrong form or value
    │   └── ToolUsageError           a modelled tool refuses its own command line before it asks
    │                                the kernel (iproute2's ``Error: ...``, xdpsock's options)
    ├── NotFound                     a name that refers to nothing (also: a name missing from one
    │   │                            of the model's tables: algorithms, counters, faults, programs)
    │   ├── NoSuchNode               ap, host, pc1..pc4
    │   ├── NoSuchPort               a netdev of a node
    │   ├── NoSuchTap                a capture point
    │   └── NoSuchPacket             a named or captured packet reference
    ├── InvalidValue                 a value the model refuses whatever the state: out of range, of
    │                                the wrong size, a combination the kernel or a driver turns away
    ├── StateConflict                a request the model's current state does not allow: a name
    │                                taken, a device in use, a ring without room or reservation
    ├── DecodeError                  bytes that cannot be dissected as asked
    ├── PacketExpressionError        a packet expression outside the whitelist
    ├── KernelError                  the emulated kernel refuses (carries an errno name)
    │   └── DuplicateSA              EEXIST on ``ip xfrm state add``
    ├── EngineError                  the EIP-93 model refuses (memory, rings, records)
    │   └── RingFull                 no free command descriptor
    ├── IntegrityError               an ICV that does not verify
    ├── FileError                    a path that cannot be read or written as asked
    │   └── CaptureFileError         a pcap/pcapng that cannot be read or written
    ├── PeerError                    a real Linux peer that cannot start, answer or run
    └── LabFileError                 a lab file error, with file, line and column

The model (``esplab.model``) never raises ``BadArgument`` or ``UnknownCommand``: they
belong to the command layer's own parsing (``esplab.commands``, ``esplab.lab``, the
CLIs). The one usage error the model raises is ``ToolUsageError``:
``esplab.model.tools`` reads a tool's words as the tool does, and what the tool refuses
before it asks the kernel is the command line's fault. iproute2 prints those itself
(``Error: argument "X" is wrong: ...``, ``Command "X" is unknown, ...``) and exits 1 or
255, where a kernel refusal (``KernelError``: ``RTNETLINK answers: ...`` or the
kernel's extack) exits 2 (iproute2 6.15 on Linux 6.12) [C]. Every class prints the
same way: one red line in the REPL, the same line in ``esplab run`` and in a lab
report; a lab check says "'run' does not parse" for a ``UsageError`` only.

Foreign exceptions (``struct.error``, ``ValueError`` from cryptography, ``OSError``)
are translated at the boundary with ``raise ... from exc``; nothing else reaches
the user as a traceback.

A value echoed in a message is cut to a readable length (:func:`shorten`): a message
never carries a whole megabyte a user pasted; every word longer than
:data:`ECHO_MAX` characters in a message is shortened the same way, and a message
longer than :data:`MESSAGE_MAX` loses its middle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "BadArgument",
    "CaptureFileError",
    "DecodeError",
    "DuplicateSA",
    "EngineError",
    "EsplabError",
    "FileError",
    "IntegrityError",
    "InvalidValue",
    "KernelError",
    "LabFileError",
    "NoSuchNode",
    "NoSuchPacket",
    "NoSuchPort",
    "NoSuchTap",
    "NotFound",
    "PacketExpressionError",
    "PeerError",
    "RingFull",
    "StateConflict",
    "ToolUsageError",
    "UnknownCommand",
    "UsageError",
    "did_you_mean",
    "shorten",
]

#: The longest value a message echoes whole (:func:`shorten`).
ECHO_MAX = 120
#: The longest message (what is wrong) shown whole: past it, its middle is cut.
MESSAGE_MAX = 2000
_LONG_WORD = re.compile(r"[^\s'\"]{" + str(ECHO_MAX + 1) + ",}")


def shorten(value: str, limit: int = ECHO_MAX) -> str:
    """``value`` for a message: whole when at most ``limit`` characters, else its start
    and end around ``...`` and its length (``aaaa...aaaa (2000339 characters)``)."""
    if len(value) <= limit:
        return value
    head = max(8, limit * 2 // 3)
    tail = max(4, limit // 6)
    return f"{value[:head]}...{value[-tail:]} ({len(value)} characters)"


def did_you_mean(value: str, choices: Iterable[str]) -> str | None:
    """The closest of ``choices`` to ``value`` (case-insensitive), or None."""
    if len(value) > 64:  # no name is that long, and difflib's work grows with it
        return None
    pool = list(choices)
    lowered = {c.lower(): c for c in pool}
    from difflib import get_close_matches  # imported when a name is misspelt

    match = get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _one_line(what: str) -> str:
    """``what`` as one line: a typed value's newline or tab is shown escaped (a usage
    text, which starts with ``Usage:``, keeps its lines)."""
    if what.startswith("Usage:"):
        return what
    if len(what) > ECHO_MAX:
        what = _LONG_WORD.sub(lambda m: shorten(m.group()), what)
        what = shorten(what, MESSAGE_MAX)
    if what.isprintable():
        return what
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in what)


class EsplabError(Exception):
    """Base of all user-fixable errors.

    ``what`` says what is wrong (including the offending value); ``valid`` lists
    what would be accepted; ``hint`` is a free-form suggestion. ``str()`` joins
    them into the one line the user sees.
    """

    #: What a board's own tool prints for this mistake, where esplab knows it exactly
    #: and it is not ``Error: <what>.`` (a KernelError has ``board`` instead).
    board_text: str | None = None

    def __init__(
        self,
        what: str,
        *,
        valid: Iterable[str] | str | None = None,
        hint: str | None = None,
        value: str | None = None,
    ) -> None:
        self.what = what
        if valid is None or isinstance(valid, str):
            self.valid: list[str] | str | None = valid
        else:
            self.valid = list(valid)
        self.hint = hint
        if hint is None and value is not None and isinstance(self.valid, list):
            guess = did_you_mean(value, self.valid)
            if guess is not None and guess != value:
                self.hint = f"did you mean {guess}?"
        super().__init__(self.message)

    @property
    def message(self) -> str:
        parts = [_one_line(self.what)]
        if isinstance(self.valid, list):
            shown = self.valid if len(self.valid) <= 24 else [*self.valid[:24], "..."]
            parts.append("valid: " + ", ".join(shown) if shown else "nothing is valid here yet")
        elif isinstance(self.valid, str):
            parts.append("valid: " + self.valid)
        if self.hint:
            parts.append(_LONG_WORD.sub(lambda m: shorten(m.group()), self.hint))
        from esplab.citations import cite  # imported when a message is shown

        return cite("; ".join(parts))  # sources a user can open, never the notes

    def __str__(self) -> str:
        return self.message


class UsageError(EsplabError):
    """A command line that does not parse."""


class UnknownCommand(UsageError):
    """No command by that name."""


class BadArgument(UsageError):
    """An argument of an esplab command of the wrong form or value (the command
    layer's own parsing; the model raises the classes below instead)."""


class ToolUsageError(UsageError):
    """A modelled tool refuses its own command line before it asks the kernel:
    iproute2's ``Error: argument "X" is wrong: ...`` (``invarg``, ``missarg``,
    ``duparg``), ``Command "X" is unknown``, or an xdpsock option out of range."""


class NotFound(EsplabError):
    """A name that refers to nothing."""


class NoSuchNode(NotFound):
    """An unknown node name."""


class NoSuchPort(NotFound):
    """An unknown network device."""


class NoSuchTap(NotFound):
    """An unknown capture point."""


class NoSuchPacket(NotFound):
    """An unknown named or captured packet."""


class InvalidValue(EsplabError):
    """A value the model refuses whatever its state: out of range, of the wrong size
    or form, or a combination the kernel (``EINVAL``) or a driver turns away before
    anything changes (an SA's SPI, mode or key; an IV's length; a ring count)."""


class StateConflict(EsplabError):
    """A request the model's current state does not allow, which may succeed once the
    state changes: a name already taken, a device in use, a fault already set, more
    entries than a ring has room, reservations or free frames for."""


class DecodeError(EsplabError):
    """Bytes that cannot be dissected as asked (bad hex, too short, unknown layer)."""


class PacketExpressionError(EsplabError):
    """A packet expression that is refused: bad syntax or a name outside the whitelist."""


class KernelError(EsplabError):
    """The emulated kernel refuses an operation, as a real one would.

    ``errno_name`` is the symbolic errno (``EEXIST``, ``ESRCH``, ``EINVAL``...), and
    the message starts the way iproute2 prints it (``RTNETLINK answers: File exists``).
    """

    STRERROR = {
        "EEXIST": "File exists",
        "ESRCH": "No such process",
        "ENOENT": "No such file or directory",
        "EINVAL": "Invalid argument",
        "EOPNOTSUPP": "Operation not supported",
        "EBUSY": "Device or resource busy",
        "ERANGE": "Numerical result out of range",
        "ENOSPC": "No space left on device",
        "EHOSTUNREACH": "No route to host",
        "EMSGSIZE": "Message too long",
        "ENODEV": "No such device",
        "ENETDOWN": "Network is down",
        "EOVERFLOW": "Value too large for defined data type",
        "EPERM": "Operation not permitted",
        "EBADMSG": "Bad message",
        "ENOSYS": "Function not implemented",
        "ENXIO": "No such device or address",
        "EACCES": "Permission denied",
        "EBADF": "Bad file descriptor",
        "E2BIG": "Argument list too long",
        "ESOCKTNOSUPPORT": "Socket type not supported",
        "EPROTONOSUPPORT": "Protocol not supported",
        "EAGAIN": "Resource temporarily unavailable",
        "EADDRINUSE": "Address already in use",
        "EADDRNOTAVAIL": "Cannot assign requested address",
        "ENETUNREACH": "Network is unreachable",
        "ENOBUFS": "No buffer space available",
        "ENOMEM": "Cannot allocate memory",
    }

    def __init__(
        self,
        errno_name: str,
        reason: str | None = None,
        *,
        hint: str | None = None,
        prefix: str = "RTNETLINK answers",
    ) -> None:
        self.errno_name = errno_name
        self.reason = reason
        self.prefix = prefix
        text = f"{prefix}: {self.STRERROR.get(errno_name, errno_name)}"
        if reason:
            text += f" ({reason})"
        super().__init__(text, hint=hint)

    @property
    def board(self) -> str:
        """Exactly what iproute2 prints on a board for this refusal (esplab's extra
        words left out): see :mod:`esplab.kernel_messages`."""
        from esplab.kernel_messages import board_text

        strerror = self.STRERROR.get(self.errno_name, self.errno_name)
        return board_text(self.prefix, strerror, self.reason)


class DuplicateSA(KernelError):
    """``ip xfrm state add`` of an SA that exists already."""

    def __init__(self, reason: str | None = None, *, hint: str | None = None) -> None:
        super().__init__("EEXIST", reason, hint=hint)


class EngineError(EsplabError):
    """The EIP-93 model refuses: memory out of range, a ring programmed badly, ..."""


class RingFull(EngineError):
    """No free command descriptor."""


class IntegrityError(EsplabError):
    """An ICV that does not verify."""


class FileError(EsplabError):
    """A path that cannot be read or written as asked: no such file, not a regular
    file, too big, outside a lab's output directory, or a file that would be
    overwritten (``esplab.files``)."""


class CaptureFileError(FileError):
    """A capture file that cannot be read or written."""


class PeerError(EsplabError):
    """A real Linux peer (QEMU guest or network namespace) that cannot start, answer,
    or run what was asked of it."""


class LabFileError(EsplabError):
    """A lab file error at ``file:line:col``."""

    def __init__(
        self,
        file: str,
        line: int,
        col: int,
        what: str,
        *,
        valid: Iterable[str] | str | None = None,
        hint: str | None = None,
        value: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.col = col
        super().__init__(what, valid=valid, hint=hint, value=value)

    @property
    def message(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {super().message}"
