"""Decode's verdicts as text without rich: JSON lines, the summary object, packet rows.

JSON (``--json``): one object per ESP packet per line, in capture order, then one
summary object. Packet lines are assembled from fixed parts, not through
``json.dumps``, because a big capture has millions of them; every value is a
number, ``true``/``false``/``null``, or a string of known characters (addresses,
hex, fixed words) except the interface name and the detail, which are escaped.

:class:`PacketRows` keeps the rows a person gets, bounded whatever the capture
size; ``report`` draws them. Nothing here imports rich, so ``--json`` starts fast.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from esplab.capfile.linklayer import SUPPORTED_LINKTYPES
from esplab.capfile.records import PacketRecord, SaResult, Summary
from esplab.capfile.safile import SaFile
from esplab.capfile.sequence import event_names
from esplab.pcapio import Interface

__all__ = [
    "AddressText",
    "PacketJson",
    "PacketRows",
    "Row",
    "RunInfo",
    "inner_text",
    "linktype_name",
    "summary_dict",
]

_PROTOS: Mapping[int, str] = MappingProxyType(
    {
        1: "ICMP",
        6: "TCP",
        17: "UDP",
        41: "IPv6",
        4: "IPv4",
        47: "GRE",
        50: "ESP",
        58: "ICMPv6",
    }
)


class AddressText:
    """Packed address -> text, remembered (captures repeat the same few addresses)."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[bytes, str] = {}

    def __call__(self, packed: bytes) -> str:
        text = self._cache.get(packed)
        if text is None:
            if len(self._cache) > 65536:
                self._cache.clear()
            if len(packed) == 4:  # as inet_ntop writes it, without importing socket (3 ms)
                text = self._cache[packed] = ".".join(map(str, packed))
            else:
                from socket import AF_INET6, inet_ntop

                text = self._cache[packed] = inet_ntop(AF_INET6, packed)
        return text


