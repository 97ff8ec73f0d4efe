from __future__ import annotations

import re

import pytest

from esplab.commands.result import ErrorResult, TextResult
from esplab.commands.session import Session
from esplab.errors import (
    InvalidValue,
    KernelError,
    NoSuchNode,
    NoSuchPort,
    NotFound,
    ToolUsageError,
)
from tests.commands.results import journey, text


@pytest.fixture
def session() -> Session:
    return Session()


def test_default_topology_links(session: Session) -> None:
    out = text(session, "ip link")
    # airoha-dsa-xfrm.md 1.2: conduit eth0, DSA users lan1..lan4 (shown as lanN@eth0), wan.
    for name in ("eth0:", "lan1@eth0:", "lan4@eth0:", "wan:"):
        assert name in out
    assert "mtu 1504" in out  # conduit = 1500 + 4 at boot (1.3) [C]


def test_node_prefix_addresses_another_node(session: Session) -> None:
    out = text(session, "host ip addr")
    assert "inet 192.0.2.2/24" in out
    assert "inet 203.0.113.1/24" in out
    assert session.lab.current == "ap"


def test_routes(session: Session) -> None:
    assert "default via 192.0.2.2 dev wan" in text(session, "ip route")
    assert "198.51.100.0/24 via 192.0.2.1 dev eth0" in text(session, "host ip route")
    get = session.execute("pc2 ip route get 203.0.113.7")
    assert get.data["dev"] == "eth0" and get.data["via"] == "198.51.100.65"


def test_dsa_user_mtu_moves_the_conduit(session: Session) -> None:
    session.execute("ip link set lan2 mtu 9216")
    lab = session.lab.node("ap")
    assert lab.devs["lan2"].mtu == 9216
    assert lab.devs["eth0"].mtu == 9220  # largest user + 4 (airoha-dsa-xfrm.md 1.3) [C]
    session.execute("ip link set lan2 mtu 1500")
    assert lab.devs["eth0"].mtu == 1504


def test_conduit_down_closes_its_user_ports_and_flushes_their_offload(session: Session) -> None:
    # net/dsa/user.c: NETDEV_GOING_DOWN on the conduit closes every user port on it;
    # each user port going down flushes its offloaded states (xfrm_dev_down, 3.7).
    session.execute(
        "ip xfrm state add src 198.51.100.1 dst 198.51.100.2 proto esp spi 0x3000 reqid 3 "
        "mode transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
        "enc aes 0x000102030405060708090a0b0c0d0e0f offload dev lan1 dir out"
    )
    ap = session.lab.node("ap")
    out = session.execute("ip link set eth0 down").summary
    assert [d.name for d in ap.devs.values() if not d.up] == [
        "eth0",
        "lan1",
        "lan2",
        "lan3",
        "lan4",
    ]
    assert "lan1 down (its conduit eth0 is going down); flushed 1" in out
    assert ap.xfrm.states == ()
    assert ap.devs["wan"].up
    j = journey(session, 'send pc2 eth0 IP(dst="203.0.113.1")/UDP()')
    assert not j.delivered and "lan2" in j.verdict and "down" in j.verdict


def test_opening_a_user_port_opens_its_conduit(session: Session) -> None:
    # dsa_user_open() starts with dev_open(conduit) (net/dsa/user.c).
    session.execute("ip link set eth0 down")
    out = session.execute("ip link set lan2 up").summary
    ap = session.lab.node("ap")
    assert ap.devs["eth0"].up and ap.devs["lan2"].up and not ap.devs["lan1"].up
    assert "eth0 up" in out
    j = journey(session, 'send pc2 eth0 IP(dst="203.0.113.1")/UDP()')
    assert j.delivered, j.verdict


def test_mtu_limits(session: Session) -> None:
    # 6.7: Airoha max_mtu 9220 (9221 -> EINVAL); a DSA user above 9216 -> ERANGE.
    with pytest.raises(KernelError) as info:
        session.execute("ip link set wan mtu 9221")
    assert info.value.errno_name == "EINVAL"
    assert "valid: 68..9220" in str(info.value)
    # The user port's own maximum is the switch's (1.3: 15 * 1024 - 14 - 4 - 4 = 15338);
    # the conduit's 9220 less the tag is what stops it, in dsa_user_change_mtu.
    for mtu, errno in ((9217, "ERANGE"), (15338, "ERANGE"), (15339, "EINVAL")):
        with pytest.raises(KernelError) as info:
            session.execute(f"ip link set lan1 mtu {mtu}")
        assert info.value.errno_name == errno, mtu
        assert "valid: 68..9216" in str(info.value)
    assert session.lab.node("ap").devs["lan1"].mtu == 1500  # unchanged


def test_failed_multi_setting_changes_nothing(session: Session) -> None:
    with pytest.raises(KernelError):
        session.execute("ip link set wan down mtu 99999")
    assert session.lab.node("ap").devs["wan"].up is True


def test_ethtool_features(session: Session) -> None:
    out = text(session, "ethtool -k wan")
    assert "esp-hw-offload: on" in out
    # The JM series advertises neither (airoha-dsa-xfrm.md 3.10).
    assert "esp-tx-csum-hw-offload: off [fixed]" in out
    assert "tx-esp-segmentation: off [fixed]" in out
    session.execute("ethtool -K wan esp-hw-offload off")
    assert session.lab.node("ap").devs["wan"].features["esp-hw-offload"] is False
    with pytest.raises(KernelError, match="esp-tx-csum-hw-offload is fixed on wan"):
        session.execute("ethtool -K wan esp-tx-csum-hw-offload on")


