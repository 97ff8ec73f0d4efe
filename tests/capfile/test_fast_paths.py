"""The shortcuts of decode's per-packet path give what the plain computation gives."""

from __future__ import annotations

import gc
import json

import pytest

from esplab.capfile.formats import AddressText, PacketJson
from esplab.capfile.records import PacketRecord
from esplab.capfile.sequence import DUPLICATE, GAP, LATE, TRACK_WINDOW, SeqTracker
from esplab.cli import run

SRC, DST = bytes((192, 0, 2, 1)), bytes((192, 0, 2, 2))


def _record(ts_ns: int) -> PacketRecord:
    rec = PacketRecord(7, ts_ns, 0, SRC, DST, None, 0x1000, 3, 1, "ok", "good")
    rec.pad_len, rec.next_header, rec.padding_ok = 2, 4, True
    rec.inner = (4, bytes((10, 0, 0, 1)), bytes((10, 0, 0, 2)), 17, 40000, 5001, 100)
    return rec


@pytest.mark.parametrize(
    "ts_ns",
    [0, 1, 999_999_999, 1_000_000_000, 1_000_000_001, 1_700_000_000_123_456_789, 10**20 + 5],
)
def test_packet_time_is_seconds_dot_nine_digits(ts_ns: int) -> None:
    line = PacketJson()(_record(ts_ns), ["eth0"])
    sec, ns = divmod(ts_ns, 1_000_000_000)
    assert f'"time":{sec}.{ns:09d},' in line
    assert json.loads(line)["time"] == pytest.approx(ts_ns / 1e9)


def test_packet_line_with_and_without_an_inner_packet() -> None:
    fmt, rec = PacketJson(), _record(1_000_000_000)
    first = json.loads(fmt(rec, ["eth0"]))
    assert first["inner"] == {
        "version": 4, "src": "10.0.0.1", "dst": "10.0.0.2", "proto": 17,
        "sport": 40000, "dport": 5001, "len": 100,
    }  # fmt: skip
    rec.inner = None
    rec.status, rec.icv = "icv-bad", "bad"
    second = json.loads(fmt(rec, ["eth0"]))
    assert second["inner"] is None
    assert (second["status"], second["icv"], second["events"]) == ("icv-bad", "bad", [])


def test_sequence_window_stays_exact_after_a_long_run_in_order() -> None:
    """Past TRACK_WINDOW numbers in order the bitmap is kept as a constant; what it
    says about duplicates and late numbers must not change."""
    t = SeqTracker(False, 0)
    top = TRACK_WINDOW * 2
    for seq in range(1, top + 1):
        assert t.observe(seq, seq, True) == (0, 0)
    assert t.observe(top, 0, True) == (DUPLICATE, 0)
    assert t.observe(top - TRACK_WINDOW + 1, 0, True) == (DUPLICATE, 0)  # oldest remembered
    assert t.observe(top - TRACK_WINDOW, 0, True) == (LATE, 0)  # beyond what is kept
    assert t.observe(top + 3, 0, True) == (GAP, 2)
    assert t.observe(top + 1, 0, True) == (LATE, 0)
    assert t.observe(top + 1, 0, True) == (DUPLICATE, 0)
    assert t.observe(top + 4, 0, True) == (0, 0)
    assert t.observe(top + 2, 0, True) == (LATE, 0)
    assert t.observe(top + 2, 0, True) == (DUPLICATE, 0)
    stats = t.stats
    assert (stats.highest, stats.gaps, stats.duplicates, stats.late) == (top + 4, 1, 4, 3)


def test_the_command_entry_freezes_the_heap_and_exits_with_mains_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as exc:
            run(["--version"])
        assert exc.value.code == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize(
    "packed",
    [bytes(4), bytes((255,) * 4), bytes((10, 0, 0, 1)), bytes((192, 0, 2, 100))],
)
def test_ipv4_text_is_what_inet_ntop_writes(packed: bytes) -> None:
    import socket

    assert AddressText()(packed) == socket.inet_ntop(socket.AF_INET, packed)


def test_ipv6_text_keeps_inet_ntops_form() -> None:
    # glibc writes an IPv4-mapped address with its dotted tail (ipaddress in 3.11 does not)
    packed = bytes(10) + b"\xff\xff" + bytes((1, 2, 3, 4))
    assert AddressText()(packed) == "::ffff:1.2.3.4"


def test_inner_ipv4_summary_shortcut_and_long_way_agree() -> None:
    from esplab.capfile.inner import inner_ip

    udp = bytes.fromhex("4500001c00004000401100000a0000010a000002") + bytes.fromhex("9c4013890008")
    assert inner_ip(udp + b"\x00\x00", 28) == (4, udp[12:16], udp[16:20], 17, 40000, 5001, 28)
    icmp = udp[:9] + b"\x01" + udp[10:]
    assert inner_ip(icmp, 28) == (4, udp[12:16], udp[16:20], 1, -1, -1, 28)
    short = udp[:2] + b"\x00\x16" + udp[4:22]  # total 22: UDP without room for ports
    assert inner_ip(short, 22) == (4, udp[12:16], udp[16:20], 17, -1, -1, 22)
    assert inner_ip(udp, 27) is None  # claims more than there is
