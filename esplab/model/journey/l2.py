"""Ethernet framing on the wires, and the DSA path between the ap and its lan ports.

TX from the ap to ``lanN`` (airoha-dsa-xfrm.md 1.3, 2.2, 2.4):

* ``lanN.tagger``: the MTK tagger pushes ``00 (1<<N) 00 00`` (or merges with an
  802.1Q/802.1ad header) [C];
* ``eth0.dma``: Airoha's driver moves the tag into the QDMA descriptor: the DMA
  buffer holds the plain frame and ``msg0.SP_TAG`` the port mask [C];
* ``eth0.wire``: GDM1 puts the special tag back on the internal link [D];
* ``lanN.wire``: the switch strips it; the frame leaves port N untagged [C].

RX from ``lanN`` runs the other way: the switch tags for the CPU (``00 0N 00 00``,
other bits modelled as zero [U]) on ``eth0.wire``, and with STAG_EN the GDM strips
it and reports the port in RX ``msg0.SPTAG`` (``eth0.dma``) [C].
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import TYPE_CHECKING

from esplab.errors import InvalidValue
from esplab.model.hw.switch import DSA_TAG_LEN
from esplab.model.stage import Stage

if TYPE_CHECKING:
    from esplab.model.kernel.node import Node
    from esplab.model.kernel.stack.netdev import NetDev

__all__ = [
    "ETH_P_8021AD",
    "ETH_P_8021Q",
    "ETH_P_IP",
    "ETH_P_IPV6",
    "count_conduit",
    "dsa_rx_stages",
    "dsa_tx_stages",
    "ether_frame",
    "mac_bytes",
    "parse_mac",
]

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8


def mac_bytes(mac: str) -> bytes:
    """``aa:bb:cc:dd:ee:ff`` as six bytes."""
    return bytes(int(x, 16) for x in mac.split(":"))


def parse_mac(text: str) -> str:
    """A link-layer address as typed (``lladdr``): six hex octets, ``:``-separated,
    returned in lower case; anything else is an InvalidValue naming it."""
    octets = text.split(":")
    if len(octets) != 6 or not all(
        1 <= len(o) <= 2 and all(c in "0123456789abcdefABCDEF" for c in o) for o in octets
    ):
        raise InvalidValue(
            f"'{text}' is not a link-layer address", valid="six hex octets, e.g. 02:00:5e:10:00:01"
        )
    return ":".join(f"{int(o, 16):02x}" for o in octets)


def ether_frame(dst: str, src: str, payload: bytes) -> bytes:
    """An Ethernet II frame for an IP packet (no FCS, as captures show it)."""
    return _ether_header(dst, src, bool(payload[:1]) and payload[0] >> 4 == 6) + payload


@lru_cache(maxsize=1024)
def _ether_header(dst: str, src: str, ipv6: bool) -> bytes:
    """The 14 header bytes for (dst, src, IPv6?); MACs are few, so this stays small."""
    return mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", ETH_P_IPV6 if ipv6 else ETH_P_IP)


#: Why the conduit's counters move with its user ports' traffic.
CONDUIT_COUNTS = (
    "eth0's counters are GDM1's MIB (airoha_update_hw_stats reads REG_FE_GDM_*_OK_*_CNT), "
    "so every user port's frame counts on the conduit too, with its 4-byte tag [D]; "
    "whether the MIB includes the FCS is not modelled"
)


# QDMA words the model has no ring state for (airoha-dsa-xfrm.md 1.6). The model keeps
# no ring position, so every descriptor is shown in slot 0 of a freshly set-up ring:
# TX, the ring's free list starts in index order (airoha_qdma_init_tx_queue) and
# airoha_dev_xmit writes NEXT_ID = the index of the next free entry [C], so slot 0
# carries 1; RX, airoha_qdma_fill_rx_queue writes NEXT_ID = the ring head after this
# entry [C], also 1 (whether the hardware keeps word 3 on write-back is not known [U]).
#: The ring slot every descriptor is shown in (a model choice).
QDMA_SLOT = 0
#: NEXT_ID of that slot.
QDMA_NEXT_ID = QDMA_SLOT + 1
#: Buffer DMA addresses (model choices: plausible values, not observed). The DMA mask
#: is 32 bits (airoha_probe) [C]; the EN7581's DRAM from 0x80000000 is [U]. An RX
#: buffer starts AIROHA_RX_HEADROOM (NET_SKB_PAD 64 + NET_IP_ALIGN 2 on arm64 [D])
#: into a page-pool page; a TX buffer is wherever skb->data was mapped.
QDMA_RX_BUF_ADDR = 0x8A000000 + 66
QDMA_TX_BUF_ADDR = 0x8B000040

QDMA_WORDS_WHY = (
    f"ring slot {QDMA_SLOT} of a fresh ring, so NEXT_ID={QDMA_NEXT_ID} (the driver writes "
    "the next entry's index) [D]; the buffer address is a model choice [U]"
)

# The eth0.dma reasons, joined once here rather than for every frame.
_TX_DMA_WHY_TAIL = (
    "; queue channel = queue_mapping mod 4 (1.3, 6.5). DONE is clear: the "
    "driver writes the descriptor and the QDMA sets DONE when it has sent it "
    "(airoha_qdma_tx_napi_poll) [C]; " + QDMA_WORDS_WHY + ". " + CONDUIT_COUNTS
)
_TX_DMA_WHY_VLAN = (
    "Airoha's driver puts the VLAN TPID back in the frame and the port mask in "
    "the TX descriptor" + _TX_DMA_WHY_TAIL
)
_TX_DMA_WHY = (
    "Airoha's driver removes the tag from an untagged frame and puts the "
    "port mask in the TX descriptor" + _TX_DMA_WHY_TAIL
)
_RX_DMA_WHY = (
    "with STAG_EN the hardware strips the special tag and reports the source "
    "port in RX msg0 bits 21:14; DSA picks lanN from that metadata (1.3, 6.6). "
    "DONE is set: airoha_qdma_rx_process stops at a descriptor without it [C]; "
    "msg1 IP4/IP6/L4_VALID/L4F are what a downstream driver's checksum test "
    "reads (mainline does not read them) [D], IP4F stays 0 [U]; "
    + QDMA_WORDS_WHY
    + ". "
    + CONDUIT_COUNTS
)


def dsa_tx_stages(frame: bytes, port: int, dev: str, snapshots: bool) -> list[Stage]:
    """The stages between a DSA user port's xmit and its wire (CPU to switch)."""
    from esplab.layers.dsa import airoha_dsa_xmit_bytes, mtk_tag_from_cpu, mtk_tag_xmit

    tagged = mtk_tag_xmit(frame, port)
    keep = snapshots
    vlan = int.from_bytes(frame[12:14], "big") in (ETH_P_8021Q, ETH_P_8021AD)
    vid = int.from_bytes(frame[14:16], "big") & 0x0FFF if vlan else 0
    # The descriptor and the frame past the switch are snapshots only (the decisions do
    # not depend on them): without tracing nothing builds them.
    desc = (
        airoha_dsa_xmit_bytes(tagged, addr=QDMA_TX_BUF_ADDR, next_id=QDMA_NEXT_ID) if keep else None
    )
    untagged = mtk_tag_from_cpu(tagged)[1] if keep else None
    return [
        Stage(
            f"{dev}.tagger",
            dev,
            f"MTK tag merged with the VLAN {vid} header for switch port {port}"
            if vlan
            else f"MTK tag pushed for switch port {port}",
            why="VLAN case: nothing is pushed; the TPID becomes 01 (802.1Q) or 02 (802.1ad) "
            "and 1<<port, the TCI stays (airoha-dsa-xfrm.md 2.2)"
            if vlan
            else "the mtk tagger inserts 4 bytes after the source MAC: 00, 1<<port, 00 00 "
            "(airoha-dsa-xfrm.md 2.2)",
            fidelity="C",
            data=tagged if keep else None,
            kind="mtk",
        ),
        Stage(
            "eth0.dma",
            "eth0",
            f"TPID restored, port mask in QDMA msg0.SP_TAG=0x{1 << port:04x}, channel {port % 4}"
            if vlan
            else f"tag moved into QDMA msg0.SP_TAG=0x{1 << port:04x}, channel {port % 4}",
            why=_TX_DMA_WHY_VLAN if vlan else _TX_DMA_WHY,
            fidelity="C",
            counters={"tx_packets": 1},
            data=desc,
            kind="qdma",
        ),
        Stage(
            "eth0.wire",
            "eth0",
            "special tag on the GDM1 <-> switch CPU port 6 link",
            why="the hardware puts the tag back on the internal link (airoha-dsa-xfrm.md 2.4)",
            fidelity="D",
            data=tagged if keep else None,
            kind="mtk",
        ),
        Stage(
            f"{dev}.wire",
            dev,
            f"switch port {port} sends the frame with its VLAN {vid} header"
            if vlan
            else f"switch port {port} sends the frame untagged",
            why="the switch strips the special tag on egress of a user port (2.2); a "
            "standalone port is not VLAN-aware and leaves the frame's own VLAN header"
            if vlan
            else "the switch strips the special tag on egress of a user port (2.2)",
            fidelity="D" if vlan else "C",
            data=untagged,
            kind="ether",
        ),
    ]


