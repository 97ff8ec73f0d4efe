"""ip link set DEV mtu N on the DSA conduit and its user ports."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.model.kernel.stack.netdev import eui64_link_local


@pytest.fixture
def session() -> Session:
    return Session()


def mtus(session: Session) -> dict[str, int]:
    return {name: dev.mtu for name, dev in session.lab.node("ap").devs.items()}


def test_a_conduit_mtu_below_its_users_is_accepted_and_says_what_they_need(
    session: Session,
) -> None:
    # net/dsa registers no NETDEV_PRECHANGEMTU handler (net/dsa/user.c
    # dsa_user_netdevice_event) and airoha_dev_change_mtu always returns 0, so the
    # core's dev_set_mtu range check is the only one: 1500 is accepted.
    session.execute("ip link set lan3 mtu 9000")
    out = session.execute("ip link set eth0 mtu 1500").summary
    assert mtus(session)["eth0"] == 1500
    assert "below the 9004 its user ports need (lan3 mtu 9000 + 4-byte tag)" in out


def test_the_next_user_port_change_resets_the_conduit(session: Session) -> None:
    # dsa_user_change_mtu: new conduit MTU = largest user MTU (the new value for the
    # port being changed) + tag overhead, set whenever it differs from the old one.
    session.execute("ip link set lan3 mtu 9000")
    session.execute("ip link set eth0 mtu 1500")
    out = session.execute("ip link set lan1 mtu 1400").summary
    assert mtus(session)["eth0"] == 9004
    assert "eth0 mtu 1500 -> 9004" in out


def test_setting_the_same_mtu_changes_nothing(session: Session) -> None:
    # net/core/dev.c dev_set_mtu: "if (new_mtu == dev->mtu) return 0;" before any
    # ndo_change_mtu, so dsa_user_change_mtu never runs and the conduit stays.
    session.execute("ip link set lan3 mtu 9000")
    session.execute("ip link set eth0 mtu 1500")
    out = session.execute("ip link set lan3 mtu 9000").summary
    assert out == "lan3 mtu 9000 (unchanged)"
    assert mtus(session)["eth0"] == 1500


def test_down_user_ports_count_for_the_conduit_mtu(session: Session) -> None:
    # dsa_tree_for_each_user_port walks every user port, up or down.
    session.execute("ip link set lan3 mtu 9000")
    session.execute("ip link set lan3 down")
    session.execute("ip link set lan1 mtu 1400")
    assert mtus(session)["eth0"] == 9004


def test_a_conduit_mtu_that_fits_its_users_has_no_note(session: Session) -> None:
    assert session.execute("ip link set eth0 mtu 9000").summary == "eth0 mtu 9000"


def test_a_second_mtu_is_iproute2s_duparg_and_changes_nothing(session: Session) -> None:
    # iproute2 ip/iplink.c iplink_parse: if (mtu != -1) duparg("mtu", *argv).
    with pytest.raises(BadArgument, match=r'^duplicate "mtu": "1300" is the second value; '):
        session.execute("ip link set wan mtu 1400 mtu 1300")
    assert session.lab.node("ap").devs["wan"].mtu == 1500


def test_an_mtu_below_1280_takes_ipv6_off_the_device() -> None:
    # addrconf_notify, NETDEV_CHANGEMTU below IPV6_MIN_MTU: addrconf_ifdown deletes
    # the addresses and routes; raising the MTU again brings back only the link-local
    # address (addrconf runs as on NETDEV_UP), as Linux 6.12 does.
    s = Session()
    wan = s.lab.node("ap").devs["wan"]
    out = s.execute("ip link set wan mtu 1200").summary
    assert "wan: deleted IPv6 addresses 2001:db8:2::1/64, fe80::" in out
    assert "(mtu 1200 < 1280" in out
    assert [a.version for a in wan.addrs] == [4]
    assert all(r.dev != "wan" for r in s.lab.node("ap").routes if r.dst.version == 6)
    s.execute("ip link set wan mtu 1500")
    assert [str(a) for a in wan.addrs] == ["192.0.2.1/24", str(eui64_link_local(wan.mac))]
    # IPv4 is untouched.
    assert any(r.dev == "wan" and r.dst.version == 4 for r in s.lab.node("ap").routes)


def test_the_conduit_following_its_users_below_1280_loses_ipv6_too() -> None:
    s = Session()
    s.execute("ip addr add 2001:db8:9::1/64 dev eth0")
    for n in range(1, 5):
        s.execute(f"ip link set lan{n} mtu 1200")
    eth0 = s.lab.node("ap").devs["eth0"]
    assert eth0.mtu == 1204 and [a.version for a in eth0.addrs] == []


def test_ip_link_set_reports_every_device_it_changed() -> None:
    s = Session()
    data = s.execute("ip link set eth0 down").data
    assert data["up"] is False
    assert {n: d["up"] for n, d in data["devs"].items() if not d["up"]} == {
        n: False for n in ("eth0", "lan1", "lan2", "lan3", "lan4")
    }
    assert data["devs"]["wan"] == {"up": True, "mtu": 1500}
