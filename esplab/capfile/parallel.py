"""Decode on several cores: one worker process per stripe of SAs, output in capture order.

Each worker reads the whole capture itself (reading is cheap next to the crypto)
and decodes only the packets of its SAs (``Decoder(stripe=k, stripes=n)``); stripe
0 also takes the packets that belong to no SA. A worker formats what the caller
asked for (JSON lines, the decrypted packets for ``--out``, the human rows) and
sends it in batches tagged with the last frame it has read. The parent merges the
batches by frame number: an item is released once every worker has read past its
frame, so output order is the capture's and memory holds a few batches, whatever
the file size. Per-SA counters come from the worker that owns the SA, capture-wide
counters from stripe 0.

Striping is by SA, so it helps when the traffic is spread over several SAs. The
processes are forked where the platform allows it (before any progress-bar thread
starts), spawned elsewhere.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from esplab.capfile.decoder import Decoder
from esplab.capfile.formats import PacketJson, PacketRows
from esplab.capfile.pipeline import Progress, RunResult
from esplab.capfile.records import OutItem, Summary, out_item
from esplab.capfile.safile import SaSpec
from esplab.errors import CaptureFileError, EsplabError
from esplab.pcapio import FrameReader, Interface

__all__ = ["ParallelResult", "WorkItem", "decode_parallel"]

#: (frame, JSON line or None, --out item or None), in capture order.
WorkItem = tuple[int, str | None, OutItem | None]

_BATCH_FRAMES = 2048


@dataclass(frozen=True)
class _Job:
    path: str
    sas: tuple[SaSpec, ...]
    stripe: int
    stripes: int
    limit: int | None
    json: bool
    out: bool
    rows: int


def _work(job: _Job, conn: Connection) -> None:
    """A worker's whole life: decode its stripe, stream batches, then the totals."""
    try:
        _work_loop(job, conn)
    except BaseException as exc:  # reported to the parent, which raises it there
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _work_loop(job: _Job, conn: Connection) -> None:
    reader = FrameReader(job.path)
    decoder = Decoder(
        job.sas,
        keep_inner=job.out,
        stripe=job.stripe,
        stripes=job.stripes,
        wire_len=lambda: reader.wire_len,
    )
    fmt = PacketJson().__call__ if job.json else None  # a bound method: faster to call
    rows = PacketRows(job.rows) if job.rows else None
    names: list[str] = []
    items: list[WorkItem] = []
    frame, truncated, limited = 0, None, False
    feed = decoder.feed
    try:
        with reader:
            for iface, linktype, ts_ns, data in reader:
                frame += 1
                rec = feed(frame, iface, linktype, ts_ns, data)
                if rec is not None:
                    line = None
                    if fmt is not None:
                        if rec.iface >= len(names):
                            names = [i.name for i in reader.interfaces]
                        line = fmt(rec, names)
                    if rows is not None:
                        rows.add(rec)
                    out = out_item(rec, reader.interfaces) if job.out else None
                    items.append((frame, line, out))
                if not frame % _BATCH_FRAMES:
                    conn.send(("batch", frame, reader.position, items))
                    items = []
                if job.limit is not None and frame >= job.limit:
                    limited = True
                    break
    except CaptureFileError as exc:
        truncated = str(exc)
    summary = decoder.finish()
    done = (frame, reader.position, items, summary, truncated, limited)
    conn.send(("done", *done, list(reader.interfaces), rows))


@dataclass
class ParallelResult:
    """The merged run, plus the merged human rows when they were asked for."""

    run: RunResult
    rows: PacketRows | None = None
    jobs: int = 1
    worker_summaries: list[Summary] = field(default_factory=list)


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def decode_parallel(
    path: str,
    sas: Sequence[SaSpec],
    jobs: int,
    on_item: Callable[[WorkItem], None] | None,
    *,
    limit: int | None = None,
    json: bool = False,
    out: bool = False,
    rows: int = 0,
    progress: Progress | None = None,
    size: int = 0,
    fmt: str = "",
) -> ParallelResult:
    """Decode ``path`` with ``jobs`` worker processes; ``on_item`` gets every ESP
    packet's item in capture order. The capture must already be known to open."""
    ctx = _context()
    conns: list[Connection] = []
    procs = []
    for k in range(jobs):
        recv, send = ctx.Pipe(duplex=False)
        job = _Job(path, tuple(sas), k, jobs, limit, json, out, rows)
        proc = ctx.Process(target=_work, args=(job, send), daemon=True)
        proc.start()
        send.close()
        conns.append(recv)
        procs.append(proc)
    try:
        finals = _merge(conns, on_item, progress, size)
    finally:
        for conn in conns:
            conn.close()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    return _combine(finals, sas, jobs, size, fmt)


def _merge(
    conns: list[Connection],
    on_item: Callable[[WorkItem], None] | None,
    progress: Progress | None,
    size: int,
) -> list[tuple[Any, ...]]:
    n = len(conns)
    queues: list[deque[WorkItem]] = [deque() for _ in range(n)]
    seen = [0] * n
    positions = [0] * n
    finals: list[tuple[Any, ...] | None] = [None] * n
    while True:
        safe = min(float("inf") if finals[w] is not None else seen[w] for w in range(n))
        _release(queues, safe, on_item)
        open_ = [w for w in range(n) if finals[w] is None]
        if not open_:
            break
        w = min(open_, key=lambda i: seen[i])
        try:
            msg = conns[w].recv()
        except EOFError:
            raise EsplabError(f"decode worker {w} ended without its results") from None
        if msg[0] == "error":
            raise EsplabError(f"decode worker {w} failed: {msg[1]}")
        seen[w], positions[w] = msg[1], msg[2]
        queues[w].extend(msg[3])
        if msg[0] == "done":
            finals[w] = msg
        if progress is not None:
            progress(min(positions), size)
    return [f for f in finals if f is not None]


def _release(
    queues: list[deque[WorkItem]], safe: float, on_item: Callable[[WorkItem], None] | None
) -> None:
    """Hand over, in frame order, every queued item at or below frame ``safe``."""
    while True:
        best = -1
        for w, q in enumerate(queues):
            if q and q[0][0] <= safe and (best < 0 or q[0][0] < queues[best][0][0]):
                best = w
        if best < 0:
            return
        item = queues[best].popleft()
        if on_item is not None:
            on_item(item)


def _combine(
    finals: list[tuple[Any, ...]], sas: Sequence[SaSpec], jobs: int, size: int, fmt: str
) -> ParallelResult:
    summaries: list[Summary] = [f[4] for f in finals]
    first = summaries[0]
    merged = Summary(
        frames=first.frames,
        esp=first.esp,
        ok=sum(s.ok for s in summaries),
        skipped=dict(first.skipped),
        linktypes_skipped=dict(first.linktypes_skipped),
        unknown_spi=dict(first.unknown_spi),
        cut_captured=max(s.cut_captured for s in summaries),
        cut_wire=max(s.cut_wire for s in summaries),
    )
    for s in summaries:
        for status, count in s.by_status.items():
            merged.by_status[status] = merged.by_status.get(status, 0) + count
    merged.sas = [summaries[spec.index % jobs].sas[i] for i, spec in enumerate(sas)]
    interfaces: list[Interface] = finals[0][7]
    run = RunResult(
        merged,
        interfaces,
        truncated=finals[0][5],
        limit_reached=finals[0][6],
        size=size,
        format=fmt,
    )
    rows_parts: list[PacketRows] = [f[8] for f in finals if f[8] is not None]
    rows = PacketRows.merged(rows_parts) if rows_parts else None
    return ParallelResult(run, rows, jobs, summaries)