def dsa_rx_stages(frame: bytes, port: int, dev: str, snapshots: bool) -> list[Stage]:
    """The stages between a lan wire and the DSA user port's receive (switch to CPU)."""
    from esplab.layers.dsa import mtk_tag_to_cpu
    from esplab.layers.qdma import airoha_qdma_rx_bytes

    tagged = mtk_tag_to_cpu(frame, port)
    keep = snapshots
    desc = (
        airoha_qdma_rx_bytes(
            frame, sptag=port, sport=0x10, addr=QDMA_RX_BUF_ADDR, next_id=QDMA_NEXT_ID
        )
        if keep
        else None
    )
    return [
        Stage(
            "eth0.wire",
            "eth0",
            f"switch tags the frame from port {port} for the CPU",
            why="towards the CPU the tag is 00 0N 00 00; Linux reads only bits 2:0 of byte "
            "13, the other bits are modelled as zero (2.3) [U]",
            fidelity="U",
            data=tagged if keep else None,
            kind="mtk-rx",
        ),
        Stage(
            "eth0.dma",
            "eth0",
            f"GDM1 strips the tag (STAG_EN), RX msg0.SPTAG={port}",
            why=_RX_DMA_WHY,
            fidelity="C",
            counters={"rx_packets": 1},
            data=desc,
            kind="qdma-rx",
        ),
    ]


