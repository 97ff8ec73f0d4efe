"""ethtool on the ap's ports: the ESP features, what holds them, and bad input."""

from __future__ import annotations

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, EsplabError, KernelError, NotFound
from tests.commands import seed

# Seed SAs on wan: SA_OUT with crypto offload, a second SA (spi 0x2000) with packet
# offload, and an outbound policy with packet offload.
CRYPTO_SA = seed.SA_OUT + " offload dev wan dir out"
PACKET_SA = (
    seed.SA_OUT.replace("spi 0x1000 reqid 1", "spi 0x2000 reqid 2")
    + " offload packet dev wan dir out"
)
PACKET_POLICY = seed.POL_OUT.replace("reqid 1", "reqid 2") + " offload packet dev wan"


def advertising(s: Session) -> Session:
    """``s`` with wan's driver advertising ESP GSO and the ESP TX checksum too (as
    netdevsim does, airoha-dsa-xfrm.md 4). The JM series does not: on the ap they are
    off [fixed] (3.10), so the rules below are the driver's for when they exist."""
    s.lab.node("ap").devs["wan"].fixed = frozenset()
    return s


def busy(s: Session, line: str) -> str:
    with pytest.raises(KernelError) as info:
        s.execute(line)
    assert info.value.errno_name == "EBUSY"
    return str(info.value)


def test_busy_counts_states_and_policies_apart() -> None:
    s = Session()
    for line in (CRYPTO_SA, PACKET_SA, PACKET_POLICY):
        s.execute(line)
    message = busy(s, "ethtool -K wan esp-hw-offload off")
    assert "(2 offloaded SAs and 1 offloaded policy on wan)" in message
    assert "ip xfrm state flush; ip xfrm policy flush" in message
    assert s.lab.node("ap").devs["wan"].features["esp-hw-offload"] is True


def test_busy_names_a_lone_sa_or_a_lone_policy() -> None:
    s = Session()
    s.execute(CRYPTO_SA)
    message = busy(s, "ethtool -K wan esp-hw-offload off")
    assert "(1 offloaded SA on wan)" in message and "polic" not in message
    s.execute("ip xfrm state flush")
    s.execute(PACKET_POLICY)
    message = busy(s, "ethtool -K wan esp-hw-offload off")
    assert "(1 offloaded policy on wan)" in message and "SA" not in message
    s.execute("ip xfrm policy flush")
    s.execute("ethtool -K wan esp-hw-offload off")
    assert s.lab.node("ap").devs["wan"].features["esp-hw-offload"] is False


def test_every_esp_feature_is_busy_while_sas_are_offloaded() -> None:
    # airoha_xfrm_set_features: EBUSY when HW_ESP, HW_ESP_TX_CSUM or GSO_ESP changes
    # while offloaded states exist; other features stay free.
    s = advertising(Session())
    s.execute(CRYPTO_SA)
    wan = s.lab.node("ap").devs["wan"]
    busy(s, "ethtool -K wan esp-tx-csum-hw-offload on")
    busy(s, "ethtool -K wan tx-esp-segmentation on")
    assert not wan.features["esp-tx-csum-hw-offload"] and not wan.features["tx-esp-segmentation"]
    s.execute("ethtool -K wan hw-tc-offload off")
    assert wan.features["hw-tc-offload"] is False


def summary(s: Session, line: str) -> str:
    return s.execute(line).summary


def features(s: Session, dev: str) -> str:
    result = s.execute(f"ethtool -k {dev}")
    assert isinstance(result, TextResult)
    return result.text


