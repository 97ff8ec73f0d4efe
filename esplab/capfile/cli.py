"""``esplab decode`` and ``esplab diagnose``: command lines, output, exit codes.

Exit codes (both commands):

* 0: decode: every ESP packet authenticated and decrypted, with the padding
  1, 2, 3.. of RFC 4303 2.4 (a capture without ESP too); diagnose: no packet
  failed, or a known mistake explains every failure;
* 1: decode: some ESP packet did not (ICV, no SA, malformed, trailer, mode or
  encapsulation; see ``records.STATUSES``), or could not be verified because the
  capture's snaplen cut it (status ``truncated``), or decrypted to padding that is
  not 1, 2, 3.. (Linux accepts such a packet, which does not check the padding,
  but a wrong encryption key is the usual cause); diagnose: some failure is not
  explained by any known mistake, or some packet was cut by the snaplen;
* 2: unusable input: usage, a file that is not a capture, an SA file with a bad
  line, or a capture that is damaged or cut short. In that last case everything
  before the damage is decoded and reported (and written with ``--out``), then
  the run exits 2: the file is bad even if every packet in it was good.

Errors are one line on stderr, never a traceback (``ESPLAB_DEBUG=1`` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from esplab.capfile.formats import PacketJson, PacketRows, RunInfo, summary_dict
from esplab.capfile.linklayer import LINKTYPE_RAW
from esplab.capfile.pipeline import Progress, RunResult, decode_capture
from esplab.capfile.records import PacketRecord, out_item
from esplab.capfile.safile import SaFile, SaSpec, load_sa_file
from esplab.console import consoles
from esplab.errors import BadArgument, EsplabError
from esplab.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from esplab.files import FilePolicy
from esplab.pcapio import FrameReader, Interface, PcapngWriter

if TYPE_CHECKING:  # rich is imported when something is printed for a person
    from rich.console import Console

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_UNUSABLE",
    "decode_parser",
    "diagnose_parser",
    "main_decode",
    "main_diagnose",
]

# A capture or SA file that cannot be used is a bad file: the usage error's code.
EXIT_UNUSABLE = EXIT_USAGE

#: Files smaller than this decode too fast for a progress bar to help.
_PROGRESS_MIN_BYTES = 8 << 20
_JSON_BATCH = 512
#: Below this size one process is faster than starting workers (parallel.AUTO_MIN_BYTES).
_PARALLEL_MIN_BYTES = 32 << 20


def _positive(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be 1 or more")
    return value


def _spi(text: str) -> int:
    try:
        value = int(text, 0) if text.lower().startswith("0x") else int(text, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"SPI {text!r}: valid: hex (0x1000 or 1000) from 0 to 0xffffffff"
        ) from None
    if not 0 <= value <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"SPI {text!r}: valid: 0 to 0xffffffff")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", metavar="CAPTURE", help="pcap or pcapng file")
    parser.add_argument(
        "--sa-file",
        required=True,
        metavar="FILE",
        help="the SAs: 'ip [-s] xfrm state' output, 'ip xfrm state add' lines, "
        "or a Wireshark esp_sa file",
    )
    parser.add_argument("--limit", type=_positive, metavar="N", help="read only the first N frames")
    parser.add_argument("--no-color", action="store_true", help="plain output (NO_COLOR too)")


def decode_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="esplab decode",
        description="Decrypt and check every ESP packet of a capture with the SAs of a board.",
        epilog="Exit: 0 every ESP packet authenticated and decrypted, its padding 1, 2, 3.. "
        "(RFC 4303 2.4); 1 some did not, could not be verified because the snaplen cut it, "
        "or decrypted to other padding (Linux accepts it; a wrong encryption key, likely); "
        "2 unusable input, or a damaged capture (what came before the damage is reported).",
    )
    _common(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per ESP packet per line, then a summary",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="write the decrypted packets, ESP removed, as pcapng (never over CAPTURE or "
        "the SA file)",
    )
    parser.add_argument("--force", action="store_true", help="let --out replace an existing file")
    parser.add_argument(
        "--rows",
        type=_positive,
        default=40,
        metavar="N",
        help="packet rows in the human output (default 40; the ones with a problem first)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes, one per stripe of SAs (default 0: automatic, one per core "
        "up to one per SA for captures of 32 MiB or more, else 1)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def diagnose_parser() -> argparse.ArgumentParser:
    from esplab.capfile.hypotheses import HYPOTHESES

    parser = argparse.ArgumentParser(
        prog="esplab diagnose",
        description="Explain ICV failures, packets without an SA, and packets that "
        "authenticate but decrypt to a bad trailer or padding, by the usual driver and "
        "configuration mistakes.",
        epilog="Mistakes tried (esplab.capfile.hypotheses): "
        + ", ".join(h.key for h in HYPOTHESES)
        + ". Exit: 0 no failure (no packet that is not ok, none with padding that is not "
        "1, 2, 3..), or every failure explained; 1 some failure not explained, "
        "or packets cut by the snaplen (they cannot be checked); 2 unusable input.",
    )
    _common(parser)
    parser.add_argument("--spi", type=_spi, metavar="SPI", help="only packets with this SPI (hex)")
    parser.add_argument(
        "--sample",
        type=_positive,
        default=32,
        metavar="N",
        help="failing packets examined per SA or SPI (default 32)",
    )
    parser.add_argument("--json", action="store_true", help="the findings as one JSON object")
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:  # 2 for usage errors, 0 for --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_UNUSABLE


def guarded(name: str, body: Callable[[], int]) -> int:
    """Run a command body: EsplabError and anything unexpected become one line."""

    def err() -> Console:
        return consoles()[1]

    try:
        return body()
    except EsplabError as exc:
        err().print(f"esplab {name}: {exc}", style="red", markup=False, soft_wrap=True)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        err().print(f"esplab {name}: interrupted", markup=False)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except Exception as exc:  # a bug: one line, the traceback only on request
        if os.environ.get("ESPLAB_DEBUG"):
            raise
        err().print(
            f"esplab {name}: internal error: {type(exc).__name__}: {exc} "
            "(ESPLAB_DEBUG=1 shows the traceback)",
            markup=False,
            soft_wrap=True,
        )
        return EXIT_UNUSABLE


def _silence_stdout() -> None:
    """After a closed pipe (``| head``), let Python's exit flush go nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@contextmanager
