"""Joining the XFRM tables to the software ESP core.

An ``XfrmState`` is configuration as the kernel holds it; the data path needs a
keyed ``EspSA``. This module builds one per state (once, cached, from the state's runtime values
too, so a rebuilt SA keeps its replay window and counters), takes the IV
and identification sources from the session seed, and copies the counters the
data path moves back into the state, so ``ip -s xfrm state`` shows them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from esplab.model.kernel.esp.ivgen import kernel_iv_source
from esplab.model.kernel.esp.sa import EspSA, Lifetime, UdpEncap
from esplab.model.kernel.stack.ipident import IpIdents
from esplab.model.kernel.xfrm.objects import XfrmState
from esplab.model.kernel.xfrm.tables import DEFAULT_EPOCH

__all__ = ["SaRuntime", "build_esp_sa"]


def build_esp_sa(state: XfrmState, seed: str) -> EspSA:
    """The software SA for one XFRM state; IVs come from ``seed`` (deterministic)."""
    kw: dict[str, object] = {}
    if state.aead is not None:
        kw.update(aead=state.aead.name, aead_key=state.aead.key, aead_icv=state.aead.icv_bits)
    if state.enc is not None:
        kw.update(enc=state.enc.name, enc_key=state.enc.key)
    if state.auth is not None:
        kw.update(auth=state.auth.name, auth_key=state.auth.key, auth_trunc=state.auth.icv_bits)
    lt = state.lifetime
    sa = EspSA.build(
        state.spi,
        mode="tunnel" if state.mode == "tunnel" else "transport",
        tunnel_src=str(state.src) if state.mode == "tunnel" else None,
        tunnel_dst=str(state.dst) if state.mode == "tunnel" else None,
        esn="esn" in state.flags,
        replay_window=state.replay_window,
        outbound=state.sa_dir == "out",
        encap=UdpEncap(state.encap.sport, state.encap.dport) if state.encap else None,
        lifetime=Lifetime(
            soft_bytes=lt.soft_byte_limit,
            hard_bytes=lt.hard_byte_limit,
            soft_packets=lt.soft_packet_limit,
            hard_packets=lt.hard_packet_limit,
        ),
        iv_source=random.Random(seed).randbytes,
        noecn="noecn" in state.flags,
        tfcpad=state.tfcpad,
        decap_dscp="decap-dscp" in state.flags,
        # XFRM_STATE_NOPMTUDISC clears the outer DF (xfrm4_tunnel_encap_add);
        # XFRM_SA_XFLAG_DONT_ENCAP_DSCP zeroes the outer DSCP.
        df="clear" if "nopmtudisc" in state.flags else "copy",
        encap_dscp="dont-encap-dscp" not in state.extra_flags,
        **kw,  # type: ignore[arg-type]
    )
    # IVs as the kernel's generator for the algorithm makes them (seqiv, echainiv),
    # with the salt from the seed [C formulas, D salt].
    suite = sa.aead if sa.aead is not None else sa.enc
    assert suite is not None
    sa.iv_seq_source = kernel_iv_source(suite, seed)
    # The runtime values the state holds (an update, a loaded dump, an SA built again
    # after its first one was forgotten): the numbers, the window and the counters.
    replay, window, stats, counts = state.replay, sa.replay, sa.stats, state.stats
    sa.oseq = replay.oseq | (replay.oseq_hi << 32)
    window.top = replay.seq | (replay.seq_hi << 32)
    window.bitmap = replay.bitmap
    stats.packets, stats.bytes = state.curlft.packets, state.curlft.bytes
    stats.replay, stats.replay_window = counts.replay, counts.replay_window
    stats.integrity_failed = counts.integrity_failed
    return sa


@dataclass
class SaRuntime:
    """The software SAs of one node's states (each kept in its state's runtime record)."""

    node: str
    seed: int
    # The lab clock in seconds (XfrmNode.clock's default), for lastused and use_time.
    clock: Callable[[], int] = field(default=lambda: DEFAULT_EPOCH, repr=False)
    #: The node's ip_id_key and ip_idents: every tunnel SA of the node numbers its
    #: outer IPv4 headers from them (esplab.model.kernel.stack.ipident), keyed from the seed.
    idents: IpIdents = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.idents = IpIdents.for_node(self.seed, self.node)

    def get(self, state: XfrmState) -> EspSA:
        """The state's software SA, built on first use (kept in its runtime record)."""
        record = state.runtime
        sa: EspSA | None = record.sa
        if sa is None:
            sa = build_esp_sa(state, f"{self.seed}:{self.node}:{state.spi:#x}:{state.dst}")
            sa.idents = self.idents
            record.sa = sa
        return sa

    def scratch(self, state: XfrmState) -> EspSA:
        """A second SA for the same state, to build headers without moving the real
        one's counters (packet offload: the engine owns the sequence numbers)."""
        record = state.runtime
        sa: EspSA | None = record.scratch
        if sa is None:
            sa = build_esp_sa(state, f"scratch:{self.seed}:{self.node}:{state.spi:#x}")
            sa.idents = self.idents
            record.scratch = sa
        return sa

    @staticmethod
    def forget(state: XfrmState) -> None:
        """Drop the state's software SAs: they are built again, from the state's values,
        on next use."""
        record = state.runtime
        record.sa = record.scratch = None

    def count(self, state: XfrmState, **add: int) -> None:
        """Count on the state's SA (``packets``, ``bytes``, ``replay``,
        ``integrity_failed``...) and copy the result to the state: every counter has one
        home, so a later sync never undoes a count made elsewhere."""
        sa = self.get(state)
        stats = sa.stats
        for name, n in add.items():
            setattr(stats, name, getattr(stats, name) + n)
        self.sync(state, sa)

    def count_packet(self, state: XfrmState, nbytes: int) -> None:
        """``count(state, packets=1, bytes=nbytes)``: one packet of ``nbytes`` used it."""
        sa = self.get(state)
        stats = sa.stats
        stats.packets += 1
        stats.bytes += nbytes
        self.sync(state, sa)

    def sync(self, state: XfrmState, sa: EspSA) -> None:
        """Copy what the data path changed back into the state (ip -s xfrm state)."""
        replay, window, stats, oseq = state.replay, sa.replay, sa.stats, sa.oseq
        replay.oseq = oseq & 0xFFFFFFFF
        replay.oseq_hi = oseq >> 32
        replay.seq = window.seq
        replay.seq_hi = window.seq_hi
        replay.bitmap = window.bitmap
        curlft = state.curlft
        if stats.used and not curlft.use_time:
            curlft.use_time = self.clock()
        if stats.packets != curlft.packets:
            # A packet used the state: xfrm_state_check_expire sets curlft.use_time on
            # first use; xfrm_input / xfrm_output_one set x->lastused with each
            # curlft.packets++ (net/xfrm). ip xfrm state prints "lastused" once set
            # (copy_to_user_state_extra puts XFRMA_LASTUSED when non-zero) and -s the
            # "use" time.
            now = self.clock()
            state.lastused = now
            if not curlft.use_time:
                curlft.use_time = now
        curlft.packets = stats.packets
        curlft.bytes = stats.bytes
        counts = state.stats
        counts.replay = stats.replay
        counts.replay_window = stats.replay_window
        counts.integrity_failed = stats.integrity_failed
