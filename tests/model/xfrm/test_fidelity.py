"""Kernel and iproute2 details: policy types, address text, seq, lastused."""

from __future__ import annotations

import pytest

from esplab.errors import KernelError
from esplab.model.xfrm.tables import XfrmNode, XfrmSettings

from .support import ip

POL = "src 192.0.2.1/32 dst 192.0.2.2/32 dir out"


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
