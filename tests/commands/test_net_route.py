"""ip route get/add and what a device going down or up does to the routing table."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, KernelError
from esplab.model.kernel.stack.netdev import eui64_link_local
from tests.commands.results import text


@pytest.fixture
def session() -> Session:
    return Session()


# -- ip route get ------------------------------------------------------------
# iproute2 ip/iproute.c print_route over the RTM_GETROUTE answer: the address itself
# (rtm_dst_len 32, so no prefix and never "default"); IPv4 answers are clones
# (RTM_F_CLONED: no proto/scope, "cache" on a second line) carrying RTA_UID.


def test_route_get_connected_prints_the_address_not_the_prefix(session: Session) -> None:
    get = session.execute("ip route get 198.51.100.2")
    assert isinstance(get, TextResult)
    assert get.text == "198.51.100.2 dev lan1 src 198.51.100.1 uid 0 \n    cache "
    assert get.data == {"dev": "lan1", "via": "", "src": "198.51.100.1", "mtu": 1500}


def test_route_get_through_the_default_route_prints_no_default(session: Session) -> None:
    get = session.execute("pc3 ip route get 203.0.113.1")
    assert isinstance(get, TextResult)
    assert (
        get.text == "203.0.113.1 via 198.51.100.129 dev eth0 src 198.51.100.130 uid 0 \n    cache "
    )
    assert get.data["dev"] == "eth0" and get.data["via"] == "198.51.100.129"


def test_route_get_ipv6_prints_from_metric_and_pref(session: Session) -> None:
    # net/ipv6/route.c rt6_fill_node: RTA_SRC from the unset flow source ("from ::"),
    # protocol (boot is not printed), RTA_PREFSRC, RTA_PRIORITY, RTA_PREF.
    assert text(session, "ip route get 2001:db8:1:1::2") == (
        "2001:db8:1:1::2 from :: dev lan1 proto kernel src 2001:db8:1:1::1 metric 256 pref medium"
    )
    assert text(session, "pc1 ip route get to 2001:db8:3::1") == (
        "2001:db8:3::1 from :: via 2001:db8:1:1::1 dev eth0 src 2001:db8:1:1::2 "
        "metric 1024 pref medium"
    )


def test_route_get_a_local_address_answers_from_the_local_table(session: Session) -> None:
    get = session.execute("ip route get 192.0.2.1")
    assert isinstance(get, TextResult)
    # As iproute2 6.15 prints it on Linux 6.12: no "table local" for IPv4.
    assert get.text == "local 192.0.2.1 dev lo src 192.0.2.1 uid 0 \n    cache <local> "
    assert get.data["dev"] == "lo"


def test_route_get_refuses_words_it_does_not_model(session: Session) -> None:
    with pytest.raises(BadArgument, match='"from" after the address is not modelled'):
        session.execute("ip route get 1.2.3.4 from 192.0.2.1")
    with pytest.raises(BadArgument, match=r'inet6 prefix is expected rather than "1\.2\.3\.4"'):
        session.execute("ip -6 route get 1.2.3.4")
    session.execute("pc1 ip route del default")
    with pytest.raises(KernelError) as info:
        session.execute("pc1 ip route get 8.8.8.8")
    assert info.value.errno_name == "ENETUNREACH"


# -- a device going down or up -------------------------------------------------
# net/ipv4/fib_frontend.c fib_netdev_event: NETDEV_DOWN -> fib_disable_ip ->
# fib_sync_down_dev + fib_flush (every IPv4 route through the device, connected or
# static); NETDEV_UP -> fib_add_ifaddr per address (the prefix routes only).
# net/ipv6/addrconf.c addrconf_ifdown with keep_addr_on_down 0 deletes the IPv6
# addresses; route.c fib6_ifdown deletes the IPv6 routes through the device.


def routes(session: Session, node: str = "ap") -> list[str]:
    return [r.render() for r in session.lab.node(node).routes]


def test_down_flushes_connected_routes_and_traffic_takes_the_next_match(
    session: Session,
) -> None:
    ap = session.lab.node("ap")
    before = ap.route(ip("198.51.100.66"))  # remembered in the route cache
    assert before is not None and before.dev == "lan2"
    session.execute("ip link set lan2 down")
    after = ap.route(ip("198.51.100.66"))
    assert after is not None and after.dev == "wan"  # the cache followed: default route
    assert "198.51.100.64/26" not in text(session, "ip route")
    assert session.execute("ip route get 198.51.100.66").data["via"] == "192.0.2.2"
    result = session.execute("host ping 198.51.100.66")
    journey = result.journeys[0]  # type: ignore[attr-defined]
    assert "lan2.tx" not in journey.verdict
    assert "forwarding is off" in journey.verdict  # back out wan to the host, which drops it


def test_up_brings_connected_routes_back_but_not_static_ones(session: Session) -> None:
    session.execute("ip route add 10.20.0.0/16 via 198.51.100.66")
    out = session.execute("ip link set lan2 down").summary
    assert out.splitlines()[1] == (
        "lan2: flushed routes 198.51.100.64/26, 2001:db8:1:2::/64, fe80::/64, "
        "10.20.0.0/16 via 198.51.100.66"
    )
    assert not any("lan2" in r for r in routes(session))
    out = session.execute("ip link set lan2 up").summary
    assert out.splitlines() == ["lan2 up", "lan2: connected routes back 198.51.100.64/26"]
    lan2 = [r for r in routes(session) if "lan2" in r]
    ll = eui64_link_local(session.lab.node("ap").devs["lan2"].mac)
    assert lan2 == [
        "198.51.100.64/26 dev lan2 proto kernel scope link src 198.51.100.65",
        f"fe80::/64 dev lan2 proto kernel scope link src {ll.ip}",  # addrconf, NETDEV_UP
    ]
    assert session.execute("ip route get 198.51.100.66").data["dev"] == "lan2"


def test_down_deletes_ipv6_addresses_and_routes_and_up_does_not_restore_them(
    session: Session,
) -> None:
    lan2 = session.lab.node("ap").devs["lan2"]
    ll = eui64_link_local(lan2.mac)
    out = session.execute("ip link set lan2 down").summary
    assert f"lan2: deleted IPv6 addresses 2001:db8:1:2::1/64, {ll} (keep_addr_on_down=0)" in out
    session.execute("ip link set lan2 up")
    # Only the link-local address comes back: addrconf makes it on NETDEV_UP (as Linux
    # 6.12 does); the static one stays gone.
    assert session.execute("ip -6 addr show lan2").data == {"lan2": [str(ll)]}
    assert "2001:db8:1:2::/64" not in text(session, "ip -6 route")
    assert [str(a) for a in lan2.addrs] == ["198.51.100.65/26", str(ll)]


def test_the_conduit_going_down_flushes_the_routes_of_every_user_port(
    session: Session,
) -> None:
    session.execute("ip link set eth0 down")
    wan_ll = eui64_link_local(session.lab.node("ap").devs["wan"].mac)
    assert sorted(routes(session)) == [
        "192.0.2.0/24 dev wan proto kernel scope link src 192.0.2.1",
        "2001:db8:2::/64 dev wan proto kernel scope link src 2001:db8:2::1",
        "default via 192.0.2.2 dev wan",
        "default via 2001:db8:2::2 dev wan",
        f"fe80::/64 dev wan proto kernel scope link src {wan_ll.ip}",
    ]


def test_an_address_added_on_a_down_device_gets_its_route_when_it_comes_up(
    session: Session,
) -> None:
    # fib_add_ifaddr returns before the prefix route while !(dev->flags & IFF_UP).
    session.execute("ip link set lan4 down")
    session.execute("ip addr add 10.4.0.1/24 dev lan4")
    assert not any(r.startswith("10.4.0.0/24") for r in routes(session))
    session.execute("ip link set lan4 up")
    assert "10.4.0.0/24 dev lan4 proto kernel scope link src 10.4.0.1" in routes(session)


def test_setting_a_down_device_down_again_changes_nothing(session: Session) -> None:
    session.execute("ip link set lan2 down")
    before = routes(session)
    assert session.execute("ip link set lan2 down").summary == "lan2 down (already down)"
    assert routes(session) == before
    assert session.execute("ip link set lan1 up").summary == "lan1 up (already up)"


def ip(text: str) -> IPv4Address | IPv6Address:
    return ip_address(text)


# -- ip route add: the gateway ---------------------------------------------------
# net/ipv4/fib_semantics.c fib_check_nh_v4_gw: the gateway is looked up with scope
# link, so only a connected route (or a local address) resolves it; a failed lookup
# is "Nexthop has invalid gateway" with fib_lookup's ENETUNREACH.


def test_a_gateway_on_no_connected_subnet_is_refused(session: Session) -> None:
    before = routes(session)
    with pytest.raises(KernelError, match=r"Nexthop has invalid gateway: 8\.8\.8\.8") as info:
        session.execute("ip route add 10.60.0.0/16 via 8.8.8.8")
    assert info.value.errno_name == "ENETUNREACH"
    assert routes(session) == before  # nothing added


def test_the_default_route_does_not_resolve_a_gateway(session: Session) -> None:
    # 203.0.113.0/24 is reachable through the default route (scope universe), which
    # the scope-link lookup skips.
    with pytest.raises(KernelError) as info:
        session.execute("ip route add 10.60.0.0/16 via 203.0.113.1")
    assert info.value.errno_name == "ENETUNREACH"


def test_a_gateway_on_a_connected_subnet_picks_its_device(session: Session) -> None:
    out = session.execute("ip route add 10.60.0.0/16 via 198.51.100.66").summary
    assert out == "route 10.60.0.0/16 via 198.51.100.66 dev lan2"
    # flowi4_oif: with dev given the lookup is restricted to that device.
    with pytest.raises(KernelError, match="on no connected subnet on lan1"):
        session.execute("ip route add 10.61.0.0/16 via 198.51.100.66 dev lan1")


def test_a_gateway_on_a_down_device_is_refused(session: Session) -> None:
    session.execute("ip link set lan3 down")  # its connected route is flushed
    with pytest.raises(KernelError) as info:
        session.execute("ip route add 10.63.0.0/16 via 198.51.100.130")
    assert info.value.errno_name == "ENETUNREACH"
    with pytest.raises(KernelError, match="Device for nexthop is not up: lan3") as down:
        session.execute("ip route add 10.62.0.0/16 dev lan3")  # fib_check_nh_nongw
    assert down.value.errno_name == "ENETDOWN"


def test_ipv6_gateways_follow_ip6_validate_gw(session: Session) -> None:
    # net/ipv6/route.c: a local address is EINVAL; a gateway the longest match does
    # not reach directly is ip6_route_check_nh's EHOSTUNREACH.
    with pytest.raises(KernelError, match="Gateway can not be a local address") as local:
        session.execute("ip route add 2001:db8:9::/48 via 2001:db8:2::1")
    assert local.value.errno_name == "EINVAL"
    with pytest.raises(KernelError) as far:
        session.execute("ip route add 2001:db8:9::/48 via 2001:db8:99::1")
    assert far.value.errno_name == "EHOSTUNREACH"
    session.execute("ip -6 route add 2001:db8:9::/48 via 2001:db8:2::2")
    assert "2001:db8:9::/48 via 2001:db8:2::2 dev wan" in routes(session)


def test_default_takes_its_family_from_the_gateway(session: Session) -> None:
    session.execute("pc1 ip route replace default via 2001:db8:1:1::1")
    assert "default via 2001:db8:1:1::1 dev eth0" in routes(session, "pc1")
    assert "default via 198.51.100.1 dev eth0" in routes(session, "pc1")


# -- an address going ----------------------------------------------------------------
# net/ipv4/fib_frontend.c fib_inetaddr_event: NETDEV_DOWN of the device's last IPv4
# address disables IP there (fib_disable_ip: every IPv4 route through it is flushed);
# fib_add_ifaddr adds no prefix route for a /32.


def test_deleting_the_last_ipv4_address_flushes_the_devices_routes(session: Session) -> None:
    session.execute("ip route add 10.7.0.0/16 via 192.0.2.2")
    out = session.execute("ip addr del 192.0.2.1/24 dev wan").summary
    assert out.splitlines() == [
        "192.0.2.1/24 removed from wan",
        "wan: flushed routes default via 192.0.2.2, 10.7.0.0/16 via 192.0.2.2",
    ]
    assert not any(r.startswith(("default via 192", "10.7")) for r in routes(session))
    assert "default via 2001:db8:2::2 dev wan" in routes(session)  # IPv6 is untouched
    with pytest.raises(KernelError) as info:
        session.execute("ip route get 203.0.113.1")
    assert info.value.errno_name == "ENETUNREACH"


def test_deleting_one_of_two_ipv4_addresses_keeps_the_other_routes(session: Session) -> None:
    session.execute("ip addr add 10.9.0.1/24 dev wan")
    out = session.execute("ip addr del 192.0.2.1/24 dev wan").summary
    assert out == "192.0.2.1/24 removed from wan"
    assert "default via 192.0.2.2 dev wan" in routes(session)
    assert "10.9.0.0/24 dev wan proto kernel scope link src 10.9.0.1" in routes(session)


def test_a_slash_32_address_brings_no_prefix_route(session: Session) -> None:
    before = routes(session)
    assert session.execute("ip addr add 192.0.2.5 dev wan").summary == "192.0.2.5/32 added to wan"
    assert routes(session) == before
    session.execute("ip link set wan down")
    session.execute("ip link set wan up")  # NETDEV_UP: fib_add_ifaddr again, still none
    assert not any(r.startswith("192.0.2.5") for r in routes(session))
    # iproute2 "brd +" sets a broadcast only up to /30 (ipaddr_modify).
    shown = text(session, "ip -4 addr show wan")
    assert "    inet 192.0.2.5/32 scope global wan" in shown.splitlines()
    # inet6_addr_add adds a prefix route for a /128 too.
    session.execute("ip -6 addr add 2001:db8:2::5/128 dev wan")
    assert "2001:db8:2::5 dev wan proto kernel metric 256 pref medium" in text(
        session, "ip -6 route"
    )


# -- ip route add: the prefix ----------------------------------------------------------
# net/ipv4/fib_trie.c fib_valid_key_len (fib_table_insert, fib_table_delete): address
# bits beyond the length are EINVAL; net/ipv6/route.c ip6_route_info_create masks them.


@pytest.mark.parametrize("verb", ["add", "replace", "del"])
def test_an_ipv4_prefix_with_host_bits_is_refused(session: Session, verb: str) -> None:
    before = routes(session)
    with pytest.raises(KernelError, match=r"Invalid prefix for given prefix length") as info:
        session.execute(f"ip route {verb} 10.0.0.5/8 via 192.0.2.2")
    assert info.value.errno_name == "EINVAL"
    assert routes(session) == before


def test_an_ipv6_prefix_with_host_bits_is_masked(session: Session) -> None:
    out = session.execute("ip -6 route add 2001:db8:9::5/64 via 2001:db8:2::2").summary
    assert out == "route 2001:db8:9::/64 via 2001:db8:2::2 dev wan metric 1024 pref medium"
    assert session.execute("ip -6 route del 2001:db8:9::7/64").summary == (
        "route 2001:db8:9::/64 deleted"
    )


def test_a_prefix_iproute2_cannot_read_is_one_line(session: Session) -> None:
    before = routes(session)
    with pytest.raises(BadArgument, match=r'any valid prefix is expected rather than "10/33"'):
        session.execute("ip route add 10/33 dev wan")
    with pytest.raises(BadArgument, match=r'inet6 prefix is expected rather than "10\.0\.0\.0/8"'):
        session.execute("ip -6 route add 10.0.0.0/8 dev wan")
    assert routes(session) == before
