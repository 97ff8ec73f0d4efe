"""eip93 fault: list, set SPI KIND [ARG], clear SPI [KIND]; shown in eip93 sa and as a
journey stage; bad kinds and arguments are one clear message each."""

from __future__ import annotations

import pytest

from esplab.commands.result import JourneyResult, MessageResult, PacketResult, TableResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, InvalidValue, NotFound, StateConflict
from esplab.model.kernel.drivers.eip93.faults import FAULTS
from tests.commands import seed

SEND = f"send ap wan {seed.UDP} seq 7 iv 000102030405060708090a0b0c0d0e0f"


@pytest.fixture
def session() -> Session:
    return seed.crypto_session()


def test_list_names_every_kind_and_where_it_is_set(session: Session) -> None:
    listed = session.execute("eip93 fault")
    assert isinstance(listed, TableResult)
    assert listed.data["kinds"] == list(FAULTS) and listed.data["active"] == {}
    session.execute("eip93 fault set 0x1000 icv-length")
    listed = session.execute("eip93 fault")
    assert listed.data["active"] == {"0x1000 (out)": {"icv-length": "128"}}


def test_set_names_sa_and_field_then_clear_restores(session: Session) -> None:
    before = session.execute("eip93 sa 0x1000").data["hex"]
    result = session.execute("eip93 fault set 0x1000 spi-byte-order")
    assert isinstance(result, MessageResult)
    assert "SPI 0x1000 (out, SA record at 0x08000000)" in result.summary
    # sa_spi as the layer prints it: 0x1000 written big-endian reads 0x100000 (LE u32)
    assert "field: sa_spi" in result.summary
    assert result.data["changed"]["sa_spi"] == ["0x1000", "0x100000"]
    view = session.execute("eip93 sa 0x1000")
    assert isinstance(view, PacketResult)
    assert any(n.startswith("FAULT spi-byte-order [M]") for n in view.notes)
    assert any("sa_spi is 0x100000, the driver writes 0x1000" in n for n in view.notes)
    cleared = session.execute("eip93 fault clear 0x1000")
    assert cleared.data["cleared"] == ["spi-byte-order"]
    assert session.execute("eip93 sa 0x1000").data["hex"] == before


def test_a_tx_fault_is_a_stage_of_the_journey(session: Session) -> None:
    good = session.execute(SEND)
    session.execute("eip93 fault set 0x1000 icv-word-order")
    result = session.execute(SEND)
    assert isinstance(result, JourneyResult) and isinstance(good, JourneyResult)
    j = result.journeys[0]
    stage = next(s for s in j.stages if s.decision.startswith("injected fault(s)"))
    assert stage.fidelity == "M" and "icv-word-order" in stage.decision
    assert j.dropped is not None and "ICV does not verify" in (j.dropped.drop or "")
    # only the ICV differs: each of its three 32-bit words byte-reversed
    wire = j.stage("wan.wire").data  # type: ignore[union-attr]
    ref = good.journeys[0].stage("wan.wire").data  # type: ignore[union-attr]
    assert wire is not None and ref is not None and wire[:-12] == ref[:-12]
    assert wire[-12:] == b"".join(ref[-12:][i : i + 4][::-1] for i in (0, 4, 8))


@pytest.mark.parametrize(
    ("line", "error", "match"),
    [
        ("eip93 fault set 0x1000 frobnicate", NotFound, "unknown fault 'frobnicate'"),
        ("eip93 fault set 0x1000 icv-length 100", InvalidValue, "ICV length '100'"),
        ("eip93 fault set 0x1000 icv-length 96", InvalidValue, "valid: 32, 64, 128, 160"),
        ("eip93 fault set 0x1000 wrong-sa", InvalidValue, "needs the SPI whose keys"),
        ("eip93 fault set 0x1000 nat-t 3", InvalidValue, "takes no argument"),
        ("eip93 fault set 0x2000 nat-t", NotFound, "no offloaded SA with SPI 0x2000"),
        ("eip93 fault clear 0x1000", NotFound, "has no fault"),
        ("eip93 fault frob", BadArgument, "valid: set, clear"),
        ("eip93 fault set 0x1000", BadArgument, "needs SPI KIND"),
    ],
)
def test_bad_lines(session: Session, line: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        session.execute(line)


def test_a_tx_fault_needs_an_outbound_sa() -> None:
    s = Session()
    s.execute(seed.SA_IN + " offload dev wan dir in")
    with pytest.raises(InvalidValue, match="changes what the driver sends; SA 0x1001 is inbound"):
        s.execute("eip93 fault set 0x1001 seq-after-icv in")
    assert "digest-byte-order" in s.execute("eip93 fault set 0x1001 digest-byte-order").summary


def test_setting_twice_is_refused(session: Session) -> None:
    session.execute("eip93 fault set 0x1000 esn")
    with pytest.raises(StateConflict, match="already has fault esn"):
        session.execute("eip93 fault set 0x1000 esn")


def test_wrong_sa_keeps_the_keys_it_programmed_after_that_sa_is_gone(session: Session) -> None:
    # A second offloaded SA of the same algorithms, other keys (seed.ENC and AUTH reversed).
    other = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.3 proto esp spi 0x2000 reqid 2 "
        f"mode transport auth sha1 0x{seed.AUTH[2:][::-1]} enc aes 0x{seed.ENC[2:][::-1]} "
        "offload dev wan dir out"
    )
    session.execute(other)
    session.execute("eip93 fault set 0x1000 wrong-sa 0x2000")
    wrong = session.execute("eip93 sa 0x1000").data["hex"]
    session.execute("ip xfrm state delete src 192.0.2.1 dst 192.0.2.3 proto esp spi 0x2000")
    # another fault rebuilds the record: still with 0x2000's keys, no traceback
    session.execute("eip93 fault set 0x1000 spi-byte-order")
    session.execute("eip93 fault clear 0x1000 spi-byte-order")
    assert session.execute("eip93 sa 0x1000").data["hex"] == wrong


def test_an_icv_length_with_a_leading_zero_is_read_as_decimal(session: Session) -> None:
    result = session.execute("eip93 fault set 0x1000 icv-length 0128")
    assert result.data["arg"] == "128"