def count_conduit(node: Node, user: NetDev, frame: bytes, *, tx: bool) -> None:
    """A user port's ``frame`` crosses the conduit (GDM1) with its special tag: the
    conduit's MIB counts it (see ``CONDUIT_COUNTS``) [D]; and the switch, the front
    port's MIB and the CPU port's (:func:`count_switch_ports`)."""
    if user.conduit is None:
        return
    conduit = node.dev(user.conduit)
    counters = conduit.counters
    tagged = len(frame) + tag_growth(frame, tx=tx)
    if tx:
        counters.tx_packets += 1
        counters.tx_bytes += tagged
    else:
        counters.rx_packets += 1
        counters.rx_bytes += tagged
    count_switch_ports(user, conduit, frame, tx=tx)


#: The TPIDs the MTK tagger merges with (802.1Q, 802.1ad): layers.dsa.mtk_tag_xmit.
_VLAN_TPIDS = (b"\x81\x00", b"\x88\xa8")


def tag_growth(frame: bytes, *, tx: bool) -> int:
    """The bytes the MTK special tag adds to ``frame`` on the link between GDM1 and the
    CPU port: towards the switch an 802.1Q or 802.1ad frame keeps its length (the tag
    takes the TPID's place) and any other grows by 4 (mtk_tag_xmit, 2.2); towards the
    CPU the switch always pushes 4 bytes (mtk_tag_to_cpu, 2.3) [C]."""
    if tx and frame[12:14] in _VLAN_TPIDS:
        return 0
    return DSA_TAG_LEN


