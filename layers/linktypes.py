"""The pcap link types esplab gives its non-Ethernet records.

Wireshark and libpcap reserve DLT_USER0..DLT_USER15 (147..162) for private use
(tcpdump.org link-layer header types). Each record class that is not an Ethernet
frame gets one of them, so ``wrpcap`` then ``rdpcap`` gives back the same class.
The numbers are registered with ``conf.l2types`` at the bottom of each layer module.
"""

from __future__ import annotations

__all__ = [
    "DLT_EIP93_CMD_DESC",
    "DLT_EIP93_RES_DESC",
    "DLT_EIP93_SA_RECORD",
    "DLT_EIP93_STATE_RECORD",
    "DLT_MTK_ETHER",
    "DLT_MTK_ETHER_RX",
    "DLT_QDMA_DESC",
    "DLT_XDP_DESC",
    "DLT_XFRM_OFFLOAD",
    "LINKTYPE_NAMES",
]

DLT_EIP93_CMD_DESC = 147  # DLT_USER0: EIP93CommandDescriptor
DLT_EIP93_RES_DESC = 148  # DLT_USER1: EIP93ResultDescriptor
DLT_EIP93_SA_RECORD = 149  # DLT_USER2: EIP93SARecord
DLT_EIP93_STATE_RECORD = 150  # DLT_USER3: EIP93StateRecord
DLT_MTK_ETHER = 151  # DLT_USER4: MTKEther (frame with the MediaTek special tag)
DLT_QDMA_DESC = 152  # DLT_USER5: QDMADescriptor (optionally followed by the frame)
DLT_XFRM_OFFLOAD = 153  # DLT_USER6: XfrmOffload metadata followed by an IP packet
DLT_XDP_DESC = 154  # DLT_USER7: XDPDesc
DLT_MTK_ETHER_RX = 155  # DLT_USER8: MTKEtherRx (frame from the switch to the CPU)

LINKTYPE_NAMES = {
    DLT_EIP93_CMD_DESC: "EIP-93 command descriptor",
    DLT_EIP93_RES_DESC: "EIP-93 result descriptor",
    DLT_EIP93_SA_RECORD: "EIP-93 SA record",
    DLT_EIP93_STATE_RECORD: "EIP-93 state record",
    DLT_MTK_ETHER: "Ethernet with MediaTek DSA tag",
    DLT_QDMA_DESC: "Airoha QDMA descriptor",
    DLT_XFRM_OFFLOAD: "XFRM offload metadata",
    DLT_XDP_DESC: "AF_XDP descriptor",
    DLT_MTK_ETHER_RX: "Ethernet with MediaTek DSA tag, to the CPU",
}