def test_esp_off_drops_the_esp_checksum_offload_with_it() -> None:
    # The JM driver's ndo_fix_features (airoha_xfrm_fix_features) clears
    # NETIF_F_HW_ESP_TX_CSUM and NETIF_F_GSO_ESP while NETIF_F_HW_ESP is off; ethtool
    # lists the extra change as "[not requested]" (netlink/features.c).
    s = advertising(Session())
    wan = s.lab.node("ap").devs["wan"]
    assert summary(s, "ethtool -K wan esp-tx-csum-hw-offload on") == "esp-tx-csum-hw-offload on"
    assert summary(s, "ethtool -K wan esp-hw-offload off") == (
        "Actual changes:\nesp-hw-offload: off\nesp-tx-csum-hw-offload: off [not requested]"
    )
    assert wan.features["esp-hw-offload"] is False
    assert wan.features["esp-tx-csum-hw-offload"] is False
    # The wish stays in wanted_features: ethtool -k shows it, and it comes back.
    assert "esp-tx-csum-hw-offload: off [requested on]" in features(s, "wan")
    assert summary(s, "ethtool -K wan esp-hw-offload on") == (
        "Actual changes:\nesp-hw-offload: on\nesp-tx-csum-hw-offload: on [not requested]"
    )
    assert wan.features["esp-tx-csum-hw-offload"] is True


def test_turning_a_held_off_feature_off_forgets_the_wish() -> None:
    s = advertising(Session())
    wan = s.lab.node("ap").devs["wan"]
    s.execute("ethtool -K wan esp-tx-csum-hw-offload on")
    s.execute("ethtool -K wan esp-hw-offload off")
    assert summary(s, "ethtool -K wan esp-tx-csum-hw-offload off") == "esp-tx-csum-hw-offload off"
    assert "esp-tx-csum-hw-offload: off\n" in features(s, "wan")
    assert summary(s, "ethtool -K wan esp-hw-offload on") == "esp-hw-offload on"
    assert wan.features["esp-tx-csum-hw-offload"] is False


def test_an_esp_dependent_needs_esp_hw_offload_in_the_same_request() -> None:
    s = advertising(Session())
    wan = s.lab.node("ap").devs["wan"]
    s.execute("ethtool -K wan esp-hw-offload off")
    before = (dict(wan.features), dict(wan.wanted))
    with pytest.raises(KernelError, match=r"tx-esp-segmentation needs esp-hw-offload"):
        s.execute("ethtool -K wan tx-esp-segmentation on")
    with pytest.raises(KernelError, match=r"esp-tx-csum-hw-offload needs esp-hw-offload"):
        s.execute("ethtool -K wan esp-tx-csum-hw-offload on esp-hw-offload off")
    assert (wan.features, wan.wanted) == before
    s.execute("ethtool -K wan esp-tx-csum-hw-offload on esp-hw-offload on")
    assert wan.features["esp-hw-offload"] and wan.features["esp-tx-csum-hw-offload"]


def test_the_conduit_offers_esp_offload_as_a_gdm_port() -> None:
    # JM series: airoha_alloc_gdm_port calls airoha_xfrm_build_netdev for every GDM
    # port, GDM1 (eth0, the DSA conduit) included; the lan ports borrow its ops.
    s = Session()
    assert "esp-hw-offload: on\n" in features(s, "eth0")
    sa = seed.SA_OUT.replace("192.0.2.1 dst 192.0.2.2", "198.51.100.1 dst 198.51.100.2")
    assert "crypto offload on eth0" in summary(s, sa + " offload dev eth0 dir out")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "ethtool",
            "ethtool needs a device name; valid: lo, eth0, lan1, lan2, lan3, lan4, wan; "
            "usage: ethtool [-i|-k|-K|-S] DEV [FEATURE on|off ...]",
        ),
        ("ethtool -k", "ethtool -k needs a device name; valid: lo, eth0, lan1"),
        ("ethtool -K wan esp-hw-offload", "ethtool -K wan esp-hw-offload needs on or off"),
        (
            "ethtool -K wan esp-hw-offload maybe",
            "ethtool -K wan esp-hw-offload needs on or off, not 'maybe'",
        ),
        (
            "ethtool -K wan esp-hw-offload tx-esp-segmentation on",
            "ethtool -K wan esp-hw-offload needs on or off, not 'tx-esp-segmentation'",
        ),
        ("ethtool -K wan", "ethtool -K wan needs a feature and on or off; valid: rx-checksumming"),
        ("ethtool -K wan on", "wan has no feature 'on'"),
        ("ethtool -X wan", "unknown ethtool option '-X'; valid: -i, -k, -K, -S"),
        ("ethtool -k wan extra", "ethtool -k wan takes nothing after the device, not 'extra'"),
    ],
)
def test_bad_input_is_one_line_naming_what_is_missing(line: str, message: str) -> None:
    s = Session()
    before = dict(s.lab.node("ap").devs["wan"].features)
    with pytest.raises(EsplabError) as info:
        s.execute(line)
    # a feature the device lacks is a miss in its feature table, the rest bad words
    assert type(info.value) is (NotFound if "has no feature" in message else BadArgument)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
    assert s.lab.node("ap").devs["wan"].features == before


