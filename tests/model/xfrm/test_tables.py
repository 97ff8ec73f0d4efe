"""SAD/SPD semantics with the kernel's netlink results (reference 3.5, fact 6.26)."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from esplab.errors import DuplicateSA, EsplabError, KernelError, ToolUsageError
from esplab.model.kernel.xfrm.objects import PolicyId, StateId
from esplab.model.kernel.xfrm.tables import XfrmNode

from .fakes import FakeDevice
from .support import GCM, ip, listing, make_node, snapshot

SA = "src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000"
POL = "src 192.0.2.1/32 dst 192.0.2.2/32 dir out"
TMPL = "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"


def populated() -> tuple[XfrmNode, FakeDevice]:
    wan = FakeDevice("wan", supports_advance_esn=False)
    node = make_node(wan)
    ip(node, f"ip xfrm state add {SA} reqid 1 {GCM}")
    ip(
        node,
        f"ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x1001 {GCM} "
        "offload packet dev wan dir in",
    )
    ip(node, f"ip xfrm policy add {POL} priority 10 {TMPL}")
    ip(
        node,
        "ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out priority 100 "
        f"{TMPL} offload packet dev wan",
    )
    return node, wan


def test_fact_6_26_netlink_codes() -> None:
    node, _ = populated()
    # Duplicate SA: -EEXIST "File exists" (DuplicateSA is the KernelError for it).
    with pytest.raises(DuplicateSA) as dup:
        ip(node, f"ip xfrm state add {SA} {GCM}")
    assert dup.value.errno_name == "EEXIST"
    assert str(dup.value).startswith("RTNETLINK answers: File exists")
    # Missing SA: -ESRCH "No such process".
    with pytest.raises(KernelError, match="No such process") as missing:
        ip(node, "ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000")
    assert missing.value.errno_name == "ESRCH"
    with pytest.raises(KernelError, match="No such process"):
        ip(node, "ip xfrm state get src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2000")
    # Duplicate policy: -EEXIST; missing policy: -ENOENT.
    with pytest.raises(KernelError) as pdup:
        ip(node, f"ip xfrm policy add {POL} priority 99 {TMPL}")
    assert pdup.value.errno_name == "EEXIST"
    with pytest.raises(KernelError, match="No such file or directory") as pmiss:
        ip(node, "ip xfrm policy delete src 192.0.2.9/32 dst 192.0.2.2/32 dir out")
    assert pmiss.value.errno_name == "ENOENT"
    with pytest.raises(KernelError, match="No such file or directory"):
        ip(node, "ip xfrm policy get index 4242 dir out")


def test_flush_of_empty_tables_succeeds() -> None:
    node = make_node()
    assert ip(node, "ip xfrm state flush").text == ""
    assert ip(node, "ip xfrm policy flush").text == ""
    assert ip(node, "ip xfrm state deleteall").states == ()


def test_flush_deletes_and_releases_offload() -> None:
    node, wan = populated()
    gone = ip(node, "ip xfrm state flush").states
    assert len(gone) == 2 and node.states == ()
    assert wan.states == [] and "state_delete 0x1001" in wan.calls
    assert len(ip(node, "ip xfrm policy flush").policies) == 2
    assert wan.policies == [] and node.policies == ()


def test_flush_proto_and_deleteall_filter() -> None:
    node, _ = populated()
    assert ip(node, "ip xfrm state flush proto ah").states == ()
    gone = ip(node, "ip xfrm state deleteall dst 192.0.2.1").states
    assert [x.spi for x in gone] == [0x1001]
    assert ip(node, "ip xfrm state count").text == "\t SAD count 1\n"
    gone_p = ip(node, "ip xfrm policy deleteall dir out priority 10").policies
    assert [p.priority for p in gone_p] == [10]


def test_get_delete_by_id_and_mark() -> None:
    node = make_node()
    ip(node, f"ip xfrm state add {SA} {GCM} mark 7")
    # __xfrm_state_lookup: mark & x.mark.m must equal x.mark.v.
    with pytest.raises(KernelError, match="No such process"):
        ip(node, f"ip xfrm state get {SA}")
    assert ip(node, f"ip xfrm state get {SA} mark 7").states[0].spi == 0x1000
    x = node.get_state(StateId(ip_address("192.0.2.2"), 0x1000, 50, 7))
    assert x.mark is not None and x.mark.value == 7
    node.delete_state(StateId(ip_address("192.0.2.2"), 0x1000, 50, 7))
    assert node.states == ()


def test_same_spi_different_mark_is_not_a_duplicate() -> None:
    node = make_node()
    ip(node, f"ip xfrm state add {SA} {GCM} mark 1")
    ip(node, f"ip xfrm state add {SA} {GCM} mark 2")
    assert ip(node, "ip xfrm state count").text == "\t SAD count 2\n"


def test_update_changes_only_what_xfrm_state_update_copies() -> None:
    node = make_node()
    ip(node, f"ip xfrm state add {SA} {GCM} encap espinudp 4500 4500 0.0.0.0")
    other_key = "aead 'rfc4106(gcm(aes))' 0xffffffffffffffffffffffffffffffff01020304 128"
    ip(
        node,
        f"ip xfrm state update {SA} {other_key} encap espinudp 4501 4502 0.0.0.0 "
        "limit byte-hard 100 if_id 9",
    )
    x = node.states[0]
    # Kernel xfrm_state_update: encap ports, lifetimes and if_id change; keys do not.
    assert x.encap is not None and (x.encap.sport, x.encap.dport) == (4501, 4502)
    assert x.lifetime.hard_byte_limit == 100 and x.if_id == 9
    assert x.aead is not None and x.aead.key.startswith(b"\x00\x11")
    with pytest.raises(KernelError, match="Invalid argument"):
        ip(node, f"ip xfrm state update {SA} {GCM}")
    with pytest.raises(KernelError, match="No such process"):
        ip(node, f"ip xfrm state update src 192.0.2.1 dst 192.0.2.2 proto esp spi 9 {GCM}")


def test_policy_update_replaces_and_keeps_index() -> None:
    node = make_node()
    ip(node, f"ip xfrm policy add {POL} {TMPL}")
    first = node.policies[0]
    ip(node, f"ip xfrm policy update {POL} priority 3 action block")
    (p,) = node.policies
    assert p is not first and p.index == first.index and p.priority == 3
    assert p.action == "block" and p.templates == ()
    # XFRM_MSG_UPDPOLICY of a policy that does not exist adds it.
    ip(node, "ip xfrm policy update src 10.0.0.0/8 dst 10.0.0.0/8 dir in")
    assert len(node.policies) == 2


def test_policy_indexes_follow_xfrm_gen_index() -> None:
    # Generator | dir, stepping by 8: out=1, in=8, out=17, fwd=26.
    node = make_node()
    for line in ("dir out", "dir in", "src 10.0.0.1 dir out", "dir fwd"):
        ip(node, f"ip xfrm policy add {line}")
    assert [p.index for p in reversed(node.policies)] == [1, 8, 17, 26]
    assert ip(node, "ip xfrm policy get index 17 dir out").policies[0].sel.src.ip == ip_address(
        "10.0.0.1"
    )
    with pytest.raises(KernelError, match="Policy index doesn't match direction"):
        ip(node, "ip xfrm policy add src 10.9.9.9 dir in index 9")
    ip(node, "ip xfrm policy add src 10.9.9.9 dir in index 40")
    assert node.policies[0].index == 40


def test_policy_identity_includes_mark_and_type() -> None:
    node = make_node()
    node.settings.sub_policy = True  # ptype sub needs CONFIG_XFRM_SUB_POLICY
    ip(node, f"ip xfrm policy add {POL}")
    ip(node, f"ip xfrm policy add {POL} mark 1")
    ip(node, f"ip xfrm policy add {POL} ptype sub")
    assert len(node.policies) == 3
    node.delete_policy(PolicyId("out", sel=node.policies[-1].sel))
    assert len(node.policies) == 2


FAILING = [
    f"ip xfrm state add {SA} {GCM}",  # EEXIST
    f"ip xfrm state add {SA} {GCM} offload dev wan dir out",  # device add, then EEXIST undo
    "ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x3000",  # ESRCH
    f"ip xfrm state update src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 {GCM}",  # ESRCH
    f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 {GCM} flag esn "
    "replay-window 32 offload dev wan dir out",  # no advance_esn
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 "
    "enc aes 0x0001020304050607080910111213",  # 14-byte AES key
    f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 {GCM} dir out "
    "replay-window 8",  # output SA with a replay window
    f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 mode transport {GCM} "
    "tfcpad 16",  # TFC padding needs tunnel mode
    f"ip xfrm policy add {POL} {TMPL}",  # EEXIST
    "ip xfrm policy delete src 192.0.2.1/32 dst 192.0.2.3/32 dir out",  # ENOENT
    "ip xfrm policy add src 10.0.0.0/8 dst 10.0.0.0/8 dir out priority 10 "
    "offload packet dev wan",  # rfc rule: device add, then EINVAL undo
    "ip xfrm policy add src 10.0.0.0/8 dst 10.0.0.0/8 dir out priority 1 "
    "tmpl proto esp mode tunnel level use",  # optional tunnel template in an out policy
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 aead bogus 0x00 128",
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7",
]


@pytest.mark.parametrize("line", FAILING)
def test_every_failed_command_leaves_the_tables_unchanged(line: str) -> None:
    node, wan = populated()
    before = snapshot(node, wan)
    calls = len(wan.calls)
    with pytest.raises(EsplabError):
        ip(node, line)
    assert snapshot(node, wan) == before
    # Whatever the device was asked to add, it was asked to delete again.
    adds = [c for c in wan.calls[calls:] if "_add" in c]
    deletes = [c for c in wan.calls[calls:] if "_delete" in c]
    assert len(adds) == len(deletes)


def test_failed_packet_add_is_not_left_on_the_device() -> None:
    wan = FakeDevice("wan", state_errno="ENOSPC")
    node = make_node(wan)
    with pytest.raises(KernelError, match="No space left on device"):
        ip(node, f"ip xfrm state add {SA} {GCM} offload packet dev wan dir out")
    assert wan.states == [] and listing(node) == ""


def test_listing_filters() -> None:
    node, _ = populated()
    assert "spi 0x00001001" not in ip(node, "ip xfrm state list dst 192.0.2.2").text
    assert ip(node, "ip -6 xfrm state").text == ""
    assert ip(node, "ip xfrm policy list dir in").text == ""
    text = ip(node, "ip xfrm policy list src 198.51.100.0/24").text
    assert text.startswith("src 198.51.100.0/24 dst 203.0.113.0/24 \n")
    with pytest.raises(ToolUsageError):
        ip(node, "ip xfrm policy list dir sideways")
