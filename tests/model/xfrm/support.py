"""Shared set-up for the XFRM tests: a node with a packet-offload capable ``wan``."""

from __future__ import annotations

import shlex

from esplab.model.kernel.xfrm.tables import XfrmNode, XfrmSettings
from esplab.model.tools.iproute2.xfrm import IpResult, run_ip_xfrm

from .fakes import FakeDevice, resolver

__all__ = ["ip", "listing", "make_node", "snapshot"]

AUTH = "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314"
ENC = "enc aes 0x000102030405060708090a0b0c0d0e0f"
GCM = "aead 'rfc4106(gcm(aes))' 0x00112233445566778899aabbccddeeff01020304 128"


def make_node(*devices: FakeDevice, rule: str = "rfc") -> XfrmNode:
    settings = XfrmSettings(policy_priority_rule="mainline" if rule == "mainline" else "rfc")
    return XfrmNode(settings=settings, resolve_dev=resolver(*devices))


def ip(node: XfrmNode, line: str) -> IpResult:
    """Run one shell-style ``ip xfrm`` line."""
    return run_ip_xfrm(node, shlex.split(line))


def listing(node: XfrmNode, *, stats: bool = False) -> str:
    opt = "-s " if stats else ""
    return ip(node, f"ip {opt}xfrm state").text + ip(node, f"ip {opt}xfrm policy").text


def snapshot(node: XfrmNode, *devices: FakeDevice) -> tuple[object, ...]:
    """Everything a failed command must leave alone."""
    return (
        listing(node, stats=True),
        node.mib.snapshot(),
        [(d.name, list(d.states), list(d.policies)) for d in devices],
    )
