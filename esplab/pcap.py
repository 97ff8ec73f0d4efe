"""Writing and reading captures: pcapng (one interface per tap), classic pcap.

The writer is our own so that files are byte-reproducible (timestamps come from
the lab's clock, never the wall clock) and so that each tap gets its own
interface block with its name and link type, and each packet its comment. The
formats follow the pcapng draft (draft-ietf-opsawg-pcapng: SHB, IDB, EPB blocks,
options) and libpcap's classic file format; link types are tcpdump.org's, with
DLT_USER numbers for esplab's own records (``esplab.layers.linktypes``).

Reading is streaming (one packet at a time) and every way a file can be bad
becomes a CaptureFileError naming the file, what was read and what is wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from esplab.errors import CaptureFileError
from esplab.layers import linktypes

__all__ = [
    "KIND_LINKTYPES",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_RAW",
    "CaptureRecord",
    "read_capture",
    "write_capture",
]

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101  # raw IPv4/IPv6, no link header
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

# Snapshot kind (esplab.model.journey) -> link type.
KIND_LINKTYPES = {
    "ip": LINKTYPE_RAW,
    "ether": LINKTYPE_ETHERNET,
    "mtk": linktypes.DLT_MTK_ETHER,
    "qdma": linktypes.DLT_QDMA_DESC,
    "qdma-rx": linktypes.DLT_QDMA_DESC,  # read back with the TX layout; .as_rx() for RX
    "cdr": linktypes.DLT_EIP93_CMD_DESC,
    "rdr": linktypes.DLT_EIP93_RES_DESC,
    "sa": linktypes.DLT_EIP93_SA_RECORD,
    "state": linktypes.DLT_EIP93_STATE_RECORD,
    "offload": linktypes.DLT_XFRM_OFFLOAD,
    "xdp": linktypes.DLT_XDP_DESC,
    "raw": 162,  # DLT_USER15: bytes of no known kind
}

_PCAP_MAGIC_US = 0xA1B2C3D4
_PCAP_MAGIC_NS = 0xA1B23C4D
_SHB = 0x0A0D0D0A
_IDB = 0x00000001
_EPB = 0x00000006
_SPB = 0x00000003
_BOM = 0x1A2B3C4D
_SNAPLEN = 262144


@dataclass(frozen=True)
class CaptureRecord:
    """One packet in a capture file: where it came from, when, and its bytes."""

    interface: str
    linktype: int
    ts_ns: int
    data: bytes
    comment: str = ""


def _pad4(data: bytes) -> bytes:
    return data + b"\x00" * (-len(data) % 4)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad4(value)


def _block(btype: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", btype, total) + body + struct.pack("<I", total)


def _pcapng(records: list[CaptureRecord]) -> Iterator[bytes]:
    shb_opts = _option(4, b"esplab") + _option(0, b"")  # shb_userappl
    yield _block(_SHB, struct.pack("<IHHq", _BOM, 1, 0, -1) + shb_opts)
    ifids: dict[tuple[str, int], int] = {}
    for rec in records:
        key = (rec.interface, rec.linktype)
        if key not in ifids:
            ifids[key] = len(ifids)
            opts = _option(2, rec.interface.encode()) + _option(9, b"\x09") + _option(0, b"")
            yield _block(_IDB, struct.pack("<HHI", rec.linktype, 0, _SNAPLEN) + opts)
        ts = rec.ts_ns  # if_tsresol 9: nanoseconds
        body = struct.pack(
            "<IIIII", ifids[key], ts >> 32, ts & 0xFFFFFFFF, len(rec.data), len(rec.data)
        )
        body += _pad4(rec.data)
        if rec.comment:
            body += _option(1, rec.comment.encode()) + _option(0, b"")
        yield _block(_EPB, body)


def _pcap(records: list[CaptureRecord], path: str) -> Iterator[bytes]:
    kinds = {r.linktype for r in records}
    if len(kinds) > 1:
        raise CaptureFileError(
            f"cannot write {path}: a classic pcap holds one link type, these records have "
            f"{len(kinds)} ({', '.join(str(k) for k in sorted(kinds))})",
            hint="write .pcapng (one interface per tap) or export taps of one kind",
        )
    linktype = kinds.pop() if kinds else LINKTYPE_RAW
    yield struct.pack("<IHHiIII", _PCAP_MAGIC_NS, 2, 4, 0, 0, _SNAPLEN, linktype)
    for rec in records:
        sec, nsec = divmod(rec.ts_ns, 1_000_000_000)
        yield struct.pack("<IIII", sec, nsec, len(rec.data), len(rec.data)) + rec.data


def write_capture(path: str | Path, records: Iterable[CaptureRecord]) -> int:
    """Write ``records`` as pcapng, or classic pcap when ``path`` ends in ``.pcap``.

    Returns the number of packets written; raises CaptureFileError when the file
    cannot be written (its path and the OS's reason).
    """
    target = Path(path)
    recs = list(records)
    blocks = _pcap(recs, str(target)) if target.suffix == ".pcap" else _pcapng(recs)
    data = b"".join(blocks)
    try:
        target.write_bytes(data)
    except (OSError, ValueError) as exc:
        raise CaptureFileError(
            f"cannot write {target}: {getattr(exc, 'strerror', None) or exc}",
            hint="choose a writable path",
        ) from exc
    return len(recs)


# -- reading ------------------------------------------------------------------


def _need(fh: BinaryIO, n: int, name: str, what: str, count: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise CaptureFileError(
            f"{name} is truncated in {what} after {count} packet(s)",
            hint="the packets before it were read",
        )
    return data


def _read_pcap(fh: BinaryIO, name: str, head: bytes) -> Iterator[CaptureRecord]:
    magic_le = struct.unpack("<I", head[:4])[0]
    magic_be = struct.unpack(">I", head[:4])[0]
    if magic_le in (_PCAP_MAGIC_US, _PCAP_MAGIC_NS):
        endian, magic = "<", magic_le
    else:
        endian, magic = ">", magic_be
    rest = _need(fh, 20, name, "the file header", 0)
    linktype = struct.unpack(endian + "HHiIII", rest)[5] & 0x0FFFFFFF
    scale = 1 if magic == _PCAP_MAGIC_NS else 1000
    count = 0
    while True:
        hdr = fh.read(16)
        if not hdr:
            return
        if len(hdr) < 16:
            raise CaptureFileError(
                f"{name} is truncated in a packet header after {count} packet(s)",
                hint="the packets before it were read",
            )
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", hdr)
        if caplen > _SNAPLEN * 4:
            raise CaptureFileError(
                f"{name}: packet {count + 1} claims {caplen} bytes, which no capture holds",
                hint="the file is damaged after this point",
            )
        data = _need(fh, caplen, name, f"packet {count + 1}", count)
        count += 1
        yield CaptureRecord("", linktype, sec * 1_000_000_000 + frac * scale, data)


def _read_pcapng(fh: BinaryIO, name: str, head: bytes) -> Iterator[CaptureRecord]:
    endian = "<"
    interfaces: list[tuple[str, int, int]] = []
    count = 0
    pending = head
    while True:
        first = pending + fh.read(8 - len(pending))
        pending = b""
        if not first:
            return
        if len(first) < 8:
            raise CaptureFileError(f"{name} is truncated in a block header after {count} packet(s)")
        btype = struct.unpack(endian + "I", first[:4])[0]
        if btype == _SHB:
            bom = _need(fh, 4, name, "the section header", count)
            endian = "<" if struct.unpack("<I", bom)[0] == _BOM else ">"
            if struct.unpack(endian + "I", bom)[0] != _BOM:
                raise CaptureFileError(f"{name}: bad byte-order magic in a section header")
            interfaces = []
            total = struct.unpack(endian + "I", first[4:8])[0]
            _need(fh, total - 12, name, "the section header", count)
            continue
        total = struct.unpack(endian + "I", first[4:8])[0]
        if total < 12 or total % 4 or total > 64 * 1024 * 1024:
            raise CaptureFileError(
                f"{name}: block of impossible length {total} after {count} packet(s)"
            )
        body = _need(fh, total - 8, name, f"a block after {count} packet(s)", count)[:-4]
        if btype == _IDB:
            linktype = struct.unpack(endian + "H", body[:2])[0]
            interfaces.append((_if_name(body[8:], endian) or f"if{len(interfaces)}", linktype, 6))
        elif btype == _EPB:
            ifid, hi, lo, caplen = struct.unpack(endian + "IIII", body[:16])
            if ifid >= len(interfaces):
                raise CaptureFileError(f"{name}: packet {count + 1} names interface {ifid}, "
                                       f"but only {len(interfaces)} are declared")
            ifname, linktype, _ = interfaces[ifid]
            count += 1
            yield CaptureRecord(ifname, linktype, ((hi << 32) | lo), body[20 : 20 + caplen])
        elif btype == _SPB:
            if not interfaces:
                raise CaptureFileError(f"{name}: a simple packet block before any interface")
            caplen = len(body) - 4
            count += 1
            yield CaptureRecord(interfaces[0][0], interfaces[0][1], 0, body[4 : 4 + caplen])


def _if_name(opts: bytes, endian: str) -> str:
    i = 0
    while i + 4 <= len(opts):
        code, length = struct.unpack(endian + "HH", opts[i : i + 4])
        if code == 0:
            break
        if code == 2:
            return opts[i + 4 : i + 4 + length].decode(errors="replace")
        i += 4 + length + (-length % 4)
    return ""


def read_capture(path: str | Path) -> Iterator[CaptureRecord]:
    """Stream the packets of a pcap or pcapng file; CaptureFileError on bad input."""
    name = str(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in the generator's finally
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise CaptureFileError(f"cannot read {name}: {why}") from exc
    try:
        head = fh.read(4)
        if len(head) < 4:
            raise CaptureFileError(
                f"{name} is not a capture: {len(head)} byte(s) long",
                valid="pcap or pcapng files",
            )
        magic_le = struct.unpack("<I", head)[0]
        magic_be = struct.unpack(">I", head)[0]
        if magic_le == _SHB:
            yield from _read_pcapng(fh, name, head)
        elif _PCAP_MAGIC_US in (magic_le, magic_be) or _PCAP_MAGIC_NS in (magic_le, magic_be):
            yield from _read_pcap(fh, name, head)
        else:
            raise CaptureFileError(
                f"{name} is not a capture (starts with {head.hex()})",
                valid="pcap (a1b2c3d4/a1b23c4d) or pcapng (0a0d0d0a) files",
            )
    finally:
        fh.close()
