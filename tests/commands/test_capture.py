from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from esplab.commands.result import PacketResult, TableResult, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, CaptureFileError, NoSuchPacket, NoSuchTap
from esplab.layers import MTKEther, QDMADescriptor
from tests.commands import seed


def seeded(*extra: str) -> Session:
    s = Session()
    for line in [*seed.software(), *extra]:
        s.execute(line)
    return s


def test_list_show_and_refs() -> None:
    s = seeded(f"send ap wan {seed.UDP} count 2")
    listing = s.execute("capture list")
    assert isinstance(listing, TableResult)
    assert listing.data["counts"]["wan.wire"] == 2
    table = s.execute("capture show wan.wire")
    assert isinstance(table, TableResult) and len(table.rows) == 2
    one = s.execute("capture show wan.wire#2")
    assert isinstance(one, PacketResult) and one.data["journey"] == 2
    assert isinstance(one.packet, Ether)
    with pytest.raises(NoSuchPacket, match="no packet #3"):
        s.execute("capture show wan.wire 3")
    with pytest.raises(NoSuchTap, match=r"did you mean wan\.wire\?"):
        s.execute("capture show wan.wier")


def test_ring_is_bounded() -> None:
    s = seeded("capture size 2", f"send ap wan {seed.UDP} count 5")
    assert s.lab.captures.counts()["wan.wire"] == 2
    assert [r.journey for r in s.lab.captures.get("wan.wire")] == [4, 5]
    assert s.lab.settings.capture_ring == 2  # capture size is set captures: one setting
    with pytest.raises(BadArgument, match="capture ring size 0; valid: 1 to 100000"):
        s.execute("capture size 0")


def test_export_reads_back_into_the_same_classes(tmp_path: Path) -> None:
    s = Session()
    s.execute('send ap lan3 IP(dst="198.51.100.130")/UDP(dport=7)')
    out = tmp_path / "lan.pcapng"
    s.execute(f"capture export {out} eth0.wire eth0.dma lan3.wire")
    pkts = rdpcap(str(out))
    assert [type(p) for p in pkts] == [QDMADescriptor, MTKEther, Ether]
    assert pkts[1].ports == [3] if hasattr(pkts[1], "ports") else True
    assert pkts[0].sp_tag == 1 << 3  # airoha-dsa-xfrm.md 1.3: port mask in SP_TAG


def test_export_is_byte_identical_across_runs(tmp_path: Path) -> None:
    files = []
    for name in ("a", "b"):
        s = seeded(f"send ap wan {seed.UDP} count 3")
        path = tmp_path / f"{name}.pcapng"
        s.execute(f"capture export {path}")
        files.append(path.read_bytes())
    assert files[0] == files[1]


def test_export_errors_leave_captures(tmp_path: Path) -> None:
    s = seeded(f"send ap wan {seed.UDP}")
    with pytest.raises(CaptureFileError, match="cannot write"):
        s.execute(f"capture export {tmp_path}/no/such/dir.pcapng")
    with pytest.raises(NoSuchTap):
        s.execute(f"capture export {tmp_path}/x.pcapng nope.tap")
    # The tap first and the file last, as tcpdump users may type it: the order is shown.
    with pytest.raises(
        BadArgument,
        match=r"'wan\.wire' is a tap, and the file comes first; "
        rf"try: capture export {tmp_path}/x\.pcapng wan\.wire",
    ):
        s.execute(f"capture export wan.wire {tmp_path}/x.pcapng")
    assert not (tmp_path / "x.pcapng").exists()
    assert s.lab.captures.counts()["wan.wire"] == 1


def test_import_garbage_and_truncated(tmp_path: Path) -> None:
    s = seeded(f"send ap wan {seed.UDP} count 2")
    good = tmp_path / "good.pcap"
    s.execute(f"capture export {good} wan.wire")
    s.execute(f"capture import {good} board")
    assert s.lab.captures.counts()["board"] == 2
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    with pytest.raises(CaptureFileError, match="is not a capture"):
        s.execute(f"capture import {bad}")
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(good.read_bytes()[:-20])
    # A damaged file imports nothing, and says that --partial keeps what comes first.
    with pytest.raises(
        CaptureFileError,
        match=r"truncated in packet 2 after 1 packet.s.; nothing was imported; "
        r"capture import .*cut.pcap --partial imports the 1 packet.s. before it",
    ):
        s.execute(f"capture import {cut} cut")
    assert "cut" not in s.lab.captures.counts()
    result = s.execute(f"capture import {cut} cut --partial")
    assert s.lab.captures.counts()["cut"] == 1
    assert result.data["partial"] is True
    assert "the rest is lost" in result.summary and "truncated in packet 2" in result.summary
    # A file that does not open leaves no journey; an import's journey has no stages to
    # step through, and step says so.
    journeys = len(s.lab.journeys)
    with pytest.raises(CaptureFileError, match="cannot read"):
        s.execute(f"capture import {tmp_path / 'missing.pcap'}")
    assert len(s.lab.journeys) == journeys
    with pytest.raises(NoSuchPacket, match="is an import with no stages, so none to step through"):
        s.execute("step")


def test_tshark_decrypts_the_seed_scenario_with_every_icv_good(tmp_path: Path, tshark: str) -> None:
    s = seeded(
        f"send ap wan {seed.UDP} count 4",
        'host send eth0 IP(dst="192.0.2.1")/UDP(sport=5201,dport=1234)/Raw(b"y"*33)',
    )
    pcap = tmp_path / "seed.pcapng"
    s.execute(f"capture export {pcap} wan.wire host.wire")
    keys = s.execute(f"wireshark-keys {tmp_path / 'esp_sa'} {pcap}")
    assert isinstance(keys, TextResult) and keys.data["sas"] == 2
    argv = keys.data["command"]
    fields = "-T fields -e esp.spi -e esp.sequence -e esp.icv_good -e udp.dstport"
    proc = subprocess.run(
        argv.replace("tshark", tshark, 1) + " " + fields,
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert rows == [
        ["0x00001000", "1", "1", "5201"],
        ["0x00001000", "2", "1", "5201"],
        ["0x00001000", "3", "1", "5201"],
        ["0x00001000", "4", "1", "5201"],
        ["0x00001001", "1", "1", "1234"],
    ]
