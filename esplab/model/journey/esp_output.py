"""ESP output in the walk: the decisions (the SA's software view, a tunnel's MTU,
offload_ok), then the packet protected on the datapath the state selects (software
ESP, the engine's authenc, crypto or packet offload), with the kernel's refusals
before the device sees a packet (:func:`esp_output`, called by
:class:`~esplab.model.journey.datapath.Datapath` for each state of a bundle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from esplab.errors import DecodeError, InvalidValue, KernelError
from esplab.model.journey.aead_path import (
    NO_TFM,
    aead_output,
    uses_engine_aead,
)
from esplab.model.journey.engine_path import engine_output
from esplab.model.journey.offload_rules import (
    OffloadVerdict,
    offload_ok,
)
from esplab.model.journey.pmtu import tunnel_too_big
from esplab.model.journey.walk import (
    Walk,
    expire,
    refused_counter,
    software_sa,
)
from esplab.model.kernel.esp import core as esp_core
from esplab.model.kernel.esp.ip import (
    IpInfo,
    parse_ip,
)
from esplab.model.kernel.esp.ivgen import generator_name
from esplab.model.kernel.esp.layout import esp_packet_len
from esplab.model.kernel.esp.tfc import state_mtu
from esplab.model.kernel.node import Node
from esplab.model.kernel.xfrm.objects import XfrmState
from esplab.model.stage import KERNEL_CHECKED_WHY, LazyStage

if TYPE_CHECKING:
    from esplab.model.journey.board import Board
    from esplab.model.journey.datapath import Datapath
    from esplab.model.kernel.esp.sa import EspSA

__all__ = ["OUTPUT_REFUSED", "TFC_WHY", "esp_output", "output_counter"]

OFFLOADED = ("crypto", "packet")

_NO_OFFLOAD = OffloadVerdict("sw", "no offload requested", "C")
OUTPUT_REFUSED = "xfrm output refused the packet before the device saw it"
#: Where a software IV comes from (issue #21 item 7).
IV_WHY = (
    "IV from the kernel's {} (crypto/seqiv.c: sequence number XOR salt; crypto/"
    "echainiv.c: E_K((salt | 1) * sequence number)) [C], its salt from the session seed "
    "where the kernel draws a random one [D]"
)
#: What TFC padding is and who applies it (issue #21 item 2) [C].
TFC_WHY = (
    "TFC padding: esp_output (net/ipv4/esp4.c, net/ipv6/esp6.c) pads the payload with "
    "zeros up to min(tfcpad, xfrm_state_mtu(route MTU)) before the ESP padding; it "
    "applies on sw and sw+aead (both run esp_output). Crypto and packet offload never "
    "see it: xfrm_dev_state_add refuses an offload of an SA with tfcpad ('TFC padding "
    "can't be offloaded', EINVAL), and esp_xmit (esp4_offload.c) sets tfclen = 0"
)


def output_counter(exc: KernelError) -> str:
    """The MIB counter of an xfrm output refusal: sequence numbers exhausted
    (EOVERFLOW), the SA's hard lifetime reached (EINVAL), anything else [C]."""
    if exc.errno_name == "EOVERFLOW":
        return "XfrmOutStateSeqError"
    return "XfrmOutStateExpired" if exc.errno_name == "EINVAL" else "XfrmOutStateProtoError"


def esp_output(
    datapath: Datapath,
    walk: Walk,
    node: Node,
    state: XfrmState,
    packet: bytes,
    dev_name: str,
    info: IpInfo | None = None,
    forwarded: bool = False,
) -> bytes | None:
    """ESP output of ``packet`` with ``state`` (``info``: its parsed header, when the
    caller has it; ``forwarded``: the node forwards it rather than sends it): the
    decisions (the SA's software view, a tunnel's MTU, offload_ok), then the packet
    protected on the datapath the state selects. The ESP packet, or None when it was
    dropped."""
    meta = {"spi": f"{state.spi:#010x}", "mode": state.mode}
    verdict = _NO_OFFLOAD
    lab = datapath.lab
    refused = state.runtime.refused
    if state.offload is None and refused is not None:
        verdict = OffloadVerdict(
            "sw",
            f"not offloaded: {refused}, so the state was "
            "added for software (the driver returned EOPNOTSUPP for "
            "a crypto offload request; airoha-dsa-xfrm.md 3.3, 6.11)",
        )
    sa = software_sa(walk, node, state, f"{node.name}.xfrm.state", "XfrmOutStateProtoError")
    if sa is None:
        return None
    if state.mode == "tunnel" and tunnel_too_big(
        datapath, walk, node, state, sa, packet, dev_name, info, forwarded
    ):
        return None
    if state.offload is not None:
        out_dev = node.dev(dev_name)
        if info is None:
            info = parse_ip(packet)
        size = esp_packet_len(
            len(packet),
            info.hlen,
            sa.iv_size,
            sa.align,
            sa.icv_len,
            tunnel=state.mode == "tunnel",
            outer_version=state.dst.version,
            udp=state.encap is not None,
        )
        verdict = offload_ok(state, out_dev, packet, size)
        walk.record(
            f"{dev_name}.xfrmdev",
            dev_name,
            "offload_ok: {} ({})",
            verdict.why or verdict.reason,
            verdict.fidelity,
            None,
            None,
            "ip",
            None,
            meta,
            ("yes" if verdict.datapath in OFFLOADED else "no", verdict.reason),
        )
        if verdict.datapath == "drop":
            node.xfrm.mib.bump("XfrmOutError")
            walk.drop(
                f"{dev_name}.xfrmdev",
                dev_name,
                "packet offload cannot send it",
                "XfrmOutError",
                f"{verdict.reason}; packet offload has no software "
                "fallback (seed 001; airoha-dsa-xfrm.md 3.2, 6.18)",
            )
            return None
    path = verdict.datapath
    if path in OFFLOADED:
        return _offload_output(lab, node, state, dev_name, path, info, walk, packet)
    # TFC padding is bounded by the route's MTU (esp_output: dst->child_mtu_cached).
    mtu = (node.path_mtu(state.dst) or node.dev(dev_name).mtu) if sa.tfcpad else None
    return _sw_output(lab, node, state, sa, meta, verdict.reason, mtu, forwarded, walk, packet)


