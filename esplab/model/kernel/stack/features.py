"""The whole ``ethtool -k DEV`` table: every netdev feature of Linux 6.12, as ethtool
6.1 prints it (netlink/features.c ``dump_features``).

Layout [C: ethtool 6.1 on Linux 6.12]: first the legacy flags (``off_flag_def``); one
with several features prints ``name: on|off`` (on when any of them is on, never a
suffix) and then each feature indented by a tab; one with a single feature prints that
feature's state under the flag's name. Then every other feature in the kernel's
``netdev_features_strings`` order. A state is ``on``/``off``, then `` [fixed]`` when
the driver cannot change it (not in ``hw_features``) or ``[requested on|off]`` when
what was asked (``wanted_features``) is not what is active.

Each device has a profile, what its driver and the core give it at registration:

* ``lo``, a veth (the peers' ``eth0``) and ``dummy0``: the tables Linux 6.12 printed
  for those drivers [C];
* the ap's GDM netdevs (``eth0``, ``wan``): airoha_eth's ``AIROHA_HW_FEATURES``
  (IP/IPv6 checksums, RX checksum, SG, TSO, TSO6, HW_TC) in ``hw_features`` and
  ``features`` (airoha-dsa-xfrm.md 1.5), plus what ``register_netdevice`` adds: GSO
  and GRO on, GRO fraglist and UDP GRO forwarding changeable and off, nocache-copy
  changeable, TSO's mangle-ID changeable [D: net/core/dev.c];
* the DSA user ports (``lanN``): ``features = conduit->vlan_features | HW_TC`` and
  ``hw_features = HW_TC`` (net/dsa/user.c ``dsa_user_create``); the conduit's
  ``vlan_features`` are its feature set plus ``HIGHDMA``, which the core adds to every
  device's vlan_features, so highdma is on [fixed]; then ``register_netdevice``'s
  software features [D].

The features this model reasons about (``NetDev.features``: the checksums, SG, TSO,
the ESP offloads, hw-tc-offload) are read from the device, so ``ethtool -K`` shows
here; the rest are the profile's.
"""

from __future__ import annotations

from collections.abc import Mapping

from esplab.model.kernel.stack.netdev import NetDev

__all__ = ["FEATURE_GROUPS", "FEATURE_LINES", "feature_table", "profile_of"]

#: The legacy flags of several features, with theirs in ethtool's order.
FEATURE_GROUPS: Mapping[str, tuple[str, ...]] = {
    "tx-checksumming": (
        "tx-checksum-ipv4",
        "tx-checksum-ip-generic",
        "tx-checksum-ipv6",
        "tx-checksum-fcoe-crc",
        "tx-checksum-sctp",
    ),
    "scatter-gather": ("tx-scatter-gather", "tx-scatter-gather-fraglist"),
    "tcp-segmentation-offload": (
        "tx-tcp-segmentation",
        "tx-tcp-ecn-segmentation",
        "tx-tcp-mangleid-segmentation",
        "tx-tcp6-segmentation",
    ),
}

