"""Capture files at full speed: a chunked pcap/pcapng reader and a streaming pcapng writer.

A board capture can hold millions of packets, so :class:`FrameReader` reads the
file in large chunks and cuts records out of them with precompiled ``struct``
formats; memory holds one chunk whatever the file size, and
:attr:`FrameReader.position` says how far it got (for a progress bar). Every way a
file can be bad becomes a :class:`~esplab.errors.CaptureFileError` naming the file,
how many packets were read and what is wrong. ``esplab.pcap`` (the lab's capture
API) and ``esplab.capfile`` (decode, diagnose) both read and write through here.

Formats: libpcap's classic file (both byte orders, microsecond and nanosecond
magic) and pcapng (draft-ietf-opsawg-pcapng: section header, interface
description with ``if_name`` and ``if_tsresol``, enhanced, simple and the
obsolete packet block; other blocks are skipped). Every packet record also says
how long the frame was on the wire (original length), which is more than it holds
when the snaplen cut it: :attr:`FrameReader.wire_len` keeps it for the last
frame yielded, so the file is read once and a pipe reads as well as a file.
:class:`PcapngWriter` writes pcapng one packet at a time, with the same layout as
``esplab.pcap``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from esplab.errors import CaptureFileError

__all__ = [
    "CHUNK_SIZE",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_IPV4",
    "LINKTYPE_IPV6",
    "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2",
    "LINKTYPE_RAW",
    "Frame",
    "FrameReader",
    "Interface",
    "PcapngWriter",
]

# The standard link types captures use (tcpdump.org link-layer header types).
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101  # raw IPv4/IPv6, no link header
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

#: Bytes read from the file at a time.
CHUNK_SIZE = 1 << 20
#: A record longer than this is taken as damage, not as a packet.
MAX_RECORD = 64 * 1024 * 1024

_PCAP_US = 0xA1B2C3D4
_PCAP_NS = 0xA1B23C4D
_SHB = 0x0A0D0D0A
_IDB = 0x00000001
_PB = 0x00000002  # obsolete packet block
_SPB = 0x00000003
_EPB = 0x00000006
# The fixed part of each block type, with its two length words (pcapng spec 4.2-4.4).
_MIN_BLOCK = {_EPB: 32, _PB: 32, _IDB: 20, _SPB: 16}
_BOM = 0x1A2B3C4D

#: (interface index, link type, timestamp in ns, packet bytes)
Frame = tuple[int, int, int, bytes]


@dataclass(frozen=True)
class Interface:
    """One capture interface: its name (may be empty) and link type."""

    name: str
    linktype: int


def _ts_factors(resol: int) -> tuple[int, int]:
    """``if_tsresol`` to (multiplier, divisor) turning ticks into nanoseconds."""
    if resol & 0x80:
        return 1_000_000_000, 1 << (resol & 0x7F)
    exp = resol & 0x7F
    if exp <= 9:
        return 10 ** (9 - exp), 1
    return 1, 10 ** (exp - 9)


class FrameReader:
    """Stream the packets of a pcap or pcapng file as :data:`Frame` tuples.

    Opening refuses what is not a regular file (a pipe too, unless ``pipes``;
    ``esplab.files.open_input``), checks the file's magic (CaptureFileError for
    anything that is not a capture) and keeps the file open until the iteration
    ends or :meth:`close`; iterating raises CaptureFileError where the file is damaged or cut
    short, after yielding every packet before that point. ``interfaces`` grows as
    pcapng interface blocks are read; ``count`` is the number of packets yielded.
    ``wire_len`` is the original length of the frame just yielded, as its record
    gives it: libpcap's ``orig_len``, the original packet length of an enhanced or
    obsolete packet block, a simple packet block's only length field (it holds
    ``min(original, snaplen)`` bytes); draft-ietf-opsawg-pcapng 4.3-4.5, appendix A.
    """

    def __init__(self, path: str | Path, *, pipes: bool = False) -> None:
        from esplab.files import open_input

        self.name = str(path)
        # A regular file, or with ``pipes`` a pipe; never blocks in open (esplab.files).
        self._fh: BinaryIO = open_input(path, "capture", pipes=pipes, error=CaptureFileError)
        self.size = os.fstat(self._fh.fileno()).st_size
        self.interfaces: list[Interface] = []
        self.count = 0
        self.wire_len = 0
        self._buf = b""
        self._pos = 0
        self._base = 0  # file offset of self._buf[0]
        self._eof = False
        head = self._fh.read(4)
        self._buf, self._base = head, 0
        if len(head) < 4:
            self.close()
            raise CaptureFileError(
                f"{self.name} is not a capture: {len(head)} byte(s) long",
                valid="pcap or pcapng files",
            )
        le, be = struct.unpack("<I", head)[0], struct.unpack(">I", head)[0]
        if le == _SHB:
            self.format = "pcapng"
        elif _PCAP_US in (le, be) or _PCAP_NS in (le, be):
            self.format = "pcap"
        else:
            self.close()
            raise CaptureFileError(
                f"{self.name} is not a capture (starts with {head.hex()})",
                valid="pcap (a1b2c3d4/a1b23c4d) or pcapng (0a0d0d0a) files",
            )

    @property
    def position(self) -> int:
        """File offset of the next unread byte (how far the reader got)."""
        return self._base + self._pos

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> FrameReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fill(self, need: int) -> bool:
        """Make ``need`` bytes available at ``_pos``; False at the end of the file."""
        while len(self._buf) - self._pos < need:
            if self._eof:
                return False
            more = self._fh.read(max(CHUNK_SIZE, need))
            if not more:
                self._eof = True
                return False
            self._base += self._pos
            self._buf = self._buf[self._pos :] + more
            self._pos = 0
        return True

    def _truncated(self, where: str) -> CaptureFileError:
        return CaptureFileError(
            f"{self.name} is truncated in {where} after {self.count} packet(s)",
            hint=f"the {self.count} packet(s) before it were read",
        )

    def __iter__(self) -> Iterator[Frame]:
        """The packets; the file is closed when they end, the file turns out damaged,
        or the iteration is abandoned."""
        try:
            yield from self._pcap() if self.format == "pcap" else self._pcapng()
        finally:
            self.close()

    # -- classic pcap ----------------------------------------------------------

    def _pcap(self) -> Iterator[Frame]:
        if not self._fill(24):
            raise self._truncated("the file header")
        buf = self._buf
        endian = "<" if struct.unpack_from("<I", buf, 0)[0] in (_PCAP_US, _PCAP_NS) else ">"
        magic = struct.unpack_from(endian + "I", buf, 0)[0]
        linktype = struct.unpack_from(endian + "I", buf, 20)[0] & 0x0FFFFFFF
        self.interfaces.append(Interface("", linktype))
        scale = 1 if magic == _PCAP_NS else 1000
        self._pos = 24
        header = struct.Struct(endian + "IIII").unpack_from
        fill = self._fill
        while True:
            if len(self._buf) - self._pos < 16 and not fill(16):
                if len(self._buf) != self._pos:
                    raise self._truncated(f"the header of packet {self.count + 1}")
                return
            sec, frac, caplen, wire = header(self._buf, self._pos)
            if caplen > MAX_RECORD:
                raise CaptureFileError(
                    f"{self.name}: packet {self.count + 1} claims {caplen} bytes, "
                    "which no capture holds",
                    hint=f"the file is damaged after {self.count} packet(s)",
                )
            start = self._pos + 16
            end = start + caplen
            if end > len(self._buf):
                self._pos += 16
                if not fill(caplen):
                    raise self._truncated(f"packet {self.count + 1}")
                start = self._pos
                end = start + caplen
            data = self._buf[start:end]
            self._pos = end
            self.count += 1
            self.wire_len = wire
            yield 0, linktype, sec * 1_000_000_000 + frac * scale, data

    # -- pcapng ---------------------------------------------------------------

    def _pcapng(self) -> Iterator[Frame]:
        endian = "<"
        factors: list[tuple[int, int]] = []
        linktypes: list[int] = []
        head = struct.Struct("<II")
        word = struct.Struct("<I")
        epb = struct.Struct("<IIIII")
        pb = struct.Struct("<HHIIII")
        # EPB: type, length, interface, ts high/low, captured and original length
        fast = struct.Struct("<IIIIIII")
        fill = self._fill
        while True:
            # Fast path: enhanced packet blocks that lie wholly in the buffer.
            buf, pos = self._buf, self._pos
            n, nif = len(buf), len(factors)
            while pos + 32 <= n:
                btype, total, ifid, hi, lo, caplen, wire = fast.unpack_from(buf, pos)
                end = pos + total
                if (
                    btype != _EPB
                    or end > n
                    or total < 32
                    or total % 4
                    or ifid >= nif
                    or caplen > total - 32
                    or word.unpack_from(buf, end - 4)[0] != total
                ):
                    break
                mul, div = factors[ifid]
                self._pos = end
                self.count += 1
                self.wire_len = wire
                data = buf[pos + 28 : pos + 28 + caplen]
                pos = end
                yield ifid, linktypes[ifid], ((hi << 32) | lo) * mul // div, data
            if len(self._buf) - self._pos < 12 and not fill(12):
                if len(self._buf) != self._pos:
                    raise self._truncated("a block header")
                return
            btype, total = head.unpack_from(self._buf, self._pos)
            if btype == _SHB:
                bom = self._buf[self._pos + 8 : self._pos + 12]
                if bom == b"\x4d\x3c\x2b\x1a":
                    endian = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    endian = ">"
                else:
                    raise CaptureFileError(
                        f"{self.name}: bad byte-order magic {bom.hex()} in a section header "
                        f"after {self.count} packet(s)"
                    )
                head = struct.Struct(endian + "II")
                word = struct.Struct(endian + "I")
                epb = struct.Struct(endian + "IIIII")
                pb = struct.Struct(endian + "HHIIII")
                fast = struct.Struct(endian + "IIIIIII")
                btype, total = head.unpack_from(self._buf, self._pos)
                self.interfaces.clear()
                factors.clear()
                linktypes.clear()
            if total < 12 or total % 4 or total > MAX_RECORD:
                raise CaptureFileError(
                    f"{self.name}: block of impossible length {total} after {self.count} packet(s)",
                    hint="the file is damaged after this point",
                )
            if len(self._buf) - self._pos < total and not fill(total):
                raise self._truncated(f"a block of {total} bytes")
            buf, pos = self._buf, self._pos
            self._pos = pos + total
            if word.unpack_from(buf, pos + total - 4)[0] != total:
                raise CaptureFileError(
                    f"{self.name}: a block's trailing length differs from its leading "
                    f"length {total} after {self.count} packet(s)",
                    hint="the file is damaged after this point",
                )
            if total < _MIN_BLOCK.get(btype, 12):
                raise CaptureFileError(
                    f"{self.name}: a block of type {btype:#x} is {total} bytes, shorter than "
                    f"its {_MIN_BLOCK[btype]}-byte minimum, after {self.count} packet(s)",
                    hint="the file is damaged after this point",
                )
            if btype == _EPB:
                ifid, hi, lo, caplen, wire = epb.unpack_from(buf, pos + 8)
                if ifid >= len(factors) or caplen > total - 32:
                    raise self._bad_packet(ifid, len(factors), caplen)
                mul, div = factors[ifid]
                ticks = (hi << 32) | lo
                self.count += 1
                self.wire_len = wire
                yield ifid, linktypes[ifid], ticks * mul // div, buf[pos + 28 : pos + 28 + caplen]
            elif btype == _IDB:
                linktype = struct.unpack_from(endian + "H", buf, pos + 8)[0]
                name, resol = _idb_options(buf[pos + 16 : pos + total - 4], endian)
                self.interfaces.append(Interface(name, linktype))
                factors.append(_ts_factors(resol))
                linktypes.append(linktype)
            elif btype == _SPB:
                if not factors:
                    raise CaptureFileError(
                        f"{self.name}: a simple packet block before any interface"
                    )
                wire = struct.unpack_from(endian + "I", buf, pos + 8)[0]
                caplen = min(wire, total - 16)
                self.count += 1
                self.wire_len = wire
                yield 0, linktypes[0], 0, buf[pos + 12 : pos + 12 + caplen]
            elif btype == _PB:
                ifid, _drops, hi, lo, caplen, wire = pb.unpack_from(buf, pos + 8)
                if ifid >= len(factors) or caplen > total - 32:
                    raise self._bad_packet(ifid, len(factors), caplen)
                mul, div = factors[ifid]
                self.count += 1
                self.wire_len = wire
                ts = ((hi << 32) | lo) * mul // div
                yield ifid, linktypes[ifid], ts, buf[pos + 28 : pos + 28 + caplen]

    def _bad_packet(self, ifid: int, known: int, caplen: int) -> CaptureFileError:
        if ifid >= known:
            return CaptureFileError(
                f"{self.name}: packet {self.count + 1} names interface {ifid}, "
                f"but only {known} are declared"
            )
        return CaptureFileError(
            f"{self.name}: packet {self.count + 1} claims {caplen} bytes, more than its block",
            hint=f"the file is damaged after {self.count} packet(s)",
        )


def _idb_options(opts: bytes, endian: str) -> tuple[str, int]:
    """``if_name`` (code 2) and ``if_tsresol`` (code 9; default 6, microseconds)."""
    name, resol = "", 6
    i = 0
    while i + 4 <= len(opts):
        code, length = struct.unpack_from(endian + "HH", opts, i)
        if code == 0:
            break
        value = opts[i + 4 : i + 4 + length]
        if code == 2:
            name = value.decode(errors="replace")
        elif code == 9 and value:
            resol = value[0]
        i += 4 + length + (-length % 4)
    return name, resol


# -- writing ------------------------------------------------------------------


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def _block(btype: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", btype, total) + body + struct.pack("<I", total)


class PcapngWriter:
    """Write pcapng one packet at a time: one interface block per (name, link type),
    nanosecond timestamps, an optional comment per packet.

    Raises CaptureFileError when the file cannot be created or written.
    """

    def __init__(self, path: str | Path) -> None:
        self.name = str(path)
        try:
            self._fh: BinaryIO = open(path, "wb", buffering=CHUNK_SIZE)  # noqa: SIM115
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            why = getattr(exc, "strerror", None) or exc
            raise CaptureFileError(
                f"cannot write {self.name}: {why}", hint="choose a writable path"
            ) from exc
        self._ifids: dict[tuple[str, int], int] = {}
        self.count = 0
        shb = struct.pack("<IHHq", _BOM, 1, 0, -1) + _option(4, b"esplab") + _option(0, b"")
        self._write(_block(_SHB, shb))

    def _write(self, data: bytes) -> None:
        try:
            self._fh.write(data)
        except OSError as exc:
            raise CaptureFileError(f"cannot write {self.name}: {exc.strerror or exc}") from exc

    def write(
        self, interface: str, linktype: int, ts_ns: int, data: bytes, comment: str = ""
    ) -> None:
        key = (interface, linktype)
        ifid = self._ifids.get(key)
        if ifid is None:
            ifid = self._ifids[key] = len(self._ifids)
            opts = _option(2, interface.encode()) + _option(9, b"\x09") + _option(0, b"")
            self._write(_block(_IDB, struct.pack("<HHI", linktype, 0, 262144) + opts))
        body = struct.pack(
            "<IIIII", ifid, (ts_ns >> 32) & 0xFFFFFFFF, ts_ns & 0xFFFFFFFF, len(data), len(data)
        )
        body += data + b"\x00" * (-len(data) % 4)
        if comment:
            body += _option(1, comment.encode()) + _option(0, b"")
        self._write(_block(_EPB, body))
        self.count += 1

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError as exc:
            raise CaptureFileError(f"cannot write {self.name}: {exc.strerror or exc}") from exc

    def __enter__(self) -> PcapngWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
