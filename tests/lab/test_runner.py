"""Running labs: saving, references, wait, error steps, warnings, packet views."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.commands.result import PacketResult, Result
from esplab.lab.check import Lab, check_file
from esplab.lab.runner import LabRun, result_view
from tests.lab.support import write_lab

SA = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode "
    "transport enc aes 0x000102030405060708090a0b0c0d0e0f"
)
POLICY = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out tmpl src 192.0.2.1 "
    "dst 192.0.2.2 proto esp reqid 1 mode transport"
)


def _lab(tmp_path: Path, steps: str, **kw: str) -> Lab:
    lab, errors = check_file(write_lab(tmp_path, steps, **kw))
    assert lab is not None, "\n".join(str(e) for e in errors)
    return lab


def test_save_and_references(tmp_path: Path) -> None:
    lab = _lab(
        tmp_path,
        f"""\
  - name: sa
    run: {SA}
  - name: policy
    run: {POLICY}
  - name: send
    run: send ap wan IP(dst="192.0.2.2")/UDP()
    save: sent
  - name: look at the wire
    run: capture show wan.wire#${{sent.id}}
    save: wire
    expect:
      journey: ${{sent.id}}
      layers.ESP.spi: 0x1000
      layers.ESP.seq: ${{sent.stages[tap=ap.esp].meta.seq}}
      summary: {{contains: "ESP"}}
  - name: decode what was saved
    run: decode ESP ${{wire.hex[68:]}}
    expect:
      layers.ESP.data: ${{wire.layers.ESP.data}}
      hex: {{eq: "${{wire.hex[68:]}}"}}
""",
    )
    run = LabRun(lab)
    report = run.run_all()
    assert report.passed, [f.line() for s in report.steps for f in s.failures]
    assert report.steps[3].command == "capture show wan.wire#1"
    assert run.saved["wire"]["layers"]["ESP"]["seq"] == 1
    assert run.saved["lab"]["dir"] == str(tmp_path.resolve())


def test_wait_retries_the_command(tmp_path: Path) -> None:
    lab = _lab(
        tmp_path,
        f"""\
  - name: sa
    run: {SA}
  - name: policy
    run: {POLICY}
  - name: send until the third sequence number
    run: send ap wan IP(dst="192.0.2.2")/UDP()
    wait: {{attempts: 5, interval: 0.5}}
    expect:
      stages[tap=ap.esp].meta.seq: 3
  - name: never reaches 99
    run: send ap wan IP(dst="192.0.2.2")/UDP()
    wait: 2
    expect:
      stages[tap=ap.esp].meta.seq: 99
""",
    )
    slept: list[float] = []
    report = LabRun(lab, sleep=slept.append).run_all()
    assert report.steps[2].status == "passed" and report.steps[2].attempts == 3
    assert slept == [0.5, 0.5]
    assert report.steps[3].status == "failed" and report.steps[3].attempts == 2
    assert report.steps[3].failures[0].actual == "5"


def test_error_steps(tmp_path: Path) -> None:
    lab = _lab(
        tmp_path,
        """\
  - name: fails as expected
    run: send ap wan UDP()
    error: is not an IP packet
  - name: fails with operators
    run: send ap wna IP(dst="192.0.2.2")
    error: {matches: "has no device 'wna'.*did you mean wan"}
    level: warning
  - name: does not fail
    run: help
    error: anything
    level: warning
  - name: fails the wrong way
    run: send ap wan UDP()
    error: no such thing
""",
    )
    report = LabRun(lab).run_all()
    assert [s.status for s in report.steps] == ["passed", "passed", "failed", "failed"]
    assert report.steps[2].failures[0].actual.startswith("no error; the command gave: ")
    assert report.steps[3].failures[0].line() == (
        'error: expected containing "no such thing", got "\'UDP()\' is not an IP packet; '
        'valid: an expression starting with IP(...) or IPv6(...)"'
    )
    assert not report.passed and report.counts()["warnings"] == 1


def test_a_command_error_fails_the_step(tmp_path: Path) -> None:
    lab = _lab(
        tmp_path,
        """\
  - name: bad packet
    run: send ap wan UDP()
""",
    )
    report = LabRun(lab).run_all()
    assert (
        report.steps[0]
        .failures[0]
        .line()
        .startswith("the command: expected to succeed, got an error: 'UDP()' is not an IP packet")
    )


def test_an_unusable_reference_fails_the_step(tmp_path: Path) -> None:
    lab = _lab(
        tmp_path,
        """\
  - name: keep
    run: capture list
    save: caps
  - name: use a key that is not there
    run: capture show ${caps.counts.nope}
""",
    )
    report = LabRun(lab).run_all()
    assert report.steps[1].status == "failed"
    assert "caps.counts has no key 'nope'" in report.steps[1].failures[0].actual


def test_an_internal_error_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = _lab(tmp_path, "  - name: help\n    run: help\n")
    run = LabRun(lab)

    def boom(line: str) -> Result:
        raise RuntimeError("kaput")

    monkeypatch.setattr(run.session, "execute", boom)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    report = run.run_all()
    assert report.steps[0].failures[0].actual == "internal error: RuntimeError: kaput"


def test_seed_feeds_the_session(tmp_path: Path) -> None:
    head = "name: a lab\ndescription: for a test\nseed: 7\n"
    lab = _lab(tmp_path, "  - name: help\n    run: help\n", head=head)
    assert LabRun(lab).session.options.seed == 7


def test_report_before_and_after_stop(tmp_path: Path) -> None:
    lab = _lab(tmp_path, "  - name: one\n    run: help\n  - name: two\n    run: help\n")
    run = LabRun(lab)
    assert [s.note for s in run.report().steps] == ["not run yet", "not run yet"]
    run.run_next()
    run.stop("stopped by the user")
    assert run.pending is None
    report = run.report()
    assert [s.status for s in report.steps] == ["passed", "skipped"]
    assert not report.passed


def test_packet_view_names_repeated_layers() -> None:
    from scapy.layers.inet import IP, UDP

    result = PacketResult(
        summary="x", packet=IP(dst="192.0.2.2") / IP(dst="192.0.2.3") / UDP(), data={"tap": "t"}
    )
    view = result_view(result)
    assert view["layers"]["IP"]["dst"] == "192.0.2.2"
    assert view["layers"]["IP_2"]["dst"] == "192.0.2.3"
    assert view["layers"]["UDP"]["dport"] == 53
    assert view["summary"] == "x" and view["tap"] == "t"


def test_failures_point_at_the_run_line_or_the_key(tmp_path: Path) -> None:
    lab = _lab(
        tmp_path,
        """\
  - name: a command that fails
    level: warning
    run: ip route add 10.0.0.0/8 dev nope
  - name: a folded command that fails
    level: warning
    run: >-
      ip route add 10.0.0.0/8
      dev nope
  - name: no error came
    level: warning
    run: help
    error: anything
  - name: the wrong error came
    level: warning
    run: send ap wan UDP()
    error:  {contains: no such thing}
  - name: expectations
    level: warning
    run: help
    expect:
      commands: {len: 0}
      summary: {contains: "commands"}
      nope: 1
  - name: keep
    run: capture list
    save: caps
  - name: a reference with nothing behind it
    level: warning
    run: capture show ${caps.counts.nope}
""",
    )
    report = LabRun(lab).run_all()
    at = [[f.at for f in s.failures] for s in report.steps]
    assert at == [
        [(6, 10)],
        [(10, 7)],  # the command, on the line after the run: line's '>-'
        [(15, 5)],
        [(19, 5)],
        [(24, 7), (26, 7)],
        [],
        [(32, 10)],
    ]
