"""The emulated host against a real Linux kernel, scenario by scenario.

Each scenario of tests/kernel/cases.py runs on both (esplab.peer.check.run_scenario);
every observation must agree, unless esplab.peer.known lists the difference with why.
"""

from __future__ import annotations

import json
from fnmatch import fnmatch

import pytest

from esplab.peer.check import Finding, run_scenario
from esplab.peer.client import KernelPeer
from esplab.peer.known import KNOWN, KnownDifference, known_for
from tests.kernel.cases import CASES

# Which known differences the scenarios that ran have shown (for the last test).
SEEN: set[str] = set()
RAN: set[str] = set()


def _explain(case: str, findings: list[Finding]) -> str:
    lines = [f"{len(findings)} difference(s) in {case} not listed in esplab.peer.known:"]
    for f in findings:
        lines += [f"  {f.item}", f"    emulated: {f.emulated!r}", f"    kernel:   {f.kernel!r}"]
    return "\n".join(lines)


@pytest.mark.parametrize(("case", "lines"), CASES, ids=[name for name, _ in CASES])
def test_emulated_host_agrees_with_linux(kernel: KernelPeer, case: str, lines: list[str]) -> None:
    report = run_scenario(case, lines, kernel)
    RAN.add(case)
    # Every host line and every send was observed on both sides (a scenario that
    # silently compared nothing would pass without checking anything), plus the four
    # comparisons at the end.
    observed = sum(1 for line in lines if line.startswith(("host ", "send ")))
    assert len(report.findings) >= observed + 4
    unexplained = []
    for finding in report.differences:
        entry = known_for(case, finding.item)
        if entry is None:
            unexplained.append(finding)
        else:
            SEEN.add(entry.key)
    assert not unexplained, _explain(case, unexplained)


def test_every_known_difference_matches_and_is_still_seen() -> None:
    """An entry explains findings by scenario name and item; one whose scenarios ran
    but showed nothing has been fixed: remove it."""
    sample = KnownDifference("sample", ("tx-*",), r"delivered$", "ours", "kernel", "why")
    assert sample.matches("tx-sw-aes128-sha1-v4-tr", "4: send #1: delivered")
    assert not sample.matches("cp-state-add-plain", "4: send #1: delivered")
    assert not sample.matches("tx-sw-aes128-sha1-v4-tr", "xfrm_stat")
    stale = [
        k.key
        for k in KNOWN
        if k.key not in SEEN and any(fnmatch(c, p) for p in k.cases for c in RAN)
    ]
    assert not stale, f"known differences no longer seen: {stale}"


def test_the_suite_is_wide_enough() -> None:
    # The bar: at least 200 cases, over every area.
    assert len(CASES) >= 200
    areas = {name.split("-")[0] for name, _ in CASES}
    assert {"tx", "rx", "pad", "natt", "bad", "life", "esn", "cp"} <= areas


def test_kernel_check_exits_0_when_both_agree_and_1_on_a_difference(
    kernel: KernelPeer, capsys: pytest.CaptureFixture[str]
) -> None:
    from esplab.peer.cli import main_kernel_check

    state = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
        "mode transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
        "enc aes 0x000102030405060708090a0b0c0d0e0f"
    )
    agree = f"host {state}; host ip xfrm state count"
    assert main_kernel_check(["-c", agree, "--json"], client=kernel) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["differences"] == 0 and payload["findings"]
    # Under another seed the lab's MACs are not the ones the kernel was given: its
    # eth0 drops the ap's frames (another host's MAC) where the emulated host, built
    # from that seed, delivers them. kernel-check must say so and exit 1.
    send = 'send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*8)'
    differ = (
        f"host {state}; {state}; ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 "
        "dir out tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport; "
        f"{send}"
    )
    assert main_kernel_check(["-c", differ, "--seed", "7", "--json"], client=kernel) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    delivered = next(f for f in found if f["item"].endswith("send #1: delivered"))
    assert (delivered["emulated"], delivered["kernel"], delivered["same"]) == (
        "True",
        "False",
        False,
    )
