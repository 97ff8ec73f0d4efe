"""set output board: what a board's own tools print, esplab's advice kept apart."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from esplab.batch import run_line
from esplab.commands.session import Session

STATE = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 "
    "enc aes 0x000102030405060708090a0b0c0d0e0f"
)


def _run(session: Session, line: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    run_line(
        session,
        line,
        Console(file=out, width=200, color_system=None),
        Console(file=err, width=200, color_system=None),
    )
    return out.getvalue(), err.getvalue()


def _board() -> Session:
    session = Session()
    _run(session, "set output board")
    return session


def test_a_successful_ip_change_prints_nothing_as_on_a_board() -> None:
    session = _board()
    assert _run(session, STATE) == ("", "")
    listing, _ = _run(session, "ip xfrm state")
    assert listing.startswith("src 192.0.2.1 dst 192.0.2.2\n")


def test_a_refusal_is_iproute2s_line_then_esplabs_advice() -> None:
    # Both as Linux 6.12 + iproute2 6.15 print them (tests/kernel/ cp-state-duplicate,
    # cp-state-add-tfcpad).
    session = _board()
    _run(session, STATE)
    _, err = _run(session, STATE)
    first, second = err.splitlines()
    assert first == "RTNETLINK answers: File exists"
    assert second.startswith("  (esplab: ") and "ip xfrm state update" in second
    _, err = _run(session, STATE.replace("0x1000", "0x1001") + " tfcpad 300")
    assert err.splitlines()[0] == "Error: TFC padding can only be used in tunnel mode."


def test_text_output_keeps_esplabs_one_line() -> None:
    session = Session()
    assert _run(session, STATE)[0].strip() == "ap: state added"
    _, err = _run(session, STATE)
    assert err.startswith("error: RTNETLINK answers: File exists (SA ")
    assert len(err.splitlines()) == 1
