"""ip route show: iproute2's layout, the kernel's dump order, the selectors, the local
table and the route cache."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import BadArgument, NoSuchPort, ToolUsageError
from tests.commands.results import text


@pytest.fixture
def session() -> Session:
    return Session()


# -- layout and order ------------------------------------------------------------------
# iproute2 ip/iproute.c print_route: "name value " fields, proto only when not boot,
# scope only when not universe, IPv6 metric and "pref medium". The kernel dumps IPv4
# in fib-trie key order (default first), IPv6 children before parents (default last).

AP_ROUTES = [
    "default via 192.0.2.2 dev wan ",
    "192.0.2.0/24 dev wan proto kernel scope link src 192.0.2.1 ",
    "198.51.100.0/26 dev lan1 proto kernel scope link src 198.51.100.1 ",
    "198.51.100.64/26 dev lan2 proto kernel scope link src 198.51.100.65 ",
    "198.51.100.128/26 dev lan3 proto kernel scope link src 198.51.100.129 ",
    "198.51.100.192/26 dev lan4 proto kernel scope link src 198.51.100.193 ",
]


def test_ip_route_lists_the_main_table_in_the_kernels_dump_order(session: Session) -> None:
    assert text(session, "ip route") == "\n".join(AP_ROUTES)
    assert text(session, "ip route show table main") == "\n".join(AP_ROUTES)


def test_a_longer_prefix_with_the_same_key_comes_first(session: Session) -> None:
    # fib_insert_alias keeps a leaf's aliases by suffix length, shortest first.
    session.execute("ip route add 10.0.0.0/8 via 192.0.2.2")
    session.execute("ip route add 10.0.0.0/16 via 192.0.2.2")
    session.execute("ip route add 10.1.0.0/16 dev wan")
    lines = text(session, "ip route").splitlines()
    assert lines[:4] == [
        "default via 192.0.2.2 dev wan ",
        "10.0.0.0/16 via 192.0.2.2 dev wan ",
        "10.0.0.0/8 via 192.0.2.2 dev wan ",
        "10.1.0.0/16 dev wan scope link ",
    ]


def test_ip_6_route_prints_metric_and_pref_and_puts_default_last(session: Session) -> None:
    # rt6_fill_node: scope universe, no prefsrc, IP6_RT_PRIO_ADDRCONF 256 for a prefix
    # route, IP6_RT_PRIO_USER 1024 for ip route add; fib6_walk_continue is post-order.
    # Linux 6.12 lists no ::1 route in the main table; each up device has fe80::/64
    # for its link-local address, in the order they came (as iproute2 6.15 prints it
    # on Linux 6.12).
    session.execute("ip -6 route add 2001:db8:9::/64 via 2001:db8:2::2")
    fe80 = [
        f"fe80::/64 dev {dev} proto kernel metric 256 pref medium"
        for dev in ("eth0", "lan1", "lan2", "lan3", "lan4", "wan")
    ]
    assert text(session, "ip -6 route") == "\n".join(
        [
            "2001:db8:1:1::/64 dev lan1 proto kernel metric 256 pref medium",
            "2001:db8:1:2::/64 dev lan2 proto kernel metric 256 pref medium",
            "2001:db8:1:3::/64 dev lan3 proto kernel metric 256 pref medium",
            "2001:db8:1:4::/64 dev lan4 proto kernel metric 256 pref medium",
            "2001:db8:2::/64 dev wan proto kernel metric 256 pref medium",
            "2001:db8:9::/64 via 2001:db8:2::2 dev wan metric 1024 pref medium",
            *fe80,
            "default via 2001:db8:2::2 dev wan metric 1024 pref medium",
        ]
    )


def test_the_add_confirmation_reads_like_the_route(session: Session) -> None:
    # A device route is scope link (iproute_modify: no gateway), and has no "via -".
    assert session.execute("ip route add 10.6.0.0/16 dev wan").summary == (
        "route 10.6.0.0/16 dev wan scope link"
    )
    assert session.execute("ip route replace default via 192.0.2.2").summary == (
        "route default via 192.0.2.2 dev wan"
    )


# -- selectors ---------------------------------------------------------------------------
# iproute_list_flush_or_save / filter_nlmsg: a bare prefix is exact (root and match),
# "match" keeps the routes covering it, "root" the ones inside it; a pinned field
# (dev, proto, scope, a full-length via) is not printed.


def test_dev_keeps_the_devices_routes_and_leaves_the_device_out(session: Session) -> None:
    assert text(session, "ip route show dev wan") == "\n".join(
        ["default via 192.0.2.2 ", "192.0.2.0/24 proto kernel scope link src 192.0.2.1 "]
    )
    assert text(session, "ip -6 route show dev wan") == "\n".join(
        [
            "2001:db8:2::/64 proto kernel metric 256 pref medium",
            "fe80::/64 proto kernel metric 256 pref medium",
            "default via 2001:db8:2::2 metric 1024 pref medium",
        ]
    )
    assert text(session, "ip route list oif lan1") == (
        "198.51.100.0/26 proto kernel scope link src 198.51.100.1 "
    )


def test_an_unknown_device_is_iproute2s_cannot_find_device(session: Session) -> None:
    with pytest.raises(NoSuchPort, match=r'^Cannot find device "lan7"; valid: lo, eth0, lan1'):
        session.execute("ip route show dev lan7")


def test_a_bare_prefix_matches_exactly(session: Session) -> None:
    assert text(session, "ip route show 192.0.2.0/24") == AP_ROUTES[1]
    assert text(session, "ip route show exact 192.0.2.0/24") == AP_ROUTES[1]
    assert text(session, "ip route show to 192.0.2.7/24") == AP_ROUTES[1]  # bits past /24
    assert text(session, "ip route show 192.0.2.0/25") == ""
    assert text(session, "ip route show default") == AP_ROUTES[0]


def test_match_keeps_the_routes_that_cover_the_address(session: Session) -> None:
    assert text(session, "ip route list match 192.0.2.5") == "\n".join(AP_ROUTES[:2])
    assert text(session, "ip route show match 198.51.100.70") == "\n".join(
        [AP_ROUTES[0], AP_ROUTES[3]]
    )


def test_root_keeps_the_routes_inside_the_prefix(session: Session) -> None:
    assert text(session, "ip route show root 198.51.100.0/24") == "\n".join(AP_ROUTES[2:])
    assert text(session, "ip route show root 0.0.0.0/0") == "\n".join(AP_ROUTES)


def test_a_prefix_of_the_other_family_finds_nothing_in_the_ipv4_dump(session: Session) -> None:
    # Without -6 the dump is AF_INET (dump_family with a table selected).
    assert text(session, "ip route show 2001:db8:2::/64") == ""
    assert text(session, "ip -6 route show 2001:db8:2::/64") == (
        "2001:db8:2::/64 dev wan proto kernel metric 256 pref medium"
    )


def test_proto_scope_via_and_metric_filter_and_are_not_printed(session: Session) -> None:
    kernel = text(session, "ip route show proto kernel").splitlines()
    assert kernel[0] == "192.0.2.0/24 dev wan scope link src 192.0.2.1 "
    assert len(kernel) == 5
    assert text(session, "ip route show proto boot") == AP_ROUTES[0]
    assert text(session, "ip route show proto static") == ""
    assert text(session, "ip route show scope global") == AP_ROUTES[0]
    assert text(session, "ip route show scope link dev wan") == (
        "192.0.2.0/24 proto kernel src 192.0.2.1 "
    )
    assert text(session, "ip route show via 192.0.2.2") == "default dev wan "
    assert text(session, "ip route show via 192.0.2.0/24") == AP_ROUTES[0]
    assert (
        text(session, "ip -6 route show metric 1024")
        == "default via 2001:db8:2::2 dev wan pref medium"
    )
    assert text(session, "ip route show proto all") == "\n".join(AP_ROUTES)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ip route show foo bar", r'any valid prefix is expected rather than "foo"'),
        ("ip -4 route show 2001:db8::/64", r'inet prefix is expected rather than "2001:db8::/64"'),
        ("ip route show 10.0.0.0/33", r'prefix is expected rather than "10\.0\.0\.0/33"'),
        ("ip route show proto bogus", r'argument "bogus" is wrong: invalid "protocol"'),
        ("ip route show scope far", r'argument "far" is wrong: invalid "scope"'),
        ("ip route show type odd", r'argument "odd" is wrong: node type value is invalid'),
        ("ip route show table bogus", r'argument "bogus" is wrong: table id value is invalid'),
        ("ip route show table all", r"table all \(every table at once\) is not modelled"),
        ("ip -6 route show table local", r"the IPv6 local table is not modelled"),
        ("ip route show tos 0x10", r'"tos" is not modelled by ip route show'),
        ("ip route show iif wan", r'"iif" is not modelled by ip route show'),
        ("ip route show dev", r"missing device after 'dev'"),
    ],
)
def test_bad_selectors_are_one_line(session: Session, line: str, message: str) -> None:
    with pytest.raises(BadArgument, match=message):
        session.execute(line)


# -- the local table ------------------------------------------------------------------------
# fib_add_ifaddr: a local route per address (scope host), and while the device is up
# the network broadcast for a prefix shorter than /31 (none for the network address
# since Linux 5.14); lo's 127.0.0.1/8 is a local prefix route.


def test_table_local_lists_local_and_broadcast_routes(session: Session) -> None:
    out = text(session, "pc1 ip route show table local")
    assert out == "\n".join(
        [
            "local 127.0.0.0/8 dev lo proto kernel scope host src 127.0.0.1 ",
            "local 127.0.0.1 dev lo proto kernel scope host src 127.0.0.1 ",
            "broadcast 127.255.255.255 dev lo proto kernel scope link src 127.0.0.1 ",
            "local 198.51.100.2 dev eth0 proto kernel scope host src 198.51.100.2 ",
            "broadcast 198.51.100.63 dev eth0 proto kernel scope link src 198.51.100.2 ",
        ]
    )


def test_a_down_device_keeps_its_local_routes_but_not_its_broadcast(session: Session) -> None:
    # fib_sync_down_dev spares a nexthop of scope RT_SCOPE_NOWHERE on NETDEV_DOWN.
    session.execute("ip link set lan2 down")
    out = text(session, "ip route show table local dev lan2")
    assert out == "local 198.51.100.65 proto kernel scope host src 198.51.100.65 "
    assert text(session, "ip route show table local type broadcast dev lan1") == (
        "broadcast 198.51.100.63 proto kernel scope link src 198.51.100.1 "
    )


def test_other_tables_are_empty(session: Session) -> None:
    assert text(session, "ip route show table default") == ""
    assert text(session, "ip route show table 100") == ""


# -- the route cache ----------------------------------------------------------------------------
# The kernel dumps the path-MTU exceptions (fnhe) for RTM_F_CLONED: rt_fill_info
# without a flow, so no src or uid; the MTU is RTAX_MTU on the "cache" line.


def _learn_pmtu(session: Session) -> None:
    session.execute("ip link set wan mtu 1400")
    session.execute('send pc1 eth0 IP(dst="203.0.113.1", flags="DF")/UDP()/Raw(b"x"*1400)')


def test_route_show_cache_lists_the_learned_path_mtus(session: Session) -> None:
    assert text(session, "pc1 ip route show cache") == ""
    _learn_pmtu(session)
    assert text(session, "pc1 ip route show cache") == (
        "203.0.113.1 via 198.51.100.1 dev eth0 \n    cache mtu 1400 "
    )
    assert text(session, "pc1 ip route list cached 203.0.113.1 dev eth0") == (
        "203.0.113.1 via 198.51.100.1 \n    cache mtu 1400 "
    )
    assert text(session, "pc1 ip route show table cache 203.0.113.2") == ""
    assert text(session, "pc1 ip -6 route show cache") == ""
    assert text(session, "pc1 ip route show") == "\n".join(
        [
            "default via 198.51.100.1 dev eth0 ",
            "198.51.100.0/26 dev eth0 proto kernel scope link src 198.51.100.2 ",
        ]
    )


def test_the_cache_forgets_an_exception_whose_route_went(session: Session) -> None:
    _learn_pmtu(session)
    session.execute("pc1 ip route replace default via 198.51.100.1 dev eth0")
    assert text(session, "pc1 ip route show cache") == ""


@pytest.mark.parametrize(
    "line",
    [
        "ip route show type ²",
        "ip route show proto ٣",
        "ip route show metric ١٢",
        "ip route show scope ²",
        "ip route show table ²",
        "ip route show table 4294967296",
    ],
)
def test_numbers_are_ascii_decimal_within_32_bits(line: str) -> None:
    # iproute2 get_unsigned/rtnl_*_a2n read ASCII digits; str.isdigit takes others.
    with pytest.raises(BadArgument):
        Session().execute(line)


def test_global_options_before_xfrm() -> None:
    # ip/ip.c reads --x as -x before the object, ip xfrm included.
    s = Session()
    for line in ("ip --family inet6 xfrm state", "ip --f inet xfrm state", "ip -s -s xfrm state"):
        s.execute(line)
    with pytest.raises(ToolUsageError, match='argument "inet7" is wrong: invalid protocol family'):
        s.execute("ip -f inet7 route")
