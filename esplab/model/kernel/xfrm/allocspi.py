"""``ip xfrm state allocspi``: a larval state that holds a fresh SPI (``XFRM_MSG_ALLOCSPI``).

Linux 6.12 (net/xfrm/xfrm_user.c ``xfrm_alloc_userspi``, net/xfrm/xfrm_state.c
``xfrm_find_acq``/``__find_acq_core``, ``xfrm_alloc_spi``), checked against that
kernel with iproute2 6.15 [C] except where a line says otherwise:

* the state is found or made: one with the request's ``seq`` (``xfrm_find_acq_byseq``)
  for the same destination, else a larval one with no SPI yet for the same addresses,
  protocol, mode, reqid and mark, else a new larval state (``XFRM_STATE_ACQ``) with a
  /32 (/128) selector of its two addresses;
* a state that has an SPI already keeps it; otherwise the SPI is the range's only
  value when ``min == max``, else the kernel draws ``get_random_u32_inclusive(min,
  max)`` up to ``max - min + 1`` times and takes the first one no state of that
  protocol holds (any destination, any mark: 6.12.118 has "xfrm: Duplicate SPI
  Handling"). The lab draws from the node's generator,
  seeded from the session's seed, so a run is reproducible [D: the kernel's draw is
  random; the lab's is the same procedure with a seeded generator, M];
* no free SPI: ``-ENOENT`` with "No SPI available in the requested range", and the
  larval state stays in the SAD with SPI 0 (``ip xfrm state`` lists it) [C];
* no notification is sent for any of it (``ip xfrm monitor`` prints nothing) [C];
* the kernel deletes a larval state 30 s after it was made (``XFRM_ACQ_EXPIRES``);
  the lab's clock does not run, so here it stays until deleted, flushed, updated
  with keys or replaced by an added SA [M].
"""

from __future__ import annotations

import random

from esplab.errors import KernelError
from esplab.model.kernel.xfrm.lookup import mark_ok
from esplab.model.kernel.xfrm.objects import IPPROTO_AH, IPPROTO_COMP, IPPROTO_ESP, XfrmState
from esplab.model.kernel.xfrm.tables import XfrmNode

__all__ = ["NO_SPI", "alloc_spi"]

#: The extended ACK of a full range (xfrm_alloc_spi) [C: Linux 6.12].
NO_SPI = "No SPI available in the requested range"


def _find_acq(node: XfrmNode, req: XfrmState) -> XfrmState | None:
    """``xfrm_find_acq_byseq`` (same destination), then ``__find_acq_core``."""
    mark = req.mark.value & req.mark.mask if req.mark else 0
    larval = [x for x in node.states if x.larval and x.dst == req.dst]
    if req.seq:
        for x in larval:
            if x.seq == req.seq and mark_ok(x.mark, mark):
                return x
    for x in larval:
        if (
            x.spi == 0
            and x.src == req.src
            and (x.proto, x.mode, x.reqid) == (req.proto, req.mode, req.reqid)
            and x.mark == req.mark
        ):
            return x
    return None


def _verify(proto: int, low: int, high: int) -> None:
    """``verify_spi_info`` [D: net/xfrm/xfrm_user.c]."""
    if proto not in (IPPROTO_ESP, IPPROTO_AH, IPPROTO_COMP):
        raise KernelError(
            "EINVAL",
            "Invalid protocol, must be one of AH, ESP, IPCOMP",
            hint="allocspi takes proto esp, ah or comp",
        )
    if proto == IPPROTO_COMP and high >= 0x10000:
        raise KernelError(
            "EINVAL", "IPCOMP SPI must be <= 65535", hint="an IPComp CPI is 16 bits: max 0xffff"
        )


def _draw(node: XfrmNode, x: XfrmState, low: int, high: int, rng: random.Random) -> int | None:
    """``xfrm_alloc_spi`` of 6.12.118: up to ``high - low + 1`` tries (one when
    ``low == high``), each SPI taken only if no state of the protocol holds it, whatever
    its destination or mark (``xfrm_state_lookup_spi_proto``) [C: an SPI held by a
    marked state for the same destination is refused, as the kernel did]."""
    held = {s.spi for s in node.states if s.proto == x.proto}
    for _ in range(high - low + 1):
        spi = low if low == high else rng.randint(low, high)  # get_random_u32_inclusive
        if spi not in held:
            return spi
        if low == high:
            break
    return None


def alloc_spi(node: XfrmNode, req: XfrmState, low: int, high: int) -> XfrmState:
    """Find or make the larval state ``req`` describes and give it an SPI from
    ``low..high``; returns it, as ``xfrm_alloc_userspi`` answers."""
    _verify(req.proto, low, high)
    x = _find_acq(node, req)
    if x is None:
        x = XfrmState(
            src=req.src,
            dst=req.dst,
            proto=req.proto,
            reqid=req.reqid,
            mode=req.mode,
            sel=req.sel,
            mark=req.mark,
            seq=req.seq,
        )
        node.insert_larval(x)
    if x.spi == 0:
        spi = _draw(node, x, low, high, node.rng)
        if spi is None:
            raise KernelError(
                "ENOENT",
                NO_SPI,
                hint=f"every SPI in {low:#x}..{high:#x} is held for dst {x.dst}; "
                "widen min/max (the larval state made stays, with SPI 0)",
            )
        node.set_larval_spi(x, spi)
    if req.sa_dir is not None:
        x.sa_dir = req.sa_dir
    return x