#: Every line of the table, top level, in order (a group's features follow it).
FEATURE_LINES: tuple[str, ...] = (
    "rx-checksumming",
    "tx-checksumming",
    "scatter-gather",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
    "rx-vlan-offload",
    "tx-vlan-offload",
    "ntuple-filters",
    "receive-hashing",
    "highdma",
    "rx-vlan-filter",
    "vlan-challenged",
    "tx-gso-robust",
    "tx-fcoe-segmentation",
    "tx-gre-segmentation",
    "tx-gre-csum-segmentation",
    "tx-ipxip4-segmentation",
    "tx-ipxip6-segmentation",
    "tx-udp_tnl-segmentation",
    "tx-udp_tnl-csum-segmentation",
    "tx-gso-partial",
    "tx-tunnel-remcsum-segmentation",
    "tx-sctp-segmentation",
    "tx-esp-segmentation",
    "tx-udp-segmentation",
    "tx-gso-list",
    "tx-nocache-copy",
    "loopback",
    "rx-fcs",
    "rx-all",
    "tx-vlan-stag-hw-insert",
    "rx-vlan-stag-hw-parse",
    "rx-vlan-stag-filter",
    "l2-fwd-offload",
    "hw-tc-offload",
    "esp-hw-offload",
    "esp-tx-csum-hw-offload",
    "rx-udp_tunnel-port-offload",
    "tls-hw-tx-offload",
    "tls-hw-rx-offload",
    "rx-gro-hw",
    "tls-hw-record",
    "rx-gro-list",
    "macsec-hw-offload",
    "rx-udp-gro-forwarding",
    "hsr-tag-ins-offload",
    "hsr-tag-rm-offload",
    "hsr-fwd-offload",
    "hsr-dup-offload",
)

_TCP = FEATURE_GROUPS["tcp-segmentation-offload"]
_SOFT_OFF = ("rx-gro-list", "rx-udp-gro-forwarding")  # NETIF_F_SOFT_FEATURES_OFF
_SOFT = ("generic-segmentation-offload", "generic-receive-offload")  # NETIF_F_SOFT_FEATURES
_TUNNEL_GSO = (
    "tx-gre-segmentation",
    "tx-gre-csum-segmentation",
    "tx-ipxip4-segmentation",
    "tx-ipxip6-segmentation",
    "tx-udp_tnl-segmentation",
    "tx-udp_tnl-csum-segmentation",
)
_SW_GSO = ("tx-sctp-segmentation", "tx-udp-segmentation", "tx-gso-list")

#: (on, changeable) per profile; every other feature is off [fixed].
_PROFILES: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    # Linux 6.12, ethtool -k lo [C].
    "loopback": (
        frozenset(
            {
                "rx-checksumming",
                "tx-checksum-ip-generic",
                "tx-checksum-sctp",
                "tx-scatter-gather",
                "tx-scatter-gather-fraglist",
                *_TCP,
                *_SOFT,
                "highdma",
                "vlan-challenged",
                *_SW_GSO,
                "loopback",
            }
        ),
        frozenset({*_TCP, *_SOFT, *_SW_GSO, *_SOFT_OFF}),
    ),
    # Linux 6.12, ethtool -k of a veth [C].
    "veth": (
        frozenset(
            {
                "rx-checksumming",
                "tx-checksum-ip-generic",
                "tx-checksum-sctp",
                "tx-scatter-gather",
                "tx-scatter-gather-fraglist",
                *_TCP,
                "generic-segmentation-offload",
                "rx-vlan-offload",
                "tx-vlan-offload",
                "highdma",
                *_TUNNEL_GSO,
                *_SW_GSO,
                "tx-vlan-stag-hw-insert",
                "rx-vlan-stag-hw-parse",
            }
        ),
        frozenset(
            {
                "rx-checksumming",
                "tx-checksum-ip-generic",
                "tx-checksum-sctp",
                "tx-scatter-gather",
                "tx-scatter-gather-fraglist",
                *_TCP,
                *_SOFT,
                "rx-vlan-offload",
                "tx-vlan-offload",
                "highdma",
                *_TUNNEL_GSO,
                *_SW_GSO,
                "tx-nocache-copy",
                "tx-vlan-stag-hw-insert",
                "rx-vlan-stag-hw-parse",
                *_SOFT_OFF,
            }
        ),
    ),
    # Linux 6.12, ethtool -k of a dummy [C].
    "dummy": (
        frozenset(
            {
                "tx-checksum-ip-generic",
                "tx-scatter-gather",
                "tx-scatter-gather-fraglist",
                *_TCP,
                *_SOFT,
                "highdma",
                *_TUNNEL_GSO,
                *_SW_GSO,
            }
        ),
        frozenset(
            {
                "tx-checksum-ip-generic",
                "tx-scatter-gather",
                "tx-scatter-gather-fraglist",
                *_TCP,
                *_SOFT,
                "highdma",
                *_TUNNEL_GSO,
                *_SW_GSO,
                "tx-nocache-copy",
                *_SOFT_OFF,
            }
        ),
    ),
    # airoha_eth's AIROHA_HW_FEATURES and register_netdevice [D].
    "gdm": (
        frozenset(
            {
                "rx-checksumming",
                "tx-checksum-ipv4",
                "tx-checksum-ipv6",
                "tx-scatter-gather",
                "tx-tcp-segmentation",
                "tx-tcp6-segmentation",
                *_SOFT,
                "hw-tc-offload",
            }
        ),
        frozenset(
            {
                "rx-checksumming",
                "tx-checksum-ipv4",
                "tx-checksum-ipv6",
                "tx-scatter-gather",
                "tx-tcp-segmentation",
                "tx-tcp-mangleid-segmentation",
                "tx-tcp6-segmentation",
                *_SOFT,
                "tx-nocache-copy",
                "hw-tc-offload",
                *_SOFT_OFF,
            }
        ),
    ),
    # net/dsa/user.c over the airoha conduit, and register_netdevice [D].
    "dsa-user": (
        frozenset(
            {
                "rx-checksumming",
                "tx-checksum-ipv4",
                "tx-checksum-ipv6",
                "tx-scatter-gather",
                "tx-tcp-segmentation",
                "tx-tcp6-segmentation",
                *_SOFT,
                "highdma",
                "hw-tc-offload",
            }
        ),
        frozenset({*_SOFT, "tx-nocache-copy", "hw-tc-offload", *_SOFT_OFF}),
    ),
}


