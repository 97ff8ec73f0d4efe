"""Captures taken with a short snaplen: records whose captured length is below the
original length. ESP whose headers up to the SPI and sequence number were kept is
counted as ``truncated``, cannot be verified, and makes decode and diagnose exit 1."""

from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path

import pytest

from esplab.capfile.pipeline import decode_capture
from esplab.capfile.records import PacketRecord
from esplab.capfile.safile import load_sa_file
from esplab.cli import main
from esplab.pcap import LINKTYPE_ETHERNET, LINKTYPE_RAW
from esplab.pcapio import CHUNK_SIZE, FrameReader

from .support import ether, ipv4_udp, make_packets, sa_file, sender

DATA = Path(__file__).resolve().parents[2] / "labs" / "data"
BOARD = DATA / "09-board.pcap"
BOARD_SAS = DATA / "09-board-xfrm-state.txt"
# tshark -r labs/data/09-board.pcap -T fields -e frame.len -e esp.spi -e esp.sequence
BOARD_FRAMES = [
    (154, 0xC0DE0001, 1),
    (154, 0xC0DE0002, 1),
    (154, 0xC0DE0001, 2),
    (154, 0xC0DE0002, 2),
    (106, 0xC0DE0001, 3),
    (106, 0xC0DE0001, 3),
    (106, 0xC0DE0001, 4),
]


def _frames(path: Path) -> list[tuple[int, bytes]]:
    return [(lt, data) for _, lt, _, data in FrameReader(path)]


def write_cut_pcap(
    path: Path, frames: list[tuple[int, bytes]], snaplen: int, endian: str = "<"
) -> Path:
    """A libpcap file (microsecond magic) whose records keep at most ``snaplen`` bytes:
    incl_len = min(snaplen, orig_len), as ``editcap -s`` and ``tcpdump -s`` write them."""
    out = struct.pack(endian + "IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, frames[0][0])
    for i, (_, data) in enumerate(frames):
        kept = data[:snaplen]
        out += struct.pack(endian + "IIII", i, 0, len(kept), len(data)) + kept
    path.write_bytes(out)
    return path


def _block(btype: int, body: bytes, endian: str = "<") -> bytes:
    body += bytes(-len(body) % 4)
    total = len(body) + 12
    return struct.pack(endian + "II", btype, total) + body + struct.pack(endian + "I", total)


def write_cut_pcapng(
    path: Path,
    frames: list[tuple[int, bytes]],
    snaplen: int,
    *,
    block: str = "enhanced",
    endian: str = "<",
) -> Path:
    """pcapng (draft-ietf-opsawg-pcapng): a section header, one interface with this
    snaplen, then enhanced or obsolete packet blocks (captured < original length) or
    simple packet blocks (original length only; they hold min(original, snaplen)
    bytes)."""
    shb = _block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1), endian)
    idb = _block(1, struct.pack(endian + "HHI", frames[0][0], 0, snaplen), endian)
    out = shb + idb
    for i, (_, data) in enumerate(frames):
        kept = data[:snaplen]
        if block == "simple":
            body = struct.pack(endian + "I", len(data)) + kept
            out += _block(3, body, endian)
        elif block == "obsolete":
            body = struct.pack(endian + "HHIIII", 0, 0, 0, i, len(kept), len(data)) + kept
            out += _block(2, body, endian)
        else:
            body = struct.pack(endian + "IIIII", 0, 0, i, len(kept), len(data)) + kept
            out += _block(6, body, endian)
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("form", ["pcap", "enhanced", "obsolete", "simple"])
def test_reader_keeps_each_frames_original_length(tmp_path: Path, form: str, endian: str) -> None:
    frames = _frames(BOARD)
    if form == "pcap":
        path = write_cut_pcap(tmp_path / "cut.pcap", frames, 60, endian)
    else:
        path = write_cut_pcapng(tmp_path / "cut.pcapng", frames, 60, block=form, endian=endian)
    reader = FrameReader(path)
    got = [(len(data), reader.wire_len) for _, _, _, data in reader]
    assert got == [(60, n) for n, _, _ in BOARD_FRAMES]


