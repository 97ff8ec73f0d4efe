"""The chunked capture reader and the streaming pcapng writer."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from esplab import pcapio as frames
from esplab.errors import CaptureFileError
from esplab.pcap import LINKTYPE_ETHERNET, LINKTYPE_RAW, CaptureRecord, read_capture, write_capture
from esplab.pcapio import FrameReader, Interface, PcapngWriter

from .support import ipv4_udp

PACKETS = [ipv4_udp(64 + i, i) for i in range(5)]


def records() -> list[CaptureRecord]:
    return [
        CaptureRecord("wan", LINKTYPE_RAW, 1_000_000_123 + i, p, f"n{i}")
        for i, p in enumerate(PACKETS)
    ] + [CaptureRecord("lan", LINKTYPE_ETHERNET, 7, b"\x00" * 14)]


def test_pcapng_reads_what_esplab_pcap_writes(tmp_path: Path) -> None:
    path = tmp_path / "a.pcapng"
    write_capture(path, records())
    with FrameReader(path) as reader:
        got = list(reader)
        assert reader.format == "pcapng"
        assert reader.interfaces == [Interface("wan", LINKTYPE_RAW), Interface("lan", 1)]
        assert reader.count == 6
        assert reader.position == path.stat().st_size
    assert got == [(0, LINKTYPE_RAW, r.ts_ns, r.data) for r in records()[:5]] + [
        (1, LINKTYPE_ETHERNET, 7, b"\x00" * 14)
    ]


def test_classic_pcap_microseconds_and_nanoseconds(tmp_path: Path) -> None:
    path = tmp_path / "a.pcap"
    write_capture(path, records()[:5])  # esplab writes the nanosecond magic
    assert [f[2] for f in FrameReader(path)] == [r.ts_ns for r in records()[:5]]
    # libpcap's microsecond magic, big-endian, written by hand (libpcap file format)
    us = tmp_path / "us.pcap"
    head = struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_RAW)
    rec = struct.pack(">IIII", 5, 250, len(PACKETS[0]), len(PACKETS[0])) + PACKETS[0]
    us.write_bytes(head + rec)
    assert list(FrameReader(us)) == [(0, LINKTYPE_RAW, 5_000_250_000, PACKETS[0])]


def test_pcapng_default_resolution_is_microseconds(tmp_path: Path) -> None:
    # An interface block without if_tsresol (as tcpdump writes): ticks are microseconds.
    def block(btype: int, body: bytes) -> bytes:
        return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    data = PACKETS[0] + b"\x00" * (-len(PACKETS[0]) % 4)
    shb = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb = block(1, struct.pack("<HHI", LINKTYPE_RAW, 0, 65535))
    epb = block(6, struct.pack("<IIIII", 0, 0, 3_000_000, len(PACKETS[0]), len(PACKETS[0])) + data)
    path = tmp_path / "td.pcapng"
    path.write_bytes(shb + idb + epb)
    assert list(FrameReader(path)) == [(0, LINKTYPE_RAW, 3_000_000_000, PACKETS[0])]


def test_reads_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "CHUNK_SIZE", 7)
    for name in ("a.pcapng", "a.pcap"):
        path = tmp_path / name
        write_capture(path, records()[:5])
        assert [f[3] for f in FrameReader(path)] == PACKETS


@pytest.mark.parametrize("content", [b"", b"abc", b"hello, this is text", b"\x00" * 64])
def test_not_a_capture(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureFileError, match="is not a capture"):
        FrameReader(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CaptureFileError, match="cannot read"):
        FrameReader(tmp_path / "nope.pcap")


@pytest.mark.parametrize("name", ["a.pcapng", "a.pcap"])
def test_truncated_file_yields_what_came_before(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    write_capture(path, records()[:5])
    path.write_bytes(path.read_bytes()[:-30])
    reader = FrameReader(path)
    got: list[tuple[int, int, int, bytes]] = []
    with pytest.raises(CaptureFileError, match=r"truncated .* after 4 packet\(s\)"):
        got.extend(reader)
    assert [f[3] for f in got] == PACKETS[:4]


def test_damaged_block_length(tmp_path: Path) -> None:
    path = tmp_path / "a.pcapng"
    write_capture(path, records()[:2])
    data = bytearray(path.read_bytes())
    # The trailing length of the last block no longer matches its leading length.
    data[-4:] = struct.pack("<I", 999)
    path.write_bytes(bytes(data))
    with pytest.raises(CaptureFileError, match="trailing length"):
        list(FrameReader(path))


def test_writer_streams_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "w.pcapng"
    with PcapngWriter(path) as writer:
        for r in records():
            writer.write(r.interface, r.linktype, r.ts_ns, r.data, r.comment)
    assert writer.count == 6
    back = list(read_capture(path))
    assert [(r.interface, r.linktype, r.ts_ns, r.data) for r in back] == [
        (r.interface, r.linktype, r.ts_ns, r.data) for r in records()
    ]
    # Same bytes as the lab's own writer.
    other = tmp_path / "o.pcapng"
    write_capture(other, records())
    assert path.read_bytes() == other.read_bytes()


def test_writer_refuses_an_unwritable_path(tmp_path: Path) -> None:
    with pytest.raises(CaptureFileError, match="cannot write"):
        PcapngWriter(tmp_path / "no" / "such" / "dir.pcapng")
