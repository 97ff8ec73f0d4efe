"""What decode says about a packet, an SA and a capture: plain data for the reporters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from esplab.capfile.safile import SaSpec
from esplab.capfile.sequence import SeqStats
from esplab.pcapio import Interface

__all__ = ["STATUSES", "OutItem", "PacketRecord", "SaCounters", "SaResult", "Summary", "out_item"]

#: Packet status -> meaning. Only "ok" counts as authenticated and decrypted.
STATUSES: Mapping[str, str] = MappingProxyType(
    {
        "ok": "authenticated (or the SA has no integrity) and decrypted to a sound trailer",
        "icv-bad": "the ICV does not verify",
        "no-sa": "no SA in the SA file has this SPI",
        "malformed": "too short for the SA's header, IV and ICV",
        "bad-trailer": "authenticated, but decrypts to an impossible trailer or ciphertext length",
        "mode-error": "a tunnel-mode SA whose payload is not the IP packet the next header names",
        "encap-mismatch": "UDP-encapsulated for an SA without encap, or plain for one with it "
        "(the kernel drops it: XfrmInStateMismatch)",
        "truncated": "truncated by the snaplen (captured length < original length): SPI and "
        "sequence number read, the rest cannot be verified",
    }
)


class PacketRecord:
    """The verdict on one ESP packet (every field plain data, for the reporters).

    ``inner`` is (version, packed src, packed dst, protocol, sport, dport, length)
    of the decrypted packet, ports -1 when not TCP/UDP. ``events`` is the
    ``sequence`` event mask and ``gap`` the numbers skipped before this one.
    """

    __slots__ = (
        "detail",
        "dst",
        "encap",
        "esp",
        "events",
        "frame",
        "gap",
        "icv",
        "iface",
        "inner",
        "inner_packet",
        "next_header",
        "pad_len",
        "padding_ok",
        "sa",
        "seq",
        "spi",
        "src",
        "status",
        "ts_ns",
    )

    def __init__(
        self,
        frame: int,
        ts_ns: int,
        iface: int,
        src: bytes,
        dst: bytes,
        encap: tuple[int, int] | None,
        spi: int,
        seq: int,
        sa: int,
        status: str,
        icv: str,
    ) -> None:
        self.frame, self.ts_ns, self.iface = frame, ts_ns, iface
        self.src, self.dst, self.encap = src, dst, encap
        self.spi, self.seq, self.sa = spi, seq, sa
        self.status, self.icv = status, icv
        self.pad_len: int | None = None
        self.next_header: int | None = None
        self.padding_ok: bool | None = None
        self.inner: tuple[int, bytes, bytes, int, int, int, int] | None = None
        self.events, self.gap = 0, 0
        self.detail = ""
        self.inner_packet: bytes | None = None
        self.esp = b""


@dataclass
class SaCounters:
    """What one SA saw."""

    packets: int = 0
    ok: int = 0
    icv_good: int = 0
    icv_bad: int = 0
    no_integrity: int = 0
    malformed: int = 0
    bad_trailer: int = 0
    mode_error: int = 0
    encap_mismatch: int = 0
    truncated: int = 0
    padding_nonstandard: int = 0
    #: ok packets (the kernel accepts them) whose padding is not 1, 2, 3.. (RFC 4303 2.4)
    ok_padding_bad: int = 0
    dummy: int = 0
    inner_bytes: int = 0
    first_frame: int = 0
    last_frame: int = 0


@dataclass
class SaResult:
    """An SA's totals after the run."""

    spec: SaSpec
    counters: SaCounters
    seq: SeqStats


@dataclass
class Summary:
    """Everything counted over the capture."""

    frames: int = 0
    esp: int = 0
    ok: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    linktypes_skipped: dict[int, int] = field(default_factory=dict)
    unknown_spi: dict[int, int] = field(default_factory=dict)
    sas: list[SaResult] = field(default_factory=list)
    #: Of the ESP packets cut by the snaplen: the most bytes one kept, the longest one.
    cut_captured: int = 0
    cut_wire: int = 0

    @property
    def non_esp(self) -> int:
        return sum(self.skipped.values())

    @property
    def failed(self) -> int:
        return self.esp - self.ok

    @property
    def padding_bad(self) -> int:
        """ok packets whose padding is not 1, 2, 3.. (RFC 4303 2.4): Linux accepts them,
        but it is the mark of a wrong encryption key or cipher."""
        return sum(r.counters.ok_padding_bad for r in self.sas)


#: (interface name, timestamp ns, decrypted IP packet, comment) for ``--out``.
OutItem = tuple[str, int, bytes, str]


def out_item(rec: PacketRecord, interfaces: Sequence[Interface]) -> OutItem | None:
    """What ``--out`` writes for a record: the inner packet of an authenticated one."""
    if rec.inner_packet is None or rec.status != "ok":
        return None
    name = interfaces[rec.iface].name if rec.iface < len(interfaces) else ""
    return name, rec.ts_ns, rec.inner_packet, f"frame {rec.frame} spi 0x{rec.spi:08x} seq {rec.seq}"
