"""ethtool -k: the whole feature table of every device.

LO, VETH and DUMMY are what Debian's ethtool 6.1 printed on Linux 6.12 for lo, a veth
(the peers' eth0) and a dummy device (the host's dummy0), byte for byte (the kernel
guest, kx). The ap's GDM and DSA user ports are derived from the drivers' feature
flags (esplab.model.kernel.stack.features), so their tests check the derivation.
"""

from __future__ import annotations

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session

LO = (
    "Features for lo:\n"
    "rx-checksumming: on [fixed]\n"
    "tx-checksumming: on\n"
    "\ttx-checksum-ipv4: off [fixed]\n"
    "\ttx-checksum-ip-generic: on [fixed]\n"
    "\ttx-checksum-ipv6: off [fixed]\n"
    "\ttx-checksum-fcoe-crc: off [fixed]\n"
    "\ttx-checksum-sctp: on [fixed]\n"
    "scatter-gather: on\n"
    "\ttx-scatter-gather: on [fixed]\n"
    "\ttx-scatter-gather-fraglist: on [fixed]\n"
    "tcp-segmentation-offload: on\n"
    "\ttx-tcp-segmentation: on\n"
    "\ttx-tcp-ecn-segmentation: on\n"
    "\ttx-tcp-mangleid-segmentation: on\n"
    "\ttx-tcp6-segmentation: on\n"
    "generic-segmentation-offload: on\n"
    "generic-receive-offload: on\n"
    "large-receive-offload: off [fixed]\n"
    "rx-vlan-offload: off [fixed]\n"
    "tx-vlan-offload: off [fixed]\n"
    "ntuple-filters: off [fixed]\n"
    "receive-hashing: off [fixed]\n"
    "highdma: on [fixed]\n"
    "rx-vlan-filter: off [fixed]\n"
    "vlan-challenged: on [fixed]\n"
    "tx-gso-robust: off [fixed]\n"
    "tx-fcoe-segmentation: off [fixed]\n"
    "tx-gre-segmentation: off [fixed]\n"
    "tx-gre-csum-segmentation: off [fixed]\n"
    "tx-ipxip4-segmentation: off [fixed]\n"
    "tx-ipxip6-segmentation: off [fixed]\n"
    "tx-udp_tnl-segmentation: off [fixed]\n"
    "tx-udp_tnl-csum-segmentation: off [fixed]\n"
    "tx-gso-partial: off [fixed]\n"
    "tx-tunnel-remcsum-segmentation: off [fixed]\n"
    "tx-sctp-segmentation: on\n"
    "tx-esp-segmentation: off [fixed]\n"
    "tx-udp-segmentation: on\n"
    "tx-gso-list: on\n"
    "tx-nocache-copy: off [fixed]\n"
    "loopback: on [fixed]\n"
    "rx-fcs: off [fixed]\n"
    "rx-all: off [fixed]\n"
    "tx-vlan-stag-hw-insert: off [fixed]\n"
    "rx-vlan-stag-hw-parse: off [fixed]\n"
    "rx-vlan-stag-filter: off [fixed]\n"
    "l2-fwd-offload: off [fixed]\n"
    "hw-tc-offload: off [fixed]\n"
    "esp-hw-offload: off [fixed]\n"
    "esp-tx-csum-hw-offload: off [fixed]\n"
    "rx-udp_tunnel-port-offload: off [fixed]\n"
    "tls-hw-tx-offload: off [fixed]\n"
    "tls-hw-rx-offload: off [fixed]\n"
    "rx-gro-hw: off [fixed]\n"
    "tls-hw-record: off [fixed]\n"
    "rx-gro-list: off\n"
    "macsec-hw-offload: off [fixed]\n"
    "rx-udp-gro-forwarding: off\n"
    "hsr-tag-ins-offload: off [fixed]\n"
    "hsr-tag-rm-offload: off [fixed]\n"
    "hsr-fwd-offload: off [fixed]\n"
    "hsr-dup-offload: off [fixed]\n"
)

