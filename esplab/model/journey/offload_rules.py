"""Which datapath one outbound packet takes for an offloaded SA (``xfrm_dev_offload_ok``).

The core's checks, in the kernel's order (airoha-dsa-xfrm.md 3.4) [C], then the
driver's own veto (the JM series' ``offload_ok``, 3.10) [C for that series; its
use on the EN7581 model is a design choice, M]:

1. the SA is bound to the device the packet leaves by;
2. the device still has ``esp-hw-offload`` on;
3. the ESP packet fits the device MTU;
4. IPv4 without options, IPv6 without extension headers;
5. (packet offload) the packet is not a fragment: the seed series drops
   fragments, with no software fallback (seed 001) [C].

When a check fails, crypto offload quietly takes the software path (3.2, 6.18)
and packet offload drops the packet, counting ``XfrmOutError`` (6.18) [C].
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from esplab.model.kernel.stack.netdev import NetDev
from esplab.model.kernel.xfrm.objects import XfrmState
from esplab.model.stage import Fidelity

__all__ = ["OffloadVerdict", "offload_ok"]

Datapath = Literal["sw", "sw+aead", "crypto", "packet", "drop"]


@dataclass(frozen=True)
class OffloadVerdict:
    datapath: Datapath
    reason: str
    fidelity: Fidelity = "C"
    #: Why, at length (``explain``); the reason itself when empty.
    why: str = ""


#: The packet-offload series that drops fragments, as a user can find it.
_SEED_001 = (
    'netdev: "[PATCH xfrm-next v3 0/6] Extend XFRM core to allow full offload '
    'configuration", Leon Romanovsky, 2022'
)

#: Why an offloaded SA's packet goes to the device: every check passed.
CHECKS_PASSED = (
    "xfrm_dev_offload_ok and the driver's offload_ok passed every check "
    "(airoha-dsa-xfrm.md 3.4): the SA is bound to the device the packet leaves by, the "
    "device has esp-hw-offload on, the ESP packet fits its MTU, and the packet has no "
    "IPv4 options or IPv6 extension headers (and, under packet offload, is no fragment)"
)


# The kernel's ipv6_ext_hdr(): hop-by-hop, routing, fragment, AH, no next header,
# destination options. Any other next header (TCP, UDP, SCTP, GRE, ESP...) is none.
_V6_EXT = frozenset({0, 43, 44, 51, 59, 60})


def _v6_has_ext(packet: bytes) -> bool:
    return len(packet) >= 40 and packet[6] in _V6_EXT


def _fragment(packet: bytes) -> bool:
    if packet[0] >> 4 == 6:
        return len(packet) >= 40 and packet[6] == 44
    return bool(struct.unpack("!H", packet[6:8])[0] & 0x3FFF)


def offload_ok(state: XfrmState, dev: NetDev, packet: bytes, esp_len: int) -> OffloadVerdict:
    """The datapath for ``packet`` under the offloaded ``state`` leaving by ``dev``."""
    assert state.offload is not None
    packet_mode = state.offload.type == "packet"
    fail: Datapath = "drop" if packet_mode else "sw"
    if state.offload.dev != dev.name:
        return OffloadVerdict(
            fail,
            f"SA is offloaded to {state.offload.dev}, the packet "
            f"leaves by {dev.name} (check 2 of airoha-dsa-xfrm.md 3.4); fix: route "
            f"{state.dst} by {state.offload.dev} (ip route replace {state.dst} dev "
            f"{state.offload.dev}) or offload the SA to {dev.name}",
        )
    if not dev.has_hw_esp:
        return OffloadVerdict(
            fail,
            f"esp-hw-offload is off on {dev.name} (airoha-dsa-xfrm.md 3.7); fix: ethtool -K "
            f"{dev.name} esp-hw-offload on",
            "D",
        )
    if esp_len > dev.mtu:
        return OffloadVerdict(
            fail,
            f"ESP packet of {esp_len} bytes exceeds mtu {dev.mtu} (check 3 of "
            f"airoha-dsa-xfrm.md 3.4); fix: ip link set {dev.name} mtu {esp_len}, or send "
            f"at most {len(packet) - (esp_len - dev.mtu)} bytes",
        )
    if packet[0] >> 4 == 4 and packet[0] & 0x0F != 5:
        return OffloadVerdict(
            fail,
            "IPv4 header has options (check 4 of airoha-dsa-xfrm.md 3.4); fix: send it "
            "without options",
        )
    if packet[0] >> 4 == 6 and _v6_has_ext(packet):
        return OffloadVerdict(
            fail,
            "IPv6 extension header present (check 4 of airoha-dsa-xfrm.md 3.4); fix: send "
            "it without them",
        )
    if packet_mode and _fragment(packet):
        return OffloadVerdict("drop", f"fragments are dropped under packet offload ({_SEED_001})")
    return _passed(state.offload.type, dev.name)


@lru_cache(maxsize=64)
def _passed(offload: Datapath, dev: str) -> OffloadVerdict:
    """The verdict of every check passed, by offload type and device: made once, as it
    is the same for every packet."""
    return OffloadVerdict(offload, f"{offload} offload to {dev}", "C", CHECKS_PASSED)
