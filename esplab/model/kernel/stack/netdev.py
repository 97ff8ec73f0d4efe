"""Network devices: MTU rules, features, counters, and the DSA conduit relationship.

Facts (airoha-dsa-xfrm.md, tags as there):

* Airoha GDM netdevs: ``max_mtu`` 9220 (AIROHA_MAX_MTU) [C]; min MTU 68 [D].
* DSA user ports: a user MTU change fails with ERANGE when user + 4 exceeds
  min(conduit max_mtu, user max_mtu + 4); the conduit's MTU follows the largest
  user MTU + 4 (1504 at boot) [C] (1.3, 6.7). So lanN reach 9216 [D]. The conduit's
  own MTU change is not vetoed (net/dsa has no NETDEV_PRECHANGEMTU handler) [C].
* A value outside [min_mtu, max_mtu] fails with EINVAL from the core range check [C].
* ESP features (1.5, 3.7): ``esp-hw-offload`` exists only where the device has
  xfrmdev_ops; ``esp-tx-csum-hw-offload`` and ``tx-esp-segmentation`` need
  ``esp-hw-offload``, and the driver drops them with it [C] (:func:`_fix_features`).
  On the emulated Airoha ports the ops are a modelled design (the withdrawn JM
  series, 3.10 [M]), which advertises neither ESP TX checksum nor ESP GSO.
* XDP and AF_XDP: a device's XDP side (driver profile, program, queues, buffer pools,
  zero-copy state) is its ``xdp``, made on first use by :meth:`NetDev.enable_xdp`
  (``esplab.model.kernel.xdp.port``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Interface, IPv6Interface
from typing import TYPE_CHECKING, Literal

from esplab.errors import KernelError, NotFound

if TYPE_CHECKING:
    from esplab.model.kernel.xdp.driver import DriverProfile
    from esplab.model.kernel.xdp.port import Am65Cpsw, NetdevXdp

__all__ = [
    "ESP_DEPENDENTS",
    "ESP_HW_OFFLOAD",
    "ETHTOOL_FEATURES",
    "DevCounters",
    "NetDev",
    "eui64_link_local",
    "is_link_local",
]

DevKind = Literal["gdm", "dsa-user", "ether", "loopback"]

ESP_HW_OFFLOAD = "esp-hw-offload"  # NETIF_F_HW_ESP
# NETIF_F_HW_ESP_TX_CSUM and NETIF_F_GSO_ESP: offloads of the ESP packet that need HW_ESP.
ESP_DEPENDENTS = ("esp-tx-csum-hw-offload", "tx-esp-segmentation")
# What each feature needs on to stay on (see _fix_features).
_NEEDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(ESP_DEPENDENTS, (ESP_HW_OFFLOAD,)),
    "tcp-segmentation-offload": ("scatter-gather", "tx-checksumming"),
}

# ethtool -k names this model knows, in ethtool's print order.
ETHTOOL_FEATURES = (
    "rx-checksumming",
    "tx-checksumming",
    "scatter-gather",
    "tcp-segmentation-offload",
    "esp-hw-offload",
    "esp-tx-csum-hw-offload",
    "tx-esp-segmentation",
    "hw-tc-offload",
)


@dataclass
class DevCounters:
    """The ``ip -s link`` counters (struct rtnl_link_stats64 subset)."""

    rx_packets: int = 0
    rx_bytes: int = 0
    rx_errors: int = 0
    rx_dropped: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    tx_errors: int = 0
    tx_dropped: int = 0
    # Core drops (netdev core stats, Linux 4.6 / 6.0): a frame no protocol takes, and
    # a unicast frame for another MAC address (PACKET_OTHERHOST).
    rx_nohandler: int = 0
    rx_otherhost_dropped: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class NetDev:
    """One network device of a node."""

    name: str
    node: str
    kind: DevKind
    ifindex: int
    mac: str
    mtu: int = 1500
    min_mtu: int = 68
    max_mtu: int = 1500
    up: bool = True
    addrs: list[IPv4Interface | IPv6Interface] = field(default_factory=list)
    features: dict[str, bool] = field(default_factory=dict)
    fixed: frozenset[str] = frozenset()
    # dev->wanted_features: what ethtool -K asked for; ``features`` is what is active.
    wanted: dict[str, bool] = field(default_factory=dict)
    xfrmdev_ops: bool = False
    conduit: str | None = None
    switch_port: int | None = None
    gdm: int | None = None
    qdma: int | None = None
    counters: DevCounters = field(default_factory=DevCounters)
    stats: dict[str, int] = field(default_factory=dict)
    # A switch port's MIB counters by mt7530 name (the front port of a DSA user
    # device, the CPU port on its conduit), as l2.count_switch_ports counts them.
    port_mib: dict[str, int] = field(default_factory=dict)
    # IFA_BROADCAST of each IPv4 address that has one: iproute2 sends one only for
    # "brd ADDR" or "brd +" (ip/ipaddress.c ipaddr_modify), and the kernel keeps
    # what it is given (net/ipv4/devinet.c) [C].
    brd: dict[IPv4Interface, IPv4Address] = field(default_factory=dict)
    # IFLA_CARRIER_CHANGES (carrier up + down counts): "transns" of ip -s -s link.
    carrier_changes: int = 0
    # The XDP side, once XDP or AF_XDP has used the device (enable_xdp).
    xdp: NetdevXdp | None = field(default=None, repr=False, compare=False)
    # ``mac`` as bytes, for the receive path's destination check (and what it was
    # made from, so a changed address is noticed).
    _mac_raw: tuple[str, bytes] = field(default=("", b""), init=False, repr=False, compare=False)

    @property
    def mac_raw(self) -> bytes:
        """The device's MAC address as six bytes."""
        text, raw = self._mac_raw
        if text != self.mac:
            raw = bytes.fromhex(self.mac.replace(":", ""))
            self._mac_raw = (self.mac, raw)
        return raw

    @classmethod
    def bare(cls, name: str = "eth0", ifindex: int = 2) -> NetDev:
        """An Ethernet device on no node (xdpsock run on its own, tests), its MAC locally
        administered from ``ifindex``."""
        return cls(name, "", "ether", ifindex, f"02:00:00:00:00:{ifindex & 0xFF:02x}")

    def enable_xdp(self, driver: DriverProfile, cpsw: Am65Cpsw | None = None) -> NetdevXdp:
        """Give the device a fresh XDP side with ``driver``'s profile (``cpsw``: the switch
        whose zero-copy queues it shares, for am65-cpsw) and return it."""
        from esplab.model.kernel.xdp.port import NetdevXdp  # (XDP's code loads when used)

        self.xdp = NetdevXdp(self, driver, cpsw)
        return self.xdp

    @property
    def has_hw_esp(self) -> bool:
        return self.xfrmdev_ops and self.features.get(ESP_HW_OFFLOAD, False)

    def __post_init__(self) -> None:
        # dev->wanted_features starts as the active set (register_netdevice) [C].
        for name, on in self.features.items():
            self.wanted.setdefault(name, on)

    def requested(self, feature: str) -> bool | None:
        """The value asked for ``feature`` when it differs from the active one: ethtool -k
        prints it as "[requested on|off]" (ethtool netlink/features.c ``dump_feature``)."""
        wanted = self.wanted.get(feature, self.features[feature])
        return wanted if wanted != self.features[feature] else None

    def check_feature(self, feature: str) -> None:
        """Refuse a feature name this device does not have."""
        if feature not in self.features:
            raise NotFound(
                f"{self.name} has no feature '{feature}'",
                valid=sorted(self.features),
                value=feature,
            )

    def set_features(
        self,
        request: dict[str, bool],
        *,
        offloaded_states: int = 0,
        offloaded_policies: int = 0,
        held_on: str | None = None,
    ) -> dict[str, bool]:
        """``ethtool -K DEV FEATURE on|off ...`` with the kernel's and driver's checks.

        The request updates the wanted set as a whole (net/ethtool/features.c
        ``ethnl_set_features``); the active set is the wanted one after the driver's
        ``ndo_fix_features`` (:func:`_fix_features`), as ``__netdev_update_features``
        computes it. ``offloaded_states`` and ``offloaded_policies`` count the SAs and
        the policies that hold this device's ESP feature (``held_on`` says where they
        are when that is not this device alone); on a GDM netdev either makes the ESP
        feature busy. Returns each active feature that changed, with its new value. On
        a refusal nothing changes."""
        for feature in request:
            self.check_feature(feature)
        for feature, on in request.items():
            if feature in self.fixed and self.features[feature] != on:
                raise KernelError(
                    "EOPNOTSUPP",
                    f"{feature} is fixed on {self.name}",
                    prefix="Could not change any device features",
                    hint="ethtool -k shows it as [fixed]",
                )
        wanted = {**self.wanted, **request}
        active = _fix_features(wanted)
        for feature, on in request.items():
            if active[feature] != on:
                # fix_features keeps a feature off while what it needs is off (see
                # _fix_features); ethtool then prints it as "off [requested on]" and
                # "Could not change any device features". The kernel would still record
                # the wish in wanted_features; refusing with the model unchanged, and
                # this errno, are the model's [M].
                needs = " and ".join(n for n in _NEEDS[feature] if not wanted.get(n, False))
                raise KernelError(
                    "EINVAL",
                    f"{feature} needs {needs}",
                    prefix="Could not change any device features",
                    hint=f"turn {needs} on first, or in the same command",
                )
        changed = {name: on for name, on in active.items() if self.features[name] != on}
        esp = [name for name in (ESP_HW_OFFLOAD, *ESP_DEPENDENTS) if name in changed]
        # Only a GDM netdev has the driver's ndo_set_features: dsa_user_netdev_ops
        # (net/dsa/user.c) has no ndo_set_features, so a DSA user port takes any ESP
        # change; the JM notifier then flushes what it loses [C] (see
        # esplab.model.kernel.drivers.airoha_eth.dsa_feature_change).
        if esp and self.kind == "gdm" and (offloaded_states or offloaded_policies):
            # The JM series driver refuses ESP feature toggles while SAs exist (3.10) [C]:
            # airoha_xfrm_set_features returns EBUSY when any of HW_ESP, HW_ESP_TX_CSUM
            # and GSO_ESP changes while its count of offloaded states is not 0. That count
            # is the GDM port's: airoha_xfrm_dev_port gives a DSA user port its conduit's
            # port, so the SAs of lan1..lan4 count on eth0 (the caller adds them up). The
            # series offloads no policy; that packet-offload policies hold the feature too is a
            # design choice [M], as this model's policy offload is one.
            raise KernelError(
                "EBUSY",
                _busy(held_on or self.name, offloaded_states, offloaded_policies),
                prefix="Could not change any device features",
                hint=_busy_hint(offloaded_states, offloaded_policies),
            )
        self.wanted = wanted
        self.features = active
        return changed

    def check_mtu(self, mtu: int, hint: str | None = None) -> None:
        """The core's range check (EINVAL) [C]; ``hint`` says what is valid when more
        than the device's own range limits it."""
        if not self.min_mtu <= mtu <= self.max_mtu:
            raise KernelError(
                "EINVAL",
                f"mtu {mtu} out of range for {self.name}",
                hint=hint or f"valid: {self.min_mtu}..{self.max_mtu}",
            )