#: The MT7530 MIB's size buckets (mt7530_mib[]), by the largest frame each takes.
_SIZE_BUCKETS = (
    (64, "64"),
    (127, "65To127"),
    (255, "128To255"),
    (511, "256To511"),
    (1023, "512To1023"),
)
#: The MIB names a frame counts in, by direction: its destination class, its size
#: bucket, the largest bucket (spelt Tx1024ToMax but RxPktSz1024ToMax in mt7530.c),
#: and the byte counter.
_MIB_NAMES = {
    way: (
        (f"{way}Unicast", f"{way}Multicast", f"{way}Broadcast"),
        tuple((top, f"{way}PktSz{label}") for top, label in _SIZE_BUCKETS),
        "Tx1024ToMax" if way == "Tx" else "RxPktSz1024ToMax",
        f"{way}Bytes",
    )
    for way in ("Tx", "Rx")
}
_BROADCAST = b"\xff" * 6
#: The shortest frame on the wire without its FCS (802.3: 64 bytes with it).
_MIN_FRAME = 60
_FCS_LEN = 4


def _mib_frame(mib: dict[str, int], way: str, frame: bytes, size: int) -> None:
    """Count one frame of ``size`` bytes in a port's MIB, ``way`` "Tx" or "Rx": its
    destination class (the group bit of the destination MAC; all ones is broadcast),
    its size bucket and its bytes. The buckets take the frame as 802.3 sizes it,
    padded to the minimum and with its FCS, as the MAC counts it [D]; the bytes are
    the frame's as the model holds it, without an FCS, as ``ip -s link`` counts them
    (whether the MIB counts the FCS in its bytes is not known) [U]."""
    classes, buckets, largest, octets = _MIB_NAMES[way]
    group = frame[0] & 1
    name = classes[0] if not group else classes[2 if frame[:6] == _BROADCAST else 1]
    mib[name] = mib.get(name, 0) + 1
    wire = max(size, _MIN_FRAME) + _FCS_LEN
    bucket = largest
    for top, label in buckets:
        if wire <= top:
            bucket = label
            break
    mib[bucket] = mib.get(bucket, 0) + 1
    mib[octets] = mib.get(octets, 0) + size


def count_switch_ports(user: NetDev, conduit: NetDev, frame: bytes, *, tx: bool) -> None:
    """The switch's MIB counters for ``frame`` between ``user``'s front port and the CPU
    port (``ethtool -S``): going out (``tx``), the CPU port receives it with the
    special tag and the front port sends it; coming in, the front port receives it
    and the CPU port sends it tagged [D]."""
    tagged = len(frame) + tag_growth(frame, tx=tx)
    if tx:
        _mib_frame(conduit.port_mib, "Rx", frame, tagged)
        _mib_frame(user.port_mib, "Tx", frame, len(frame))
    else:
        _mib_frame(user.port_mib, "Rx", frame, len(frame))
        _mib_frame(conduit.port_mib, "Tx", frame, tagged)


def count_cpu_port(conduit: NetDev, frame: bytes) -> None:
    """A frame the conduit sends as it is, with no user port's tag: the CPU port
    receives it all the same, and its MIB counts it [D]."""
    _mib_frame(conduit.port_mib, "Rx", frame, len(frame))
