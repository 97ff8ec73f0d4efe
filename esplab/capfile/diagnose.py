"""``esplab diagnose``: which known mistake explains the packets that fail?

The capture is decoded as ``esplab decode`` does (UDP on any port that starts with
a known SPI counts as ESP too, to catch NAT-T on unexpected ports). Failing
packets are grouped: per SA for ICV failures, encapsulation mismatches and
packets that authenticate but decrypt to a bad trailer or to padding that is not
1, 2, 3.. (RFC 4303 2.4; the kernel does not check it, but a wrong encryption key
is the usual cause), per SPI for packets without an SA. Packets that are not ok
for another reason (malformed, cut by the snaplen, ...) are counted, and keep the
exit status at 1: nothing here can explain them. From each group the first ``--sample`` packets are
kept, and every trial of every hypothesis in
:data:`esplab.capfile.hypotheses.HYPOTHESES` that applies is run on them. A trial
that authenticates all of them explains the group; the report gives the evidence
("with ..., 40/40 packets authenticate", or "decrypt to a plausible plaintext"),
the mistake and the fix, or says that no known mistake explains it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rich.console import Console
from rich.table import Table
from rich.text import Text

from esplab.capfile.formats import linktype_name
from esplab.capfile.hypotheses import (
    DECRYPT_PROBLEMS,
    HYPOTHESES,
    Hypothesis,
    Suspect,
    TrialContext,
    iv_of,
)
from esplab.capfile.pipeline import RunResult, decode_capture
from esplab.capfile.records import STATUSES, PacketRecord, Summary
from esplab.capfile.safile import SaFile, SaSpec, load_sa_file

__all__ = [
    "MAX_IVS",
    "MAX_UNKNOWN_GROUPS",
    "Diagnosis",
    "Finding",
    "Group",
    "diagnose",
    "group_dict",
    "render_diagnosis",
    "run_diagnose",
]

#: Decode statuses diagnose tries to explain, and how a report names them.
PROBLEMS: Mapping[str, str] = MappingProxyType(
    {
        "icv-bad": "fail the ICV",
        "no-sa": "have no SA",
        "encap-mismatch": "arrive with the wrong encapsulation",
        "bad-decrypt": "authenticate but decrypt to a bad trailer or padding "
        "(the encryption key or cipher is wrong?)",
        "iv-reused": "carry an IV that an earlier packet of the SA carried",
    }
)


@dataclass(frozen=True)
class Finding:
    """One trial's result on a group."""

    hypothesis: Hypothesis
    label: str
    passed: int
    examined: int
    verb: str = "authenticate"

    @property
    def evidence(self) -> str:
        return f"with {self.label}, {self.passed}/{self.examined} packets {self.verb}"


@dataclass
class Group:
    """Failing packets that share an SA (or an SPI without SA) and a problem."""

    problem: str
    spec: SaSpec | None
    spi: int
    count: int = 0
    sample: list[Suspect] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    trials: int = 0

    @property
    def title(self) -> str:
        who = (
            f"{self.spec.label}, {self.spec.algorithms}"
            if self.spec is not None
            else f"SPI 0x{self.spi:08x} (no SA)"
        )
        return f"{who}: {self.count} packet(s) {PROBLEMS[self.problem]}"

    @property
    def best(self) -> Finding | None:
        return self.findings[0] if self.findings and self.findings[0].passed else None

    @property
    def explained(self) -> bool:
        best = self.best
        return best is not None and best.passed == best.examined


#: SPIs without an SA examined one by one; packets of further SPIs are only counted.
MAX_UNKNOWN_GROUPS = 32
#: IVs remembered per SA to find one used twice (memory stays flat on a long capture).
MAX_IVS = 65536