VETH = (
    "Features for eth0:\n"
    "rx-checksumming: on\n"
    "tx-checksumming: on\n"
    "\ttx-checksum-ipv4: off [fixed]\n"
    "\ttx-checksum-ip-generic: on\n"
    "\ttx-checksum-ipv6: off [fixed]\n"
    "\ttx-checksum-fcoe-crc: off [fixed]\n"
    "\ttx-checksum-sctp: on\n"
    "scatter-gather: on\n"
    "\ttx-scatter-gather: on\n"
    "\ttx-scatter-gather-fraglist: on\n"
    "tcp-segmentation-offload: on\n"
    "\ttx-tcp-segmentation: on\n"
    "\ttx-tcp-ecn-segmentation: on\n"
    "\ttx-tcp-mangleid-segmentation: on\n"
    "\ttx-tcp6-segmentation: on\n"
    "generic-segmentation-offload: on\n"
    "generic-receive-offload: off\n"
    "large-receive-offload: off [fixed]\n"
    "rx-vlan-offload: on\n"
    "tx-vlan-offload: on\n"
    "ntuple-filters: off [fixed]\n"
    "receive-hashing: off [fixed]\n"
    "highdma: on\n"
    "rx-vlan-filter: off [fixed]\n"
    "vlan-challenged: off [fixed]\n"
    "tx-gso-robust: off [fixed]\n"
    "tx-fcoe-segmentation: off [fixed]\n"
    "tx-gre-segmentation: on\n"
    "tx-gre-csum-segmentation: on\n"
    "tx-ipxip4-segmentation: on\n"
    "tx-ipxip6-segmentation: on\n"
    "tx-udp_tnl-segmentation: on\n"
    "tx-udp_tnl-csum-segmentation: on\n"
    "tx-gso-partial: off [fixed]\n"
    "tx-tunnel-remcsum-segmentation: off [fixed]\n"
    "tx-sctp-segmentation: on\n"
    "tx-esp-segmentation: off [fixed]\n"
    "tx-udp-segmentation: on\n"
    "tx-gso-list: on\n"
    "tx-nocache-copy: off\n"
    "loopback: off [fixed]\n"
    "rx-fcs: off [fixed]\n"
    "rx-all: off [fixed]\n"
    "tx-vlan-stag-hw-insert: on\n"
    "rx-vlan-stag-hw-parse: on\n"
    "rx-vlan-stag-filter: off [fixed]\n"
    "l2-fwd-offload: off [fixed]\n"
    "hw-tc-offload: off [fixed]\n"
    "esp-hw-offload: off [fixed]\n"
    "esp-tx-csum-hw-offload: off [fixed]\n"
    "rx-udp_tunnel-port-offload: off [fixed]\n"
    "tls-hw-tx-offload: off [fixed]\n"
    "tls-hw-rx-offload: off [fixed]\n"
    "rx-gro-hw: off [fixed]\n"
    "tls-hw-record: off [fixed]\n"
    "rx-gro-list: off\n"
    "macsec-hw-offload: off [fixed]\n"
    "rx-udp-gro-forwarding: off\n"
    "hsr-tag-ins-offload: off [fixed]\n"
    "hsr-tag-rm-offload: off [fixed]\n"
    "hsr-fwd-offload: off [fixed]\n"
    "hsr-dup-offload: off [fixed]\n"
)

DUMMY = (
    "Features for dummy0:\n"
    "rx-checksumming: off [fixed]\n"
    "tx-checksumming: on\n"
    "\ttx-checksum-ipv4: off [fixed]\n"
    "\ttx-checksum-ip-generic: on\n"
    "\ttx-checksum-ipv6: off [fixed]\n"
    "\ttx-checksum-fcoe-crc: off [fixed]\n"
    "\ttx-checksum-sctp: off [fixed]\n"
    "scatter-gather: on\n"
    "\ttx-scatter-gather: on\n"
    "\ttx-scatter-gather-fraglist: on\n"
    "tcp-segmentation-offload: on\n"
    "\ttx-tcp-segmentation: on\n"
    "\ttx-tcp-ecn-segmentation: on\n"
    "\ttx-tcp-mangleid-segmentation: on\n"
    "\ttx-tcp6-segmentation: on\n"
    "generic-segmentation-offload: on\n"
    "generic-receive-offload: on\n"
    "large-receive-offload: off [fixed]\n"
    "rx-vlan-offload: off [fixed]\n"
    "tx-vlan-offload: off [fixed]\n"
    "ntuple-filters: off [fixed]\n"
    "receive-hashing: off [fixed]\n"
    "highdma: on\n"
    "rx-vlan-filter: off [fixed]\n"
    "vlan-challenged: off [fixed]\n"
    "tx-gso-robust: off [fixed]\n"
    "tx-fcoe-segmentation: off [fixed]\n"
    "tx-gre-segmentation: on\n"
    "tx-gre-csum-segmentation: on\n"
    "tx-ipxip4-segmentation: on\n"
    "tx-ipxip6-segmentation: on\n"
    "tx-udp_tnl-segmentation: on\n"
    "tx-udp_tnl-csum-segmentation: on\n"
    "tx-gso-partial: off [fixed]\n"
    "tx-tunnel-remcsum-segmentation: off [fixed]\n"
    "tx-sctp-segmentation: on\n"
    "tx-esp-segmentation: off [fixed]\n"
    "tx-udp-segmentation: on\n"
    "tx-gso-list: on\n"
    "tx-nocache-copy: off\n"
    "loopback: off [fixed]\n"
    "rx-fcs: off [fixed]\n"
    "rx-all: off [fixed]\n"
    "tx-vlan-stag-hw-insert: off [fixed]\n"
    "rx-vlan-stag-hw-parse: off [fixed]\n"
    "rx-vlan-stag-filter: off [fixed]\n"
    "l2-fwd-offload: off [fixed]\n"
    "hw-tc-offload: off [fixed]\n"
    "esp-hw-offload: off [fixed]\n"
    "esp-tx-csum-hw-offload: off [fixed]\n"
    "rx-udp_tunnel-port-offload: off [fixed]\n"
    "tls-hw-tx-offload: off [fixed]\n"
    "tls-hw-rx-offload: off [fixed]\n"
    "rx-gro-hw: off [fixed]\n"
    "tls-hw-record: off [fixed]\n"
    "rx-gro-list: off\n"
    "macsec-hw-offload: off [fixed]\n"
    "rx-udp-gro-forwarding: off\n"
    "hsr-tag-ins-offload: off [fixed]\n"
    "hsr-tag-rm-offload: off [fixed]\n"
    "hsr-fwd-offload: off [fixed]\n"
    "hsr-dup-offload: off [fixed]\n"
)


