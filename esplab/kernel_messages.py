"""What a board prints for a refused ``ip`` command: iproute2's own words.

When the kernel explains a refusal (netlink extended ACK, ``NL_SET_ERR_MSG``), iproute2
prints only ``Error: <message>.``; otherwise ``RTNETLINK answers: <strerror>``. esplab's
messages say more (the value, what is valid); :func:`board_text` recovers exactly what
the board would print, so a transcript can be set beside one from a real board.

:data:`EXTACK` holds the XFRM extended-ACK messages of Linux 6.12 (net/xfrm/xfrm_user.c,
xfrm_state.c, xfrm_device.c, xfrm_replay.c; read from the strings of Debian's
6.12.118 vmlinux and xfrm_user.ko) [C]. The differential suite (tests/kernel/) checks
every refusal it makes against that kernel [K].
"""

from __future__ import annotations

import re

__all__ = ["EXTACK", "board_text", "extack_of"]

EXTACK = frozenset(
    {
        "Algorithm name is too long",
        "Device doesn't support offload with ESN",
        "Device failed to offload this policy",
        "Device failed to offload this state",
        "ESN attribute is too short",
        "ESN attribute is too short to fit the full bitmap length",
        "ESN bitmap length must be <= 128",
        "ESN not compatible with legacy replay_window",
        "ESN only supported for ESP and AH",
        "ESN replay window is longer than the bitmap",
        "ESN replay window is too large for the chosen bitmap size",
        "ESN replay window must be > 0",
        "Flag DECAP_DSCP should not be set for output SA",
        "Flag DONT_ENCAP_DSCP should not be set for input SA",
        "Flag ICMP should not be set for output SA",
        "Flag NOPMTUDISC should not be set for input SA",
        "Flag OSEQ_MAY_WRAP should not be set for input SA",
        "Flag WILDRECV should not be set for output SA",
        "Invalid AEAD attribute length",
        "Invalid AUTH/CRYPT/COMP attribute length",
        "Invalid AUTH_TRUNC attribute length",
        "Invalid SPD_IPV4_HTHRESH attribute length",
        "Invalid SPD_IPV6_HTHRESH attribute length",
        "Invalid XFRM protocol in template",
        "Invalid address family",
        "Invalid address family in selector",
        "Invalid family in template",
        "Invalid header length",
        "Invalid length requested for truncated ICV",
        "Invalid number of SAs to migrate, must be 0 < num <= XFRM_MAX_DEPTH (6)",
        "Invalid policy action",
        "Invalid policy direction",
        "Invalid policy share",
        "Invalid policy type",
        "Invalid security context length",
        "Invalid selector family",
        "Kernel was unable to initialize cryptographic operations",
        "MTIMER_THRESH attribute can only be set on ENCAP states",
        "Mismatched SA and offload direction",
        "Missing required MIGRATE attribute",
        "Missing required attribute for ESN",
        "Mode in optional template not allowed in outbound policy",
        "Mode in template doesn't support a family change",
        "Mode in template must be < XFRM_MODE_MAX (5)",
        "NLM_F_REPLACE flag is required",
        "New ESN bitmap size doesn't match the existing SA's ESN bitmap",
        "New ESN size doesn't match the existing SA's ESN size",
        "Only tunnel modes can accommodate a change of family",
        "Policy index doesn't match direction",
        "Policy offload is not supported",
        "Replay bmp_len should 0 for output SA",
        "Replay oseq and oseq_hi should be 0 for input SA",
        "Replay oseq and oseq_hi should be less than 0xFFFFFFFF for output SA",
        "Replay oseq should be less than 0xFFFFFFFF in non-ESN mode for output SA",
        "Replay oseq_hi should be 0 in non-ESN mode for output SA",
        "Replay seq and bitmap should be 0 for output SA",
        "Replay seq and seq_hi should be 0 for output SA",
        "Replay seq and seq_hi should be less than 0xFFFFFFFF for input SA",
        "Replay seq should be less than 0xFFFFFFFF in non-ESN mode for input SA",
        "Replay seq_hi should be 0 in non-ESN mode for input SA",
        "Replay window should be 0 for output SA",
        "Requested AEAD algorithm not found",
        "Requested AUTH algorithm not found",
        "Requested AUTH_TRUNC algorithm not found",
        "Requested COMP algorithm not found",
        "Requested CRYPT algorithm not found",
        "SA is in use by tunnels",
        "SA must be in VALID state",
        "TFC padding can only be used in tunnel mode",
        "TFC padding can't be offloaded",
        "Target ACQUIRE not found",
        "No SPI available in the requested range",
        "IPCOMP SPI must be <= 65535",
        "Invalid protocol, must be one of AH, ESP, IPCOMP",
        "Target policy not found",
        "Type doesn't support offload",
        "Unrecognized flags in offload request",
        "Unrecognized offload direction",
        "Unsupported mode",
        "Unsupported protocol",
    }
)
# Where esplab's reason goes on past the kernel's words.
_CUT = re.compile(r"[:;]| \(|, ")


def extack_of(reason: str | None) -> str | None:
    """The kernel's own message at the head of ``reason``, if it starts with one."""
    if not reason:
        return None
    if reason in EXTACK:
        return reason
    head = _CUT.split(reason, maxsplit=1)[0].strip()
    return head if head in EXTACK else None


def board_text(prefix: str, strerror: str, reason: str | None) -> str:
    """What iproute2 prints for this refusal."""
    extack = extack_of(reason)
    if extack is not None and prefix == "RTNETLINK answers":
        return f"Error: {extack}."
    return f"{prefix}: {strerror}"
