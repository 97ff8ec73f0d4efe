"""ip link/addr/route/neigh and ethtool against what the real tools print.

Every expected line here is as iproute2 6.15 prints it on Linux 6.12 (and ethtool
on the same kernel), run in a QEMU guest on devices made to match (veth, dummy, lo),
trailing blanks included (seen with cat -A).
"""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import BadArgument, KernelError, NotFound
from esplab.model.kernel.stack.netdev import eui64_link_local
from tests.commands.results import text

LO_HEAD = (
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT "
    "group default qlen 1000"
)
LO_LINK = "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00"
RX_HEAD = "    RX:  bytes packets errors dropped  missed   mcast           "
TX_HEAD = "    TX:  bytes packets errors dropped carrier collsns           "
ZEROS = "             0       0      0       0       0       0 "


@pytest.fixture
def session() -> Session:
    return Session()


def test_ip_s_link_pads_its_headers_and_ends_each_number_with_a_blank(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12 (ip -s link show lo, nothing sent).
    assert text(session, "ip -s link show lo").splitlines() == [
        LO_HEAD,
        LO_LINK,
        RX_HEAD,
        ZEROS,
        TX_HEAD,
        ZEROS,
    ]


def test_ip_s_s_link_adds_the_error_blocks(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12 (ip -s -s link show lo).
    assert text(session, "ip -s -s link show lo").splitlines() == [
        LO_HEAD,
        LO_LINK,
        RX_HEAD,
        ZEROS,
        "    RX errors:  length    crc   frame    fifo overrun",
        "                     0      0       0       0       0 ",
        TX_HEAD,
        ZEROS,
        "    TX errors: aborted   fifo  window heartbt transns",
        "                     0      0       0       0       0 ",
    ]


def test_stats_columns_widen_for_long_numbers_and_show_otherhost(session: Session) -> None:
    # print_stats64's size_columns: a column as wide as its longest number; the
    # otherhost column only when its counter is not 0.
    wan = session.lab.node("ap").devs["wan"]
    wan.counters.rx_bytes = 123456789012
    wan.counters.rx_otherhost_dropped = 3
    lines = text(session, "ip -s -s link show wan").splitlines()
    assert lines[2] == "    RX:    bytes packets errors dropped  missed   mcast           "
    assert lines[3] == "    123456789012       0      0       0       0       0 "
    assert lines[4] == "    RX errors:    length    crc   frame    fifo overrun otherhost"
    assert lines[5] == "                       0      0       0       0       0         3 "


def test_carrier_changes_count_the_links_going_down_and_up(session: Session) -> None:
    session.execute("ip link set wan down")
    session.execute("ip link set wan up")
    assert text(session, "ip -s -s link show wan").splitlines()[-1].split() == list("00002")


def test_ip_o_link_joins_a_devices_lines_with_a_backslash(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12 (ip -o link show dev lo; ip -o -s link).
    assert text(session, "ip -o link show dev lo") == f"{LO_HEAD}\\{LO_LINK}"
    assert text(session, "ip -o -s link show lo") == "\\".join(
        [LO_HEAD, LO_LINK, RX_HEAD, ZEROS, TX_HEAD, ZEROS]
    )


def test_ip_o_addr_prints_a_line_per_address(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12 (ip -o addr, lo's lines).
    assert text(session, "ip -o addr show lo").splitlines() == [
        "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever",
        "1: lo    inet6 ::1/128 scope host proto kernel_lo \\       valid_lft forever "
        "preferred_lft forever",
    ]


def test_ip_o_route_get_puts_the_cache_line_after_a_backslash(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12 (ip -o route get 10.2.3.4).
    assert text(session, "ip -o route get 10.2.3.4") == (
        "10.2.3.4 via 192.0.2.2 dev wan src 192.0.2.1 uid 0 \\    cache "
    )


def test_ip_6_addr_of_every_device_has_the_short_ipv6_link_header(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12: inet6_dump_ifinfo carries no qdisc or
    # group; ::1 is "proto kernel_lo", a link-local "scope link proto kernel_ll".
    lines = text(session, "ip -6 addr").splitlines()
    assert lines[:3] == [
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 state UNKNOWN qlen 1000",
        "    inet6 ::1/128 scope host proto kernel_lo ",
        "       valid_lft forever preferred_lft forever",
    ]
    assert "7: wan: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP qlen 1000" in lines


def test_link_local_is_the_eui64_of_the_mac() -> None:
    # As Linux 6.12 makes them: veth 02:11:22:33:44:55, dummy 02:aa:bb:cc:dd:ee and
    # veth 32:2e:29:42:27:94.
    assert str(eui64_link_local("02:11:22:33:44:55")) == "fe80::11:22ff:fe33:4455/64"
    assert str(eui64_link_local("02:aa:bb:cc:dd:ee")) == "fe80::aa:bbff:fecc:ddee/64"
    assert str(eui64_link_local("32:2e:29:42:27:94")) == "fe80::302e:29ff:fe42:2794/64"


def test_every_up_device_has_its_link_local_address_and_route(session: Session) -> None:
    ap = session.lab.node("ap")
    for name in ("eth0", "lan1", "wan"):
        ll = eui64_link_local(ap.devs[name].mac)
        assert f"    inet6 {ll} scope link proto kernel_ll " in text(
            session, f"ip addr show {name}"
        )
        assert f"fe80::/64 dev {name} proto kernel metric 256 pref medium" in text(
            session, "ip -6 route"
        )
    assert "fe80" not in text(session, "ip addr show lo")
    # A link-local address is never the source toward a global destination.
    assert session.execute("ip route get 2001:db8:3::1").data["src"] == "2001:db8:2::1"


def test_ip_addr_add_gives_a_broadcast_only_when_asked(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12: no brd without "brd"; "brd +" the
    # subnet's; a second address in a subnet is secondary and listed after the
    # primaries; the newest IPv6 address of a scope first.
    session.execute("ip addr add 192.0.2.9/24 dev wan")
    session.execute("ip addr add 10.9.9.1/24 brd + dev wan")
    session.execute("ip addr add 10.8.8.1/24 brd 10.8.8.200 dev wan")
    session.execute("ip addr add 2001:db8:2::9/64 dev wan")
    lines = [ln for ln in text(session, "ip addr show wan").splitlines() if "inet" in ln]
    ll = eui64_link_local(session.lab.node("ap").devs["wan"].mac)
    assert lines == [
        "    inet 192.0.2.1/24 brd 192.0.2.255 scope global wan",
        "    inet 10.9.9.1/24 brd 10.9.9.255 scope global wan",
        "    inet 10.8.8.1/24 brd 10.8.8.200 scope global wan",
        "    inet 192.0.2.9/24 scope global secondary wan",
        "    inet6 2001:db8:2::9/64 scope global ",
        "    inet6 2001:db8:2::1/64 scope global ",
        f"    inet6 {ll} scope link proto kernel_ll ",
    ]
    local = text(session, "ip route show table local")
    assert "broadcast 10.8.8.200 dev wan proto kernel scope link src 10.8.8.1 " in local
    assert "local 192.0.2.9 dev wan proto kernel scope host src 192.0.2.1 " in local
    # A secondary brings no prefix route of its own.
    assert text(session, "ip route show 192.0.2.0/24").count("\n") == 0


def test_deleting_a_primary_deletes_its_secondaries(session: Session) -> None:
    # net/ipv4/devinet.c __inet_del_ifa with promote_secondaries 0 (the default).
    session.execute("ip addr add 192.0.2.9/24 dev wan")
    out = session.execute("ip addr del 192.0.2.1/24 dev wan").summary
    assert "secondary 192.0.2.9/24 removed with it" in out
    assert [a for a in session.lab.node("ap").devs["wan"].addrs if a.version == 4] == []


def test_ip_d_link_shows_details(session: Session) -> None:
    # lo as iproute2 6.15 prints it on Linux 6.12 (ip -d link show lo).
    assert text(session, "ip -d link show lo").splitlines() == [
        LO_HEAD,
        LO_LINK + " promiscuity 0 allmulti 0 minmtu 0 maxmtu 0 addrgenmode eui64 "
        "numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535 "
        "tso_max_size 524280 tso_max_segs 65535 gro_max_size 65536 "
        "gso_ipv4_max_size 65536 gro_ipv4_max_size 65536 ",
    ]
    # A kind starts a line of its own (the dummy0 layout on Linux 6.12); ip -d addr
    # has no addrgenmode.
    lan1 = text(session, "ip -d link show lan1").splitlines()
    assert lan1[2].startswith("    dsa conduit eth0 addrgenmode eui64 numtxqueues 1 ")
    dummy = text(session, "host ip -d addr show dummy0").splitlines()
    assert dummy[2].startswith("    dummy numtxqueues 1 numrxqueues 1 gso_max_size 65536 ")
    assert "numtxqueues 36 numrxqueues 32" in text(session, "ip -d link show wan")


def test_route_metric_add_show_del(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12: routes to one prefix by metric, the
    # metric omitted when 0; del without a metric takes the lowest.
    for line in (
        "ip route add 10.2.0.0/16 via 192.0.2.2 metric 7",
        "ip route add 10.2.0.0/16 via 192.0.2.2 metric 8",
        "ip route add 10.2.0.0/16 via 192.0.2.2",
        "ip route add 10.1.0.0/16 dev wan metric 100",
    ):
        session.execute(line)
    assert text(session, "ip route").splitlines()[1:5] == [
        "10.1.0.0/16 dev wan scope link metric 100 ",
        "10.2.0.0/16 via 192.0.2.2 dev wan ",
        "10.2.0.0/16 via 192.0.2.2 dev wan metric 7 ",
        "10.2.0.0/16 via 192.0.2.2 dev wan metric 8 ",
    ]
    assert text(session, "ip route show metric 100") == "10.1.0.0/16 dev wan scope link "
    with pytest.raises(KernelError, match="File exists"):
        session.execute("ip route add 10.2.0.0/16 via 192.0.2.2 metric 7")
    with pytest.raises(KernelError, match="No such process"):
        session.execute("ip route del 10.2.0.0/16 metric 3")
    with pytest.raises(BadArgument, match='argument "abc" is wrong: "metric" value is invalid'):
        session.execute("ip route add 10.3.0.0/16 dev wan metric abc")
    session.execute("ip route del 10.2.0.0/16 metric 8")
    session.execute("ip route del 10.2.0.0/16")
    assert "10.2.0.0/16 via 192.0.2.2 dev wan metric 7 " in text(session, "ip route")
    # The lowest metric wins the lookup.
    session.execute("ip route add 10.2.0.0/16 dev lan1 metric 3")
    assert session.execute("ip route get 10.2.3.4").data["dev"] == "lan1"
    session.execute("ip -6 route add 2001:db8:9::/48 via 2001:db8:2::2 metric 5")
    assert "2001:db8:9::/48 via 2001:db8:2::2 dev wan metric 5 pref medium" in text(
        session, "ip -6 route"
    )


def test_ip_neigh_states_and_the_blank_after_them(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12: each state followed by a blank; NOARP
    # is left out unless nud asks for it.
    session.execute("ip neigh add 192.0.2.3 lladdr 02:00:00:00:00:03 dev wan nud reachable")
    session.execute("ip neigh add 192.0.2.5 lladdr 02:00:00:00:00:05 dev wan nud noarp")
    shown = text(session, "ip -4 neigh show dev wan").splitlines()
    assert shown[-1] == "192.0.2.3 lladdr 02:00:00:00:00:03 REACHABLE "
    assert shown[0].endswith(" PERMANENT ")
    assert "NOARP" not in text(session, "ip neigh")
    assert text(session, "ip neigh show nud noarp") == (
        "192.0.2.5 dev wan lladdr 02:00:00:00:00:05 NOARP "
    )
    assert "192.0.2.5" in text(session, "ip neigh show nud all")
    with pytest.raises(BadArgument, match='argument "bogus" is wrong: nud state is bad'):
        session.execute("ip neigh add 192.0.2.1 lladdr 02:00:00:00:00:01 dev wan nud bogus")
    with pytest.raises(KernelError, match="No link layer address given"):
        session.execute("ip neigh add 192.0.2.30 dev wan")


def test_route_get_of_a_local_ipv4_address_names_no_table(session: Session) -> None:
    # As iproute2 6.15 prints it on Linux 6.12 (ip route get 127.0.0.1).
    assert text(session, "ip route get 127.0.0.1") == (
        "local 127.0.0.1 dev lo src 127.0.0.1 uid 0 \n    cache <local> "
    )


def test_ethtool_i(session: Session) -> None:
    # veth and dummy as ethtool prints them on Linux 6.12; lo has no driver info.
    assert text(session, "host ethtool -i eth0").splitlines() == [
        "driver: veth",
        "version: 1.0",
        "firmware-version: ",
        "expansion-rom-version: ",
        "bus-info: ",
        "supports-statistics: yes",
        "supports-test: no",
        "supports-eeprom-access: no",
        "supports-register-dump: no",
        "supports-priv-flags: no",
    ]
    assert text(session, "ethtool -i lan1").splitlines()[:5] == [
        "driver: dsa",
        "version: 6.12.0",
        "firmware-version: N/A",
        "expansion-rom-version: ",
        "bus-info: platform",
    ]
    assert text(session, "ethtool -i wan").startswith("driver: airoha_eth\n")
    with pytest.raises(
        KernelError, match=r"^Cannot get driver information: Operation not supported"
    ):
        session.execute("ethtool -i lo")


def test_ethtool_s_lo_has_no_stats(session: Session) -> None:
    # ethtool -S lo and -S dummy0 on Linux 6.12: "no stats available".
    with pytest.raises(NotFound, match=r"^no stats available on lo"):
        session.execute("ethtool -S lo")
    with pytest.raises(NotFound, match=r"^no stats available on dummy0"):
        session.execute("host ethtool -S dummy0")


def test_ip_o_xfrm_state_is_a_line_per_state(session: Session) -> None:
    # ip/ipxfrm.c ends each line of a record with _SL_.
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x100 mode transport "
        "enc aes 0x000102030405060708090a0b0c0d0e0f"
    )
    out = text(session, "ip -o xfrm state")
    assert out.startswith("src 192.0.2.1 dst 192.0.2.2\\\tproto esp spi 0x00000100 ")
    assert "\n" not in out
