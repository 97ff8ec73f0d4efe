"""The default device of DESIGN.md, built from a seed.

::

     pc1..pc4 (lan peers)                          host (wan peer, software XFRM)
        |  wire                                        |  wire
     lan1..lan4 <- MT7530-family switch, ports 1..4    |
        |  MTK special tag on the internal link        |
     switch CPU port 6 <-> GDM1 = eth0 (conduit)    GDM2 = wan
                     \\_____________ EN7581 "ap" ______/
                        EIP-93ies packet engine

Addresses come from the documentation ranges: the wan link is 192.0.2.0/24
(ap .1, host .2, as in airoha-dsa-xfrm.md 5.5), each lan port has a /26 of
198.51.100.0/24 (lanN gateway .64(N-1)+1, pcN the next address), and the host
has 203.0.113.0/24 behind it (on ``dummy0``), so tunnel-mode selectors
198.51.100.0/24 <-> 203.0.113.0/24 work out of the box. IPv6 mirrors this in
2001:db8::/32. MAC addresses are locally administered and drawn from the seed;
the ap's lan side (eth0 and lan1..lan4) shares one MAC, as DSA user ports
inherit their conduit's address when the device tree gives none [D], which also
satisfies Airoha's same-OUI rule for LAN netdevs (airoha-dsa-xfrm.md 1.4) [C].
"""

from __future__ import annotations

import random
from ipaddress import IPv4Interface, IPv6Interface, ip_address, ip_network

from esplab.model.hw.switch import (
    AIROHA_MAX_MTU,
    MT7530_MAX_MTU,
)
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.netdev import NetDev, is_link_local
from esplab.model.kernel.stack.route import Neighbour, Route, connected_route

__all__ = [
    "LINKS",
    "build_nodes",
    "lan_addr",
]

PEER_MAX_MTU = 9216  # a plain 10G NIC on the peers: a labelled design choice [M]

# (node, dev) <-> (node, dev): the wires. lanN reach pcN through switch port N.
LINKS = {
    **{("ap", f"lan{n}"): (f"pc{n}", "eth0") for n in range(1, 5)},
    ("ap", "wan"): ("host", "eth0"),
}


def lan_addr(n: int, host: int) -> str:
    """198.51.100.0/24 cut into four /26: lanN is .64(N-1)+1, pcN is .64(N-1)+2."""
    return f"198.51.100.{64 * (n - 1) + host}"


def _mac(rng: random.Random) -> str:
    octets = [0x02, *(rng.randrange(256) for _ in range(5))]
    return ":".join(f"{o:02x}" for o in octets)


def _esp_features(on: bool) -> dict[str, bool]:
    return {
        "rx-checksumming": True,
        "tx-checksumming": True,
        "scatter-gather": True,
        "tcp-segmentation-offload": True,
        "esp-hw-offload": on,
        "esp-tx-csum-hw-offload": False,
        "tx-esp-segmentation": False,
        "hw-tc-offload": True,
    }


#: The JM series advertises neither ESP GSO nor the ESP TX checksum: they are not in
#: the ap devices' hw_features, so ethtool shows them "off [fixed]"
#: (airoha-dsa-xfrm.md 3.10) [C].
AP_FIXED_FEATURES = frozenset({"esp-tx-csum-hw-offload", "tx-esp-segmentation"})

#: A DSA user port's hw_features are NETIF_F_HW_TC alone (dsa_user_setup_tagger:
#: ``features = conduit->vlan_features | NETIF_F_HW_TC``, ``hw_features |= HW_TC``)
#: [C], plus what the JM series attaches: airoha_xfrm_dsa_attach_user ORs the conduit's
#: ESP feature into the user port's hw_features and hw_enc_features, not its features
#: (JM patch 3, airoha_xfrm.c) [C for that series; airoha-dsa-xfrm.md 3.10 says only
#: that patch 3 attaches the conduit's ops to the user ports]. The checksums,
#: scatter-gather and TSO come from airoha's vlan_features (its hw_features set,
#: airoha-dsa-xfrm.md 1.5) and cannot be changed: ethtool shows them "on [fixed]".
DSA_USER_FIXED_FEATURES = AP_FIXED_FEATURES | {
    "rx-checksumming",
    "tx-checksumming",
    "scatter-gather",
    "tcp-segmentation-offload",
}


