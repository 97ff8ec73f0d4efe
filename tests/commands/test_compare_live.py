"""compare runs the offload paths on the lab's live SA record and engine state.

The report of issue #19: after ``eip93 swap-digest 0x3000`` every packet fails at
the host, yet compare said "identical to sw" on all four datapaths, because it
built on scratch engines. Now it uses the live record (``--scratch`` on request,
said so), and shows the live record against the driver's, field by field.
"""

from __future__ import annotations

import pytest

from esplab.commands.result import TableResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.model.kernel.esp.ip import checksum
from tests.commands import seed

SA = seed.SA_OUT.replace("0x1000", "0x3000") + " offload packet dev wan dir out"
LINE = f"compare 0x3000 {seed.UDP} seq 7"


def compare(s: Session, line: str) -> TableResult:
    result = s.execute(line)
    assert isinstance(result, TableResult)
    return result


def _session() -> Session:
    s = Session()
    s.execute(SA)
    return s


def _text(result: TableResult) -> str:
    return "\n".join(" ".join(row) for row in result.rows)


def test_a_swapped_digest_shows_on_the_offload_paths_and_in_the_record() -> None:
    s = _session()
    s.execute("eip93 swap-digest 0x3000")
    result = compare(s, LINE)
    paths = result.data["paths"]
    assert paths["sw+aead"]["identical"] is True  # no offloaded record in that path
    assert paths["crypto"]["identical"] is False and paths["packet"]["identical"] is False
    # Only the 12-byte ICV differs (HMAC-SHA1-96): the engine used the live record.
    sw, packet = bytes.fromhex(paths["sw"]["hex"]), bytes.fromhex(paths["packet"]["hex"])
    assert sw[:-12] == packet[:-12] and sw[-12:] != packet[-12:]
    engine = result.data["engine"]
    assert engine["record"] == "live" and engine["faults"] == {"digest-byte-order": ""}
    assert sorted(engine["differs"]) == ["sa_i_digest", "sa_o_digest"]
    text = _text(result)
    assert "the lab's live SA record at 0x08000000, injected faults: digest-byte-order" in text
    assert "SA record field sa_i_digest: live " in text and "the driver writes" in text
    assert "the bytes differ" in result.summary


def test_scratch_on_request_and_said_so() -> None:
    s = _session()
    s.execute("eip93 swap-digest 0x3000")
    result = compare(s, LINE + " --scratch")
    assert result.data["identical"] is True
    assert result.data["engine"]["record"] == "scratch"
    assert "--scratch, the record the driver writes (not the live one" in _text(result)
    # The live record is still compared with the driver's.
    assert "sa_i_digest" in result.data["engine"]["differs"]


def test_a_clean_live_record_is_identical() -> None:
    result = compare(_session(), LINE)
    assert result.data["identical"] is True
    assert result.data["engine"]["differs"] == {}
    assert "the live record is the one the driver writes" in _text(result)


def test_tx_faults_are_live_too() -> None:
    s = _session()
    s.execute("eip93 fault set 0x3000 seq-after-icv")
    paths = compare(s, LINE).data["paths"]
    packet = bytes.fromhex(paths["packet"]["hex"])
    assert packet[24:28] == (8).to_bytes(4, "big")  # 7, rewritten after the ICV


def test_a_software_sa_says_its_engine_is_scratch() -> None:
    s = Session()
    s.execute(seed.SA_OUT)
    result = compare(s, f"compare 0x1000 {seed.UDP}")
    assert result.data["engine"] == {"record": "scratch", "reason": "not offloaded"}


def test_id_and_ttl_pin_the_outer_header_on_every_path() -> None:
    s = _session()
    result = compare(s, LINE + " id 0x1234 ttl 9")
    assert result.data["pins"] == {"id": 0x1234, "ttl": 9}
    for path in ("sw", "sw+aead", "crypto", "packet"):
        ip = bytes.fromhex(result.data["paths"][path]["hex"])
        assert ip[4:6] == b"\x12\x34" and ip[8] == 9
        assert checksum(ip[:20]) == 0  # RFC 1071: a header with its checksum sums to 0
    assert result.data["identical"] is True


@pytest.mark.parametrize(
    ("tail", "match"),
    [(" id 70000", r"id 70000.*0\.\.0xffff"), (" ttl 256", r"ttl 256"), (" ttl", "needs a value")],
)
def test_bad_pins(tail: str, match: str) -> None:
    with pytest.raises(BadArgument, match=match):
        _session().execute(LINE + tail)
