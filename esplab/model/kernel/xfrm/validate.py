"""What ``net/xfrm/xfrm_user.c`` checks before an SA or a policy reaches the tables.

``verify_newsa_info``, ``xfrm_state_construct`` (algorithm attach, ``setkey`` in
``esp_init_state``) and ``verify_newpolicy_info`` / ``validate_tmpl``. Each check
raises ``KernelError`` with the errno the kernel returns and, where the kernel
has one, its extack text. Nothing here touches a table.
"""

from __future__ import annotations

import dataclasses

from esplab.errors import KernelError
from esplab.model.kernel.xfrm.algos import check_algo
from esplab.model.kernel.xfrm.objects import (
    ACTIONS,
    IPPROTO_AH,
    IPPROTO_COMP,
    IPPROTO_ESP,
    MODES,
    POLICY_DIRS,
    LifetimeCur,
    StateStats,
    XfrmMark,
    XfrmPolicy,
    XfrmState,
)

__all__ = ["XFRM_MAX_DEPTH", "XFRM_REPLAY_ESN_MAX", "construct_policy", "construct_state"]

# include/uapi/linux/xfrm.h
XFRM_REPLAY_ESN_MAX = 4096
# include/net/xfrm.h: templates per policy.
XFRM_MAX_DEPTH = 6


def _einval(reason: str, hint: str | None = None) -> KernelError:
    return KernelError("EINVAL", reason, hint=hint)


def _check_protocol(req: XfrmState) -> None:
    """``verify_newsa_info``: which algorithms each protocol takes."""
    if req.proto == IPPROTO_ESP:
        if req.comp:
            raise _einval("Invalid algorithm for ESP, only authentication, encryption and AEAD")
        if not (req.auth or req.enc or req.aead):
            raise _einval("Missing required attribute for ESP (AUTH, AUTH_TRUNC, CRYPT, AEAD)")
        if req.aead and (req.auth or req.enc):
            raise _einval("Invalid algorithms for ESP, AEAD cannot be used with AUTH or CRYPT")
        if req.tfcpad and req.mode != "tunnel":
            raise _einval("TFC padding can only be used in tunnel mode")
    elif req.proto == IPPROTO_AH:
        if not req.auth or req.enc or req.aead or req.comp:
            raise _einval("AH takes exactly one AUTH or AUTH_TRUNC algorithm")
        if req.tfcpad:
            raise _einval("TFC padding can only be used with ESP")
    elif req.proto == IPPROTO_COMP:
        if not req.comp or req.auth or req.enc or req.aead:
            raise _einval("IPComp takes exactly one COMP algorithm")
        if req.spi > 0xFFFF:
            raise _einval("IPCOMP SPI must be <= 0xffff")
        if req.tfcpad:
            raise _einval("TFC padding can only be used with ESP")
    else:
        # Mobile IPv6 route2/hao states are outside the lab's model (our choice).
        raise _einval(f"protocol {req.proto} SAs are not modelled", "use esp, ah or comp")
    if req.encap is not None and req.proto != IPPROTO_ESP:
        raise _einval("Encapsulation can only be used with ESP")


def _check_replay(req: XfrmState) -> None:
    """``verify_replay`` and the SA direction rules of 6.10+ (reference 3.5 [U] text)."""
    if req.replay_window > XFRM_REPLAY_ESN_MAX:
        raise _einval(f"replay window {req.replay_window} > {XFRM_REPLAY_ESN_MAX}")
    if req.uses_esn_replay and req.proto != IPPROTO_ESP:
        raise _einval("ESN and replay windows wider than 32 are only supported with ESP")
    rp = req.replay
    if req.sa_dir == "out":
        if req.replay_window:
            raise _einval("Replay window should be 0 for output SA")
        if rp.seq or rp.seq_hi or rp.bitmap:
            raise _einval("Replay seq and bitmap should be 0 for output SA")
    elif req.sa_dir == "in":
        # Linux 6.12 checks the output counters of an input SA only in the ESN replay
        # attribute (XFRMA_REPLAY_ESN_VAL); replay-oseq on a plain one passes [K].
        if req.uses_esn_replay and (rp.oseq or rp.oseq_hi):
            raise _einval("Replay oseq and oseq_hi should be 0 for input SA")
        if "oseq-may-wrap" in req.extra_flags:
            raise _einval("Flag oseq-may-wrap should not be set for input SA")