def _loopback(node: str) -> NetDev:
    """``lo``, ifindex 1 on every Linux node (drivers/net/loopback.c): mtu 65536,
    127.0.0.1/8 and ::1/128 [C]. The walk loops local traffic back through it."""
    return NetDev(
        name="lo",
        node=node,
        kind="loopback",
        ifindex=1,
        mac="00:00:00:00:00:00",
        mtu=65536,
        min_mtu=0,
        max_mtu=0x7FFFFFFF,
        addrs=[IPv4Interface("127.0.0.1/8"), IPv6Interface("::1/128")],
    )


def _peer(name: str, rng: random.Random, ifindex: int = 2) -> Node:
    node = Node(name=name, role="peer")
    node.devs["lo"] = _loopback(name)
    node.devs["eth0"] = NetDev(
        name="eth0",
        node=name,
        kind="ether",
        ifindex=ifindex,
        mac=_mac(rng),
        max_mtu=PEER_MAX_MTU,
        # A veth has no HW_TC and no ESP offload (Linux 6.12: off [fixed]).
        features={
            k: v
            for k, v in _esp_features(False).items()
            if not k.startswith(("esp", "tx-esp", "hw-tc"))
        },
    )
    return node


def build_nodes(seed: int) -> dict[str, Node]:
    """The ap, the host and pc1..pc4, with addresses, routes and neighbours."""
    rng = random.Random(seed)
    lan_mac, wan_mac = _mac(rng), _mac(rng)
    ap = Node(name="ap", role="ap", forwarding=True)
    ap.devs["lo"] = _loopback("ap")
    ap.devs["eth0"] = NetDev(
        name="eth0",
        node="ap",
        kind="gdm",
        ifindex=2,
        mac=lan_mac,
        mtu=1504,
        max_mtu=AIROHA_MAX_MTU,
        gdm=1,
        qdma=0,
        # esp-hw-offload starts on for the seed scenario [M]. airoha_xfrm_build_netdev
        # adds the ESP feature to hw_features only, after airoha_alloc_gdm_port has set
        # features, so on a JM kernel it would start off too [D].
        # The JM series gives every GDM netdev the ops, the conduit included
        # (airoha_alloc_gdm_port calls airoha_xfrm_build_netdev), and attaches them to
        # a DSA user port only when its conduit has them (airoha_xfrm_dsa_attach_user)
        # [C for that series, JM patch 3 airoha_xfrm.c (airoha-dsa-xfrm.md 3.10 says only
        # that the ops are attached); M for its use here].
        xfrmdev_ops=True,
        features=_esp_features(True),
        fixed=AP_FIXED_FEATURES,
    )
    for n in range(1, 5):
        ap.devs[f"lan{n}"] = NetDev(
            name=f"lan{n}",
            node="ap",
            kind="dsa-user",
            ifindex=2 + n,
            mac=lan_mac,
            max_mtu=MT7530_MAX_MTU,
            conduit="eth0",
            switch_port=n,
            xfrmdev_ops=True,
            # esp-hw-offload starts on here, a design choice [M] kept for lab 5. In the
            # JM series it would start off: dsa_user_create registers lanN (which sets
            # wanted_features = features & hw_features) before netdev_upper_dev_link,
            # whose NETDEV_CHANGEUPPER lets airoha_xfrm_dsa_attach_user add the ESP
            # feature to hw_features only, so "ethtool -K lanN esp-hw-offload on" is
            # needed first [D] (net/dsa/user.c, airoha_xfrm.c).
            features=_esp_features(True),
            fixed=DSA_USER_FIXED_FEATURES,
            addrs=[IPv4Interface(f"{lan_addr(n, 1)}/26"), IPv6Interface(f"2001:db8:1:{n}::1/64")],
        )
    ap.devs["wan"] = NetDev(
        name="wan",
        node="ap",
        kind="gdm",
        ifindex=7,
        mac=wan_mac,
        max_mtu=AIROHA_MAX_MTU,
        gdm=2,
        qdma=1,
        xfrmdev_ops=True,
        features=_esp_features(True),  # on for the seed scenario [M]; see eth0 above
        fixed=AP_FIXED_FEATURES,
        addrs=[IPv4Interface("192.0.2.1/24"), IPv6Interface("2001:db8:2::1/64")],
    )
    host = _peer("host", rng)
    host.devs["eth0"].addrs = [IPv4Interface("192.0.2.2/24"), IPv6Interface("2001:db8:2::2/64")]
    host.devs["dummy0"] = NetDev(
        name="dummy0",
        node="host",
        kind="ether",
        ifindex=3,
        mac=_mac(rng),
        max_mtu=65535,
        addrs=[IPv4Interface("203.0.113.1/24"), IPv6Interface("2001:db8:3::1/64")],
    )
    nodes = {"ap": ap, "host": host}
    for n in range(1, 5):
        pc = _peer(f"pc{n}", rng)
        pc.devs["eth0"].addrs = [
            IPv4Interface(f"{lan_addr(n, 2)}/26"),
            IPv6Interface(f"2001:db8:1:{n}::2/64"),
        ]
        nodes[pc.name] = pc
    for node in nodes.values():
        _connected_routes(node)
    ap.routes += [
        Route(ip_network("0.0.0.0/0"), "wan", via=ip_address("192.0.2.2")),
        Route(ip_network("::/0"), "wan", via=ip_address("2001:db8:2::2")),
    ]
    host.routes += [
        Route(ip_network("198.51.100.0/24"), "eth0", via=ip_address("192.0.2.1")),
        Route(ip_network("2001:db8:1::/48"), "eth0", via=ip_address("2001:db8:2::1")),
    ]
    for n in range(1, 5):
        pc = nodes[f"pc{n}"]
        pc.routes += [
            Route(ip_network("0.0.0.0/0"), "eth0", via=ip_address(lan_addr(n, 1))),
            Route(ip_network("::/0"), "eth0", via=ip_address(f"2001:db8:1:{n}::1")),
        ]
    _static_neighbours(nodes)
    return nodes