def profile_of(dev: NetDev) -> str:
    """The profile of ``dev``: its driver's (the peers' ``eth0`` is a veth, their other
    Ethernet devices dummies, as ``ethtool -i`` says)."""
    if dev.kind == "ether":
        return "veth" if dev.name == "eth0" else "dummy"
    return dev.kind


def _states(dev: NetDev) -> dict[str, tuple[bool, str]]:
    """Each feature's (active, suffix), the device's modelled features over its profile."""
    on, changeable = _PROFILES[profile_of(dev)]
    out: dict[str, tuple[bool, str]] = {}
    for name in (*FEATURE_LINES, *(f for g in FEATURE_GROUPS.values() for f in g)):
        out[name] = (name in on, "" if name in changeable else " [fixed]")
    for name, active in dev.features.items():
        fixed = name in dev.fixed or (not dev.xfrmdev_ops and "esp" in name)
        requested = dev.requested(name)
        suffix = (
            " [fixed]"
            if fixed
            else (f" [requested {'on' if requested else 'off'}]" if requested is not None else "")
        )
        members = FEATURE_GROUPS.get(name)
        if members is None:
            out[name] = (active, suffix)
            continue
        # A legacy flag the model keeps as one: turned off, its changeable features
        # go off; on, they are as the driver set them (mangle-ID stays off) [M].
        for member in members:
            if member in changeable:
                out[member] = (active and member in on, suffix)
    return out


def feature_table(dev: NetDev) -> str:
    """``ethtool -k DEV`` exactly (no trailing newline)."""
    states = _states(dev)
    lines = [f"Features for {dev.name}:"]
    for name in FEATURE_LINES:
        members = FEATURE_GROUPS.get(name)
        if members is None:
            active, suffix = states[name]
            lines.append(f"{name}: {'on' if active else 'off'}{suffix}")
            continue
        any_on = any(states[m][0] for m in members)
        lines.append(f"{name}: {'on' if any_on else 'off'}")
        for m in members:
            active, suffix = states[m]
            lines.append(f"\t{m}: {'on' if active else 'off'}{suffix}")
    return "\n".join(lines)
