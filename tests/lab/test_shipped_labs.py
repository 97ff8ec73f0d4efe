"""Every labs/*.yaml checks clean and passes; runs are byte-reproducible."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from esplab.lab.check import check_file
from esplab.lab.cli import main_run
from esplab.lab.runner import LabRun
from esplab.pcap import read_capture
from tests.lab.support import LABS, SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_lab_checks_and_passes(path: Path, tmp_path: Path) -> None:
    lab, errors = check_file(path)
    assert errors == [], "\n".join(str(e) for e in errors)
    assert lab is not None
    assert len(lab.description.split()) >= 40, "a shipped lab explains itself to a student"
    report = LabRun(lab, outdir=tmp_path).run_all()  # what a lab writes goes there
    failed = [
        f"{s.name}: {[f.line() for f in s.failures]}" for s in report.steps if s.status != "passed"
    ]
    assert report.passed, failed


def test_the_same_lab_gives_byte_identical_pcaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = str(LABS / "01-esp-basics.yaml")
    assert main_run(["--pcap", str(tmp_path / "a"), lab]) == 0
    assert main_run(["--pcap", str(tmp_path / "b"), lab]) == 0
    first = (tmp_path / "a" / "01-esp-basics.pcapng").read_bytes()
    second = (tmp_path / "b" / "01-esp-basics.pcapng").read_bytes()
    assert first == second
    records = list(read_capture(tmp_path / "a" / "01-esp-basics.pcapng"))
    assert len(records) > 20
    assert "captures in" in capsys.readouterr().out


def test_the_board_capture_recipe_feeds_lab_9(tmp_path: Path) -> None:
    """The recipe in labs/data makes a capture that lab 9 decodes the same way."""
    (tmp_path / "data").mkdir()
    recipe = shutil.copy(LABS / "data" / "make-09-board-capture.yaml", tmp_path / "data")
    lab, errors = check_file(recipe)
    assert lab is not None, errors
    # The recipe writes next to itself: its directory is the lab's output directory.
    assert LabRun(lab, outdir=tmp_path).run_all().passed
    made = tmp_path / "data" / "09-board.pcap"
    assert len(list(read_capture(made))) == 7
    # The committed capture is the recipe's output, timestamps and all (its IVs from the
    # kernel's echainiv with the seed's salt: esplab.model.kernel.esp.ivgen).
    assert made.read_bytes() == (LABS / "data" / "09-board.pcap").read_bytes()
    shutil.copy(LABS / "data" / "09-board-xfrm-state.txt", tmp_path / "data")
    nine = shutil.copy(LABS / "09-decode-a-board-capture.yaml", tmp_path)
    lab, errors = check_file(nine)
    assert lab is not None, errors
    report = LabRun(lab).run_all()
    assert report.passed, [f.line() for s in report.steps for f in s.failures]


def test_pcap_gets_its_esp_sa_and_the_wire_decrypts_in_tshark(tmp_path: Path, tshark: str) -> None:
    """esplab run --pcap writes LAB.esp_sa beside LAB.pcapng: with it as Wireshark's SA
    table, tshark decrypts the ESP on the lab's wires, both directions, every ICV good."""
    import subprocess

    lab = str(LABS / "04-seed-scenario.yaml")
    assert main_run(["--pcap", str(tmp_path), lab]) == 0
    keys = (tmp_path / "04-seed-scenario.esp_sa").read_text()
    records = [line for line in keys.splitlines() if not line.startswith("#")]
    assert len(records) == 2 and all(r.startswith('"IPv4"') for r in records)
    argv = [tshark, "-r", str(tmp_path / "04-seed-scenario.pcapng")]
    argv += ["-o", "esp.enable_encryption_decode:TRUE"]
    argv += ["-o", "esp.enable_authentication_check:TRUE"]
    argv += [arg for r in records for arg in ("-o", f"uat:esp_sa:{r}")]
    argv += ["-Y", 'esp && frame.interface_name contains "wire"', "-T", "fields"]
    argv += ["-e", "esp.spi", "-e", "esp.icv_good", "-e", "udp.dstport"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    rows = sorted({tuple(line.split("\t")) for line in done.stdout.splitlines()})
    # The lab's sends: ap to host over wan (5201), the host back (1234).
    assert rows == [("0x00001000", "1", "5201"), ("0x00001001", "1", "1234")], done.stderr
