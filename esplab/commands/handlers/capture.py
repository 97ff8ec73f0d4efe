"""capture list|show|clear|export|import, and wireshark-keys.

Every tap keeps its records in a bounded ring. Export writes pcapng with one
interface per tap and a comment per packet (journey, stage, datapath, SPI,
sequence), or classic pcap for a ``.pcap`` name; timestamps come from the lab
clock, so the same lab gives byte-identical files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, PacketResult, Result, TableResult, TextResult
from esplab.errors import BadArgument, CaptureFileError, NoSuchPacket
from esplab.model.stage import Captured

__all__ = ["COMMANDS", "EPOCH_NS", "capture_records"]

# The lab clock: 2026-01-01 00:00:00 UTC; journey n starts at n ms, stage k at +k us.
EPOCH_NS = 1767225600 * 1_000_000_000


def _timestamp(rec: Captured) -> int:
    """An imported record keeps its file's timestamp; the lab's own come from its clock."""
    if "ts_ns" in rec.meta:
        return int(rec.meta["ts_ns"])
    return EPOCH_NS + rec.journey * 1_000_000 + rec.index * 1_000


def _comment(rec: Captured) -> str:
    parts = [f"journey {rec.journey} stage {rec.index + 1} {rec.tap}"]
    for key in ("datapath", "spi", "seq"):
        if key in rec.meta:
            parts.append(f"{key} {rec.meta[key]}")
    if "decision" in rec.meta:
        parts.append(str(rec.meta["decision"]))
    return "; ".join(parts)


def capture_records(session: Session, taps: list[str]) -> list[object]:
    """CaptureRecords of the given taps (all when empty), in journey order."""
    from esplab.pcap import KIND_LINKTYPES, CaptureRecord

    captures = session.lab.captures
    chosen = taps or captures.taps()
    recs: list[Captured] = []
    for tap in chosen:
        recs.extend(captures.get(tap))
    recs.sort(key=lambda r: (r.journey, r.index))
    return [
        CaptureRecord(
            r.tap,
            # An imported record keeps its file's link type (one esplab has no kind for too).
            int(r.meta.get("linktype", KIND_LINKTYPES.get(r.kind, KIND_LINKTYPES["raw"]))),
            _timestamp(r),
            r.data,
            _comment(r),
        )
        for r in recs
    ]


def _list(session: Session) -> Result:
    counts = session.lab.captures.counts()
    rows = [(tap, str(n)) for tap, n in counts.items()]
    return TableResult(
        summary=f"{len(rows)} taps",
        title="captures",
        columns=("tap", "packets"),
        rows=rows,
        data={"counts": counts},
    )


def _show(session: Session, words: list[str]) -> Result:
    if not words:
        raise BadArgument("capture show needs a tap", valid=session.lab.captures.taps())
    tap = words[0]
    if len(words) == 1 and "#" not in tap:
        records = session.lab.captures.get(tap)
        rows = [
            (f"#{i + 1}", str(r.journey), str(len(r.data)), r.packet().summary())
            for i, r in enumerate(records)
        ]
        return TableResult(
            summary=f"{tap}: {len(rows)} packet(s)",
            title=tap,
            columns=("#", "journey", "len", "summary"),
            rows=rows,
            data={"tap": tap, "count": len(rows)},
        )
    ref = tap if "#" in tap else f"{tap}#{words[1]}"
    from esplab.commands.operands import esp_details, resolve_ref

    rec = resolve_ref(session, ref)
    packet = rec.packet()
    data: dict[str, Any] = {
        "tap": rec.tap,
        "journey": rec.journey,
        "len": len(rec.data),
        "hex": rec.data.hex(),
        **{k: str(v) for k, v in rec.meta.items()},
    }
    esp = esp_details(session, packet)
    if esp:
        data["esp"] = esp
    return PacketResult(
        summary=f"{ref}: {packet.summary()}",
        packet=packet,
        title=f"{ref} (journey {rec.journey}, {len(rec.data)} bytes)",
        data=data,
    )


def _export(session: Session, words: list[str]) -> Result:
    from esplab.pcap import write_capture

    force = _flag(words, "--force")
    if not words:
        raise BadArgument("capture export needs a file name", hint="capture export run.pcapng")
    taps = words[1:]
    known = session.lab.captures.known
    if words[0] in known and taps and taps[-1] not in known:
        raise BadArgument(
            f"'{words[0]}' is a tap, and the file comes first",
            hint=f"try: capture export {taps[-1]} {' '.join([words[0], *taps[:-1]])}",
        )
    for tap in taps:
        session.lab.captures.get(tap)  # unknown taps fail before anything is written
    path = session.files.target(words[0], "capture file", force=force, error=CaptureFileError)
    records = capture_records(session, taps)
    written = write_capture(path, records)  # type: ignore[arg-type]
    return MessageResult(
        summary=f"{written} packet(s) from {len(taps) or 'all'} tap(s) written to {path}",
        data={"file": str(path), "packets": written},
    )


def _flag(words: list[str], flag: str) -> bool:
    """Whether ``flag`` is among ``words`` (taken out of them)."""
    found = flag in words
    while flag in words:
        words.remove(flag)
    return found


def _tap_name(interface: str) -> str:
    """A pcapng interface name as a tap name: whitespace and '#' (which TAP#N and the
    command line would split on) become '_'; no name at all is the tap 'import'."""
    name = "".join("_" if c.isspace() or c == "#" or not c.isprintable() else c for c in interface)
    return name or "import"


def _import(session: Session, words: list[str]) -> Result:
    """Each record keeps its kind (from its link type), its timestamp and, in pcapng,
    its interface's name as its tap; ``capture import FILE TAP`` puts them all in TAP.

    A file damaged or cut short imports nothing, unless ``--partial`` asks for the
    packets before the damage."""
    from esplab.pcap import LINKTYPE_KINDS, read_capture

    partial = _flag(words, "--partial")
    if not words:
        raise BadArgument("capture import needs a file", hint="capture import board.pcap")
    path = Path(words[0]).expanduser()
    into = words[1] if len(words) > 1 else None
    if not partial:
        _check_whole(path)
    journey = None  # made with the first packet: a file that does not open leaves none
    count = 0
    taps: dict[str, int] = {}  # tap -> packets, in the file's order
    sources: dict[str, set[str]] = {}  # tap -> the interface names it took packets from

    def where() -> str:
        text = ", ".join(taps) if len(taps) < 2 else f"{len(taps)} taps: {', '.join(taps)}"
        merged = [
            f"{len(names)} interfaces ({', '.join(sorted(n or '(unnamed)' for n in names))}) "
            f"merged into {tap}"
            for tap, names in sources.items()
            if len(names) > 1
        ]
        return text + "".join(f"; {m}" for m in merged)

    session.files.reading(path, "a capture imported with capture import")
    damage = ""
    try:
        for rec in read_capture(path):
            if journey is None:
                journey = session.lab.journeys.new(f"import {path.name}")
            tap = into or _tap_name(rec.interface)
            meta = {"file": str(path), "ts_ns": rec.ts_ns, "linktype": rec.linktype}
            if rec.interface and rec.interface != tap:
                meta["interface"] = rec.interface
            kind = LINKTYPE_KINDS.get(rec.linktype, "raw")
            session.lab.captures.add(Captured(journey.id, count, tap, kind, rec.data, meta))
            taps[tap] = taps.get(tap, 0) + 1
            sources.setdefault(tap, set()).add(rec.interface)
            count += 1
    except CaptureFileError as exc:
        if not count:
            raise
        damage = f"; the rest is lost, {exc.what}"  # --partial: what came before stays
    finally:
        if journey is not None:
            journey.verdict = f"imported {count} packet(s) into {where()}"
    return MessageResult(
        summary=f"{count} packet(s) from {path} in {'tap ' if len(taps) == 1 else ''}{where()}"
        + damage,
        data={
            "tap": next(iter(taps)) if len(taps) == 1 else None,
            "taps": taps,
            "packets": count,
            "journey": journey.id if journey is not None else None,
            "partial": bool(damage),
        },
    )


def _check_whole(path: Path) -> None:
    """Read the capture to its end first: CaptureFileError if it is damaged or cut
    short, saying how many packets come before the damage and that --partial keeps them."""
    from esplab.pcapio import FrameReader

    reader = FrameReader(path)
    count = 0
    with reader:
        try:
            for _ in reader:
                count += 1
        except CaptureFileError as exc:
            raise CaptureFileError(
                f"{exc.what}; nothing was imported",
                hint=f"capture import {path} --partial imports the {count} packet(s) before it",
            ) from exc


def _capture(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    verb = words.pop(0) if words else "list"
    if verb == "list":
        return _list(session)
    if verb == "show":
        return _show(session, words)
    if verb == "clear":
        n = session.lab.captures.clear(words[0] if words else None)
        return MessageResult(summary=f"cleared {n} packet(s)", data={"cleared": n})
    if verb == "export":
        return _export(session, words)
    if verb == "import":
        return _import(session, words)
    if verb == "size":
        if not words:
            return MessageResult(summary=f"each tap keeps {session.lab.captures.size} packets")
        from esplab.commands.parser import ring_size

        size = ring_size("capture", words[0])  # the same as set captures N
        session.lab.resize_captures(size)
        return MessageResult(summary=f"each tap now keeps {size} packets")
    raise BadArgument(
        f"unknown capture command '{verb}'",
        valid=["list", "show", "clear", "export", "import", "size"],
        value=verb,
    )


def _node_entries(session: Session) -> list[tuple[str, object]]:
    """(node, Wireshark SA entry) for every ESP state, deduplicated by (src, dst, SPI):
    the node is the first that holds the SA."""
    from esplab.wireshark import EspSaEntry

    seen: dict[tuple[str, str, int], tuple[str, EspSaEntry]] = {}
    for node in session.lab.nodes.values():
        for x in node.xfrm.states:
            key = (str(x.src), str(x.dst), x.spi)
            if key in seen or x.proto != 50:
                continue
            if x.aead is not None:
                entry = EspSaEntry(
                    str(x.src),
                    str(x.dst),
                    x.spi,
                    x.aead.name,
                    x.aead.key,
                    None,
                    b"",
                    x.aead.icv_bits,
                    esn=x.esn,
                )
            elif x.enc is not None:
                auth = x.auth
                entry = EspSaEntry(
                    str(x.src),
                    str(x.dst),
                    x.spi,
                    x.enc.name,
                    x.enc.key,
                    auth.name if auth else None,
                    auth.key if auth else b"",
                    auth.icv_bits if auth else 0,
                    esn=x.esn,
                )
            else:
                continue
            seen[key] = (node.name, entry)
    return list(seen.values())


def _wireshark_keys(session: Session, inv: Invocation) -> Result:
    """Write the SAs Wireshark can decrypt; one warning line for each SA left out or
    written with a caveat (ICV unchecked, ICV reported bad). An error only when no SA
    can be written."""
    from esplab.wireshark import EspSaEntry, esp_sa_file, tshark_command, wireshark_form

    path = session.files.target(inv.args["file"], "SA file", force=inv.args["force"])
    found = _node_entries(session)
    if not found:
        raise NoSuchPacket("no ESP SA on any node yet", hint="add one with ip xfrm state add")
    entries: list[EspSaEntry] = []
    warnings: list[str] = []
    skipped: list[str] = []
    for node, entry in found:
        assert isinstance(entry, EspSaEntry)
        where = f"{node} SPI {entry.spi:#010x} ({entry.src} -> {entry.dst})"
        try:
            form = wireshark_form(entry)
        except ValueError as exc:
            warnings.append(f"{where}: not written: {exc}")
            skipped.append(f"{entry.spi:#010x}")
            continue
        entries.append(entry)
        if form.caveat:
            warnings.append(f"{where}: {form.caveat}")
    if not entries:
        raise BadArgument(
            f"no SA can be written for Wireshark, {path} is not written: " + "; ".join(warnings)
        )
    text = esp_sa_file(entries)
    try:
        path.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise CaptureFileError(f"cannot write {path}: {why}") from exc
    capture = inv.args["capture"] or "CAPTURE.pcapng"
    command = tshark_command(capture, entries)
    written = f"{len(entries)} SA(s) written to {path}"
    if skipped:
        written += f", {len(skipped)} left out"
    lines = [
        f"# {written} (copy it to ~/.config/wireshark/esp_sa)",
        *(f"warning: {w}" for w in warnings),
        command,
    ]
    return TextResult(
        summary=written,
        text="\n".join(lines),
        data={
            "file": str(path),
            "sas": len(entries),
            "skipped": skipped,
            "warnings": warnings,
            "command": command,
        },
    )


def _capture_complete(session: Session, words: list[str]) -> Iterable[str]:
    from esplab.commands.complete import PCAP_FILES, FilePaths

    if not words:
        return ["list", "show", "clear", "export", "import", "size"]
    if words[0] in ("show", "clear") and len(words) == 1:
        return session.lab.captures.taps()
    if words[0] == "show" and len(words) == 2 and words[1] in session.lab.captures.known:
        return [str(n) for n in range(1, len(session.lab.captures.get(words[1])) + 1)]
    if words[0] in ("export", "import") and len(words) == 1:
        return FilePaths() if words[0] == "export" else PCAP_FILES
    if words[0] == "export":
        return session.lab.captures.taps()
    return []


COMMANDS = (
    Command(
        name="capture",
        summary="packets captured at every tap: list, show, clear, export to pcap(ng), import",
        handler=_capture,
        params=(Param("args", kind="rest", optional=True, metavar="ARGS"),),
        usage_text="capture list | show TAP [N] | clear [TAP] | export FILE [TAP...] [--force] | "
        "import FILE [TAP] [--partial] | size [N]",
        example="capture export run.pcapng wan.wire eip93.cdr",
        complete=_capture_complete,
    ),
    Command(
        name="wireshark-keys",
        summary="write Wireshark's esp_sa table of the SAs it can decrypt (warns of the rest) "
        "and the tshark command",
        handler=_wireshark_keys,
        params=(
            Param("file", help="output file"),
            Param("capture", optional=True, help="the capture the command should read"),
            Param("force", kind="flag", help="overwrite FILE if it exists"),
        ),
        example="wireshark-keys esp_sa run.pcapng",
    ),
)