def test_tso_follows_scatter_gather_and_the_tx_checksum() -> None:
    # netdev_fix_features: "Dropping TSO features since no SG feature" / "... no CSUM
    # feature"; the wish stays in wanted_features and comes back with them.
    s = Session()
    wan = s.lab.node("ap").devs["wan"]
    assert summary(s, "ethtool -K wan scatter-gather off") == (
        "Actual changes:\nscatter-gather: off\ntcp-segmentation-offload: off [not requested]"
    )
    # ethtool 6.1 on Linux 6.12: a legacy flag's line has no suffix, its features do.
    table = features(s, "wan")
    assert "tcp-segmentation-offload: off\n\ttx-tcp-segmentation: off [requested on]" in table
    with pytest.raises(KernelError, match=r"offload needs scatter-gather\)"):
        s.execute("ethtool -K wan tcp-segmentation-offload on")
    s.execute("ethtool -K wan scatter-gather on tx-checksumming off")
    assert wan.features["tcp-segmentation-offload"] is False
    s.execute("ethtool -K wan tx-checksumming on")
    assert wan.features["tcp-segmentation-offload"] is True


def test_a_refused_feature_names_only_what_is_missing() -> None:
    s = Session()
    with pytest.raises(KernelError) as info:
        s.execute("ethtool -K wan tx-checksumming off tcp-segmentation-offload on")
    assert "tcp-segmentation-offload needs tx-checksumming" in str(info.value)
    assert "scatter-gather" not in str(info.value)


# An outbound SA from lan2's address to pc2, offloaded to lan2 (as in lab 5).
LAN2_SA = (
    seed.SA_OUT.replace("192.0.2.1 dst 192.0.2.2", "198.51.100.65 dst 198.51.100.66")
    + " offload dev lan2 dir out"
)


def test_a_user_port_sa_holds_the_conduit() -> None:
    # JM airoha_xfrm_dev_port: a DSA user port's SAs count on its conduit's GDM port
    # (the shared xfrm_state_count), and airoha_xfrm_set_features on eth0 refuses
    # with EBUSY while that count is not 0.
    s = Session()
    s.execute(LAN2_SA)
    message = busy(s, "ethtool -K eth0 esp-hw-offload off")
    assert "(1 offloaded SA on eth0 and its DSA user ports)" in message
    assert s.lab.node("ap").devs["eth0"].features["esp-hw-offload"] is True
    # wan is another GDM port: lan2's SA does not hold it.
    s.execute("ethtool -K wan esp-hw-offload off")


@pytest.mark.parametrize(
    ("dev", "flushed", "left"),
    [
        # lan2 flushes its own SA; with the count back at 0 the conduit is free again.
        ("lan2", " (flushed 1 state)", 0),
        # The shared count is not 0 (lan2's SA), so lan1's handler runs and warns, but
        # xfrm_dev_state_flush only takes lan1's own states.
        ("lan1", "", 1),
    ],
)
def test_a_user_port_drops_esp_and_its_own_sas_are_flushed(
    dev: str, flushed: str, left: int
) -> None:
    # dsa_user_netdev_ops has no ndo_set_features, so the change goes through; the
    # JM NETDEV_FEAT_CHANGE handler (airoha_xfrm_dsa_feature_change) then flushes the
    # port's states and policies while the GDM port counts SAs, and warns.
    s = Session()
    s.execute(LAN2_SA)
    summary = s.execute(f"ethtool -K {dev} esp-hw-offload off").summary
    assert summary == f"esp-hw-offload off\n{dev}: DSA feature lost ESP SAs, flushing{flushed}"
    assert len(s.lab.node("ap").xfrm.states) == left
    assert s.lab.node("ap").devs[dev].features["esp-hw-offload"] is False
    if not left:
        s.execute("ethtool -K eth0 esp-hw-offload off")


