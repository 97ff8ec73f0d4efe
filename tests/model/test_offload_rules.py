"""offload_ok's header rule (airoha-dsa-xfrm.md 3.4 check 4): IPv4 options or an IPv6
extension header, as the kernel's ipv6_ext_hdr() counts them, keep a packet from offload."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.model.journey.offload_rules import offload_ok


def _v6(next_header: int) -> bytes:
    head = bytearray(40)
    head[0] = 0x60
    head[4:6] = (8).to_bytes(2, "big")
    head[6] = next_header
    return bytes(head) + bytes(8)


@pytest.mark.parametrize(
    ("next_header", "offloaded"),
    [
        (6, True),
        (17, True),
        (58, True),
        (132, True),
        (47, True),
        (50, True),  # upper layers
        (0, False),
        (43, False),
        (44, False),
        (51, False),
        (59, False),
        (60, False),  # ext hdrs
    ],
)
def test_ipv6_extension_headers_are_the_kernels(next_header: int, offloaded: bool) -> None:
    s = Session()
    s.execute(
        "ip xfrm state add src 2001:db8:2::1 dst 2001:db8:2::2 proto esp spi 0x1000 "
        "mode transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
        "enc aes 0x000102030405060708090a0b0c0d0e0f offload dev wan dir out"
    )
    node = s.lab.node("ap")
    (state,) = node.xfrm.states
    verdict = offload_ok(state, node.dev("wan"), _v6(next_header), 100)
    assert (verdict.datapath == "crypto") is offloaded, verdict.reason