def eui64_link_local(mac: str) -> IPv6Interface:
    """The link-local address addrconf gives an Ethernet device when it comes up
    (net/ipv6/addrconf.c ``addrconf_addr_gen`` with addr_gen_mode eui64, the default;
    ``addrconf_ifid_eui48``): fe80::/64 with the MAC's EUI-64, its universal/local bit
    flipped and ff:fe in the middle [C; checked against Linux 6.12: 02:11:22:33:44:55
    gives fe80::11:22ff:fe33:4455/64]."""
    b = bytes.fromhex(mac.replace(":", ""))
    ifid = bytes([b[0] ^ 0x02, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]])
    return IPv6Interface((b"\xfe\x80" + bytes(6) + ifid, 64))


def is_link_local(iface: IPv4Interface | IPv6Interface) -> bool:
    """An IPv6 link-local address (fe80::/10)."""
    return iface.version == 6 and iface.ip.is_link_local


def _fix_features(wanted: dict[str, bool]) -> dict[str, bool]:
    """The active features for ``wanted``: ``ndo_fix_features`` of the modelled driver.

    The JM series' ``airoha_xfrm_fix_features`` (intel-lab-lkp/linux ddcdac81,
    drivers/net/ethernet/airoha/airoha_xfrm.c) clears NETIF_F_HW_ESP_TX_CSUM and
    NETIF_F_GSO_ESP whenever NETIF_F_HW_ESP is off [C]. The core adds no ESP rule:
    ``netdev_fix_features`` (net/core/dev.c) has none, and the NOTIFY_BAD that
    ``xfrm_api_check`` returns on NETDEV_FEAT_CHANGE is ignored, as
    ``netdev_features_change`` drops the notifier's answer after the change is made [C].
    The core's own rules (``netdev_fix_features``): TSO is dropped without
    scatter-gather ("Dropping TSO features since no SG feature") and without a TX
    checksum ("... since no CSUM feature") [C].
    The wanted bits stay, so turning what they need on again brings them back.
    """
    active = dict(wanted)
    for name, needs in _NEEDS.items():
        if name in active and not all(active.get(n, False) for n in needs):
            active[name] = False
    return active


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _busy(dev: str, states: int, policies: int) -> str:
    """What holds the ESP feature of ``dev``: its offloaded SAs and policies, each named."""
    held = [_count(states, "offloaded SA", "offloaded SAs")] if states else []
    held += [_count(policies, "offloaded policy", "offloaded policies")] if policies else []
    return f"{' and '.join(held)} on {dev}"


def _busy_hint(states: int, policies: int) -> str:
    flush = ["ip xfrm state flush"] if states else []
    flush += ["ip xfrm policy flush"] if policies else []
    what = " and ".join(w for w, n in (("states", states), ("policies", policies)) if n)
    return f"delete the offloaded {what} first ({'; '.join(flush)})"