@pytest.mark.parametrize(
    "line",
    [
        # esp-hw-offload is off already after the first command.
        "ethtool -K lan1 esp-hw-offload off",
        # hw-tc-offload starts on (dsa_user_setup_tagger sets NETIF_F_HW_TC).
        "ethtool -K lan1 hw-tc-offload on",
    ],
)
def test_no_feature_change_raises_no_notifier(line: str) -> None:
    # ethnl_set_features calls netdev_features_change (NETDEV_FEAT_CHANGE) only when
    # the active features differ from before (net/ethtool/features.c, "if (mod)").
    s = Session()
    s.execute(LAN2_SA)
    s.execute("ethtool -K lan1 esp-hw-offload off")
    assert s.execute(line).summary == line.split(" ", 3)[3]


def test_a_user_port_change_of_another_feature_flushes_while_esp_is_off() -> None:
    # Any active change raises NETDEV_FEAT_CHANGE; the JM handler acts whenever the port
    # is without ESP and the GDM port counts SAs.
    s = Session()
    s.execute(LAN2_SA)
    s.execute("ethtool -K lan1 esp-hw-offload off")
    summary = s.execute("ethtool -K lan1 hw-tc-offload off").summary
    assert summary == "hw-tc-offload off\nlan1: DSA feature lost ESP SAs, flushing"


def test_flush_dev_takes_the_device_s_states_and_policies_only() -> None:
    # What xfrm_dev_state_flush and xfrm_dev_policy_flush delete for one device, used
    # by NETDEV_DOWN (xfrm_dev_down) and by the JM DSA feature-change handler.
    s = Session()
    for line in (CRYPTO_SA, PACKET_SA, PACKET_POLICY, LAN2_SA.replace("0x1000", "0x3000")):
        s.execute(line)
    xfrm = s.lab.node("ap").xfrm
    states, policies = xfrm.flush_dev("wan")
    assert sorted(x.spi for x in states) == [0x1000, 0x2000]
    assert len(policies) == 1
    assert [x.spi for x in xfrm.states] == [0x3000]
    assert xfrm.flush_dev("wan") == ([], [])


def test_a_user_port_without_sas_changes_quietly() -> None:
    s = Session()
    assert summary(s, "ethtool -K lan3 esp-hw-offload off") == "esp-hw-offload off"
    assert summary(s, "ethtool -K lan3 esp-hw-offload on") == "esp-hw-offload on"


def test_user_ports_inherit_fixed_offloads_from_the_conduit() -> None:
    # dsa_user_setup_tagger: features = conduit->vlan_features | NETIF_F_HW_TC and
    # hw_features |= NETIF_F_HW_TC only, so the checksums, SG and TSO are on [fixed].
    s = Session()
    out = features(s, "lan1")
    # (A legacy flag's own line has no suffix; its features say [fixed].)
    for name in ("rx-checksumming", "\ttx-checksum-ipv4", "\ttx-scatter-gather"):
        assert f"{name}: on [fixed]" in out
    assert "tcp-segmentation-offload: on\n\ttx-tcp-segmentation: on [fixed]" in out
    assert "\nhw-tc-offload: on\n" in out
    with pytest.raises(KernelError, match="tx-checksumming is fixed on lan1"):
        s.execute("ethtool -K lan1 tx-checksumming off")
    lan1 = s.lab.node("ap").devs["lan1"]
    assert lan1.features["tcp-segmentation-offload"] is True
    assert summary(s, "ethtool -K lan1 hw-tc-offload off") == "hw-tc-offload off"


def test_ethtools_short_feature_names() -> None:
    # ethtool.c off_flag_def: rx, tx, sg and tso name the long features.
    s = Session()
    s.execute("ethtool -K wan rx off tso off")
    features = s.lab.node("ap").devs["wan"].features
    assert (features["rx-checksumming"], features["tcp-segmentation-offload"]) == (False, False)