def _connected_routes(node: Node) -> None:
    """What the boot configuration leaves: each address's prefix route, the IPv4
    addresses with their broadcast (as "brd +" sets it, what distributions' network
    scripts and the real-kernel peer use: up to /30) [M], and each up device's
    IPv6 link-local address (``Node.ipv6_on``). lo's routes live in the local table
    only: 127.0.0.0/8 (fib_add_ifaddr: RTN_LOCAL on a loopback device) and ::1 (Linux
    6.12 lists no ::1 route in the main table; checked against it) [C]."""
    for dev in node.devs.values():
        if dev.kind == "loopback":
            continue
        for iface in dev.addrs:
            node.routes.append(connected_route(iface, dev.name))
            if isinstance(iface, IPv4Interface) and iface.network.prefixlen <= 30:
                dev.brd[iface] = iface.network.broadcast_address
    for dev in node.devs.values():
        node.ipv6_on(dev.name)


def _static_neighbours(nodes: dict[str, Node]) -> None:
    for (a_node, a_dev), (b_node, b_dev) in LINKS.items():
        a, b = nodes[a_node], nodes[b_node]
        for src, src_dev, dst, dst_dev in ((a, a_dev, b, b_dev), (b, b_dev, a, a_dev)):
            for iface in dst.devs[dst_dev].addrs:
                if is_link_local(iface):
                    continue  # preset for the configured addresses only [M]
                src.neigh.append(Neighbour(iface.ip, src_dev, dst.devs[dst_dev].mac))
