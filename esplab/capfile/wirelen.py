"""The original length of a frame, from its capture record: was it cut by the snaplen?

A capture keeps at most *snaplen* bytes of each frame; the record says both how
many bytes it holds (captured length) and how long the frame was on the wire
(original length): libpcap's record header (``incl_len``, ``orig_len``), pcapng's
enhanced and obsolete packet blocks (captured and original packet length) and
the simple packet block (original length; it holds ``min(original, snaplen)``
bytes), draft-ietf-opsawg-pcapng 4.3-4.5 and appendix A.

:class:`esplab.pcapio.FrameReader` yields the captured bytes only. Decode needs
the original length only for frames whose IP header claims more bytes than were
captured, which are few, so :class:`WireLength` reads it back from the record the
reader has just yielded: when a frame is yielded, ``FrameReader.position`` is the
end of its record. It reads through a file descriptor of its own, opened on first
use, and never moves the reader.
"""

from __future__ import annotations

import os
import struct

from esplab.pcapio import FrameReader

__all__ = ["WireLength"]

_PCAP_MAGICS = (0xA1B2C3D4, 0xA1B23C4D)
_EPB, _PB, _SPB = 0x00000006, 0x00000002, 0x00000003


class WireLength:
    """``probe(captured)``: the original length of the frame ``reader`` has just
    yielded (``captured`` bytes long); ``captured`` itself when the record cannot
    be read back. Call :meth:`close` when done."""

    def __init__(self, reader: FrameReader) -> None:
        self._reader = reader
        self._fd = -1
        self._pcap_endian = ""

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _read(self, offset: int, size: int) -> bytes:
        if self._fd < 0:
            self._fd = os.open(self._reader.name, os.O_RDONLY)
            if self._reader.format == "pcap":
                head = os.pread(self._fd, 4, 0)
                le = struct.unpack("<I", head)[0] if len(head) == 4 else 0
                self._pcap_endian = "<" if le in _PCAP_MAGICS else ">"
        return os.pread(self._fd, size, offset) if offset >= 0 else b""

    def __call__(self, captured: int) -> int:
        try:
            wire = self._wire(captured)
        except OSError:
            return captured
        return captured if wire is None else max(wire, captured)

    def _wire(self, captured: int) -> int | None:
        end = self._reader.position
        if self._reader.format == "pcap":
            head = self._read(end - captured - 16, 16)  # ts_sec, ts_frac, incl_len, orig_len
            if len(head) < 16:
                return None
            incl, orig = struct.unpack(self._pcap_endian + "II", head[8:])
            return orig if incl == captured else None
        tail = self._read(end - 4, 4)
        if len(tail) < 4:
            return None
        for endian in "<>":
            total = struct.unpack(endian + "I", tail)[0]
            if total < 16 or total > end or total % 4:
                continue
            head = self._read(end - total, 28)
            if len(head) < 16:
                continue
            btype, length = struct.unpack_from(endian + "II", head)
            if length != total:
                continue
            if btype == _SPB:
                return int(struct.unpack_from(endian + "I", head, 8)[0])
            if btype in (_EPB, _PB) and len(head) == 28:
                incl, orig = struct.unpack_from(endian + "II", head, 20)
                return int(orig) if incl == captured else None
        return None
