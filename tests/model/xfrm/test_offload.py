"""The offload contract at configuration time (reference 3.5, 3.7, 3.10; facts
6.10-6.14, 6.17)."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from esplab.errors import KernelError, ToolUsageError
from esplab.model.kernel.xfrm.algos import XfrmAlgo
from esplab.model.kernel.xfrm.objects import Selector, XfrmOffload, XfrmPolicy, XfrmState

from .fakes import FakeDevice
from .support import GCM, ip, listing, make_node, snapshot

SHA1_KEY = "0x0102030405060708090a0b0c0d0e0f1011121314"
CBC = f"auth sha1 {SHA1_KEY} enc aes 0x000102030405060708090a0b0c0d0e0f"


def sa(spi: int = 0x2000) -> str:
    return f"src 192.0.2.1 dst 192.0.2.2 proto esp spi {spi:#x} reqid 2 mode transport"


SA = sa()
OFFLOAD_LINE = "crypto offload parameters"


def test_fact_6_10_device_without_xfrmdev_ops() -> None:
    # Mainline airoha_eth has no xfrmdev_ops: crypto is accepted with no offload
    # line, packet is -EINVAL (reference 3.5 row 6, 5.5 (b)).
    wan = FakeDevice("wan", has_xfrmdev_ops=False, supports_policy_offload=False)
    node = make_node(wan)
    x = ip(node, f"ip xfrm state add {SA} {GCM} offload dev wan dir out").states[0]
    assert x.offload is None and OFFLOAD_LINE not in listing(node)
    assert wan.calls == []
    with pytest.raises(KernelError) as err:
        ip(node, f"ip xfrm state add {sa(0x2001)} {GCM} offload packet dev wan dir out")
    assert err.value.errno_name == "EINVAL"


def test_fact_6_11_driver_eopnotsupp() -> None:
    # JM series: state_add answers -EOPNOTSUPP unless it can take the SA.
    wan = FakeDevice("wan", state_errno="EOPNOTSUPP")
    node = make_node(wan)
    x = ip(node, f"ip xfrm state add {SA} {GCM} offload crypto dev wan dir out").states[0]
    assert x.offload is None and OFFLOAD_LINE not in listing(node)
    with pytest.raises(KernelError, match="Operation not supported") as err:
        ip(node, f"ip xfrm state add {sa(0x2001)} {GCM} offload packet dev wan dir out")
    assert err.value.errno_name == "EOPNOTSUPP"
    assert "Device failed to offload this state" in str(err.value)
    assert len(node.states) == 1


def test_other_driver_errors_fail_crypto_too() -> None:
    # Reference 3.3: only -EOPNOTSUPP falls back; netdevsim's -ENOSPC fails the add.
    wan = FakeDevice("wan", state_errno="ENOSPC")
    node = make_node(wan)
    with pytest.raises(KernelError) as err:
        ip(node, f"ip xfrm state add {SA} {GCM} offload dev wan dir out")
    assert err.value.errno_name == "ENOSPC" and node.states == ()


def test_crypto_offload_binds_and_the_driver_sees_it() -> None:
    wan = FakeDevice("wan")
    node = make_node(wan)
    x = ip(node, f"ip xfrm state add {SA} {CBC} offload dev wan dir in").states[0]
    assert x.offload == XfrmOffload("crypto", "wan", "in")
    assert wan.states == [x] and wan.calls == ["state_add 0x2000"]
    ip(node, "ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000")
    assert wan.states == [] and wan.calls[-1] == "state_delete 0x2000"


def test_fact_6_12_policy_offload_rules() -> None:
    wan = FakeDevice("wan", supports_policy_offload=False)
    node = make_node(wan)
    # iproute2 refuses anything but "packet" before the kernel sees it...
    with pytest.raises(ToolUsageError, match="Invalid offload mode"):
        ip(node, "ip xfrm policy add dir out offload crypto dev wan")
    # ...and the kernel refuses it too (xfrm_dev_policy_add).
    req = XfrmPolicy(sel=Selector.any(4), dir="out")
    with pytest.raises(KernelError, match="Only packet offload mode is supported"):
        node.add_policy(req, XfrmOffload("crypto", "wan", "out"))
    # A device without xdo_dev_policy_add: -EINVAL "Policy offload is not supported".
    with pytest.raises(KernelError, match="Policy offload is not supported") as err:
        ip(node, "ip xfrm policy add dir out offload packet dev wan")
    assert err.value.errno_name == "EINVAL"
    assert node.policies == () and wan.calls == []


def test_policy_offload_binds_and_device_errors_propagate() -> None:
    wan = FakeDevice("wan")
    node = make_node(wan)
    p = ip(node, "ip xfrm policy add dir in offload packet dev wan").policies[0]
    assert p.offload == XfrmOffload("packet", "wan", "in") and wan.policies == [p]
    wan.policy_errno = "ENOMEM"
    with pytest.raises(KernelError, match="Device failed to offload this policy"):
        ip(node, "ip xfrm policy add dir out offload packet dev wan")
    assert len(node.policies) == 1


def test_socket_policies_cannot_be_offloaded() -> None:
    # setsockopt(IP_XFRM_POLICY) has no offload attribute (reference 3.7).
    node = make_node(FakeDevice("wan"))
    req = XfrmPolicy(sel=Selector.any(4), dir="out", socket=True)
    with pytest.raises(KernelError, match="socket policies cannot be offloaded"):
        node.add_policy(req, XfrmOffload("packet", "wan", "out"))
    sock = node.add_policy(req)
    assert "\tsocket out priority 0 \n" in listing(node)
    # Socket policies are neither flushed nor counted with the SPD.
    assert ip(node, "ip xfrm policy flush").policies == ()
    assert ip(node, "ip -s xfrm policy count").text.endswith("(Sock: IN 0 OUT 1 FWD 0)\n")
    assert node.policies == (sock,)


@pytest.mark.parametrize(
    ("extra", "offload", "reason"),
    [
        # Reference 6.13 / 3.5 rows 2-4.
        ("mode tunnel tfcpad 16", "dir out", "TFC padding can't be offloaded"),
        ("if_id 7", "dir in", "XFRM if_id is not supported in offload RX path"),
        ("dir in", "dir out", "Mismatched SA and offload direction"),
        ("dir out", "dir in", "Mismatched SA and offload direction"),
    ],
)
def test_fact_6_13_offload_refusals(extra: str, offload: str, reason: str) -> None:
    wan = FakeDevice("wan")
    node = make_node(wan)
    with pytest.raises(KernelError, match=reason) as err:
        ip(node, f"ip xfrm state add {SA} {GCM} {extra} offload dev wan {offload}")
    assert err.value.errno_name == "EINVAL" and node.states == () and wan.calls == []


def test_inbound_if_id_is_fine_without_offload_and_outbound() -> None:
    node = make_node(FakeDevice("wan"))
    ip(node, f"ip xfrm state add {SA} {GCM} if_id 7 offload dev wan dir out")
    ip(node, f"ip xfrm state add {sa(0x2001)} {GCM} if_id 7")
    assert len(node.states) == 2


def test_fact_6_14_esn_needs_advance_esn_for_crypto_only() -> None:
    nsim = FakeDevice("nsim0", supports_advance_esn=False)
    node = make_node(nsim)
    with pytest.raises(KernelError, match="Device doesn't support offload with ESN"):
        ip(
            node,
            f"ip xfrm state add {SA} {GCM} flag esn replay-window 32 offload dev nsim0 dir in",
        )
    # The advance_esn requirement is skipped for packet offload (reference 3.9).
    x = ip(
        node,
        f"ip xfrm state add {SA} {GCM} flag esn replay-window 32 offload packet dev nsim0 dir in",
    ).states[0]
    assert x.is_packet_offload and x.esn


def test_only_esp_has_an_offload_type() -> None:
    node = make_node(FakeDevice("wan"))
    ah = f"src 192.0.2.1 dst 192.0.2.2 proto ah spi 9 auth sha1 {SHA1_KEY}"
    with pytest.raises(KernelError, match="Type doesn't support offload"):
        ip(node, f"ip xfrm state add {ah} offload dev wan dir out")


def test_missing_device_in_the_table_api() -> None:
    # Reference 3.5 row 5: no such ifindex -> crypto quietly software, packet -EINVAL.
    node = make_node()
    req = XfrmState(
        src=ip_address("192.0.2.1"),
        dst=ip_address("192.0.2.2"),
        spi=5,
        aead=XfrmAlgo("rfc4106(gcm(aes))", bytes(20), 128),
    )
    assert node.add_state(req, XfrmOffload("crypto", "gone0", "out")).offload is None
    with pytest.raises(KernelError, match="no such device"):
        node.add_state(req, XfrmOffload("packet", "gone0", "out"))


def test_fact_6_17_device_down_flushes_only_with_hw_esp() -> None:
    wan = FakeDevice("wan")
    lan1 = FakeDevice("lan1")
    node = make_node(wan, lan1)
    ip(node, f"ip xfrm state add {SA} {GCM} offload dev wan dir out")
    ip(node, f"ip xfrm state add {sa(0x2001)} {GCM} offload packet dev wan dir out")
    ip(node, f"ip xfrm state add {sa(0x2002)} {GCM} offload dev lan1 dir out")
    ip(node, f"ip xfrm state add {sa(0x2003)} {GCM}")
    ip(node, "ip xfrm policy add dir out priority 10 offload packet dev wan")
    states, policies = node.device_down(wan)
    assert sorted(x.spi for x in states) == [0x2000, 0x2001] and len(policies) == 1
    assert wan.states == [] and wan.policies == []
    assert wan.calls[-3:] == ["state_delete 0x2001", "state_delete 0x2000", "policy_delete out"]
    assert sorted(x.spi for x in node.states) == [0x2002, 0x2003]
    # Without esp-hw-offload (NETIF_F_HW_ESP) nothing is flushed.
    lan1.features = frozenset()
    before = snapshot(node, lan1)
    assert node.device_down(lan1) == ([], [])
    assert snapshot(node, lan1) == before