def _bool(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")


def _int(value: int | None) -> str:
    return "null" if value is None else str(value)


_CACHE_MAX = 4096


class PacketJson:
    """Packet records as JSON lines (module docstring).

    The parts that repeat from packet to packet (interface, addresses, SA, verdict,
    inner flow) are formatted once and remembered, in bounded caches.
    """

    __slots__ = ("_addr", "_heads", "_inners", "_names", "_verdicts")

    def __init__(self, addr: AddressText | None = None) -> None:
        self._addr = addr or AddressText()
        self._heads: dict[tuple[object, ...], str] = {}
        self._inners: dict[tuple[object, ...], str] = {}
        self._verdicts: dict[tuple[object, ...], str] = {}
        self._names: Sequence[str] = ()

    def __call__(self, rec: PacketRecord, iface_names: Sequence[str]) -> str:
        key: tuple[object, ...] = (rec.iface, rec.src, rec.dst, rec.encap, rec.spi, rec.sa)
        head = self._heads.get(key)
        if head is None or iface_names is not self._names:
            head = self._head(rec, iface_names)
            if len(self._heads) > _CACHE_MAX or iface_names is not self._names:
                self._heads.clear()
            self._names = iface_names
            self._heads[key] = head
        vkey = (rec.status, rec.icv, rec.pad_len, rec.next_header, rec.padding_ok)
        verdict = self._verdicts.get(vkey)
        if verdict is None:
            if len(self._verdicts) > _CACHE_MAX:
                self._verdicts.clear()
            verdict = self._verdicts[vkey] = (
                f'"status":"{rec.status}","icv":"{rec.icv}","pad_len":{_int(rec.pad_len)},'
                f'"next_header":{_int(rec.next_header)},"padding_ok":{_bool(rec.padding_ok)}'
            )
        inner = rec.inner
        pre: str | None
        length: int | str
        if inner is None:
            pre, length, close = "null", "", ""
        else:
            ikey = inner[:6]
            pre = self._inners.get(ikey)
            if pre is None:
                if len(self._inners) > _CACHE_MAX:
                    self._inners.clear()
                version, isrc, idst, proto, sport, dport, _ = inner
                addr = self._addr
                ports = "" if sport < 0 else f',"sport":{sport},"dport":{dport}'
                pre = self._inners[ikey] = (
                    f'{{"version":{version},"src":"{addr(isrc)}","dst":"{addr(idst)}",'
                    f'"proto":{proto}{ports},"len":'
                )
            length, close = inner[6], "}"
        events = ",".join(f'"{e}"' for e in event_names(rec.events, rec.gap)) if rec.events else ""
        detail = json.dumps(rec.detail) if rec.detail else '""'
        # Seconds and nanoseconds cut from the decimal digits: faster than divmod and :09d.
        ts = rec.ts_ns
        t = str(ts) if ts >= 1_000_000_000 else f"0{ts:09d}"
        seq = "null" if rec.spi < 0 else rec.seq
        return (
            f'{{"type":"packet","frame":{rec.frame},"time":{t[:-9]}.{t[-9:]},{head}"seq":{seq},'
            f'{verdict},"inner":{pre}{length}{close},"events":[{events}],"detail":{detail}}}'
        )

    def _head(self, rec: PacketRecord, iface_names: Sequence[str]) -> str:
        iface = json.dumps(iface_names[rec.iface]) if rec.iface < len(iface_names) else '""'
        encap = "null" if rec.encap is None else f"[{rec.encap[0]},{rec.encap[1]}]"
        spi = "null" if rec.spi < 0 else f'"0x{rec.spi:08x}"'
        return (
            f'"interface":{iface},"src":"{self._addr(rec.src)}","dst":"{self._addr(rec.dst)}",'
            f'"encap":{encap},"spi":{spi},"sa":{rec.sa or "null"},'
        )


def inner_text(rec: PacketRecord, addr: AddressText) -> str:
    """``IPv4 10.0.0.1:1234 > 10.0.0.2:5678 UDP 100 B``."""
    if rec.inner is None:
        return ""
    version, src, dst, proto, sport, dport, length = rec.inner
    a, b = addr(src), addr(dst)
    if version == 6:
        a, b = f"[{a}]", f"[{b}]"
    if sport >= 0:
        a, b = f"{a}:{sport}", f"{b}:{dport}"
    return f"IPv{version} {a} > {b} {_PROTOS.get(proto, f'proto {proto}')} {length} B"


@dataclass(frozen=True)
class Row:
    frame: int
    spi: str
    seq: str
    sa: str
    icv: str
    status: str
    trailer: str
    inner: str
    notes: str


class PacketRows:
    """The packet rows a person gets: all when there are at most ``limit`` ESP packets,
    otherwise those with a problem (at most ``limit``); memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.first: list[Row] = []
        self.problems: list[Row] = []
        self.seen = 0
        self.problem_count = 0
        self._addr = AddressText()

    @classmethod
    def merged(cls, parts: Sequence[PacketRows]) -> PacketRows:
        """The rows of one run from the rows of its stripes (``parallel``)."""
        out = cls(parts[0].limit)
        out.seen = sum(p.seen for p in parts)
        out.problem_count = sum(p.problem_count for p in parts)
        by_frame = sorted((r for p in parts for r in p.first), key=lambda r: r.frame)
        out.first = by_frame[: out.limit]
        by_frame = sorted((r for p in parts for r in p.problems), key=lambda r: r.frame)
        out.problems = by_frame[: out.limit]
        return out

    def add(self, rec: PacketRecord) -> None:
        self.seen += 1
        problem = rec.status != "ok" or bool(rec.events) or rec.padding_ok is False
        if problem:
            self.problem_count += 1
        if len(self.first) < self.limit or (problem and len(self.problems) < self.limit):
            row = self._row(rec)
            if len(self.first) < self.limit:
                self.first.append(row)
            if problem and len(self.problems) < self.limit:
                self.problems.append(row)

    def _row(self, rec: PacketRecord) -> Row:
        trailer = ""
        if rec.pad_len is not None:
            trailer = f"pad {rec.pad_len} nh {rec.next_header}"
            if rec.padding_ok is False:
                trailer += " (padding not 1,2,3..)"
        notes = ", ".join(
            [*event_names(rec.events, rec.gap), *([rec.detail] if rec.detail else [])]
        )
        if rec.encap is not None:
            notes = f"UDP {rec.encap[0]}>{rec.encap[1]}" + (f", {notes}" if notes else "")
        malformed = rec.spi < 0
        return Row(
            rec.frame,
            "" if malformed else f"0x{rec.spi:08x}",
            "" if malformed else f"{rec.seq:#x}" if rec.seq > 0xFFFFFFFF else str(rec.seq),
            str(rec.sa) if rec.sa else "-",
            rec.icv,
            rec.status,
            trailer,
            inner_text(rec, self._addr),
            notes,
        )


@dataclass(frozen=True)
class RunInfo:
    """The context of a run, for the summary."""

    capture: str
    sa_file: SaFile
    interfaces: Sequence[Interface]
    truncated: str | None
    limit_reached: bool
    exit_code: int


def linktype_name(lt: int) -> str:
    from esplab.layers.linktypes import LINKTYPE_NAMES  # loads scapy: only when needed

    return SUPPORTED_LINKTYPES.get(lt) or LINKTYPE_NAMES.get(lt) or f"link type {lt}"


def _sa_dict(r: SaResult) -> dict[str, object]:
    s, c = r.spec, r.counters
    return {
        "sa": s.index,
        "line": s.line,
        "spi": s.spi_text,
        "src": s.src,
        "dst": s.dst,
        "algorithms": s.algorithms,
        "mode": s.mode,
        "esn": s.esn,
        "replay_window": s.replay_window,
        "encap": list(s.encap) if s.encap else None,
        "matched": c.packets > 0,
        "packets": c.packets,
        "ok": c.ok,
        "icv_good": c.icv_good,
        "icv_bad": c.icv_bad,
        "no_integrity": c.no_integrity,
        "malformed": c.malformed,
        "bad_trailer": c.bad_trailer,
        "mode_error": c.mode_error,
        "encap_mismatch": c.encap_mismatch,
        "truncated": c.truncated,
        "padding_nonstandard": c.padding_nonstandard,
        "ok_padding_bad": c.ok_padding_bad,
        "dummy": c.dummy,
        "inner_bytes": c.inner_bytes,
        "first_frame": c.first_frame or None,
        "last_frame": c.last_frame or None,
        "sequence": r.seq.as_dict(),
        "notes": list(s.notes),
    }


def summary_dict(summary: Summary, info: RunInfo) -> dict[str, object]:
    """The summary object of ``--json`` (and the data behind the human summary)."""
    return {
        "type": "summary",
        "capture": info.capture,
        "sa_file": info.sa_file.path,
        "sa_form": info.sa_file.form,
        "frames": summary.frames,
        "esp": summary.esp,
        "ok": summary.ok,
        "failed": summary.failed,
        "padding_bad": summary.padding_bad,
        "status": dict(sorted(summary.by_status.items())),
        "non_esp": {"total": summary.non_esp, "reasons": dict(sorted(summary.skipped.items()))},
        "linktypes_skipped": {
            linktype_name(lt): n for lt, n in sorted(summary.linktypes_skipped.items())
        },
        "unknown_spi": {
            ("other" if spi < 0 else f"0x{spi:08x}"): n
            for spi, n in sorted(summary.unknown_spi.items())
        },
        "snaplen": {
            "truncated": summary.by_status.get("truncated", 0),
            "most_captured": summary.cut_captured or None,
            "longest": summary.cut_wire or None,
        },
        "sas": [_sa_dict(r) for r in summary.sas],
        "unmatched_sas": [r.spec.index for r in summary.sas if not r.counters.packets],
        "sa_file_notes": list(info.sa_file.notes),
        "truncated": None
        if info.truncated is None
        else {
            "frames": summary.frames,
            "error": info.truncated,
        },
        "limit_reached": info.limit_reached,
        "exit": info.exit_code,
    }
