"""The stages of one engine job, built when someone reads them: the command fetched
from the CDR, the SA record and state read, the input and output, the result in the
RDR (eip93.md 1.5 step 3). :mod:`.core` records a job's trace; :func:`job_stages`
turns it into journey stages.
"""

from __future__ import annotations

from typing import Any

from esplab.model.hw.eip93.params import status_names
from esplab.model.stage import LazyStage, Stage

__all__ = ["job_stages"]


def job_stages(trace: tuple[Any, ...]) -> list[Stage]:
    """One job's stages from what :meth:`Engine.process` captured when it ran:
    eip93.cdr, then eip93.sa, eip93.state, eip93.in and eip93.out as far as the job got,
    then eip93.rdr. ``ran`` is the job the input stages show (a failed write replaces
    ``job``)."""
    (
        node,
        snap,
        slot,
        cmd,
        result,
        words,
        length,
        out_len,
        job,
        p,
        level,
        record,
        state,
        body,
        ran,
    ) = trace
    _, src, dst, sa_addr, state_addr, _, _, _ = words
    stages: list[Stage] = [
        LazyStage(
            "eip93.cdr",
            node,
            _CDR_TEXT,
            _CDR_WHY,
            "C",
            None,
            cmd if snap else None,
            "cdr",
            None,
            {"slot": slot},
            (slot, length, src, dst, sa_addr),
        )
    ]
    if level == 1:
        assert p is not None and p.error is not None
        stages.append(
            LazyStage(
                "eip93.sa",
                node,
                "SA {:#010x}: {}",
                "sa_cmd0/sa_cmd1 decoded (eip93.md 3.2, 3.3)",
                "U",
                None,
                record if snap else None,
                "sa",
                None,
                {"choices": ["reserved-codes", "not-modelled"]},
                (sa_addr, p.error[1]),
            )
        )
    elif level >= 2:
        assert p is not None
        if ran.sa_write is None:
            stages.append(
                LazyStage(
                    "eip93.sa",
                    node,
                    "SA {:#010x}: {}, SPI {:#010x}",
                    _SA_WHY,
                    p.fidelity,
                    None,
                    record if snap else None,
                    "sa",
                    None,
                    None,
                    (sa_addr, p, p.spi),
                )
            )
        else:
            offset, value = ran.sa_write
            stages.append(
                LazyStage(
                    "eip93.sa",
                    node,
                    "SA {:#010x}: {}, SPI {:#010x}; writes {} back at +{:#x}",
                    _SA_WHY,
                    p.fidelity,
                    None,
                    record if snap else None,
                    "sa",
                    None,
                    None,
                    (sa_addr, p, p.spi, _Word(value), offset),
                )
            )
        if state is not None:
            stages.append(
                LazyStage(
                    "eip93.state",
                    node,
                    "state {:#010x}{}",
                    "the state record is read at state_addr, which 0 skips (eip93.md 3.4, 8.5)",
                    "D",
                    None,
                    state if snap else None,
                    "state",
                    None,
                    {},
                    (state_addr, ": IV/digest written back" if ran.state is not None else ""),
                )
            )
        stages.append(
            LazyStage(
                "eip93.in",
                node,
                "{} bytes from {:#010x}",
                _IN_WHY,
                "C",
                None,
                body if snap else None,
                "raw",
                None,
                None,
                (len(body), src),
            )
        )
        if level == 3:
            stages.append(
                LazyStage(
                    "eip93.out",
                    node,
                    "{} bytes to {:#010x}: {}",
                    _OUT_WHY[(p.opgroup, p.direction)],
                    job.fidelity,
                    None,
                    job.out if snap else None,
                    "raw",
                    None,
                    job.meta,
                    (len(job.out), dst, job),
                )
            )
    if job.status:
        names = status_names(job.status)
        stages.append(
            LazyStage(
                "eip93.rdr",
                node,
                "RDR[{}]: {}, length {}: {}",
                _RDR_WHY,
                "D",
                None,
                result if snap else None,
                "rdr",
                None,
                {"slot": slot, "errors": names, "choices": list(job.choices)},
                (slot, ", ".join(names), out_len, job.text),
            )
        )
    else:
        stages.append(
            LazyStage(
                "eip93.rdr",
                node,
                "RDR[{}]: OK, length {}",
                _RDR_WHY,
                "D",
                None,
                result if snap else None,
                "rdr",
                None,
                {"slot": slot, "errors": [], "choices": job.choices},
                (slot, out_len),
            )
        )
    return stages


class _Word:
    """The first little-endian word of some bytes, shown in hex when a stage is read."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __format__(self, spec: str) -> str:
        return f"{int.from_bytes(self.raw[:4], 'little'):08x}"


_CDR_TEXT = "CDR[{}]: {} bytes {:#010x} -> {:#010x}, SA {:#010x}"
_CDR_WHY = "commands are fetched in ring order (eip93.md 1.5 step 3)"
_RDR_WHY = (
    "the result goes to the RDR slot of the command's index, words 1-6 echoed "
    "(eip93.md 1.5 step 3, 2.2)"
)
_SA_WHY = "the SA record is read at sa_addr for every descriptor (eip93.md 1.3, 3.1, 4.6)"
_IN_WHY = "input read at src_addr, length from word 7 (eip93.md 2.3)"
_OUT_WHY = {
    (1, 0): "ESP built by the engine: SPI, seq, IV, pad, trailer, ICV (eip93.md 4.3)",
    (1, 1): "ESP checked and opened by the engine: window, ICV, pad (eip93.md 4.4, 4.6)",
    (0, 0): "basic mode: cipher and hash as the mainline driver programs them (eip93.md 3.5)",
    (0, 1): "basic mode: hash-then-decrypt as the mainline driver programs it (eip93.md 3.5)",
}
