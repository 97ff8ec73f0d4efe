"""The sink of each node counts delivered packets per flow; ``flows`` shows it."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from esplab.commands.result import MessageResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from tests.commands.results import table


def test_flows_are_counted_with_ports_and_shown_per_node() -> None:
    s = Session()
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64) count 3')
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP(sport=1235,dport=5201)/Raw(b"x"*10)')
    s.execute('host send eth0 IP(dst="198.51.100.2")/TCP(sport=4000,dport=80)')
    host = s.lab.node("host")
    a, b = ip_address("192.0.2.1"), ip_address("192.0.2.2")
    # Two source ports are two flows; bytes are IP lengths (20 + 8 + payload).
    assert host.flows[(a, b, 17, 1234, 5201)].packets == 3
    assert host.flows[(a, b, 17, 1234, 5201)].bytes == 3 * 92
    assert host.flows[(a, b, 17, 1235, 5201)].bytes == 38
    shown = table(s, "host flows")
    assert shown.rows == [
        ("host", "udp", "192.0.2.1:1234", "192.0.2.2:5201", "3", "276"),
        ("host", "udp", "192.0.2.1:1235", "192.0.2.2:5201", "1", "38"),
    ]
    everyone = table(s, "flows")
    assert ("pc1", "tcp", "192.0.2.2:4000", "198.51.100.2:80", "1", "40") in everyone.rows
    assert everyone.data["flows"][0]["node"] == "host"


def test_flows_clear_one_node_or_all() -> None:
    s = Session()
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP()')
    s.execute('host send eth0 IP(dst="198.51.100.2")/UDP()')
    cleared = s.execute("host flows clear")
    assert isinstance(cleared, MessageResult) and cleared.data == {"cleared": 1}
    assert s.lab.node("pc1").flows and not s.lab.node("host").flows
    s.execute("flows clear")
    assert table(s, "flows").rows == []


def test_flows_bad_input_is_one_line_and_changes_nothing() -> None:
    s = Session()
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP()')
    with pytest.raises(BadArgument, match=r"'bogus'.*valid: clear"):
        s.execute("flows bogus")
    assert len(s.lab.node("host").flows) == 1