def test_original_length_of_a_record_read_across_chunks(tmp_path: Path) -> None:
    big = ether(ipv4_udp(1400, 1)) * ((CHUNK_SIZE // 1400) + 2)
    frames = [(LINKTYPE_ETHERNET, ether(ipv4_udp(100, 0))), (LINKTYPE_ETHERNET, big)]
    path = write_cut_pcap(tmp_path / "big.pcap", frames, len(big) - 5)
    reader = FrameReader(path)
    got = [(len(d), reader.wire_len) for _, _, _, d in reader]
    assert got == [(len(frames[0][1]),) * 2, (len(big) - 5, len(big))]


def _fifo_of(tmp_path: Path, content: bytes) -> tuple[Path, threading.Thread]:
    """A named pipe that a thread fills with ``content`` (like ``<(zcat cut.pcap.gz)``):
    it can be read once, front to back, and neither seeked nor read at an offset."""
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            for i in range(0, len(content), 1000):
                fh.write(content[i : i + 1000])

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return fifo, thread


@pytest.mark.parametrize("form", ["pcap", "pcapng"])
def test_snaplen_cut_capture_read_from_a_pipe_is_truncated(tmp_path: Path, form: str) -> None:
    frames = _frames(BOARD)
    if form == "pcap":
        cut = write_cut_pcap(tmp_path / "cut.pcap", frames, 60)
    else:
        cut = write_cut_pcapng(tmp_path / "cut.pcapng", frames, 60)
    fifo, thread = _fifo_of(tmp_path, cut.read_bytes())
    recs: list[PacketRecord] = []
    run = decode_capture(fifo, load_sa_file(BOARD_SAS).sas, recs.append)
    thread.join(timeout=10)
    s = run.summary
    assert run.truncated is None
    assert (s.frames, s.esp, s.skipped, s.by_status) == (7, 7, {}, {"truncated": 7})
    assert (s.cut_captured, s.cut_wire) == (60, 154)
    assert [(r.spi, r.seq, r.icv) for r in recs] == [
        (spi, seq, "cut") for _, spi, seq in BOARD_FRAMES
    ]


def test_decode_cli_reads_a_cut_capture_from_a_pipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = write_cut_pcap(tmp_path / "cut.pcap", _frames(BOARD), 60)
    fifo, thread = _fifo_of(tmp_path, cut.read_bytes())
    args = ["decode", str(fifo), "--sa-file", str(BOARD_SAS), "--no-progress"]
    assert main(args) == 1
    thread.join(timeout=10)
    out = capsys.readouterr().out
    assert "7 ESP packet(s) truncated by the snaplen" in out
    assert "malformed" not in out


@pytest.mark.parametrize("form", ["pcap", "pcapng"])
def test_snaplen_60_every_esp_packet_is_truncated_with_spi_and_seq(
    tmp_path: Path, form: str
) -> None:
    frames = _frames(BOARD)
    if form == "pcap":
        path = write_cut_pcap(tmp_path / "cut.pcap", frames, 60)
    else:
        path = write_cut_pcapng(tmp_path / "cut.pcapng", frames, 60)
    recs: list[PacketRecord] = []
    run = decode_capture(path, load_sa_file(BOARD_SAS).sas, recs.append)
    s = run.summary
    assert (s.frames, s.esp, s.ok, s.skipped) == (7, 7, 0, {})
    assert s.by_status == {"truncated": 7}
    assert (s.cut_captured, s.cut_wire) == (60, 154)
    assert [(r.spi, r.seq, r.status, r.icv) for r in recs] == [
        (spi, seq, "truncated", "cut") for _, spi, seq in BOARD_FRAMES
    ]
    assert recs[0].detail == "cut by the snaplen: 60 of 154 bytes captured"
    assert [r.counters.truncated for r in s.sas] == [2, 5]


def test_snaplen_120_cuts_only_the_long_packets(tmp_path: Path) -> None:
    path = write_cut_pcap(tmp_path / "cut.pcap", _frames(BOARD), 120)
    recs: list[PacketRecord] = []
    run = decode_capture(path, load_sa_file(BOARD_SAS).sas, recs.append)
    assert run.summary.by_status == {"truncated": 4, "ok": 2, "icv-bad": 1}
    assert [r.status for r in recs] == ["truncated"] * 4 + ["ok", "ok", "icv-bad"]


def test_cut_frames_that_are_not_esp_or_cut_before_the_spi(tmp_path: Path) -> None:
    udp = ether(ipv4_udp(200, 1))
    # the board's first frame, cut 4 bytes into its ESP header (14 + 20 + 4 bytes kept)
    esp = _frames(BOARD)[0][1]
    path = tmp_path / "cut.pcap"
    write_cut_pcap(path, [(LINKTYPE_ETHERNET, udp), (LINKTYPE_ETHERNET, esp)], 60)
    raw = path.read_bytes()
    # second record: keep 38 bytes of it instead of 60
    first_end = 24 + 16 + 60
    head = struct.pack("<IIII", 1, 0, 38, len(esp))
    path.write_bytes(raw[:first_end] + head + esp[:38])
    run = decode_capture(path, load_sa_file(BOARD_SAS).sas)
    assert run.summary.esp == 0
    assert run.summary.skipped == {"other-ip": 1, "cut-esp": 1}


def _write_cuts(path: Path, cuts: list[tuple[bytes, int]]) -> Path:
    """A libpcap file of Ethernet frames, each ``(frame, bytes kept)``."""
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET)
    for i, (data, kept) in enumerate(cuts):
        out += struct.pack("<IIII", i, 0, kept, len(data)) + data[:kept]
    path.write_bytes(out)
    return path


def test_nat_t_cut_before_the_four_bytes_after_udp_is_cut_esp_not_ike(tmp_path: Path) -> None:
    # The missing bytes are padded with zeros to find the headers; zeros where the
    # non-ESP marker (RFC 3948 2.2) would be were not captured and decide nothing.
    sas = sa_file()
    natt = [ether(p) for p in make_packets(sender(sas.sas[3]), 5)]
    ike = ether(
        ipv4_udp(200, 1)[:20] + struct.pack("!HHHH", 4500, 4500, 188, 0) + bytes(4) + b"ike!" * 45
    )
    ike = ike[:16] + (208).to_bytes(2, "big") + ike[18:]  # IPv4 total length
    udp_end = 14 + 20 + 8
    cuts = [
        (natt[0], udp_end),  # cut exactly at the end of the UDP header
        (natt[1], udp_end + 2),  # half the SPI
        (natt[2], udp_end + 8),  # SPI and sequence number kept
        (ike, udp_end),  # IKE or ESP: the marker was not captured
        (ike, udp_end + 4),  # the marker was captured: IKE
        (natt[3], len(natt[3])),  # whole
    ]
    recs: list[PacketRecord] = []
    run = decode_capture(_write_cuts(tmp_path / "natt.pcap", cuts), sas.sas, recs.append)
    s = run.summary
    assert s.skipped == {"cut-esp": 3, "ike": 1}
    assert s.by_status == {"truncated": 1, "ok": 1}
    assert [(r.frame, r.spi, r.seq, r.status, r.encap) for r in recs] == [
        (3, 0x4000, 3, "truncated", (4500, 4500)),
        (6, 0x4000, 4, "ok", (4500, 4500)),
    ]


def test_a_frame_longer_than_its_ip_packet_is_not_called_cut(tmp_path: Path) -> None:
    # An IPv4 total length above the captured bytes, in a record that was not cut: the
    # frame itself is malformed, whatever the snaplen.
    frame = ether(ipv4_udp(100, 1))
    bad = frame[:16] + (200).to_bytes(2, "big") + frame[18:]
    path = write_cut_pcap(tmp_path / "whole.pcap", [(LINKTYPE_RAW, bad[14:])], 65535)
    run = decode_capture(path, load_sa_file(BOARD_SAS).sas)
    assert run.summary.skipped == {"malformed-ip": 1}


def test_decode_and_diagnose_exit_1_and_name_the_snaplen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_cut_pcap(tmp_path / "cut.pcap", _frames(BOARD), 60)
    sas = ["--sa-file", str(BOARD_SAS)]
    assert main(["decode", str(path), *sas, "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "7 ESP (7 truncated)" in out
    assert "no ESP packet" not in out
    assert "7 ESP packet(s) truncated by the snaplen" in out
    assert "snaplen of at least 154" in out
    assert main(["decode", str(path), *sas, "--json", "--jobs", "2"]) == 1
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["snaplen"] == {"truncated": 7, "most_captured": 60, "longest": 154}
    assert summary["status"] == {"truncated": 7} and summary["exit"] == 1
    assert main(["diagnose", str(path), *sas]) == 1
    out = capsys.readouterr().out
    assert "7 packet(s) truncated by the snaplen" in out
    assert "no packet fails" not in out
    assert main(["diagnose", str(path), *sas, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["unexamined"], report["exit"]) == ({"truncated": 7}, 1)


def test_help_names_the_snaplen_exit(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("decode", "diagnose"):
        assert main([cmd, "--help"]) == 0
        assert "snaplen" in " ".join(capsys.readouterr().out.split())
