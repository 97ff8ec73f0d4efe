"""Files a user names: one helper for every reader, one policy for every writer.

Names
    :func:`user_path` checks the text of a path before anything opens it: no NUL
    byte, no name longer than 255 bytes, no path longer than 4095 bytes (Linux's
    ``NAME_MAX`` and ``PATH_MAX`` less its NUL); ``~`` is expanded.

Reading
    :func:`open_input` opens a file for reading only if it is a regular file (a
    FIFO, a device, a socket or a directory is refused with what it is). It opens
    with ``O_NONBLOCK`` and checks the open file, so a FIFO nobody writes to never
    blocks the open. Readers that take a pipe (``esplab decode`` reads
    ``<(zcat cap.pcap.gz)``) say so with ``pipes=True``: a pipe must then give its
    first byte, or be closed, within ``pipe_wait`` seconds. :func:`read_input`
    reads a whole text input under a size limit (:data:`MAX_TEXT_BYTES` unless
    told), never more than the limit plus one byte.

Writing
    :class:`FilePolicy` (one per session, and one for the command-line options of
    ``esplab run`` and ``esplab decode``) decides where a writer may write
    (:meth:`FilePolicy.target`):

    * never over a file this session read (a lab file being run or stepped, an SA
      file, a capture, a loaded file), whatever the name that leads to it (a
      symbolic or hard link included), even with ``--force``;
    * a command from a lab file writes only under the lab's output directory
      (``esplab run --outdir DIR``; the current directory when none is given): a
      relative name is taken in it, an absolute one or one climbing out with ``..``
      (or through a symbolic link) is refused. Inside it a lab may replace what an
      earlier run wrote, so a lab runs twice the same way;
    * anywhere else (the REPL, ``-c``, standard input, command-line options) an
      existing file is replaced only with ``--force``: the command core never
      prompts, so the refusal names the flag.

Every refusal is a :class:`~esplab.errors.FileError` (or the subclass the caller
asks for) naming the path, what is wrong and what is valid.
"""

from __future__ import annotations

import os
import select
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from esplab.errors import EsplabError, FileError, shorten

__all__ = [
    "MAX_TEXT_BYTES",
    "NAME_MAX",
    "PATH_MAX",
    "PIPE_WAIT",
    "FilePolicy",
    "open_input",
    "read_input",
    "user_path",
]

#: The largest text input (an SA file, a file for ``load``): 16 MiB holds some
#: 50,000 SAs as ``ip -s xfrm state`` prints them.
MAX_TEXT_BYTES = 16 << 20
#: Linux's limits on one name and on a whole path (include/uapi/linux/limits.h),
#: less the terminating NUL for the path.
NAME_MAX = 255
PATH_MAX = 4095
#: Seconds a pipe may take to give its first byte (or be closed) before it is refused.
PIPE_WAIT = 10.0

ErrorType = Callable[..., EsplabError]


def _shown(text: str) -> str:
    return "'" + shorten(text) + "'"


