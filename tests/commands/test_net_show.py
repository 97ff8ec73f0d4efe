"""ip link/addr/neigh show: family options, device filters and -brief (iproute2)."""

from __future__ import annotations

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, NoSuchPort, ToolUsageError
from esplab.model.kernel.stack.netdev import eui64_link_local
from tests.commands.results import text


@pytest.fixture
def session() -> Session:
    return Session()


def test_ip_4_addr_lists_only_ipv4_and_only_devices_holding_one(session: Session) -> None:
    # ip/ipaddress.c: print_selected_addrinfo skips other families, ipaddr_filter drops
    # links without an address of the family, print_linkinfo leaves out link/ether.
    out = text(session, "ip -4 addr")
    assert "inet 192.0.2.1/24 brd 192.0.2.255 scope global wan" in out
    assert "inet6" not in out
    assert "2: eth0:" not in out  # the conduit has no address
    assert "link/ether" not in out


def test_ip_6_addr_show_dev_lists_one_device_and_ipv6_only(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12: with a device named, the link comes
    # whole (qdisc, group); then the link-local address addrconf gave it.
    ll = eui64_link_local(session.lab.node("ap").devs["wan"].mac)
    out = text(session, "ip -6 addr show dev wan")
    assert out.splitlines() == [
        "7: wan: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP "
        "group default qlen 1000",
        "    inet6 2001:db8:2::1/64 scope global ",
        "       valid_lft forever preferred_lft forever",
        f"    inet6 {ll} scope link proto kernel_ll ",
        "       valid_lft forever preferred_lft forever",
    ]
    assert session.execute("ip -f inet6 addr show wan").data == {
        "wan": ["2001:db8:2::1/64", str(ll)]
    }


def test_ip_addr_show_takes_a_bare_device_name(session: Session) -> None:
    # ipaddr_list_flush_or_save: a word that is no keyword is the device ("dev" optional).
    out = text(session, "ip addr show wan")
    assert out.startswith("7: wan:")
    assert "lan1" not in out
    assert "    link/ether " in out


def test_ip_link_show_dev_and_up(session: Session) -> None:
    assert text(session, "ip link show dev wan").startswith("7: wan:")
    session.execute("ip link set lan2 down")
    shown = text(session, "ip link show up")
    assert "lan2@eth0" not in shown and "lan1@eth0" in shown


def test_a_second_device_word_is_refused_as_iproute2_does(session: Session) -> None:
    # duparg2("dev", *argv): 'either "dev" is duplicate, or "extra" is a garbage'.
    with pytest.raises(BadArgument, match='either "dev" is duplicate, or "extra" is a garbage'):
        session.execute("ip -s link show eth0 extra")
    with pytest.raises(NoSuchPort, match='Device "nope" does not exist; valid: lo, eth0'):
        session.execute("ip addr show nope")


def test_ip_4_neigh_lists_only_ipv4_and_dev_drops_the_dev_column(session: Session) -> None:
    # ip/ipneigh.c: filter.family from -4; print_neigh prints "dev X" only without a
    # device filter.
    out = text(session, "ip -4 neigh")
    assert "2001:db8" not in out
    assert "192.0.2.2 dev wan lladdr" in out
    only_wan = text(session, "ip neigh show dev wan").splitlines()
    assert len(only_wan) == 2
    assert all(" dev " not in line and "lladdr" in line for line in only_wan)
    assert text(session, "ip neigh show to 198.51.100.64/26").startswith("198.51.100.66 dev lan2")


def test_ip_neigh_show_refuses_a_word_that_is_no_prefix(session: Session) -> None:
    with pytest.raises(BadArgument, match='"lan1" is neither a filter nor a prefix'):
        session.execute("ip neigh show lan1")


def test_brief_link_and_addr(session: Session) -> None:
    # print_linkinfo_brief: "%-16s " name, "%-14s " operstate, then the MAC and flags
    # for ip link, or each "ADDR/PLEN " for ip addr.
    link = text(session, "ip -br link show lan1").splitlines()
    mac = session.lab.node("ap").devs["lan1"].mac
    assert link == [f"lan1@eth0        UP             {mac} <BROADCAST,MULTICAST,UP,LOWER_UP> "]
    addr = text(session, "ip -brief addr show wan").splitlines()
    ll = eui64_link_local(session.lab.node("ap").devs["wan"].mac)
    assert addr == [f"wan              UP             192.0.2.1/24 2001:db8:2::1/64 {ll} "]
    assert text(session, "ip -br -4 addr show lan1").split() == [
        "lan1@eth0",
        "UP",
        "198.51.100.1/26",
    ]


def test_an_unknown_family_names_the_valid_ones(session: Session) -> None:
    # iproute2 6.15 (read_family has no ipx): invalarg "invalid protocol family".
    with pytest.raises(
        ToolUsageError, match='argument "ipx" is wrong: invalid protocol family; valid: inet, inet6'
    ):
        session.execute("ip -f ipx addr")


def test_a_family_filter_with_nothing_to_show_gives_no_text() -> None:
    # ipaddr_filter drops a device without an address of the family: nothing at all.
    s = Session()
    s.execute("ip link set lan3 down")  # addrconf_ifdown deletes its IPv6 address
    shown = s.execute("ip -6 addr show dev lan3")
    assert isinstance(shown, TextResult) and shown.text == ""


def test_lo_is_a_device_as_on_any_linux_node(session: Session) -> None:
    # drivers/net/loopback.c: ifindex 1, LOOPBACK, mtu 65536, noqueue, operstate
    # UNKNOWN, link/loopback; 127.0.0.1/8 and ::1/128 with scope host.
    out = text(session, "ip addr show lo")
    assert out.splitlines()[:3] == [
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default "
        "qlen 1000",
        "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00",
        "    inet 127.0.0.1/8 scope host lo",
    ]
    session.execute("ping 127.0.0.1")
    lo = session.lab.node("ap").devs["lo"].counters
    assert (lo.tx_packets, lo.rx_packets, lo.rx_bytes) == (2, 2, 168)  # request, reply
    # 127.0.0.0/8 and ::1 are in the local table only (Linux 6.12 lists no ::1 route
    # in the main table).
    assert "127.0.0.0/8" not in text(session, "ip route")
    assert "::1" not in text(session, "ip -6 route")
