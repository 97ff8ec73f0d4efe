"""Run a whole capture through the decoder: the loop ``decode`` and ``diagnose`` share.

:func:`decode_capture` reads frames with :class:`~esplab.pcapio.FrameReader`,
hands each to a :class:`~esplab.capfile.decoder.Decoder` and each ESP verdict to
the caller's ``on_packet``, and stops early at ``limit`` frames. A capture that
ends in the middle of a record is not an exception here: the result says how far
the run got (``truncated``) and everything before that point was decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from esplab.capfile.decoder import Decoder
from esplab.capfile.records import PacketRecord, Summary
from esplab.capfile.safile import SaSpec
from esplab.errors import CaptureFileError
from esplab.pcapio import FrameReader, Interface

__all__ = ["Progress", "RunResult", "decode_capture"]

#: Called now and then with (bytes read, file size).
Progress = Callable[[int, int], None]
_PROGRESS_EVERY = 4096


def _ignore(rec: PacketRecord) -> None:
    return None


@dataclass
class RunResult:
    """How a run ended: the counters, the capture's interfaces, and whether the file
    was cut short (``truncated`` holds the reader's message) or ``limit`` was hit."""

    summary: Summary
    interfaces: list[Interface] = field(default_factory=list)
    truncated: str | None = None
    limit_reached: bool = False
    size: int = 0
    format: str = ""


def decode_capture(
    path: str | Path | FrameReader,
    sas: Sequence[SaSpec],
    on_packet: Callable[[PacketRecord], None] | None = None,
    *,
    limit: int | None = None,
    keep_inner: bool = False,
    keep_esp: bool = False,
    sniff_udp: bool = False,
    progress: Progress | None = None,
) -> RunResult:
    """Decode every frame of ``path`` (a file name or an open reader) with these SAs.

    Raises CaptureFileError only when the file is not a capture at all (or cannot be
    opened); damage later in the file ends the run with ``truncated`` set. The
    result's ``interfaces`` is the reader's own list, filled as the file is read.
    """
    reader = path if isinstance(path, FrameReader) else FrameReader(path, pipes=True)
    decoder = Decoder(
        sas,
        keep_inner=keep_inner,
        keep_esp=keep_esp,
        sniff_udp=sniff_udp,
        wire_len=lambda: reader.wire_len,
    )
    result = RunResult(decoder.summary, reader.interfaces, size=reader.size, format=reader.format)
    feed = decoder.feed
    sink = on_packet or _ignore
    frame = 0
    try:
        with reader:
            if progress is None and limit is None:
                for iface, linktype, ts_ns, data in reader:
                    frame += 1
                    rec = feed(frame, iface, linktype, ts_ns, data)
                    if rec is not None:
                        sink(rec)
            else:
                for iface, linktype, ts_ns, data in reader:
                    frame += 1
                    rec = feed(frame, iface, linktype, ts_ns, data)
                    if rec is not None:
                        sink(rec)
                    if progress is not None and not frame % _PROGRESS_EVERY:
                        progress(reader.position, reader.size)
                    if limit is not None and frame >= limit:
                        result.limit_reached = True
                        break
    except CaptureFileError as exc:
        result.truncated = str(exc)
    if progress is not None:
        progress(reader.position, reader.size)
    decoder.finish()
    return result