def user_path(text: str | Path, what: str = "file", error: ErrorType = FileError) -> Path:
    """``text`` as a path, ``~`` expanded; an error naming it if no file can have it."""
    raw = str(text)
    if "\x00" in raw:
        raise error(
            f"{what} name {_shown(raw)} holds a NUL byte (at column {raw.index(chr(0)) + 1})",
            valid="a path without NUL bytes",
        )
    if not raw:
        raise error(f"{what} name is empty", valid="a path")
    encoded = os.fsencode(raw)
    for part in encoded.split(b"/"):
        if len(part) > NAME_MAX:
            name = os.fsdecode(part)
            raise error(
                f"{what} name {_shown(raw)}: the name {_shown(name)} is {len(part)} bytes long",
                valid=f"names of at most {NAME_MAX} bytes, paths of at most {PATH_MAX}",
            )
    if len(encoded) > PATH_MAX:
        raise error(
            f"{what} name {_shown(raw)} is {len(encoded)} bytes long",
            valid=f"paths of at most {PATH_MAX} bytes",
        )
    return Path(raw).expanduser()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def open_input(
    text: str | Path,
    what: str = "file",
    *,
    pipes: bool = False,
    pipe_wait: float = PIPE_WAIT,
    error: ErrorType = FileError,
) -> BinaryIO:
    """Open a regular file (or, with ``pipes``, a pipe) for reading (module docstring)."""
    path = user_path(text, what, error)
    shown = _shown(str(text))
    valid = "a regular file" + (", or a pipe something writes to" if pipes else "")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot read {what} {shown}: {_why(exc)}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) and pipes:
            ready, _, _ = select.select([fd], [], [], pipe_wait)
            if not ready:
                raise error(
                    f"cannot read {what} {shown}: it is a pipe and nothing wrote to it "
                    f"in {pipe_wait:g} s",
                    valid=valid,
                )
        elif not stat.S_ISREG(mode):
            raise error(f"cannot read {what} {shown}: it is {_kind(mode)}", valid=valid)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(
    text: str | Path,
    what: str = "file",
    *,
    limit: int = MAX_TEXT_BYTES,
    pipes: bool = False,
    pipe_wait: float = PIPE_WAIT,
    error: ErrorType = FileError,
) -> bytes:
    """The bytes of a whole input of at most ``limit`` bytes (module docstring)."""
    with open_input(text, what, pipes=pipes, pipe_wait=pipe_wait, error=error) as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what} {_shown(str(text))}: {_why(exc)}") from exc
    if len(data) > limit:
        raise error(
            f"{what} {_shown(str(text))} is too big (more than {limit} bytes)",
            valid=f"at most {limit} bytes ({limit >> 20} MiB)"
            if limit >= 1 << 20
            else f"at most {limit} bytes",
        )
    return data


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


@dataclass
class FilePolicy:
    """Where a session's writers may write (module docstring).

    ``inputs`` maps each file read to what it was (``the lab file``...);
    ``lab_root`` is set while commands from a lab file run."""

    inputs: dict[Path, str] = field(default_factory=dict)
    lab_root: Path | None = None

    def reading(self, text: str | Path, what: str) -> None:
        """Note that ``text`` is an input: nothing will be written over it."""
        path = Path(text).expanduser()
        try:
            key = path.resolve()
        except (OSError, ValueError):
            return
        self.inputs.setdefault(key, what)

    @contextmanager
    def lab(self, root: Path | None) -> Iterator[None]:
        """Commands run inside are a lab's: they write only under ``root`` (default:
        the current directory)."""
        saved = self.lab_root
        self.lab_root = (root or Path.cwd()).resolve()
        try:
            yield
        finally:
            self.lab_root = saved

    def target(
        self,
        text: str | Path,
        what: str = "file",
        *,
        force: bool = False,
        error: ErrorType = FileError,
    ) -> Path:
        """The path a writer may open for ``text``, or an error saying why not."""
        path = user_path(text, what, error)
        shown = _shown(str(text))
        root = self.lab_root
        if root is not None:
            path = root / path
            try:
                inside = path.resolve().is_relative_to(root)
            except (OSError, RuntimeError):  # a loop of symbolic links
                inside = False
            if not inside:
                raise error(
                    f"a lab writes only under its output directory {root}, and {what} "
                    f"{shown} is outside it",
                    valid="a relative path that stays in it (no '..', no absolute path, "
                    "no symbolic link leading out)",
                    hint="esplab run --outdir DIR chooses the directory",
                )
        for known, was in self.inputs.items():
            if _same(path, known):
                raise error(
                    f"{what} {shown} is {was}, which esplab read and never writes over",
                    valid="another file name",
                )
        try:
            st = path.stat()
        except FileNotFoundError:
            # A dangling link: writing would create its target, wherever it points.
            if path.is_symlink() and root is None and not force:
                raise error(
                    f"{what} {shown} is a symbolic link; add --force to write through it"
                ) from None
            return path
        except OSError as exc:
            raise error(f"cannot write {what} {shown}: {_why(exc)}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot write {what} {shown}: it is {_kind(st.st_mode)}", valid="a file")
        if root is None and not force:
            raise error(
                f"{what} {shown} exists; add --force to overwrite it",
                valid="a new file name, or --force",
            )
        return path