def construct_state(req: XfrmState, *, now: int) -> XfrmState:
    """A new SA as the kernel would build it from ``req``, or ``KernelError``.

    An ``auth`` with ICV 0 (plain ``auth``, or ``auth-trunc ... 0``) gets the
    default truncation. The returned object shares nothing mutable with ``req``;
    offload is not handled here.
    """
    if req.mode not in MODES:
        raise _einval(f"mode {req.mode} is invalid")
    if req.src.version != req.dst.version:
        raise _einval("src and dst are of different address families")
    _check_protocol(req)
    _check_replay(req)
    # __xfrm_init_state: a selector of another family needs a tunnel-like mode [K].
    if (
        req.sel.family
        and req.sel.family != req.family
        and req.mode not in ("tunnel", "beet")
        and "af-unspec" not in req.flags
    ):
        raise _einval("Only tunnel modes can accommodate a change of family")
    auth = check_algo("auth", req.auth, truncated=True) if req.auth else None
    enc = check_algo("enc", req.enc, truncated=False) if req.enc else None
    aead = check_algo("aead", req.aead, truncated=False) if req.aead else None
    comp = check_algo("comp", req.comp, truncated=False) if req.comp else None
    # copy_from_user_state: an unset selector takes the SA's family unless af-unspec.
    sel = req.sel if "af-unspec" in req.flags else req.sel.with_family(req.family)
    # __xfrm_state_insert sanitizes the mark value against its mask.
    mark = XfrmMark(req.mark.value & req.mark.mask, req.mark.mask) if req.mark else None
    return dataclasses.replace(
        req,
        auth=auth,
        enc=enc,
        aead=aead,
        comp=comp,
        sel=sel,
        mark=mark,
        offload=None,
        stats=StateStats(),
        curlft=LifetimeCur(add_time=now),
        replay=dataclasses.replace(req.replay),
    )


def construct_policy(req: XfrmPolicy, *, now: int) -> XfrmPolicy:
    """``verify_newpolicy_info`` + ``validate_tmpl``: a new policy or ``KernelError``."""
    if req.dir not in POLICY_DIRS:
        raise _einval(f"policy dir {req.dir} is invalid")
    if req.action not in ACTIONS:
        raise _einval(f"policy action {req.action} is invalid")
    if req.index and not req.socket and req.index % 8 != POLICY_DIRS[req.dir]:
        raise _einval(
            "Policy index doesn't match direction",
            f"the low 3 bits of the index must be {POLICY_DIRS[req.dir]} for dir {req.dir}",
        )
    if len(req.templates) > XFRM_MAX_DEPTH:
        raise _einval(f"Template count must be <= XFRM_MAX_DEPTH ({XFRM_MAX_DEPTH})")
    prev_family = req.family
    for tmpl in req.templates:
        if tmpl.mode not in MODES:
            raise _einval(f"template mode {tmpl.mode} is invalid")
        if tmpl.mode in ("tunnel", "beet"):
            if tmpl.level == "use" and req.dir == "out":
                raise _einval("Mode in optional template not allowed in outbound policy")
        elif tmpl.dst.version != prev_family:
            raise _einval("Mode in template doesn't support a family change")
        prev_family = tmpl.dst.version
        # validate_tmpl: Mobile IPv6's routing and destination-options "protocols"
        # (route2, hao) pass too, with CONFIG_IPV6 [K].
        if tmpl.proto not in (IPPROTO_ESP, IPPROTO_AH, IPPROTO_COMP, 43, 60):
            raise _einval("Invalid XFRM protocol in template")
    # The policy keeps its mark value cut to the mask (as listed by Linux 6.12) [K].
    mark = req.mark
    if mark is not None and mark.value & ~mark.mask:
        mark = dataclasses.replace(mark, value=mark.value & mark.mask)
    return dataclasses.replace(
        req,
        offload=None,
        curlft=LifetimeCur(add_time=now),
        sel=req.sel.with_family(req.family),
        mark=mark,
    )
