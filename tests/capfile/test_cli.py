"""``esplab decode`` end to end: exit codes, JSON lines, --out, bad input, human output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from esplab.capfile.cli import main_decode
from esplab.cli import main
from esplab.pcap import LINKTYPE_ETHERNET, LINKTYPE_RAW, read_capture

from .support import SA_TEXT, ether, ipv4_udp, make_packets, sa_file, sender, write_frames


@pytest.fixture
def sa_path(tmp_path: Path) -> Path:
    path = tmp_path / "sa.txt"
    path.write_text(SA_TEXT)
    return path


def good_capture(tmp_path: Path, count: int = 4) -> Path:
    sas = sa_file()
    packets = make_packets(sender(sas.sas[0]), count) + make_packets(sender(sas.sas[1]), count)
    frames = [(LINKTYPE_ETHERNET, ether(p)) for p in packets]
    frames.insert(1, (LINKTYPE_RAW, ipv4_udp(90, 3)))  # one non-ESP frame
    return write_frames(tmp_path / "good.pcapng", frames)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_all_good_exits_0_and_json_lines_parse(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = good_capture(tmp_path)
    code, out, err = run(["decode", str(cap), "--sa-file", str(sa_path), "--json"], capsys)
    assert (code, err) == (0, "")
    lines = [json.loads(line) for line in out.splitlines()]
    packets, summary = lines[:-1], lines[-1]
    assert len(packets) == 8 and all(p["type"] == "packet" for p in packets)
    first = packets[0]
    assert first["frame"] == 1 and first["spi"] == "0x00001000" and first["seq"] == 1
    assert (first["sa"], first["icv"], first["status"]) == (1, "good", "ok")
    assert first["inner"] == {
        "version": 4, "src": "10.0.0.1", "dst": "10.0.0.2", "proto": 17,
        "sport": 1234, "dport": 5678, "len": 64,
    }  # fmt: skip
    assert first["time"] == pytest.approx(1.0)
    assert [p["frame"] for p in packets] == [1, 3, 4, 5, 6, 7, 8, 9]
    assert summary["type"] == "summary"
    assert (summary["frames"], summary["esp"], summary["ok"], summary["exit"]) == (9, 8, 8, 0)
    assert summary["non_esp"] == {"total": 1, "reasons": {"other-ip": 1}}
    assert summary["unmatched_sas"] == [3, 4]
    assert summary["sas"][0]["sequence"]["highest"] == 4


def test_a_bad_icv_exits_1(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sas = sa_file()
    packets = make_packets(sender(sas.sas[0]), 3)
    packets[2] = packets[2][:-1] + bytes([packets[2][-1] ^ 0xFF])
    cap = write_frames(tmp_path / "bad.pcapng", [(LINKTYPE_RAW, p) for p in packets])
    code, out, _ = run(["decode", str(cap), "--sa-file", str(sa_path)], capsys)
    assert code == 1
    assert "icv-bad" in out
    assert "1 of 3 ESP packet(s) did not authenticate or decrypt" in out


def test_human_output(tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = good_capture(tmp_path)
    code, out, _ = run(["decode", str(cap), "--sa-file", str(sa_path), "--no-color"], capsys)
    assert code == 0
    assert "ESP packets (8)" in out
    assert "0x00001000" in out and "good" in out
    assert "SA 3 (spi 0x00003000 2001:db8::1 > 2001:db8::2) matched no packet" in out
    assert "1 non-ESP skipped" in out
    assert "every ESP packet (8) authenticated and decrypted" in out


def test_human_output_keeps_addresses_whole_at_80_columns(
    tmp_path: Path,
    sa_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    cap = good_capture(tmp_path)
    code, out, _ = run(["decode", str(cap), "--sa-file", str(sa_path), "--no-color"], capsys)
    assert code == 0
    table = out[out.index("ESP packets (8)") : out.index("\nSAs")]
    assert max(len(line) for line in table.splitlines()) <= 80
    # Every address and algorithm name stays on one line (none is folded mid-word).
    for word in ("10.0.0.1:1234", "10.0.0.2:5678", "0x00001000"):
        assert word in table
    assert "hmac(sha1)" in out[out.index("\nSAs") :]


def test_rows_show_the_problems_when_there_are_many(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sas = sa_file()
    packets = make_packets(sender(sas.sas[0]), 30)
    packets[20] = packets[20][:-1] + b"\x00"
    cap = write_frames(tmp_path / "r.pcapng", [(LINKTYPE_RAW, p) for p in packets])
    code, out, _ = run(["decode", str(cap), "--sa-file", str(sa_path), "--rows", "5"], capsys)
    assert code == 1
    assert "ESP packets with a problem: 1 shown of 1, 30 ESP packets in all" in out
    assert "icv-bad" in out


def test_out_writes_the_inner_packets(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = good_capture(tmp_path, 3)
    out_path = tmp_path / "plain.pcapng"
    code, out, _ = run(
        ["decode", str(cap), "--sa-file", str(sa_path), "--out", str(out_path)], capsys
    )
    assert code == 0
    assert f"6 decrypted packet(s) written to {out_path}" in out
    back = list(read_capture(out_path))
    assert [r.linktype for r in back] == [LINKTYPE_RAW] * 6
    assert [r.data for r in back[:3]] == [ipv4_udp(s, i) for i, s in enumerate((64, 100, 512))]
    assert back[0].ts_ns == 1_000_000_000
    from scapy.layers.inet import IP, UDP

    assert IP(back[0].data)[UDP].dport == 5678


def test_not_a_capture_exits_2(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.pcap"
    junk.write_text("this is not a capture")
    out_path = tmp_path / "never.pcapng"
    code, out, err = run(
        ["decode", str(junk), "--sa-file", str(sa_path), "--out", str(out_path)], capsys
    )
    assert code == 2 and out == ""
    assert "is not a capture" in err and "Traceback" not in err
    assert not out_path.exists()


def test_truncated_capture_reports_how_far_and_exits_2(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = good_capture(tmp_path)
    cap.write_bytes(cap.read_bytes()[:-50])
    code, out, err = run(["decode", str(cap), "--sa-file", str(sa_path), "--json"], capsys)
    assert code == 2
    lines = [json.loads(line) for line in out.splitlines()]
    summary = lines[-1]
    assert len(lines) - 1 == summary["ok"] == 7
    assert summary["truncated"]["frames"] == 8
    assert "truncated" in summary["truncated"]["error"] and "after 8 packet(s)" in err
    code, out, _ = run(["decode", str(cap), "--sa-file", str(sa_path)], capsys)
    assert code == 2 and "capture damaged" in out and "the 8 frame(s) before it were decoded" in out


def test_bad_sa_file_line_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sa = tmp_path / "sa.txt"
    sa.write_text(SA_TEXT + "ip xfrm state add src 192.0.2.9 dst 192.0.2.8 proto esp spi 9 "
                  "enc aes 0x0011\n")  # fmt: skip
    cap = good_capture(tmp_path)
    code, out, err = run(["decode", str(cap), "--sa-file", str(sa)], capsys)
    assert code == 2 and out == ""
    assert f"{sa}:10:1:" in err and "setkey rejects a 2-byte key" in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main_decode(["x.pcap"]) == 2  # no --sa-file
    assert "--sa-file" in capsys.readouterr().err
    assert main_decode(["x.pcap", "--sa-file", "s", "--limit", "0"]) == 2
    assert main_decode(["--help"]) == 0
    assert "esplab decode" in capsys.readouterr().out


def test_limit(tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = good_capture(tmp_path)
    code, out, _ = run(
        ["decode", str(cap), "--sa-file", str(sa_path), "--json", "--limit", "3"], capsys
    )
    summary = json.loads(out.splitlines()[-1])
    assert (code, summary["frames"], summary["esp"], summary["limit_reached"]) == (0, 3, 2, True)


def test_two_jobs_give_the_same_output(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sas = sa_file()
    packets = []
    ones, twos = make_packets(sender(sas.sas[0]), 40), make_packets(sender(sas.sas[1]), 40)
    for one, two in zip(ones, twos, strict=True):
        packets += [one, two]
    packets[7] = packets[7][:-1] + b"\x00"
    frames = [(LINKTYPE_RAW, p) for p in packets] + [(LINKTYPE_RAW, ipv4_udp(70, 1))]
    cap = write_frames(tmp_path / "p.pcapng", frames)
    outs = []
    for jobs in ("1", "2"):
        out_path = tmp_path / f"out{jobs}.pcapng"
        argv = ["decode", str(cap), "--sa-file", str(sa_path), "--json", "--jobs", jobs]
        code, out, _ = run([*argv, "--out", str(out_path)], capsys)
        assert code == 1
        outs.append((out, [r.data for r in read_capture(out_path)]))
    assert outs[0] == outs[1]
    human = []
    for jobs in ("1", "2"):
        code, out, _ = run(["decode", str(cap), "--sa-file", str(sa_path), "--jobs", jobs], capsys)
        human.append(out)
    assert human[0] == human[1]


def test_progress_bar_on_a_terminal_only() -> None:
    import io

    from rich.console import Console

    from esplab.capfile.cli import progress_bar

    plain = Console(file=io.StringIO())
    with progress_bar(True, "decoding", plain) as update:
        assert update is None
    with progress_bar(True, "decoding") as update:  # pytest's stderr is no terminal
        assert update is None
    tty = Console(file=io.StringIO(), force_terminal=True, width=80)
    with progress_bar(True, "decoding", tty) as update:
        assert update is not None
        update(10, 100)  # a small file: no bar
        update(16 << 20, 32 << 20)
    with progress_bar(False, "decoding", tty) as update:
        assert update is None


def test_two_jobs_on_a_truncated_capture(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = good_capture(tmp_path)
    cap.write_bytes(cap.read_bytes()[:-50])
    results = []
    for jobs in ("1", "2"):
        argv = ["decode", str(cap), "--sa-file", str(sa_path), "--json", "--jobs", jobs]
        code, out, _ = run(argv, capsys)
        results.append((code, out))
    assert results[0] == results[1]
    assert results[0][0] == 2


def test_two_jobs_refuse_a_pipe(
    tmp_path: Path, sa_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each worker reads the capture itself; a FIFO is refused before it is opened (an
    # open would wait for a writer).
    fifo = tmp_path / "cap.fifo"
    os.mkfifo(fifo)
    code, _, err = run(["decode", str(fifo), "--sa-file", str(sa_path), "--jobs", "2"], capsys)
    assert code == 2
    assert "--jobs 2 needs a regular file" in err and "valid: --jobs 1, or 0" in err