def table(s: Session, line: str) -> str:
    result = s.execute(line)
    assert isinstance(result, TextResult)
    return result.text + "\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("host ethtool -k lo", LO),
        ("host ethtool -k eth0", VETH),
        ("host ethtool -k dummy0", DUMMY),
        ("pc1 ethtool -k eth0", VETH),
        ("ethtool -k lo", LO),
    ],
)
def test_the_kernels_tables(line: str, expected: str) -> None:
    assert table(Session(), line) == expected


def _line(text: str, name: str) -> str:
    return next(ln.strip() for ln in text.splitlines() if ln.strip().startswith(name + ":"))


def test_every_device_lists_every_feature_in_the_kernels_order() -> None:
    s = Session()
    names = [ln.split(":")[0].strip() for ln in LO.splitlines()[1:]]
    for node, devs in (("ap", ("eth0", "wan", "lan1", "lo")), ("host", ("eth0", "dummy0"))):
        for dev in devs:
            got = table(s, f"{node} ethtool -k {dev}").splitlines()
            assert got[0] == f"Features for {dev}:"
            assert [ln.split(":")[0].strip() for ln in got[1:]] == names


def test_a_gdm_port_from_airoha_hw_features() -> None:
    # AIROHA_HW_FEATURES: IP/IPv6 checksum, RX checksum, SG, TSO, TSO6, HW_TC, all
    # changeable; register_netdevice adds GSO/GRO (on) and mangle-ID (off).
    wan = table(Session(), "ethtool -k wan")
    for name, state in (
        ("rx-checksumming", "on"),
        ("tx-checksum-ipv4", "on"),
        ("tx-checksum-ipv6", "on"),
        ("tx-checksum-ip-generic", "off [fixed]"),
        ("tx-scatter-gather", "on"),
        ("tx-tcp-segmentation", "on"),
        ("tx-tcp6-segmentation", "on"),
        ("tx-tcp-mangleid-segmentation", "off"),
        ("generic-receive-offload", "on"),
        ("highdma", "off [fixed]"),
        ("hw-tc-offload", "on"),
        ("esp-hw-offload", "on"),
        ("esp-tx-csum-hw-offload", "off [fixed]"),
        ("tx-gso-list", "off [fixed]"),
    ):
        assert _line(wan, name) == f"{name}: {state}"


def test_a_dsa_user_port_from_its_conduits_vlan_features() -> None:
    # dsa_user_create: features = conduit->vlan_features | HW_TC, hw_features = HW_TC;
    # the core put HIGHDMA in the conduit's vlan_features.
    lan = table(Session(), "ethtool -k lan1")
    for name, state in (
        ("rx-checksumming", "on [fixed]"),
        ("tx-checksum-ipv4", "on [fixed]"),
        ("tx-scatter-gather", "on [fixed]"),
        ("tx-tcp-segmentation", "on [fixed]"),
        ("tx-tcp-mangleid-segmentation", "off [fixed]"),
        ("highdma", "on [fixed]"),
        ("generic-segmentation-offload", "on"),
        ("hw-tc-offload", "on"),
    ):
        assert _line(lan, name) == f"{name}: {state}"


def test_a_change_shows_in_the_table() -> None:
    s = Session()
    s.execute("ethtool -K wan tso off sg off")
    wan = table(s, "ethtool -k wan")
    assert "tcp-segmentation-offload: off\n\ttx-tcp-segmentation: off\n" in wan
    assert "\ttx-tcp6-segmentation: off\n" in wan
    assert "scatter-gather: off\n\ttx-scatter-gather: off\n" in wan
    s.execute("ethtool -K wan sg on tso on")
    assert "\ttx-tcp-segmentation: on\n" in table(s, "ethtool -k wan")
    s.execute("host ethtool -K eth0 tx off")
    veth = table(s, "host ethtool -k eth0")
    assert "tx-checksumming: off\n\ttx-checksum-ipv4: off [fixed]\n" in veth
    assert "\ttx-checksum-ip-generic: off\n" in veth
