"""What the SPD decides about a policy command from the policies it already holds.

The policy type (``verify_policy_type``), the seed series' priority rule (seed 001
patch 6, reference ``airoha-dsa-xfrm.md`` 3.6), a new policy's index
(``xfrm_gen_index``) and the policy a ``get``/``delete`` names
(``xfrm_policy_bysel_ctx`` / ``xfrm_policy_byid``). What the request alone must
satisfy is in :mod:`~esplab.model.kernel.xfrm.validate`; :class:`XfrmNode
<esplab.model.kernel.xfrm.tables.XfrmNode>` calls these and keeps the tables. Nothing here
changes a table.
"""

from __future__ import annotations

from collections.abc import Iterable

from esplab.errors import KernelError
from esplab.model.kernel.xfrm.objects import POLICY_DIRS, PolicyId, XfrmPolicy

__all__ = ["check_priority_rule", "check_ptype", "gen_index", "policy_by_id"]


def gen_index(policies: Iterable[XfrmPolicy], pol: XfrmPolicy, generator: int) -> tuple[int, int]:
    """``xfrm_gen_index``: a requested free index, else generator | dir, step 8.

    Returns the index and the generator's next value."""
    dirnum = POLICY_DIRS[pol.dir] + (3 if pol.socket else 0)
    used = {p.index for p in policies}
    want = pol.index
    while True:
        if want:
            idx, want = want, 0
        else:
            idx = generator | dirnum
            generator += 8
        idx = idx or 8
        if idx not in used:
            return idx, generator


def check_priority_rule(
    policies: Iterable[XfrmPolicy], pol: XfrmPolicy, replacing: XfrmPolicy | None, *, rule: str
) -> None:
    """The seed series rule (seed 001 patch 6, ``__xfrm_policy_check_hw_priority``).

    Per direction, every packet-offload policy needs a priority *number* strictly
    above every software policy's: adding an offloaded policy with
    ``max(sw) >= hw`` or a software one with ``sw >= min(hw)`` is ``-EINVAL``.
    The patch code (v2, ``__xfrm_policy_check_hw_priority``: for an offloaded
    policy ``left = max_sw_prio; right = policy->priority; if (left >= right)
    return -EINVAL``) says so [C]; its cover letter calls it giving offloaded
    policies "higher priorities", and reference 3.6 reads that as numerically
    lower, which the code contradicts. The RFC kept running max/min values that
    started at 0; the lab compares with the policies present (our choice), and
    ignores socket policies. ``rule`` is the node's ``policy_priority_rule``; only
    ``"rfc"`` checks anything.
    """
    if rule != "rfc" or pol.socket:
        return
    peers = [p for p in policies if p is not replacing and not p.socket and p.dir == pol.dir]
    if pol.is_packet_offload:
        sw = [p.priority for p in peers if not p.is_packet_offload]
        if sw and max(sw) >= pol.priority:
            raise KernelError(
                "EINVAL",
                f"offloaded policy priority {pol.priority} must be above every software "
                f"priority in dir {pol.dir} (highest: {max(sw)})",
                hint=f"use a priority above {max(sw)} (policy_priority_rule=rfc)",
            )
    else:
        hw = [p.priority for p in peers if p.is_packet_offload]
        if hw and pol.priority >= min(hw):
            raise KernelError(
                "EINVAL",
                f"software policy priority {pol.priority} must be below every offloaded "
                f"priority in dir {pol.dir} (lowest: {min(hw)})",
                hint=f"use a priority below {min(hw)} (policy_priority_rule=rfc)",
            )


def check_ptype(ptype: str, *, sub_policy: bool) -> None:
    """``verify_policy_type`` (net/xfrm/xfrm_user.c): ``XFRM_POLICY_TYPE_SUB`` is
    accepted only ``#ifdef CONFIG_XFRM_SUB_POLICY``, else ``-EINVAL`` ("Invalid policy
    type"); new, get, delete and flush all go through ``copy_from_user_policy_type``."""
    if ptype == "sub" and not sub_policy:
        raise KernelError(
            "EINVAL",
            "Invalid policy type: ptype sub needs CONFIG_XFRM_SUB_POLICY",
            hint="NODE set sub-policy on (a kernel with CONFIG_XFRM_SUB_POLICY), or use ptype main",
        )


def policy_by_id(policies: Iterable[XfrmPolicy], pid: PolicyId) -> XfrmPolicy | None:
    """``xfrm_policy_bysel_ctx`` / ``xfrm_policy_byid`` (socket policies are not
    reachable either way). The caller checks ``pid.ptype`` first."""
    want = (pid.mark.value, pid.mark.mask) if pid.mark else (0, 0)
    for p in policies:
        have = (p.mark.value, p.mark.mask) if p.mark else (0, 0)
        if (
            p.socket
            or p.dir != pid.dir
            or p.ptype != pid.ptype
            or p.if_id != pid.if_id
            or have != want
        ):
            continue
        if (pid.sel is not None and p.sel == pid.sel) or (pid.sel is None and p.index == pid.index):
            return p
    return None