class _Collector:
    """Keeps the first ``sample`` failing packets of each group (and a bounded number
    of groups for SPIs without SA, so memory stays flat on a capture of garbage)."""

    def __init__(self, sas: SaFile, sample: int, spi: int | None) -> None:
        self.by_index = {s.index: s for s in sas.sas}
        self.sample = sample
        self.spi = spi
        self.groups: dict[tuple[str, int, int], Group] = {}
        self.unknown_groups = 0
        self.not_examined = 0
        self.spi_seen = False  # a packet carried the SPI asked for
        #: Packets that are not ok and that no group examines, by decode status.
        self.unexamined: dict[str, int] = {}
        #: SA index -> IV -> the sequence number of the first good packet that carried
        #: it (at most MAX_IVS each; a duplicate packet is a replay, not a reused IV).
        self.ivs: dict[int, dict[bytes, int]] = {}

    def _iv_reused(self, rec: PacketRecord) -> bool:
        spec = self.by_index.get(rec.sa)
        if spec is None or not rec.esp:
            return False
        iv = iv_of(spec, rec.esp)
        if not iv:
            return False
        seen = self.ivs.setdefault(rec.sa, {})
        first = seen.get(iv)
        if first is not None:
            return first != rec.seq
        if len(seen) < MAX_IVS:
            seen[iv] = rec.seq
        return False

    def __call__(self, rec: PacketRecord) -> None:
        if self.spi is not None and rec.spi == self.spi:
            self.spi_seen = True
        if self.spi is not None and rec.spi != self.spi:
            return
        problem = rec.status
        if problem == "bad-trailer" or (problem == "ok" and rec.padding_ok is False):
            # A padding that is not 1, 2, 3..: the kernel accepts it; a wrong key, likely.
            problem = "bad-decrypt"
        elif problem == "ok" and self._iv_reused(rec):
            problem = "iv-reused"
        if problem not in PROBLEMS or rec.spi < 0:
            if problem != "ok":
                self.unexamined[problem] = self.unexamined.get(problem, 0) + 1
            return
        key = (problem, rec.sa, rec.spi if not rec.sa else 0)
        group = self.groups.get(key)
        if group is None:
            if not rec.sa:
                if self.unknown_groups >= MAX_UNKNOWN_GROUPS:
                    self.not_examined += 1
                    return
                self.unknown_groups += 1
            spec = self.by_index.get(rec.sa)
            group = self.groups[key] = Group(problem, spec, rec.spi)
        group.count += 1
        if len(group.sample) < self.sample:
            group.sample.append(
                Suspect(rec.frame, rec.esp, rec.spi, rec.seq, rec.sa, problem, rec.encap)
            )


def _evaluate(group: Group, ctx: TrialContext) -> None:
    findings: list[Finding] = []
    verb = (
        "decrypt to a plausible plaintext" if group.problem in DECRYPT_PROBLEMS else "authenticate"
    )
    for hyp in HYPOTHESES:
        if group.problem not in hyp.problems:
            continue
        for trial in hyp.trials(ctx, group.spec, group.sample):
            group.trials += 1
            passed = sum(1 for s in group.sample if trial.check(s))
            findings.append(Finding(hyp, trial.label, passed, len(group.sample), verb))
    order = {h.key: i for i, h in enumerate(HYPOTHESES)}
    findings.sort(key=lambda f: (-f.passed, order[f.hypothesis.key]))
    group.findings = [f for f in findings if f.passed]


@dataclass
class Diagnosis:
    """The decode run, the groups of failing packets with their findings, and the
    packets of SPIs past :data:`MAX_UNKNOWN_GROUPS` that were only counted."""

    run: RunResult
    groups: list[Group]
    not_examined: int = 0
    #: The SPI asked for (``--spi``) when no ESP packet of the capture carries it.
    spi_absent: int | None = None
    #: Decode status -> packets that are not ok and that no hypothesis applies to
    #: (e.g. ``truncated``: cut by the snaplen, nothing to check).
    unexamined: dict[str, int] = field(default_factory=dict)

    @property
    def explained(self) -> bool:
        """Every packet that is not ok belongs to an explained group."""
        return not self.unexamined and all(g.explained for g in self.groups)


def diagnose(
    capture: str,
    sa_file: SaFile,
    *,
    sample: int = 32,
    spi: int | None = None,
    limit: int | None = None,
) -> Diagnosis:
    """Decode ``capture`` and explain its failing packets (module docstring)."""
    collect = _Collector(sa_file, sample, spi)
    run = decode_capture(capture, sa_file.sas, collect, limit=limit, keep_esp=True, sniff_udp=True)
    ctx = TrialContext(sa_file.sas)
    groups = sorted(
        collect.groups.values(),
        key=lambda g: (g.spec.index if g.spec else 1 << 33, g.spi, g.problem),
    )
    for group in groups:
        _evaluate(group, ctx)
    absent = spi if spi is not None and not collect.spi_seen else None
    return Diagnosis(run, groups, collect.not_examined, absent, dict(collect.unexamined))


def group_dict(group: Group) -> dict[str, object]:
    best = group.best
    return {
        "sa": group.spec.index if group.spec else None,
        "spi": f"0x{group.spi:08x}",
        "problem": group.problem,
        "failing": group.count,
        "examined": len(group.sample),
        "trials": group.trials,
        "explained": group.explained,
        "verdict": best.evidence if best else "no known mistake explains this",
        "mistake": best.hypothesis.mistake if best else None,
        "fix": best.hypothesis.fix if best else None,
        "findings": [
            {
                "hypothesis": f.hypothesis.key,
                "trial": f.label,
                "authenticate": f.passed,
                "examined": f.examined,
            }
            for f in group.findings
        ],
    }