def test_ethtool_unknown_feature_suggests(session: Session) -> None:
    with pytest.raises(NotFound) as info:
        session.execute("ethtool -K wan esp-hw-ofload on")
    assert "did you mean esp-hw-offload?" in str(info.value)


def test_unknown_node_and_device_list_valid_names(session: Session) -> None:
    result = session.run("ip link set wna up")
    assert isinstance(result, ErrorResult)
    assert "valid: lo, eth0, lan1, lan2, lan3, lan4, wan" in result.summary
    assert "did you mean wan?" in result.summary
    with pytest.raises(NoSuchNode):
        session.execute("node hots")
    with pytest.raises(NoSuchPort):
        session.execute("ethtool -S nope")


def test_neighbours_preset_and_editable(session: Session) -> None:
    assert "192.0.2.2 dev wan lladdr" in text(session, "ip neigh")
    session.execute("ip neigh replace 192.0.2.2 lladdr 02:00:00:00:00:99 dev wan")
    assert "192.0.2.2 dev wan lladdr 02:00:00:00:00:99" in text(session, "ip neigh")


def test_macs_come_from_the_seed() -> None:
    from esplab.commands.session import SessionOptions

    def wan(s: Session) -> str:
        return s.lab.node("ap").devs["wan"].mac

    a, b, c = Session(), Session(), Session(options=SessionOptions(seed=1))
    assert wan(a) == wan(b)
    assert wan(a) != wan(c)


def test_xfrm_tables_and_proc_file(session: Session) -> None:
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 "
        "reqid 1 mode transport auth sha1 0x" + "01" * 20 + " enc aes 0x" + "02" * 16
    )
    session.execute(
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
    )
    session.execute('send ap wan IP(dst="192.0.2.2")/UDP()')  # the host has no SA for it
    stat = session.execute("host xfrm stat")
    assert stat.data["XfrmInNoStates"] == 1
    assert [row[0] for row in stat.rows] == ["XfrmInNoStates"]  # type: ignore[attr-defined]
    assert len(session.execute("host xfrm stat --all").rows) == 32  # type: ignore[attr-defined]
    states = session.execute("xfrm states")
    assert states.data == {"states": ["0x00001000"]}
    assert session.execute("xfrm policies").data == {"policies": 1}
    # airoha-dsa-xfrm.md 3.8: "%-24s\t%lu" per counter, in the kernel's order.
    proc = text(session, "host cat /proc/net/xfrm_stat")
    assert proc.splitlines()[3] == "XfrmInNoStates          \t1"


@pytest.mark.parametrize("mac", ["zz", "02:00:00:00:00:01:02", "02:00:00:00:00", "0200.5e10.0001"])
def test_a_neighbour_needs_a_link_layer_address(mac: str) -> None:
    s = Session()
    before = [n.render() for n in s.lab.node("ap").neigh]
    with pytest.raises(InvalidValue, match=f"'{mac}' is not a link-layer address"):
        s.execute(f"ip neigh replace 192.0.2.2 lladdr {mac} dev wan")
    assert [n.render() for n in s.lab.node("ap").neigh] == before
    s.execute("ip neigh replace 192.0.2.2 lladdr 2:0:5E:10:0:1 dev wan")  # iproute2 spelling
    shown = s.execute("ip neigh")
    assert isinstance(shown, TextResult)
    assert "192.0.2.2 dev wan lladdr 02:00:5e:10:00:01 PERMANENT" in shown.text


def test_deleting_an_address_removes_only_its_own_connected_route() -> None:
    s = Session()
    routes = [r.render() for r in s.lab.node("ap").routes]
    s.execute("ip addr add 192.0.2.1/24 dev lan1")  # the wan address, on another device
    assert len(s.lab.node("ap").routes) == len(routes) + 1
    s.execute("ip addr del 192.0.2.1/24 dev lan1")
    assert [r.render() for r in s.lab.node("ap").routes] == routes


def test_ip_options_reach_ip_xfrm() -> None:
    # iproute2: -4/-6 and -f inet|inet6 filter by family, -s repeats (ip(8)).
    s = Session()
    s.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 "
        "mode transport enc aes 0x000102030405060708090a0b0c0d0e0f "
        "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314"
    )
    s.execute(
        "ip xfrm state add src 2001:db8:2::1 dst 2001:db8:2::2 proto esp spi 0x2000 "
        "mode transport enc aes 0x000102030405060708090a0b0c0d0e0f "
        "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314"
    )

    def spis(line: str) -> set[str]:
        return set(re.findall(r"spi (0x[0-9a-f]{8})", s.execute(line).data["text"]))

    assert spis("ip xfrm state") == {"0x00001000", "0x00002000"}
    assert spis("ip -6 xfrm state") == {"0x00002000"}
    assert spis("ip -f inet xfrm state") == {"0x00001000"}
    assert spis("ip -s -s -4 xfrm state") == {"0x00001000"}
    # iproute2 6.15: 'Error: argument "ipx" is wrong: invalid protocol family'.
    with pytest.raises(ToolUsageError, match='argument "ipx" is wrong: invalid protocol family'):
        s.execute("ip -f ipx xfrm state")
