"""capture import of an exported seed session: kinds, taps, timestamps and link types
come back as they were written."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.commands.result import MessageResult, TableResult
from esplab.commands.session import Session
from esplab.errors import NoSuchPacket, NotFound
from esplab.layers import linktypes
from esplab.pcap import read_capture
from tests.commands import seed

OFFLOAD = " offload dev wan dir out"


def exported(tmp_path: Path) -> Path:
    """The README's seed session (the ap's SA offloaded) and one send, exported."""
    s = Session()
    for line in seed.software(OFFLOAD):
        s.execute(line)
    s.execute(f"send ap wan {seed.UDP} seq 7 iv 000102030405060708090a0b0c0d0e0f")
    path = tmp_path / "run.pcapng"
    s.execute(f"capture export {path}")
    return path


def records(path: Path) -> list[tuple[str, int, int, bytes]]:
    return [(r.interface, r.linktype, r.ts_ns, r.data) for r in read_capture(path)]


def test_import_keeps_taps_kinds_timestamps_and_link_types(tmp_path: Path) -> None:
    path = exported(tmp_path)
    s = Session()
    result = s.execute(f"capture import {path}")
    assert isinstance(result, MessageResult)
    taps = s.lab.captures.taps()
    assert {"eip93.cdr", "eip93.rdr", "eip93.sa", "wan.wire"} <= set(taps)
    assert "import" not in taps
    assert result.data["packets"] == sum(result.data["taps"].values())
    cdr = s.execute("capture show eip93.cdr")
    assert isinstance(cdr, TableResult)
    assert cdr.rows[0][3] == "EIP93CommandDescriptor"
    assert s.lab.captures.get("eip93.sa")[0].packet().__class__.__name__ == "EIP93SARecord"
    assert s.lab.captures.get("wan.wire")[0].packet().summary().startswith("Ether")
    again = tmp_path / "again.pcapng"
    s.execute(f"capture export {again}")
    assert records(again) == records(path)
    lts = {lt for _, lt, _, _ in records(again)}
    assert {
        linktypes.DLT_EIP93_CMD_DESC,
        linktypes.DLT_EIP93_RES_DESC,
        linktypes.DLT_EIP93_SA_RECORD,
    } <= lts


def test_import_into_one_tap_says_the_interfaces_were_merged(tmp_path: Path) -> None:
    path = exported(tmp_path)
    s = Session()
    result = s.execute(f"capture import {path} board")
    assert s.lab.captures.taps() == ["board"]
    assert "interfaces (" in result.summary and "merged into board" in result.summary
    assert "eip93.cdr" in result.summary
    # Each record still decodes as its own kind, and re-exports with its link type.
    kinds = [type(r.packet()).__name__ for r in s.lab.captures.get("board")]
    assert "EIP93CommandDescriptor" in kinds and "Raw" not in kinds[:4]
    again = tmp_path / "board.pcapng"
    s.execute(f"capture export {again}")
    assert [(lt, ts, d) for _, lt, ts, d in records(again)] == [
        (lt, ts, d) for _, lt, ts, d in records(path)
    ]


def test_a_classic_pcap_goes_to_the_import_tap(tmp_path: Path) -> None:
    s = Session()
    for line in seed.software():
        s.execute(line)
    s.execute(f"send ap wan {seed.UDP} count 2")
    path = tmp_path / "wire.pcap"
    s.execute(f"capture export {path} wan.wire")
    fresh = Session()
    result = fresh.execute(f"capture import {path}")
    assert result.summary == f"2 packet(s) from {path} in tap import"
    assert fresh.lab.captures.get("import")[0].packet().summary().startswith("Ether")


def test_trace_and_explain_say_an_import_has_no_stages(tmp_path: Path) -> None:
    path = exported(tmp_path)
    s = Session()
    s.execute(f"capture import {path} board")
    traced = s.execute("trace 1")
    assert isinstance(traced, MessageResult)
    assert traced.summary == (
        "journey 1 (import run.pcapng) is an import with no stages; "
        "its packets are in board: capture show board shows them"
    )
    assert s.execute("explain 1").summary == traced.summary
    with pytest.raises(NotFound, match=r"is an import with no stages, so no stage 'board'"):
        s.execute("explain 1 board")
    with pytest.raises(NoSuchPacket, match=r"is an import with no stages, so none to step"):
        s.execute("step 1")