def spi_choices(sa_file: SaFile, run: RunResult) -> str:
    """What --spi could have been: the SPIs of the SA file and those the capture saw."""
    spis = {spec.spi for spec in sa_file.sas if spec.spi is not None}  # None: a wildcard
    spis |= {spi for spi in run.summary.unknown_spi if spi >= 0}
    return "valid: " + (", ".join(f"0x{v:08x}" for v in sorted(spis)) or "no SPI at all")


def render_diagnosis(console: Console, capture: str, sa_file: SaFile, found: Diagnosis) -> None:
    """The human report."""
    run, groups = found.run, found.groups
    s = run.summary
    console.print(
        f"esplab diagnose {capture}: {len(sa_file.sas)} SA(s) from {sa_file.path}; "
        f"{s.frames} frame(s), {s.esp} ESP, {s.failed} not ok"
        + (f", {s.padding_bad} with padding not 1,2,3.." if s.padding_bad else ""),
        markup=False,
    )
    if run.truncated is not None:
        console.print(f"capture damaged: {run.truncated}", style="bold red", markup=False)
    for lt, n in sorted(s.linktypes_skipped.items()):
        console.print(f"{n} frame(s) of {linktype_name(lt)} not decoded", style="yellow")
    if found.spi_absent is not None:
        console.print(
            f"no ESP packet carries SPI 0x{found.spi_absent:08x}; " + spi_choices(sa_file, run),
            style="bold red",
            markup=False,
        )
    elif not groups and not found.unexamined:
        console.print(
            "no packet fails the ICV, lacks an SA, has the wrong encapsulation or decrypts "
            "to a bad trailer or padding"
        )
    for status, n in sorted(found.unexamined.items()):
        console.print(_unexamined_line(status, n, s), style="bold red", markup=False)
    if found.not_examined:
        console.print(
            f"{found.not_examined} packet(s) of further SPIs without SA were counted, not "
            f"examined (the first {MAX_UNKNOWN_GROUPS} such SPIs were)",
            style="yellow",
            markup=False,
        )
    for group in groups:
        console.print()
        console.print(Text(group.title, style="bold"))
        console.print(f"  {len(group.sample)} examined, {group.trials} what-if trial(s)")
        best = group.best
        if best is None:
            console.print("  no known mistake explains this", style="bold red")
            continue
        style = "bold green" if group.explained else "bold yellow"
        head = "explained" if group.explained else "partly explained"
        console.print(Text(f"  {head}: {best.evidence}", style=style))
        console.print(f"  mistake: {best.hypothesis.mistake}", markup=False)
        console.print(f"  fix: {best.hypothesis.fix}", markup=False)
        if len(group.findings) > 1:
            table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 2))
            table.add_column("  hypothesis")
            table.add_column("evidence", overflow="fold")
            for f in group.findings:
                table.add_row(f"  {f.hypothesis.key}", f.evidence)
            console.print(table)


def _unexamined_line(status: str, n: int, summary: Summary) -> str:
    if status == "truncated":
        return (
            f"{n} packet(s) truncated by the snaplen (at most {summary.cut_captured} of up to "
            f"{summary.cut_wire} bytes captured) cannot be checked: capture again with a "
            f"snaplen of at least {summary.cut_wire} (tcpdump -s 0 keeps whole packets)"
        )
    return f"{n} packet(s) {status}: {STATUSES.get(status, status)}; no known mistake is tried"


def run_diagnose(args: argparse.Namespace) -> int:
    """The ``esplab diagnose`` command body (called by ``cli.main_diagnose``)."""
    from esplab.console import consoles
    from esplab.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE

    out, _err = consoles(args.no_color)
    sa_file = load_sa_file(args.sa_file)
    found = diagnose(args.capture, sa_file, sample=args.sample, spi=args.spi, limit=args.limit)
    run, groups = found.run, found.groups
    if run.truncated is not None or found.spi_absent is not None:
        code = EXIT_USAGE  # the capture or the SA is unusable
    elif found.explained:
        code = EXIT_OK
    else:
        code = EXIT_FAILED
    if args.json:
        report = {
            "type": "diagnosis",
            "capture": args.capture,
            "sa_file": sa_file.path,
            "frames": run.summary.frames,
            "esp": run.summary.esp,
            "truncated": run.truncated,
            "groups": [group_dict(g) for g in groups],
            "not_examined": found.not_examined,
            "unexamined": dict(sorted(found.unexamined.items())),
            "spi_absent": None if found.spi_absent is None else f"0x{found.spi_absent:08x}",
            "linktypes_skipped": {
                linktype_name(lt): n for lt, n in sorted(run.summary.linktypes_skipped.items())
            },
            "exit": code,
        }
        print(json.dumps(report))
        return code
    render_diagnosis(out, args.capture, sa_file, found)
    return code
