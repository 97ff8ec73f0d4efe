"""``load``: printed lines the loader must read, or refuse by name and column."""

from __future__ import annotations

import pytest

from esplab.errors import LabFileError
from esplab.model.kernel.xfrm.objects import XfrmMark
from esplab.model.tools.iproute2.xfrm_load import load_xfrm
from esplab.model.tools.iproute2.xfrm_printer import format_state

from .fakes import FakeDevice
from .support import listing, make_node

HEAD = (
    "src 192.0.2.1 dst 192.0.2.2\n"
    "\tproto esp spi 0x00000001 reqid 0 mode transport\n"
    "\treplay-window 0 \n"
)
AEAD = f"\taead rfc4106(gcm(aes)) 0x{'00' * 20} 128\n"


@pytest.mark.parametrize(
    ("mark_line", "mark"),
    [
        # iproute2 xfrm_xfrma_print + xfrm_output_mark_print: the output mark follows
        # the mark on its line, or has a line of its own (as iproute2 6.15 prints them).
        ("\tmark 0x5/0xff output-mark 0xd0/0xffffffff\n", XfrmMark(5, 0xFF)),
        ("\toutput-mark 0xd0/0xffffffff\n", None),
    ],
)
def test_output_mark_loads_and_prints_back(mark_line: str, mark: XfrmMark | None) -> None:
    node = make_node(FakeDevice("wan"))
    load_xfrm(node, HEAD + mark_line + AEAD, source="dump.txt")
    (state,) = node.states
    assert state.mark == mark
    assert state.output_mark == XfrmMark(0xD0, 0xFFFFFFFF)
    assert mark_line in format_state(state)


def test_a_damaged_output_mark_is_named() -> None:
    node = make_node(FakeDevice("wan"))
    with pytest.raises(LabFileError, match=r"dump\.txt:4:2: expected 'mark VALUE/MASK"):
        load_xfrm(node, HEAD + "\toutput-mark 0xd0\n" + AEAD, source="dump.txt")
    assert node.states == ()


def test_mark_line_alone_still_loads() -> None:
    node = make_node(FakeDevice("wan"))
    load_xfrm(
        node,
        HEAD + "\tmark 0x5/0xff \n" + AEAD + "\tanti-replay context: seq 0x0, "
        "oseq 0x0, bitmap 0x00000000\n",
    )
    assert node.states[0].mark is not None and node.states[0].mark.value == 5


def test_offload_line_without_mode_is_crypto_offload() -> None:
    # iproute2 before 6.2 (no XFRM_OFFLOAD_PACKET) prints no "mode" word.
    node = make_node(FakeDevice("wan"))
    load_xfrm(
        node,
        HEAD + AEAD + "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
        "\tcrypto offload parameters: dev wan dir out\n",
    )
    x = node.states[0]
    assert x.offload is not None and (x.offload.type, x.offload.dev, x.offload.dir) == (
        "crypto",
        "wan",
        "out",
    )
    assert "\tcrypto offload parameters: dev wan dir out mode crypto\n" in listing(node)


def test_policy_security_context_is_named() -> None:
    # xfrm_policy_info_print prints XFRMA_SEC_CTX right after the selector line.
    dump = (
        "src 192.0.2.1/32 dst 192.0.2.2/32 \n"
        "\tsecurity context system_u:object_r:ipsec_spd_t:s0 \n"
        "\tdir out priority 0 \n"
    )
    node = make_node()
    with pytest.raises(LabFileError) as err:
        load_xfrm(node, dump, source="p.txt")
    msg = str(err.value)
    assert msg.startswith("p.txt:2:2: cannot read this line of a policy: 'security context")
    assert "security contexts (ctx) are not modelled" in msg and "expected 'dir" not in msg
    assert node.policies == ()


def test_state_security_context_is_named() -> None:
    node = make_node()
    with pytest.raises(LabFileError) as err:
        load_xfrm(node, HEAD + AEAD + "\tsecurity context system_u:object_r:x:s0 \n")
    assert err.value.line == 5 and "security contexts (ctx) are not modelled" in str(err.value)
