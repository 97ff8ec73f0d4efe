"""Kernel and iproute2 details: policy types, address text, seq, lastused."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from esplab.errors import KernelError
from esplab.model.kernel.xfrm.tables import XfrmNode, XfrmSettings
from esplab.model.tools.iproute2.xfrm_load import load_xfrm
from esplab.model.tools.iproute2.xfrm_printer import format_addr

from .support import GCM, ip

POL = "src 192.0.2.1/32 dst 192.0.2.2/32 dir out"
SA = f"src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 {GCM}"


@pytest.mark.parametrize(
    "line",
    [
        f"ip xfrm policy add {POL} ptype sub",
        f"ip xfrm policy get {POL} ptype sub",
        f"ip xfrm policy delete {POL} ptype sub",
        "ip xfrm policy flush ptype sub",
    ],
)
def test_ptype_sub_without_sub_policy_is_einval(line: str) -> None:
    # net/xfrm/xfrm_user.c verify_policy_type: XFRM_POLICY_TYPE_SUB only
    # #ifdef CONFIG_XFRM_SUB_POLICY, else -EINVAL.
    node = XfrmNode()
    with pytest.raises(KernelError) as err:
        ip(node, line)
    assert err.value.errno_name == "EINVAL" and "Invalid policy type" in str(err.value)
    assert ip(node, "ip xfrm policy").text == ""


def test_ptype_sub_with_sub_policy_prints_ptype() -> None:
    # iproute2 xfrm_policy_info_print: XFRMA_POLICY_TYPE -> "ptype %s ".
    node = XfrmNode(settings=XfrmSettings(sub_policy=True))
    ip(node, f"ip xfrm policy add {POL} ptype sub")
    ip(node, f"ip xfrm policy add {POL}")
    assert ip(node, "ip xfrm policy").text == (
        "src 192.0.2.1/32 dst 192.0.2.2/32 \n\tdir out priority 0 ptype main \n"
        "src 192.0.2.1/32 dst 192.0.2.2/32 \n\tdir out priority 0 ptype sub \n"
    )
    ip(node, "ip xfrm policy flush ptype sub")
    assert "ptype sub" not in ip(node, "ip xfrm policy").text


@pytest.mark.parametrize(
    ("seq", "shown"),
    [(0, "0x00000000"), (1, "0x16777216"), (255, "0x4278190080"), (0x01020304, "0x67305985")],
)
def test_seq_prints_byte_swapped_in_decimal(seq: int, shown: str) -> None:
    # ip/xfrm_state.c xfrm_seq_parse: get_be32 (htonl); ipxfrm.c xfrm_state_info_print:
    # fprintf(fp, "seq 0x%08u ", xsinfo->seq) with no ntohl, on a little-endian board.
    node = XfrmNode()
    ip(node, f"ip xfrm state add {SA} seq {seq}")
    text = ip(node, "ip -s xfrm state").text
    assert f"\treplay-window 0 seq {shown} flag  (0x00000000)\n" in text
    again = XfrmNode()
    load_xfrm(again, text)
    assert again.states[0].seq == seq
    assert ip(again, "ip -s xfrm state").text == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # glibc 2.36 inet_ntop6 (what rt_addr_n2a uses), as socket.inet_ntop gives.
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1"),
        ("::192.0.2.2", "::192.0.2.2"),
        ("::2", "::2"),
        ("::ffff", "::ffff"),
        ("::1:2", "::0.1.0.2"),
        ("::1", "::1"),
        ("::", "::"),
        ("2001:db8::1", "2001:db8::1"),
        ("::ffff:0:1", "::ffff:0.0.0.1"),
        ("0:0:0:0:1:ffff:c000:201", "::1:ffff:c000:201"),
        ("192.0.2.1", "192.0.2.1"),
    ],
)
def test_format_addr_is_glibc_inet_ntop(text: str, shown: str) -> None:
    assert format_addr(ip_address(text)) == shown


def test_mapped_addresses_print_dotted_in_states_and_policies() -> None:
    node = XfrmNode()
    ip(
        node,
        "ip xfrm state add src ::ffff:192.0.2.1 dst ::192.0.2.2 proto esp spi 1 mode tunnel "
        f"{GCM} sel src ::ffff:10.0.0.0/104 dst ::/0",
    )
    ip(
        node,
        "ip xfrm policy add src ::ffff:10.0.0.0/104 dst ::/0 dir out tmpl src ::ffff:192.0.2.1 "
        "dst ::192.0.2.2 proto esp mode tunnel",
    )
    text = ip(node, "ip xfrm state").text + ip(node, "ip xfrm policy").text
    assert text.startswith("src ::ffff:192.0.2.1 dst ::192.0.2.2\n")
    assert "\tsel src ::ffff:10.0.0.0/104 dst ::/0 \n" in text
    assert "src ::ffff:10.0.0.0/104 dst ::/0 \n\tdir out priority 0 \n" in text
    assert "\ttmpl src ::ffff:192.0.2.1 dst ::192.0.2.2\n" in text
    again = XfrmNode()
    load_xfrm(again, text)
    assert ip(again, "ip xfrm state").text + ip(again, "ip xfrm policy").text == text
