"""Files a user names (esplab.files): no data loss, no unbounded reads, no path escapes.

Each test names the input that showed the defect.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from esplab.capfile.cli import main_decode
from esplab.commands.session import Session
from esplab.errors import BadArgument, CaptureFileError, EsplabError, FileError
from esplab.files import MAX_TEXT_BYTES, FilePolicy, open_input, read_input, user_path
from esplab.lab.check import check_file
from esplab.lab.cli import main_check, main_run
from esplab.lab.command import every_command
from esplab.lab.runner import LabRun

LABS = Path(__file__).parent.parent / "labs"
BOARD = LABS / "data" / "09-board.pcap"
BOARD_SAS = LABS / "data" / "09-board-xfrm-state.txt"
SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64)'


def _lab(path: Path, *runs: str) -> Path:
    steps = "".join(f"  - name: step {i}\n    run: '{run}'\n" for i, run in enumerate(runs))
    path.write_text(f"name: t\ndescription: d\nsteps:\n{steps}", encoding="utf-8")
    return path


# -- 1. decode --out over its own input -----------------------------------------


@pytest.mark.parametrize("which", ["capture", "sa-file", "link to the capture"])
def test_decode_out_is_never_an_input(
    tmp_path: Path, which: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # esplab decode board.pcap --sa-file esp_sa --out board.pcap truncated the capture.
    cap = tmp_path / "board.pcap"
    cap.write_bytes(BOARD.read_bytes())
    sas = tmp_path / "esp_sa"
    sas.write_bytes(BOARD_SAS.read_bytes())
    out = {"capture": cap, "sa-file": sas, "link to the capture": tmp_path / "link.pcap"}[which]
    if which.startswith("link"):
        out.symlink_to(cap)
    args = [str(cap), "--sa-file", str(sas), "--out", str(out), "--force", "--no-progress"]
    assert main_decode(args) == 2
    err = capsys.readouterr().err
    assert "which esplab read and never writes over" in err
    assert cap.read_bytes() == BOARD.read_bytes()
    assert sas.read_bytes() == BOARD_SAS.read_bytes()


def test_decode_out_replaces_a_file_only_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plain.pcapng"
    out.write_bytes(b"keep")
    base = [str(BOARD), "--sa-file", str(BOARD_SAS), "--out", str(out), "--no-progress"]
    assert main_decode(base) == 2
    assert "exists; add --force to overwrite it" in capsys.readouterr().err
    assert out.read_bytes() == b"keep"
    assert main_decode([*base, "--force"]) == 1  # lab 9's board capture has bad ICVs
    assert out.read_bytes()[:4] == bytes.fromhex("0a0d0d0a")  # pcapng section header


# -- 2. a failed command leaves no journey --------------------------------------


def test_readding_an_offloaded_sa_records_no_journey() -> None:
    s = Session()
    add = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode "
        "transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 enc aes "
        "0x000102030405060708090a0b0c0d0e0f offload dev wan dir out"
    )
    s.execute("set journeys 3")
    s.execute(add)
    s.execute(SEND)
    before = [j.id for j in s.lab.journeys]
    for _ in range(3):
        with pytest.raises(EsplabError) as info:
            s.execute(add)
        assert "File exists" in str(info.value)
        assert "Device failed" not in str(info.value)  # the SA exists; the device is fine
    assert [j.id for j in s.lab.journeys] == before
    assert s.execute("trace 2").data  # "no journey 2" before


# -- 3. writers: overwrite, links, escapes --------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "save {f}",
        "capture export {f}",
        "wireshark-keys {f}",
    ],
)
def test_repl_writers_need_force_to_overwrite(tmp_path: Path, command: str) -> None:
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode "
        "transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 enc aes "
        "0x000102030405060708090a0b0c0d0e0f"
    )
    s.execute(SEND)
    target = tmp_path / "old"
    target.write_bytes(b"precious")
    with pytest.raises(FileError, match=r"'.*old' exists; add --force to overwrite it"):
        s.execute(command.format(f=target))
    assert target.read_bytes() == b"precious"
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(FileError, match="exists; add --force"):
        s.execute(command.format(f=link))
    assert target.read_bytes() == b"precious"
    s.execute(command.format(f=target) + " --force")
    assert target.read_bytes() != b"precious"


def test_tilde_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    s = Session()
    s.execute(SEND)
    s.execute("capture export ~/run.pcapng")
    assert (tmp_path / "run.pcapng").is_file()
    assert user_path("~/x") == tmp_path / "x"


def test_repl_never_overwrites_the_lab_being_stepped(tmp_path: Path) -> None:
    lab = _lab(tmp_path / "lab.yaml", "help")
    text = lab.read_text(encoding="utf-8")
    s = Session(every_command())
    s.execute(f"lab step {lab}")
    s.execute("lab next")
    with pytest.raises(FileError, match="the lab file being run, which esplab read"):
        s.execute(f"save {lab} --force")
    assert lab.read_text(encoding="utf-8") == text


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("${lab.file}", "which esplab read and never writes over"),
        ("../escaped.pcapng", "a lab writes only under its output directory"),
        ("/tmp/esplab-absolute.pcapng", "a lab writes only under its output directory"),
    ],
)
def test_a_lab_writes_only_under_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, why: str
) -> None:
    # run: 'capture export ${lab.file}' turned the lab itself into a pcapng.
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    lab_path = _lab(work / "lab.yaml", SEND.replace("'", "''"), f"capture export {target}")
    before = lab_path.read_bytes()
    lab, errors = check_file(lab_path)
    assert lab is not None, errors
    report = LabRun(lab).run_all()
    assert not report.passed
    assert why in report.steps[1].failures[0].actual
    assert lab_path.read_bytes() == before
    assert not (tmp_path / "escaped.pcapng").exists()
    assert not Path("/tmp/esplab-absolute.pcapng").exists()


def test_a_lab_writes_in_its_outdir_and_may_rerun(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lab_path = _lab(tmp_path / "lab.yaml", SEND.replace("'", "''"), "capture export run.pcapng")
    lab, _ = check_file(lab_path)
    assert lab is not None
    assert LabRun(lab, outdir=out).run_all().passed
    assert LabRun(lab, outdir=out).run_all().passed  # a lab replaces what it wrote
    assert (out / "run.pcapng").is_file()


def test_run_junit_and_pcap_refuse_existing_files_and_the_lab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = _lab(tmp_path / "lab.yaml", "help")
    before = lab.read_bytes()
    assert main_run([str(lab), "--junit", str(lab), "--force", "--no-color"]) == 2
    assert "which esplab read and never writes over" in capsys.readouterr().err
    assert lab.read_bytes() == before
    junit = tmp_path / "report.xml"
    junit.write_text("old", encoding="utf-8")
    assert main_run([str(lab), "--junit", str(junit), "--no-color"]) == 2
    assert "exists; add --force" in capsys.readouterr().err
    assert junit.read_text(encoding="utf-8") == "old"
    assert main_run([str(lab), "--junit", str(junit), "--force", "--no-color"]) == 0
    assert junit.read_text(encoding="utf-8").startswith("<?xml")
    pcaps = tmp_path / "pcaps"
    assert main_run([str(lab), "--pcap", str(pcaps), "--no-color"]) == 0
    assert main_run([str(lab), "--pcap", str(pcaps), "--no-color"]) == 2
    assert "lab.pcapng' exists; add --force" in capsys.readouterr().err
    assert main_run([str(lab), "--pcap", str(pcaps), "--force", "--no-color"]) == 0


# -- 4. reads: regular files only, bounded ---------------------------------------


def test_devices_are_refused_without_reading(tmp_path: Path) -> None:
    # --sa-file /dev/zero and load /dev/zero grew until MemoryError.
    with pytest.raises(FileError, match="'/dev/zero': it is a character device; valid: a regular"):
        read_input("/dev/zero", "SA file", pipes=True)
    with pytest.raises(FileError, match="it is a character device"):
        Session().execute("load /dev/zero")
    with pytest.raises(FileError, match="it is a directory"):
        Session().execute(f"load {tmp_path}")


def test_decode_sa_file_dev_zero_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main_decode([str(BOARD), "--sa-file", "/dev/zero", "--no-progress"]) == 2
    assert "cannot read SA file '/dev/zero': it is a character device" in capsys.readouterr().err


def test_text_inputs_have_a_size_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as fh:
        fh.truncate(MAX_TEXT_BYTES + 1)
    with pytest.raises(FileError, match=r"is too big \(more than 16777216 bytes\); valid: at most"):
        Session().execute(f"load {big}")
    small = tmp_path / "small.txt"
    small.write_bytes(b"x" * 11)
    with pytest.raises(FileError, match="more than 10 bytes"):
        read_input(small, limit=10)
    assert read_input(small, limit=11) == b"x" * 11


def test_fifos_never_block_an_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # FIFOs given to capture import, load, check and decode blocked forever in open.
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    for line in (f"capture import {fifo}", f"load {fifo}", f"lab check {fifo}"):
        result = Session(every_command()).run(line)
        shown = result.summary + str(result.data)
        assert "it is a named pipe (FIFO); valid: a regular file" in shown, line
    assert main_check([str(fifo)]) == 2
    assert "it is a named pipe (FIFO)" in capsys.readouterr().out
    with pytest.raises(FileError, match=r"nothing wrote to it in 0\.2 s"):
        open_input(fifo, "capture", pipes=True, pipe_wait=0.2)
    assert time.monotonic() - start < 10


def test_a_pipe_with_a_writer_is_still_read(tmp_path: Path) -> None:
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(b"ip xfrm")

    thread = threading.Thread(target=feed)
    thread.start()
    assert read_input(fifo, pipes=True) == b"ip xfrm"
    thread.join()


# -- NUL bytes and over-long names -----------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["lab run ~/\x00", "lab step labs/\x001-esp-basics.yaml", "load a\x00b", "save a\x00b"],
)
def test_a_nul_byte_in_a_path_is_one_message(line: str) -> None:
    result = Session(every_command()).run(line)
    assert "holds a NUL byte" in result.summary
    assert "valid: a path without NUL bytes" in result.summary


def test_an_over_long_name_is_one_message() -> None:
    name = "a" * 300
    result = Session().run(f"load {name}")
    assert "is 300 bytes long; valid: names of at most 255 bytes" in result.summary
    assert len(result.summary) < 400
    with pytest.raises(FileError, match="paths of at most 4095"):
        user_path("a/" * 2100)


# -- the policy itself -----------------------------------------------------------


def test_policy_inputs_hold_hard_links(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("x", encoding="utf-8")
    hard = tmp_path / "hard.txt"
    os.link(src, hard)
    policy = FilePolicy()
    policy.reading(src, "the input")
    with pytest.raises(FileError, match="is the input"):
        policy.target(hard, force=True)
    with pytest.raises(CaptureFileError, match="is the input"):
        policy.target(hard, force=True, error=CaptureFileError)


def test_bad_argument_is_still_raised_for_a_bad_load_encoding(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ip xfrm\n\xff")
    with pytest.raises(BadArgument, match="line 2 is not text"):
        Session().execute(f"load {bad}")
