from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw
from scapy.utils import rdpcap

from esplab.errors import CaptureFileError
from esplab.layers import EIP93CommandDescriptor, EIP93SARecord
from esplab.layers.linktypes import DLT_EIP93_CMD_DESC, DLT_EIP93_SA_RECORD
from esplab.pcap import LINKTYPE_RAW, CaptureRecord, read_capture, write_capture

IP_BYTES = bytes(IP(src="192.0.2.1", dst="192.0.2.2") / UDP(dport=5201) / Raw(b"hello"))
CDR_BYTES = bytes(EIP93CommandDescriptor(pad_value=4, length=84))
SA_BYTES = bytes(EIP93SARecord(sa_spi=0x1000))


def records() -> list[CaptureRecord]:
    return [
        CaptureRecord("wan.wire", LINKTYPE_RAW, 1_000, IP_BYTES, "journey 1 stage 3"),
        CaptureRecord("eip93.cdr", DLT_EIP93_CMD_DESC, 2_000, CDR_BYTES),
        CaptureRecord("eip93.sa", DLT_EIP93_SA_RECORD, 3_000, SA_BYTES, "spi 0x1000"),
        CaptureRecord("wan.wire", LINKTYPE_RAW, 4_500, IP_BYTES),
    ]


def test_pcapng_round_trip_through_our_reader(tmp_path: Path) -> None:
    path = tmp_path / "x.pcapng"
    assert write_capture(path, records()) == 4
    back = list(read_capture(path))
    assert [(r.interface, r.linktype, r.ts_ns, r.data) for r in back] == [
        (r.interface, r.linktype, r.ts_ns, r.data) for r in records()
    ]


def test_pcapng_reads_back_into_the_same_classes_with_scapy(tmp_path: Path) -> None:
    path = tmp_path / "x.pcapng"
    write_capture(path, records())
    pkts = rdpcap(str(path))
    assert isinstance(pkts[0], IP)
    assert isinstance(pkts[1], EIP93CommandDescriptor) and pkts[1].pad_value == 4
    assert isinstance(pkts[2], EIP93SARecord) and pkts[2].sa_spi == 0x1000
    assert pkts[0].comment == b"journey 1 stage 3"


def test_same_records_give_identical_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.pcapng", tmp_path / "b.pcapng"
    write_capture(a, records())
    write_capture(b, records())
    assert a.read_bytes() == b.read_bytes()


def test_classic_pcap_one_linktype(tmp_path: Path) -> None:
    path = tmp_path / "x.pcap"
    write_capture(path, [records()[0], records()[3]])
    back = list(read_capture(path))
    assert [r.data for r in back] == [IP_BYTES, IP_BYTES]
    assert back[1].ts_ns == 4_500
    assert isinstance(rdpcap(str(path))[0], IP)
    with pytest.raises(CaptureFileError, match="one link type"):
        write_capture(tmp_path / "mixed.pcap", records())


def test_tshark_reads_our_pcapng(tmp_path: Path, tshark: str) -> None:
    path = tmp_path / "x.pcapng"
    write_capture(path, records())
    out = subprocess.run(
        [
            tshark,
            "-r",
            str(path),
            "-T",
            "fields",
            "-e",
            "frame.interface_name",
            "-e",
            "udp.dstport",
            "-e",
            "frame.comment",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert out[0].split("\t") == ["wan.wire", "5201", "journey 1 stage 3"]
    assert out[2].split("\t")[0] == "eip93.sa"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "is not a capture: 0 byte(s) long"),
        (b"hello world, not a capture", "is not a capture (starts with 68656c6c)"),
    ],
)
def test_garbage_files(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureFileError) as info:
        list(read_capture(path))
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".pcap", ".pcapng"])
def test_truncated_file_keeps_what_was_read(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"x{suffix}"
    recs = [records()[0], records()[3]]
    write_capture(path, recs)
    path.write_bytes(path.read_bytes()[:-10])
    got: list[CaptureRecord] = []
    with pytest.raises(CaptureFileError, match=r"truncated .* after 1 packet"):
        for rec in read_capture(path):
            got.append(rec)
    assert [r.data for r in got] == [IP_BYTES]


def test_missing_and_unwritable_paths(tmp_path: Path) -> None:
    with pytest.raises(CaptureFileError, match="cannot read"):
        list(read_capture(tmp_path / "nope.pcap"))
    with pytest.raises(CaptureFileError, match="cannot write"):
        write_capture(tmp_path / "no" / "such" / "dir.pcapng", records())


def test_impossible_path_names(tmp_path: Path) -> None:
    with pytest.raises(CaptureFileError, match=r"'bad\\x00name.pcap' holds a NUL byte"):
        list(read_capture("bad\x00name.pcap"))
    with pytest.raises(CaptureFileError, match="cannot write"):
        write_capture("bad\x00name.pcapng", records())


@pytest.mark.parametrize("suffix", [".pcap", ".pcapng"])
def test_any_cut_or_damaged_word_is_a_capture_error(tmp_path: Path, suffix: str) -> None:
    # Every prefix of a good file, and the file with each 32-bit word set to a small
    # length (block lengths 12..20 are where fixed parts go missing): records, then at
    # most one CaptureFileError; any other exception fails the test.
    good = tmp_path / f"good{suffix}"
    write_capture(good, records() if suffix == ".pcapng" else [records()[0], records()[3]])
    data = good.read_bytes()
    variants = [data[:n] for n in range(len(data))]
    for at in range(0, len(data) - 3, 4):
        for small in (12, 16, 20):
            variants.append(data[:at] + small.to_bytes(4, "little") + data[at + 4 :])
    if suffix == ".pcapng":  # a block of each type cut to its two length words, last
        starts, at = [], 0
        while at < len(data):
            starts.append(at)
            at += int.from_bytes(data[at + 4 : at + 8], "little")
        for btype in (1, 2, 3, 6):
            short = struct.pack("<III", btype, 12, 12)
            variants += [data[:start] + short for start in starts[1:]]
    path = tmp_path / f"x{suffix}"
    errors = 0
    for variant in variants:
        path.write_bytes(variant)
        try:
            for _ in read_capture(path):
                pass
        except CaptureFileError:
            errors += 1
    assert errors >= len(data) - 1  # every strict prefix is refused somewhere