def _sw_output(
    lab: Board,
    node: Node,
    state: XfrmState,
    sa: EspSA,
    meta: dict[str, str],
    reason: str,
    mtu: int | None,
    forwarded: bool,
    walk: Walk,
    packet: bytes,
) -> bytes | None:
    """Software ESP output of ``packet`` (generic software ESP, or the engine as its
    AEAD), with the kernel's refusals: a bad pin, the SA's hard lifetime, sequence
    numbers exhausted."""
    tap = f"{node.name}.xfrm.state"
    try:
        if uses_engine_aead(lab, node):
            out = aead_output(lab, node, state, mtu, walk, packet)
            if out is not NO_TFM:
                return out if isinstance(out, bytes) else None
        return _sw_encrypt(lab, node, state, sa, meta, reason, mtu, forwarded, walk, packet)
    except (InvalidValue, DecodeError) as exc:
        counter = refused_counter(walk, state)
        node.xfrm.mib.bump(counter)
        walk.drop(tap, node.name, str(exc), counter, "the ESP output refused this packet")
        return None
    except KernelError as exc:
        counter = output_counter(exc)
        node.xfrm.mib.bump(counter)
        lab.sa_runtime(node.name).sync(state, sa)
        walk.drop(tap, node.name, str(exc), counter, "software ESP refused the packet")
        expire(node, state, counter)
        return None


def _sw_encrypt(
    lab: Board,
    node: Node,
    state: XfrmState,
    sa: EspSA,
    meta: dict[str, str],
    reason: str,
    mtu: int | None,
    forwarded: bool,
    walk: Walk,
    packet: bytes,
) -> bytes:
    """Generic software ESP output of ``packet`` with ``sa`` (``mtu``: the route's, which
    bounds TFC padding; ``forwarded``: a forwarded skb has no ignore_df, so a tunnel's
    outer header with DF gets identification 0, esplab.model.kernel.stack.ipident)."""
    out = esp_core.encrypt(
        sa,
        packet,
        seq=walk.opts.seq,
        iv=walk.opts.iv,
        mtu=mtu,
        ignore_df=False if forwarded else None,
    )
    lab.sa_runtime(node.name).sync(state, sa)
    seq = walk.opts.seq if walk.opts.seq is not None else sa.oseq
    why = "kernel esp4/esp6 builds header, IV, padding, trailer and ICV; " + reason
    why += "; " + KERNEL_CHECKED_WHY
    if walk.opts.iv is None and sa.iv_seq_source is not None and sa.iv_size:
        why += "; " + IV_WHY.format(generator_name(sa.aead or sa.enc))  # type: ignore[arg-type]
    fmt = "software ESP: spi {:#010x} seq {} ({})"
    args: tuple[object, ...] = (state.spi, seq, state.mode)
    if sa.tfcpad:
        fmt += ", TFC padding to {}"
        args += (min(sa.tfcpad, state_mtu(sa, mtu)) if mtu else sa.tfcpad,)
        why += "; " + TFC_WHY
    walk.add(
        LazyStage(
            f"{node.name}.esp",
            node.name,
            fmt,
            why,
            "K",
            None,
            out,
            "ip",
            meta={**meta, "seq": seq, "datapath": "sw"},
            args=args,
        )
    )
    return out


# -- L2 and the wire ---------------------------------------------------------


def _offload_output(
    lab: Board,
    node: Node,
    state: XfrmState,
    dev_name: str,
    path: str,
    info: IpInfo | None,
    walk: Walk,
    packet: bytes,
) -> bytes | None:
    """Crypto or packet offload output of ``packet`` through the engine
    (:func:`~esplab.model.journey.engine_path.engine_output`), with the kernel's refusals
    before the device sees it."""
    try:
        return engine_output(lab, walk, node, state, dev_name, path, info, packet)
    except KernelError as exc:
        # The kernel's own checks before the device sees the packet (xfrm_output_one:
        # xfrm_state_check_expire, the sequence number overflow) [C].
        counter = output_counter(exc)
        node.xfrm.mib.bump(counter)
        walk.drop(f"{node.name}.xfrm.state", node.name, str(exc), counter, OUTPUT_REFUSED)
        expire(node, state, counter)
        return None
    except (InvalidValue, DecodeError) as exc:
        counter = refused_counter(walk, state)
        node.xfrm.mib.bump(counter)
        walk.drop(
            f"{dev_name}.xfrmdev",
            dev_name,
            str(exc),
            counter,
            "the ESP output refused this packet",
        )
        return None
