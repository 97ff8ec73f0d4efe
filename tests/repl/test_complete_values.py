"""Record numbers after TAP# and in capture show; outbound SPIs for compare."""

from __future__ import annotations

import pytest

from esplab.commands.complete import candidates, complete
from esplab.commands.handlers import all_commands, diff
from esplab.commands.registry import Registry
from esplab.commands.session import Session
from tests.commands import seed


@pytest.fixture(scope="module")
def session() -> Session:
    commands = all_commands()
    names = {c.name for c in commands}
    extra = [c for c in diff.COMMANDS if c.name not in names]
    s = Session(registry=Registry([*commands, *extra]))
    for line in seed.software():
        s.execute(line)
    for _ in range(3):
        s.execute(f"send ap wan {seed.UDP}")
    return s


def test_capture_show_offers_record_numbers(session: Session) -> None:
    count = len(session.lab.captures.get("wan.wire"))
    assert count >= 3
    refs = [f"wan.wire#{n}" for n in range(1, count + 1)]
    assert candidates(session, "capture show wan.wire#") == refs
    assert complete(session, "capture show wan.wire#").replace == len("wan.wire#")
    assert candidates(session, "capture show wan.wire#2") == ["wan.wire#2"]
    assert candidates(session, "capture show wan.wire ") == [str(n) for n in range(1, count + 1)]
    session.execute("capture show wan.wire#2")


def test_diff_offers_record_numbers_after_the_hash(session: Session) -> None:
    count = len(session.lab.captures.get("wan.wire"))
    assert candidates(session, "diff wan.wire#1 wan.wire#") == [
        f"wan.wire#{n}" for n in range(1, count + 1)
    ]
    assert f"wan.wire#{count}" in candidates(session, "diff ")


def test_unknown_tap_gets_no_numbers(session: Session) -> None:
    assert candidates(session, "capture show nowhere#") == []


def test_compare_offers_the_outbound_spis_of_the_node(session: Session) -> None:
    assert candidates(session, "compare ") == ["0x1000"]
    assert candidates(session, "host compare ") == ["0x1001"]
    assert candidates(session, "compare 0x10") == ["0x1000"]
    session.execute(f"compare 0x1000 {seed.UDP}")
    assert candidates(session, f"compare 0x1000 {seed.UDP} ") == ["seq", "iv"]
    assert candidates(session, f"compare 0x1000 {seed.UDP} seq 2 ") == ["iv"]


def test_completing_xsk_leaves_the_xdp_side_unmade() -> None:
    # Completion only reads: offering socket names must not bring the XDP side into
    # being (a lab with it walks every packet of a send count).
    s = Session()
    assert candidates(s, "xsk bind ") == []
    assert s.lab.xdp_state is None
    s.execute("xsk create s1")
    assert "s1" in candidates(s, "xsk bind ")


def test_options_already_given_are_not_offered_again() -> None:
    s = Session()
    assert candidates(s, "send ap wan IP() count 5 ") == ["seq", "iv"]
    assert candidates(s, "send ap wan IP() count 5 iv 0x00000000000000000000000000000000 ") == [
        "seq"
    ]
    assert candidates(s, "ping -") == ["--count", "-c"]
    assert candidates(s, "ping -c 3 -") == []
    assert candidates(s, "save --name x -") == ["--description", "--force"]
    assert candidates(s, "save --name x --force -") == ["--description"]


def test_ip_completion_reads_the_global_options_as_ip_does() -> None:
    s = Session()
    assert candidates(s, "ip -f ") == ["inet", "inet6"]
    assert candidates(s, "ip -f inet ro") == ["route"]  # inet is the family, not an object
    assert candidates(s, "ip -- ") == ["link", "address", "route", "neighbour", "xfrm"]
    assert candidates(s, "ip -- -") == []  # after "--" only the object