def progress_bar(
    enabled: bool, label: str, err: Console | None = None
) -> Iterator[Progress | None]:
    """A transient bar on ``err`` (by default stderr) when asked for and it is a
    terminal. It starts with its first update (after any worker processes were forked)."""
    if not enabled or (err is None and not sys.stderr.isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    err = err or Console(stderr=True)
    if not err.is_terminal:
        yield None
        return

    bar = Bar(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    )
    task = bar.add_task(label, total=None)
    started = False

    def update(done: int, size: int) -> None:
        nonlocal started
        if size < _PROGRESS_MIN_BYTES:
            return
        if not started:
            bar.start()
            started = True
        bar.update(task, completed=done, total=size)

    try:
        yield update
    finally:
        if started:
            bar.stop()


def exit_code(run: RunResult) -> int:
    if run.truncated is not None:
        return EXIT_UNUSABLE
    return EXIT_FAILED if run.summary.failed or run.summary.padding_bad else EXIT_OK


# -- decode -------------------------------------------------------------------


class _JsonSink:
    """Packet lines to stdout in batches."""

    def __init__(self, interfaces: Sequence[Interface]) -> None:
        self._lines: list[str] = []
        # Bound methods: calling an instance (its __call__) costs 0.08 us more a packet.
        self._format = PacketJson().__call__
        self._interfaces = interfaces
        self._names: list[str] = []

    def add(self, rec: PacketRecord) -> None:
        if rec.iface >= len(self._names):
            self._names = [i.name for i in self._interfaces]
        lines = self._lines
        lines.append(self._format(rec, self._names))
        if len(lines) >= _JSON_BATCH:
            self.flush()

    def line(self, text: str) -> None:
        self._lines.append(text)
        if len(self._lines) >= _JSON_BATCH:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            sys.stdout.write("\n".join(self._lines) + "\n")
            self._lines.clear()


def auto_jobs(size: int, sas: Sequence[SaSpec]) -> int:
    """Workers for ``--jobs 0``: one per core up to one per SA, for big files only
    (starting workers costs more than a small file takes)."""
    if size < _PARALLEL_MIN_BYTES or len(sas) < 2:
        return 1
    return max(1, min(os.cpu_count() or 1, len(sas)))


def _decode(args: argparse.Namespace) -> int:
    sa_file: SaFile = load_sa_file(args.sa_file)
    if args.jobs > 1 and not os.path.isfile(args.capture):
        # Every worker reads the capture itself: a pipe can be read once only.
        raise BadArgument(
            f"--jobs {args.jobs} needs a regular file, and '{args.capture}' is not one "
            "(a pipe or a device is read once)",
            valid="--jobs 1, or 0 (automatic), for a pipe",
            value=args.capture,
        )
    # --out is never an input (nor a link to one), and replaces a file only with --force.
    policy = FilePolicy()
    policy.reading(args.capture, "the capture being decoded")
    policy.reading(args.sa_file, "the SA file")
    out_path = policy.target(args.out, "--out file", force=args.force) if args.out else None
    # Open the capture first: a file that is not a capture fails before --out exists.
    reader = FrameReader(args.capture, pipes=True)
    try:
        writer = PcapngWriter(out_path) if out_path is not None else None
    except EsplabError:
        reader.close()
        raise
    jobs = args.jobs or auto_jobs(reader.size, sa_file.sas)  # 0: automatic
    json_sink = _JsonSink(reader.interfaces) if args.json else None
    rows: PacketRows | None = None
    try:
        with progress_bar(not args.no_progress, "decoding") as progress:
            if jobs > 1:
                reader.close()
                run, rows = _decode_parallel(args, sa_file, jobs, json_sink, writer, progress)
            else:
                rows = None if args.json else PacketRows(args.rows)
                on_packet = _sinks(json_sink, rows, writer, reader.interfaces)
                run = decode_capture(
                    reader,
                    sa_file.sas,
                    on_packet,
                    limit=args.limit,
                    keep_inner=writer is not None,
                    progress=progress,
                )
    finally:
        reader.close()
        if writer is not None:
            writer.close()
    code = exit_code(run)
    info = RunInfo(args.capture, sa_file, run.interfaces, run.truncated, run.limit_reached, code)
    if json_sink is not None:
        json_sink.flush()
        sys.stdout.write(json.dumps(summary_dict(run.summary, info)) + "\n")
        sys.stdout.flush()
        if run.truncated is not None:
            print(f"esplab decode: {run.truncated}", file=sys.stderr)
        return code
    out, _ = consoles(args.no_color)
    out.print(
        f"esplab decode {args.capture}: {len(sa_file.sas)} SA(s) from {sa_file.path} "
        f"({'ip xfrm' if sa_file.form == 'xfrm' else 'Wireshark esp_sa'})",
        markup=False,
    )
    from esplab.capfile.report import render_packets, render_summary

    table = render_packets(rows) if rows is not None else None
    if table is not None:
        out.print(table)
    for part in render_summary(run.summary, info):
        out.print(part)
    if writer is not None:
        out.print(f"{writer.count} decrypted packet(s) written to {writer.name}", markup=False)
    return code


def _sinks(
    json_sink: _JsonSink | None,
    rows: PacketRows | None,
    writer: PcapngWriter | None,
    interfaces: Sequence[Interface],
) -> Callable[[PacketRecord], None]:
    """One callback feeding every output that was asked for."""
    sinks: list[Callable[[PacketRecord], None]] = []
    if json_sink is not None:
        sinks.append(json_sink.add)
    if rows is not None:
        sinks.append(rows.add)
    if writer is not None:

        def write(rec: PacketRecord) -> None:
            item = out_item(rec, interfaces)
            if item is not None:
                writer.write(item[0], LINKTYPE_RAW, item[1], item[2], item[3])

        sinks.append(write)
    if len(sinks) == 1:
        return sinks[0]

    def each(rec: PacketRecord) -> None:
        for sink in sinks:
            sink(rec)

    return each


def _decode_parallel(
    args: argparse.Namespace,
    sa_file: SaFile,
    jobs: int,
    json_sink: _JsonSink | None,
    writer: PcapngWriter | None,
    progress: Progress | None,
) -> tuple[RunResult, PacketRows | None]:
    from esplab.capfile.parallel import WorkItem, decode_parallel

    def on_item(item: WorkItem) -> None:
        _, line, packet = item
        if line is not None and json_sink is not None:
            json_sink.line(line)
        if packet is not None and writer is not None:
            writer.write(packet[0], LINKTYPE_RAW, packet[1], packet[2], packet[3])

    result = decode_parallel(
        args.capture,
        sa_file.sas,
        jobs,
        on_item,
        limit=args.limit,
        json=args.json,
        out=writer is not None,
        rows=0 if args.json else args.rows,
        progress=progress,
        size=os.path.getsize(args.capture),
    )
    return result.run, result.rows


def main_decode(argv: list[str]) -> int:
    """``esplab decode CAPTURE --sa-file FILE [--json] [--out FILE] [--limit N]``."""
    args = _parse(decode_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded("decode", lambda: _decode(args))


def main_diagnose(argv: list[str]) -> int:
    """``esplab diagnose CAPTURE --sa-file FILE [--spi SPI]``."""
    args = _parse(diagnose_parser(), argv)
    if isinstance(args, int):
        return args
    from esplab.capfile.diagnose import run_diagnose

    return guarded("diagnose", lambda: run_diagnose(args))
