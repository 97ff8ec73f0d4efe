"""The lab's captures as files: pcapng (one interface per tap), classic pcap.

Files are byte-reproducible (timestamps come from the lab's clock, never the wall
clock); each tap gets its own interface block with its name and link type, and
each packet its comment. The formats follow the pcapng draft
(draft-ietf-opsawg-pcapng) and libpcap's classic file; link types are
tcpdump.org's, with DLT_USER numbers for esplab's own records
(``esplab.layers.linktypes``). The byte-level reading and pcapng writing live in
``esplab.pcapio``; every way a file can be bad is a CaptureFileError naming the
file, what was read and what is wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from esplab.errors import CaptureFileError
from esplab.layers import linktypes
from esplab.pcapio import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_RAW,
    FrameReader,
    PcapngWriter,
)

__all__ = [
    "KIND_LINKTYPES",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_KINDS",
    "LINKTYPE_RAW",
    "CaptureRecord",
    "read_capture",
    "write_capture",
]

# Snapshot kind (esplab.model.stage) -> link type.
KIND_LINKTYPES = {
    "ip": LINKTYPE_RAW,
    "ether": LINKTYPE_ETHERNET,
    "mtk": linktypes.DLT_MTK_ETHER,
    "mtk-rx": linktypes.DLT_MTK_ETHER_RX,
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

# Link type -> snapshot kind, for reading a file back: the first kind of each link
# type (qdma-rx shares qdma's), and raw IPv4/IPv6 (228/229) as ip.
LINKTYPE_KINDS = {
    **{lt: kind for kind, lt in reversed(KIND_LINKTYPES.items())},
    LINKTYPE_IPV4: "ip",
    LINKTYPE_IPV6: "ip",
}

_PCAP_MAGIC_NS = 0xA1B23C4D  # libpcap's nanosecond-resolution magic
_SNAPLEN = 262144


@dataclass(frozen=True)
class CaptureRecord:
    """One packet in a capture file: where it came from, when, and its bytes."""

    interface: str
    linktype: int
    ts_ns: int
    data: bytes
    comment: str = ""


def _pcap_bytes(records: list[CaptureRecord], path: str) -> bytes:
    kinds = {r.linktype for r in records}
    if len(kinds) > 1:
        raise CaptureFileError(
            f"cannot write {path}: a classic pcap holds one link type, these records have "
            f"{len(kinds)} ({', '.join(str(k) for k in sorted(kinds))})",
            hint="write .pcapng (one interface per tap) or export taps of one kind",
        )
    linktype = kinds.pop() if kinds else LINKTYPE_RAW
    out = [struct.pack("<IHHiIII", _PCAP_MAGIC_NS, 2, 4, 0, 0, _SNAPLEN, linktype)]
    for rec in records:
        sec, nsec = divmod(rec.ts_ns, 1_000_000_000)
        out.append(struct.pack("<IIII", sec, nsec, len(rec.data), len(rec.data)) + rec.data)
    return b"".join(out)


def write_capture(path: str | Path, records: Iterable[CaptureRecord]) -> int:
    """Write ``records`` as pcapng, or classic pcap when ``path`` ends in ``.pcap``.

    Returns the number of packets written; raises CaptureFileError when the file
    cannot be written (its path and the OS's reason).
    """
    target = Path(path)
    if target.suffix != ".pcap":
        with PcapngWriter(target) as writer:
            for rec in records:
                writer.write(rec.interface, rec.linktype, rec.ts_ns, rec.data, rec.comment)
            return writer.count
    recs = list(records)
    data = _pcap_bytes(recs, str(target))
    try:
        target.write_bytes(data)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise CaptureFileError(
            f"cannot write {target}: {why}", hint="choose a writable path"
        ) from exc
    return len(recs)


def read_capture(path: str | Path) -> Iterator[CaptureRecord]:
    """Stream the packets of a pcap or pcapng file; CaptureFileError on bad input."""
    reader = FrameReader(path)
    with reader:
        for ifid, linktype, ts_ns, data in reader:
            name = reader.interfaces[ifid].name if ifid < len(reader.interfaces) else ""
            yield CaptureRecord(name, linktype, ts_ns, data)
