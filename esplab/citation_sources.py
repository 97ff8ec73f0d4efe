"""The public sources of every reference-note section the code cites.

:data:`SECTIONS` maps ``NOTE.md SECTION`` to the sources the note gives for that
section: a Linux file (paths relative to the kernel tree) and function, another
repository's file, an RFC section, or a mailing-list post by subject, author and
date. Vendor code that the notes used but nobody can open is said to be so. Made
from the notes' own source tables and per-section source labels; a fact list item
(``eip93.md 7.18``) carries the sources of what it states. Rendered by
:func:`esplab.citations.cite`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["SECTIONS"]

_VESP = "github.com/vschagen/mtk-eip93 branch esp_offload (cec1234) crypto/mtk-eip93/eip93-ipsec.c"
_EIP93 = "drivers/crypto/inside-secure/eip93/"
XDPSOCK = "github.com/xdp-project/bpf-examples AF_XDP-example/xdpsock.c"
UAPI2 = "include/uapi/linux/bpf.h, if_link.h, netdev.h"
XSK = "net/xdp/xsk.c, net/xdp/xsk_queue.h, net/xdp/xdp_umem.c, net/xdp/xsk_buff_pool.c"
DEV = "net/core/dev.c: dev_xdp_mode()"
LIBXDP = "github.com/xdp-project/xdp-tools headers/xdp/xsk.h, lib/libxdp/xsk_def_xdp_prog.c"
UAPI = "include/uapi/linux/if_xdp.h"
XP_HANDLE = "net/xdp/xsk_buff_pool.c: xp_get_handle"
XSK_RECV = "net/xdp/xsk.c: __xsk_recvmsg"
XSK_POLL = "net/xdp/xsk.c: xsk_poll"
XP_ASSIGN_DEV = "net/xdp/xsk_buff_pool.c: xp_assign_dev"
XSK_RCV = "net/xdp/xsk.c: __xsk_rcv"
XSK_RCV_ZC = "net/xdp/xsk.c: xsk_rcv_zc"
XSKFIX = (
    'bpf: "[PATCH bpf] xsk: harden userspace-supplied &xdp_desc '
    'validation", Alexander Lobakin, 2025-10-08'
)
ZLEN = (
    'bpf: AF_XDP multi-buffer series, "treat zero length '
    'descriptors as invalid", Tirthendu Sarkar, 2023'
)
XSK_SKB = "net/xdp/xsk.c: xsk_build_skb"
AM65XDP = "drivers/net/ethernet/ti/am65-cpsw-xdp.c (github.com/rogerq/linux 894dcfb)"
SERIES = (
    'netdev: "[PATCH net-next v2 0/7] net: ethernet: ti: am65-cpsw: add '
    'AF_XDP zero copy support", Roger Quadros, 2025-11-09'
)
TIDOC = "github.com/TexasInstruments/processor-sdk-doc pull request 642"
OW_DTS = "github.com/openwrt/openwrt target/linux/airoha/dts/an7581.dtsi"
A_SEL_QUEUE = "drivers/net/ethernet/airoha/airoha_eth.c: airoha_dev_select_queue"
A_DEV_INIT = "drivers/net/ethernet/airoha/airoha_eth.c: airoha_dev_init"
DSA = "net/dsa/user.c, net/dsa/conduit.c"
MT = "drivers/net/dsa/mt7530.c"
JM = (
    'linux-crypto/netdev: "[PATCH 0/3] Add packet-mode ESP offload for '
    'Airoha/EIP93", Jihong Min, 2026-05-23 (withdrawn 2026-06-11)'
)
T_MTK = "net/dsa/tag_mtk.c"
A_SET_MAC = "drivers/net/ethernet/airoha/airoha_eth.c: airoha_set_macaddr"
A_VIP_SETUP = "drivers/net/ethernet/airoha/airoha_eth.c: airoha_fe_vip_setup"
A_ETH = "drivers/net/ethernet/airoha/airoha_eth.c"
X_UAPI = "include/uapi/linux/xfrm.h, include/uapi/linux/snmp.h"
X_DEV = "net/xfrm/xfrm_device.c"
X_OUT = "net/xfrm/xfrm_output.c"
X_POL_CHECK = "net/xfrm/xfrm_policy.c: __xfrm_policy_check2"
X_DOC = "Documentation/networking/xfrm_device.rst, xfrm_proc.rst"
XFRMDEV_OPS = "include/linux/netdevice.h: struct xfrmdev_ops"
X_STATE_ADD = "net/xfrm/xfrm_device.c: xfrm_dev_state_add"
X_OFFLOAD_OK = "net/xfrm/xfrm_device.c: xfrm_dev_offload_ok"
X_ST = "net/xfrm/xfrm_state.c, xfrm_replay.c, xfrm_user.c, xfrm_proc.c"
X_POL_INSERT = "net/xfrm/xfrm_policy.c: xfrm_policy_insert_list"
X_ST_INSERT = "net/xfrm/xfrm_state.c: X_ST_INSERT"
LR = (
    'netdev: "[PATCH xfrm-next v3 0/6] Extend XFRM core to allow full offload '
    'configuration", Leon Romanovsky, 2022 (merged for 6.2 as packet offload)'
)
X_DEV_DOWN = "net/xfrm/xfrm_device.c: xfrm_dev_down"
IP2 = "iproute2 ip/xfrm_state.c, ip/xfrm_policy.c, ip/ipxfrm.c, man ip-xfrm(8)"
A_XFRM = "drivers/net/ethernet/airoha/airoha_xfrm.c of that series (patch 3)"
NSIM = "drivers/net/netdevsim/ipsec.c"
SELF = "tools/testing/selftests/net/rtnetlink.sh: kci_test_ipsec_offload"
X_ALGO = "net/xfrm/xfrm_algo.c"
RFC_4868 = "RFC 4868"
X_IN = "net/xfrm/xfrm_input.c"
X_POL = "net/xfrm/xfrm_policy.c"
OWRT_20130 = (
    "github.com/openwrt/openwrt pull request 20130, comment by "
    "abajk, 2026-03 (an EN7581 register readout)"
)
L_REGS = f"{_EIP93}eip93-regs.h"
V_IPSEC = "github.com/vschagen/mtk-eip93 branch ipsec (413c3a2) src/eip93-ipsec.c"
L_MAIN = f"{_EIP93}eip93-main.c"
VND = (
    "the SafeNet/INSIDE Secure EIP93 Driver Library, "
    "eip93_level0.h (vendor code with no public repository)"
)
L_COMMON = f"{_EIP93}eip93-common.c"
L_MAINH = f"{_EIP93}eip93-main.h"
MTK_SDK = "the MediaTek/Ralink SDK ipsecEip93Adapter (vendor code with no public repository)"
V_ESP = f"{_VESP}"
L_AEAD = f"{_EIP93}eip93-aead.c"
SA_STATE = f"{_EIP93}eip93-regs.h: struct sa_record, struct sa_state"
RFC_4303 = "RFC 4303"
L_HASH = f"{_EIP93}eip93-hash.c"
RFC_3686 = "RFC 3686"
L_CIPHER = f"{_EIP93}eip93-cipher.c"
V_VALIDATE = f"{_VESP}: mtk_validate_state"
V_XMIT = f"{_VESP}: mtk_esp_xmit"
V_RX_DONE = f"{_VESP}: mtk_ipsec_rx_done"
L_SETKEY = f"{_EIP93}eip93-common.c: eip93_hmac_setkey"
V_SETKEY = f"{_VESP}: mtk_authenc_setkey"
SA_RECORD = f"{_EIP93}eip93-regs.h: struct sa_record"
L_UNMAP_DMA = f"{_EIP93}eip93-common.c: eip93_unmap_dma"
V_INIT = f"{_VESP}: mtk_initialize"

#: The notes' open questions (their "unknown / uncertain" sections): what is said
#: there is the lab's labelled choice, and the sources named with it are related.
OPEN = "no public source settles this (an open question; the lab's choice is labelled)"

SECTIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "af_xdp.md 1": (XDPSOCK,),
        "af_xdp.md 1.1": (XDPSOCK, UAPI2, XSK, DEV),
        "af_xdp.md 1.2": (XDPSOCK, LIBXDP, UAPI2, UAPI),
        "af_xdp.md 2": (XDPSOCK, UAPI),
        "af_xdp.md 2.1": (XDPSOCK, UAPI, XSK),
        "af_xdp.md 2.2": (UAPI, XP_HANDLE),
        "af_xdp.md 2.3": (UAPI, XSK),
        "af_xdp.md 2.4": (LIBXDP, XSK),
        "af_xdp.md 2.5": (UAPI, XSK_RECV, XSK_POLL),
        "af_xdp.md 2.6": (UAPI, XP_ASSIGN_DEV, XSK_RCV, XSK_RCV_ZC),
        "af_xdp.md 2.7": (XSK,),
        "af_xdp.md 2.8": (XSKFIX, ZLEN, XSK_SKB),
        "af_xdp.md 2.9": (UAPI,),
        "af_xdp.md 3": (XDPSOCK, LIBXDP),
        "af_xdp.md 3.1": (LIBXDP, XSK),
        "af_xdp.md 3.2": (XDPSOCK,),
        "af_xdp.md 4": (AM65XDP, SERIES, TIDOC),
        "af_xdp.md 4.1": (SERIES,),
        "af_xdp.md 4.2": (SERIES,),
        "af_xdp.md 4.3": (SERIES,),
        "af_xdp.md 4.4": (SERIES, TIDOC, XSK),
        "af_xdp.md 5": (XSK,),
        "af_xdp.md 6": (XSK,),
        "af_xdp.md 6.1": (XSK,),
        "af_xdp.md 6.2": (XSK,),
        "af_xdp.md 6.3": (XSK, LIBXDP),
        "af_xdp.md 6.4": (XSK,),
        "af_xdp.md 6.5": (XSK,),
        "af_xdp.md 6.6": (XSK,),
        "af_xdp.md 6.7": (XSK,),
        "af_xdp.md 6.8": (XSK,),
        "af_xdp.md 6.9": (XSK,),
        "af_xdp.md 6.10": (XSK, UAPI),
        "af_xdp.md 6.11": (XSK,),
        "af_xdp.md 6.12": (XSK,),
        "af_xdp.md 6.13": (XSK,),
        "af_xdp.md 6.14": (UAPI,),
        "af_xdp.md 6.15": (XSK,),
        "af_xdp.md 6.16": (XSK,),
        "af_xdp.md 6.17": (UAPI,),
        "af_xdp.md 6.18": (XSK,),
        "af_xdp.md 6.19": (UAPI, XP_ASSIGN_DEV, XSK_RCV, XSK_RCV_ZC),
        "af_xdp.md 6.20": (XSK, UAPI),
        "af_xdp.md 6.21": (UAPI, XP_HANDLE),
        "af_xdp.md 6.22": (XSK,),
        "af_xdp.md 6.23": (XSK,),
        "af_xdp.md 6.24": (UAPI,),
        "af_xdp.md 6.25": (XDPSOCK,),
        "af_xdp.md 6.26": (SERIES, DEV),
        "af_xdp.md 6.27": (SERIES, TIDOC, XSK),
        "af_xdp.md 7": (
            OPEN,
            XSK,
        ),
        "airoha-dsa-xfrm.md 1": (OW_DTS, A_SEL_QUEUE),
        "airoha-dsa-xfrm.md 1.1": (OW_DTS, A_DEV_INIT, DSA, MT),
        "airoha-dsa-xfrm.md 1.2": (OW_DTS, DSA, JM),
        "airoha-dsa-xfrm.md 1.3": (A_SEL_QUEUE, T_MTK, DSA, MT),
        "airoha-dsa-xfrm.md 1.4": (A_SET_MAC, A_VIP_SETUP, DSA),
        "airoha-dsa-xfrm.md 1.5": (DSA,),
        "airoha-dsa-xfrm.md 1.6": (A_ETH, DSA),
        "airoha-dsa-xfrm.md 2": (DSA,),
        "airoha-dsa-xfrm.md 2.1": (T_MTK,),
        "airoha-dsa-xfrm.md 2.2": (T_MTK,),
        "airoha-dsa-xfrm.md 2.3": (T_MTK, MT),
        "airoha-dsa-xfrm.md 2.4": (DSA,),
        "airoha-dsa-xfrm.md 3": (X_UAPI, X_DEV),
        "airoha-dsa-xfrm.md 3.1": (X_UAPI,),
        "airoha-dsa-xfrm.md 3.2": (X_DEV, X_OUT, X_POL_CHECK, X_DOC),
        "airoha-dsa-xfrm.md 3.3": (XFRMDEV_OPS, X_STATE_ADD),
        "airoha-dsa-xfrm.md 3.4": (X_OFFLOAD_OK,),
        "airoha-dsa-xfrm.md 3.5": (X_DEV, X_ST),
        "airoha-dsa-xfrm.md 3.6": (X_POL_INSERT, X_ST_INSERT, LR),
        "airoha-dsa-xfrm.md 3.7": (X_DEV_DOWN, LR),
        "airoha-dsa-xfrm.md 3.8": (X_UAPI, X_ST, IP2),
        "airoha-dsa-xfrm.md 3.9": (X_DEV, X_OUT, X_ST, LR),
        "airoha-dsa-xfrm.md 3.10": (JM, A_XFRM),
        "airoha-dsa-xfrm.md 4": (NSIM, SELF),
        "airoha-dsa-xfrm.md 4.1": (NSIM,),
        "airoha-dsa-xfrm.md 4.2": (NSIM,),
        "airoha-dsa-xfrm.md 4.3": (NSIM,),
        "airoha-dsa-xfrm.md 4.4": (NSIM,),
        "airoha-dsa-xfrm.md 4.5": (NSIM,),
        "airoha-dsa-xfrm.md 4.6": (NSIM,),
        "airoha-dsa-xfrm.md 5": (IP2,),
        "airoha-dsa-xfrm.md 5.1": (IP2,),
        "airoha-dsa-xfrm.md 5.2": (IP2,),
        "airoha-dsa-xfrm.md 5.3": (X_ALGO, RFC_4868),
        "airoha-dsa-xfrm.md 5.4": (IP2,),
        "airoha-dsa-xfrm.md 5.5": (IP2,),
        "airoha-dsa-xfrm.md 6": (DSA,),
        "airoha-dsa-xfrm.md 6.1": (T_MTK, X_OUT),
        "airoha-dsa-xfrm.md 6.2": (T_MTK, X_OUT),
        "airoha-dsa-xfrm.md 6.3": (T_MTK, X_IN),
        "airoha-dsa-xfrm.md 6.4": (X_DEV,),
        "airoha-dsa-xfrm.md 6.5": (DSA,),
        "airoha-dsa-xfrm.md 6.6": (T_MTK, A_ETH, X_IN),
        "airoha-dsa-xfrm.md 6.7": (DSA,),
        "airoha-dsa-xfrm.md 6.8": (X_DEV,),
        "airoha-dsa-xfrm.md 6.9": (A_ETH,),
        "airoha-dsa-xfrm.md 6.10": (X_DEV,),
        "airoha-dsa-xfrm.md 6.11": (X_DEV,),
        "airoha-dsa-xfrm.md 6.12": (X_POL, X_DEV),
        "airoha-dsa-xfrm.md 6.13": (X_DEV,),
        "airoha-dsa-xfrm.md 6.14": (NSIM, X_DEV),
        "airoha-dsa-xfrm.md 6.15": (NSIM, X_DEV),
        "airoha-dsa-xfrm.md 6.16": (NSIM,),
        "airoha-dsa-xfrm.md 6.17": (X_POL, X_DEV),
        "airoha-dsa-xfrm.md 6.18": (X_DEV, X_OUT, LR),
        "airoha-dsa-xfrm.md 6.19": (X_IN,),
        "airoha-dsa-xfrm.md 6.20": (X_ST, X_IN),
        "airoha-dsa-xfrm.md 6.21": (X_ST, X_OUT),
        "airoha-dsa-xfrm.md 6.22": (X_POL, X_IN, LR),
        "airoha-dsa-xfrm.md 6.23": (X_POL, X_DEV, LR),
        "airoha-dsa-xfrm.md 6.24": (X_POL, X_OUT),
        "airoha-dsa-xfrm.md 6.25": (X_OUT,),
        "airoha-dsa-xfrm.md 6.26": (X_POL,),
        "airoha-dsa-xfrm.md 6.27": (IP2,),
        "airoha-dsa-xfrm.md 6.28": (X_POL,),
        "airoha-dsa-xfrm.md 6.29": (X_UAPI, X_ST, IP2),
        "airoha-dsa-xfrm.md 6.30": (A_ETH,),
        "airoha-dsa-xfrm.md 7": (
            OPEN,
            JM,
        ),
        "eip93.md 1": (OWRT_20130, L_REGS),
        "eip93.md 1.1": (OWRT_20130, V_IPSEC, L_REGS, L_MAIN),
        "eip93.md 1.2": (L_REGS,),
        "eip93.md 1.3": (L_REGS, VND),
        "eip93.md 1.4": (L_REGS,),
        "eip93.md 1.5": (L_COMMON, L_MAINH, MTK_SDK, L_MAIN),
        "eip93.md 2": (MTK_SDK, L_REGS, V_ESP, VND),
        "eip93.md 2.1": (V_IPSEC, MTK_SDK, L_REGS, VND),
        "eip93.md 2.2": (L_COMMON, V_IPSEC, MTK_SDK, L_REGS),
        "eip93.md 2.3": (L_COMMON, V_IPSEC, L_REGS, L_AEAD),
        "eip93.md 2.4": (V_ESP,),
        "eip93.md 3": (SA_STATE,),
        "eip93.md 3.1": (SA_STATE,),
        "eip93.md 3.2": (V_IPSEC, MTK_SDK, L_REGS, RFC_4303),
        "eip93.md 3.3": (V_IPSEC, MTK_SDK, L_REGS, L_HASH),
        "eip93.md 3.4": (L_COMMON, L_HASH, RFC_3686),
        "eip93.md 3.5": (L_COMMON, L_CIPHER, V_IPSEC, L_AEAD),
        "eip93.md 4": (V_IPSEC, V_VALIDATE, RFC_3686),
        "eip93.md 4.1": (V_IPSEC, V_ESP, RFC_3686),
        "eip93.md 4.2": (V_IPSEC, V_ESP, RFC_3686),
        "eip93.md 4.3": (V_XMIT, RFC_3686),
        "eip93.md 4.4": (V_RX_DONE, VND),
        "eip93.md 4.5": (L_REGS,),
        "eip93.md 4.6": (V_IPSEC, MTK_SDK, V_ESP, VND),
        "eip93.md 4.7": (MTK_SDK,),
        "eip93.md 5": (L_SETKEY, V_SETKEY),
        "eip93.md 5.1": (L_SETKEY, MTK_SDK, V_SETKEY),
        "eip93.md 5.2": (L_SETKEY, V_SETKEY, SA_RECORD),
        "eip93.md 5.3": (L_UNMAP_DMA, L_HASH),
        "eip93.md 6": (L_REGS,),
        "eip93.md 6.1": (V_IPSEC, MTK_SDK, L_REGS, VND),
        "eip93.md 6.2": (L_MAIN, V_INIT),
        "eip93.md 7": (L_REGS,),
        "eip93.md 7.1": (L_REGS, V_ESP),
        "eip93.md 7.2": (L_REGS,),
        "eip93.md 7.3": (L_COMMON, L_REGS, V_ESP),
        "eip93.md 7.4": (V_ESP,),
        "eip93.md 7.5": (L_REGS,),
        "eip93.md 7.6": (V_ESP,),
        "eip93.md 7.7": (L_COMMON, V_ESP, L_CIPHER),
        "eip93.md 7.8": (V_ESP, L_COMMON),
        "eip93.md 7.9": (V_ESP, L_COMMON),
        "eip93.md 7.10": (L_REGS, L_HASH),
        "eip93.md 7.11": (L_COMMON,),
        "eip93.md 7.12": (L_REGS,),
        "eip93.md 7.13": (L_REGS,),
        "eip93.md 7.14": (OWRT_20130,),
        "eip93.md 7.15": (L_REGS,),
        "eip93.md 7.16": (L_REGS,),
        "eip93.md 7.17": (V_ESP, L_HASH),
        "eip93.md 7.18": (L_REGS,),
        "eip93.md 8": (OPEN, MTK_SDK, VND, RFC_3686),
        "eip93.md 8.1": (
            OPEN,
            MTK_SDK,
        ),
        "eip93.md 8.2": (
            OPEN,
            MTK_SDK,
        ),
        "eip93.md 8.3": (
            OPEN,
            MTK_SDK,
        ),
        "eip93.md 8.4": (
            OPEN,
            V_ESP,
        ),
        "eip93.md 8.5": (
            OPEN,
            V_ESP,
        ),
        "eip93.md 8.6": (
            OPEN,
            L_REGS,
        ),
        "eip93.md 8.7": (
            OPEN,
            L_REGS,
        ),
        "eip93.md 8.8": (OPEN, MTK_SDK, VND),
        "eip93.md 8.9": (
            OPEN,
            V_ESP,
        ),
        "eip93.md 8.10": (OPEN, L_REGS),
        "eip93.md 8.11": (
            OPEN,
            RFC_3686,
        ),
        "eip93.md 8.12": (
            OPEN,
            V_ESP,
        ),
        "eip93.md 8.13": (
            OPEN,
            L_REGS,
        ),
        "eip93.md 8.14": (
            OPEN,
            L_REGS,
        ),
    }
)
