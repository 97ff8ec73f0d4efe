"""The offload datapaths through the EIP-93 (crypto, packet), joined to the walk; sw+aead
is in :mod:`~esplab.model.journey.aead_path`.

* ``attach_engine`` gives an ap port its ``xdo_dev_state_add``/``delete``: the
  driver programs an SA record in the engine's memory; the driver's stages are
  kept as a journey of their own ("ip xfrm state add ... offload").
* ``engine_output`` hands the driver the skb the kernel would (headers, ESP header
  with SPI and, for crypto offload, the kernel's sequence number, IV room, the
  plaintext payload; airoha-dsa-xfrm.md 3.2) and returns the ESP packet.
* ``engine_input`` lets the driver decrypt an ESP packet received on the port that
  holds its inbound SA; crypto offload then finishes in software (replay check,
  trailer strip, decapsulation: 3.2 RX crypto) while packet offload hands up the
  plain packet (3.2 RX packet).
* ``build_skb`` is shared with ``compare``, which runs one packet through every path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.errors import DecodeError
from esplab.model.journey.walk import expire
from esplab.model.kernel.drivers.eip93.outcome import stage_items
from esplab.model.kernel.esp import core as esp_core
from esplab.model.kernel.esp.ip import (
    IPPROTO_ESP,
    IpInfo,
    ipv4_fix,
    locate_esp,
    parse_ip,
)
from esplab.model.kernel.esp.layout import encrypted_len
from esplab.model.kernel.esp.tunnel import check_size, tunnel_header
from esplab.model.stage import Captured, Stage

if TYPE_CHECKING:
    from esplab.model.journey.board import Board, Recorder
    from esplab.model.kernel.drivers.airoha_eth import PortOffload
    from esplab.model.kernel.esp.sa import EspSA
    from esplab.model.kernel.node import Node
    from esplab.model.kernel.stack.netdev import NetDev
    from esplab.model.kernel.xfrm.objects import XfrmState

__all__ = [
    "SW_INPUT",
    "add_stages",
    "attach_engine",
    "build_skb",
    "engine_input",
    "engine_output",
    "record_stages",
    "rx_failed",
    "software_finish",
]

SW_INPUT = object()  # engine_input's answer when the driver does not take the packet


def record_stages(lab: Recorder, origin: str, stages: list[Stage]) -> None:
    """Keep configuration-time driver stages as a journey of their own, with captures."""
    journey = lab.journeys.new(origin)
    for stage in stages:
        journey.stages.append(stage)
        if stage.data is not None and lab.settings.tracing:
            lab.captures.add(
                Captured(
                    journey.id,
                    len(journey.stages) - 1,
                    stage.tap,
                    stage.kind,
                    stage.data,
                    {"decision": stage.decision},
                )
            )
    journey.verdict = stages[-1].decision if stages else origin


def attach_engine(lab: Board, port: PortOffload) -> None:
    """Give one ap port the EIP-93-backed ``xfrmdev_ops`` (user ports borrow the conduit's
    engine: there is one engine per SoC, airoha-dsa-xfrm.md 3.10)."""

    def program(state: XfrmState, dev: NetDev) -> str | None:
        assert state.offload is not None
        drv = lab.eip93
        kw: dict[str, Any] = {}
        if state.enc is not None:
            kw.update(enc=state.enc.name, enc_key=state.enc.key)
        if state.auth is not None:
            kw.update(
                auth=state.auth.name, auth_key=state.auth.key, auth_trunc_bits=state.auth.icv_bits
            )
        if state.aead is not None:
            kw.update(aead=state.aead.name)
        res = drv.state_add(
            dev=dev.name,
            direction=state.offload.dir,
            spi=state.spi,
            mode=state.mode,
            offload=state.offload.type,
            family=state.family,
            encap=state.encap is not None,
            esn="esn" in state.flags,
            tfcpad=state.tfcpad,
            **kw,
        )
        stages = list(res.stages)
        if res.ok and state.offload.type == "packet" and state.offload.dir == "out":
            stages += _oseq_ignored(port, state)
        record_stages(lab, f"xdo_dev_state_add {dev.name} spi {state.spi:#x}", stages)
        port.refused = "" if res.ok else res.reason
        if res.ok:
            state.runtime.offloaded = res.sa
        errno: str | None = res.errno
        return errno

    def unprogram(state: XfrmState, dev: NetDev) -> None:
        record = state.runtime
        hw, record.offloaded = record.offloaded, None
        if hw is not None:
            stages = lab.eip93.state_delete(hw)
            record_stages(lab, f"xdo_dev_state_delete {dev.name} spi {state.spi:#x}", stages)

    port.program = program
    port.unprogram = unprogram


#: Packet offload and a requested output sequence start (issue #21 item 8) [M]: the
#: engine numbers packets from its SA record's sa_seqnum, which xdo_dev_state_add
#: writes as 0 (eip93.md 4.6), as the out-of-tree vschagen/mtk-eip93 ipsec branch does;
#: software ESP and crypto offload start after replay-oseq.
PACKET_OSEQ_WHY = (
    "packet offload: the engine numbers packets from sa_seqnum, which the driver "
    "programs as 0 whatever replay-oseq asked (as the out-of-tree mtk-eip93 ipsec "
    "branch does; eip93.md 4.6); software ESP and crypto offload start after "
    "replay-oseq. ip xfrm state shows the engine's number"
)


def _oseq_ignored(port: PortOffload, state: XfrmState) -> list[Stage]:
    """A packet-offloaded outbound state asked for a sequence start: the engine ignores
    it. The state then shows the engine's number (oseq 0: the first packet is 1), the
    add warns, and a stage says so [M]."""
    replay = state.replay
    asked = replay.oseq | replay.oseq_hi << 32
    if not asked:
        return []
    replay.oseq = replay.oseq_hi = 0
    port.note = (
        f"replay-oseq {asked:#x} ignored: packet offload numbers from the engine's "
        "sa_seqnum, the first packet is 1"
    )
    return [Stage("eip93.driver", "eip93", port.note, why=PACKET_OSEQ_WHY, fidelity="M")]


def _esp_headers(
    sa: EspSA, packet: bytes, seq: int | None, info: IpInfo | None = None
) -> tuple[bytes, tuple[int, int, int] | None]:
    """``esp_core.encrypt(sa, packet, seq=seq, iv=zeros)`` up to the end of the ESP
    header (SPI and sequence number), with every check and count it makes, but
    without running the cipher: only the headers are kept, and their lengths follow
    from the payload's. Anything out of the ordinary (a bad sequence number, not a
    whole IP packet, a transport-mode fragment, UDP encapsulation) runs ``encrypt``
    itself, so it fails or succeeds exactly as it does. ``info``: ``parse_ip(packet)``
    when the caller has it (an IPv4 header parses the same for ESP). Also returns, for
    a transport-mode packet that took the ordinary way, what its checks and counts
    read: (IP version, header length, payload size)."""
    tunnel = sa.mode == "tunnel"
    if (seq is not None and not 0 <= seq <= sa.seq_max) or sa.encap is not None:
        return esp_core.encrypt(sa, packet, seq=seq, iv=bytes(sa.iv_size)), None
    if info is None or info.version != 4:
        try:
            info = parse_ip(packet, esp_split=not tunnel, after_fragment=sa.esp_after_v6_fragment)
        except DecodeError:
            return esp_core.encrypt(sa, packet, seq=seq, iv=bytes(sa.iv_size)), None
    if tunnel:
        size = info.end
    elif info.fragment:
        return esp_core.encrypt(sa, packet, seq=seq, iv=bytes(sa.iv_size)), None
    else:
        size = info.end - info.hlen
    check_size(sa, info.version, info.hlen, size, tunnel)
    seq = esp_core.take_seq(sa, seq, size)
    # SPI || SEQ || IV || E(payload || pad || pad length || next header) || ICV: every
    # cipher here keeps the length, and the ICV (or AEAD tag) is icv_len bytes.
    clen = encrypted_len(size, sa.align)
    body = (
        sa.spi_bytes + (seq & 0xFFFFFFFF).to_bytes(4, "big") + bytes(sa.iv_size + clen + sa.icv_len)
    )
    if tunnel:
        # (the outer header's identification changes per packet: nothing to keep)
        return tunnel_header(
            sa, packet, info.version, info.dsfield, info.df, size, IPPROTO_ESP, body, None
        ), None
    read = (info.version, info.hlen, size)
    if info.version == 4:
        return ipv4_fix(packet[: info.hlen], info.hlen + len(body), IPPROTO_ESP) + body, read
    head6 = bytearray(packet[: info.hlen])
    head6[info.nh_off] = IPPROTO_ESP
    head6[4:6] = (info.hlen - 40 + len(body)).to_bytes(2, "big")
    return bytes(head6) + body, read


#: How many skbs an SA keeps (see build_skb).
_SKBS_MAX = 16


def build_skb(
    sa: EspSA, packet: bytes, seq: int | None, info: IpInfo | None = None
) -> tuple[bytes, int, int]:
    """The skb the kernel hands the driver: (skb, ESP offset, next header).

    The headers come from the software ESP output mode (the kernel's xfrm mode
    output + esp header build); the IV room is zeros and the payload stays plain.
    ``info`` is ``parse_ip(packet)`` when the caller has it. A transport-mode skb
    with a given sequence number (packet offload's headers always take 1) is the same
    bytes every time: the SA keeps it (``EspSA.headers``), and only the checks and
    counts run again.
    """
    if seq is not None:
        hit = sa.headers.get((packet, seq))
        if hit is not None:
            skb, (version, hlen, size) = hit
            check_size(sa, version, hlen, size, False)
            esp_core.take_seq(sa, seq, size)
            return skb
    esp, read = _esp_headers(sa, packet, seq, info)
    off = locate_esp(esp)[0]
    if sa.mode == "tunnel":
        payload, proto = packet, 4 if packet[0] >> 4 == 4 else 41
    else:
        if info is None:
            info = parse_ip(packet)
        payload, proto = packet[info.hlen :], info.proto
    built = esp[: off + 8] + bytes(sa.iv_size) + payload, off, proto
    if seq is not None and read is not None:
        if len(sa.headers) >= _SKBS_MAX:
            sa.headers.clear()
        sa.headers[(packet, seq)] = built, read
    return built


def add_stages(walk: Any, outcome: Any) -> None:
    """The driver's and the engine's stages of ``outcome``, in the walk. A finished,
    successful outcome's stages are final, so they may be built when read; others
    (a failure, a job the engine still holds) are taken as they are now."""
    if outcome.ok and not outcome.pending:
        walk.extend_items(stage_items(outcome))
    else:
        walk.extend(outcome.stages)


def engine_output(
    lab: Board,
    walk: Any,
    node: Node,
    state: XfrmState,
    dev_name: str,
    datapath: str,
    info: IpInfo | None,
    packet: bytes,
) -> bytes | None:
    """Crypto or packet offload TX of ``packet`` through the driver and the engine
    (``info``: ``parse_ip(packet)``, when the caller has it): the ESP packet, or None
    when it was dropped (the state has no engine record, or the engine failed)."""
    hw = state.runtime.offloaded
    if hw is None:
        walk.drop(
            f"{dev_name}.xfrmdev",
            dev_name,
            "SA not programmed in the engine",
            None,
            "the state has an offload binding but no engine SA record",
            "M",
        )
        return None
    runtime = lab.sa_runtime(node.name)
    drv = lab.eip93
    if datapath == "crypto":
        return _crypto_tx(runtime, drv, node, state, hw, info, walk, packet)
    return _packet_tx(runtime, drv, node, state, hw, info, runtime.scratch(state), walk, packet)


def _crypto_tx(
    runtime: Any,
    drv: Any,
    node: Node,
    state: XfrmState,
    hw: Any,
    info: IpInfo | None,
    walk: Any,
    packet: bytes,
) -> bytes | None:
    # Crypto offload: the kernel assigns the sequence number (3.9) [C]. Pins are
    # refused before anything is counted, as software ESP does.
    sa = runtime.get(state)
    esp_core.check_pins(sa, walk.opts.seq, None)
    drv.check_iv(hw, walk.opts.iv)
    skb, off, proto = build_skb(sa, packet, walk.opts.seq, info)
    runtime.sync(state, sa)
    outcome = drv.crypto_tx(hw, skb, proto=proto, esp_offset=off, iv=walk.opts.iv)
    return _tx_done(walk, outcome, node)


def _packet_tx(
    runtime: Any,
    drv: Any,
    node: Node,
    state: XfrmState,
    hw: Any,
    info: IpInfo | None,
    scratch: EspSA,
    walk: Any,
    packet: bytes,
) -> bytes | None:
    # Packet offload: the engine counts (``scratch``: the state's second SA, for the
    # headers); a pinned seq is written into the SA record first (sa_seqnum holds the
    # last number used, eip93.md 4.6) [M].
    pinned = walk.opts.seq
    if pinned is not None:
        esp_core.check_seq(scratch, pinned)  # the engine's counter is 32 bits
    if walk.opts.iv is not None:
        drv.check_iv(hw, walk.opts.iv)  # before the lifetime counts the packet
    skb, off, proto = build_skb(scratch, packet, 1, info)
    if pinned is not None:
        drv.memory.write(hw.sa_addr + 0x6C, ((pinned - 1) & 0xFFFFFFFF).to_bytes(4, "little"))
    outcome = drv.packet_tx(hw, skb, proto=proto, esp_offset=off, iv=walk.opts.iv)
    out = _tx_done(walk, outcome, node)
    if out is not None:
        sa = runtime.get(state)
        sa.oseq = outcome.seq or sa.oseq  # the engine's number
        runtime.count_packet(state, protected_length(packet, state.mode, info))
    return out


def _tx_done(walk: Any, outcome: Any, node: Node) -> bytes | None:
    """The driver's and engine's stages, and the ESP packet or the drop of a failure
    (the MIB counter on ``node``, the sender)."""
    add_stages(walk, outcome)
    if outcome.ok:
        return bytes(outcome.data)
    if outcome.mib:
        node.xfrm.mib.bump(outcome.mib)
    walk.drop(
        "eip93.driver",
        "eip93",
        f"engine TX failed: {outcome.reason}",
        outcome.mib,
        "; ".join(outcome.errors) or "the driver refused the packet",
    )
    return None


def rx_failed(
    lab: Board, walk: Any, node: Node, state: XfrmState, outcome: Any, what: str, integrity: bool
) -> None:
    """An ESP input the engine failed: the MIB counter the driver named, an ICV that
    did not verify counted on the SA (``integrity``), and the drop (``what``)."""
    if outcome.mib:
        node.xfrm.mib.bump(outcome.mib)
    if integrity:
        lab.sa_runtime(node.name).count(state, integrity_failed=1)
    walk.drop(f"{node.name}.xfrm", node.name, what, outcome.mib, "; ".join(outcome.errors))


def engine_input(
    lab: Board, walk: Any, node: Node, state: XfrmState, packet: bytes, dev_name: str
) -> bytes | object | None:
    """RX through the engine; ``SW_INPUT`` when the driver leaves the packet to software."""
    drv = lab.eip93
    outcome = drv.rx(packet, dev=dev_name)
    if outcome is None:
        return SW_INPUT
    add_stages(walk, outcome)
    if not outcome.ok:
        integrity = outcome.status.endswith("AUTH_FAILED")
        rx_failed(lab, walk, node, state, outcome, f"engine RX failed: {outcome.status}", integrity)
        return None
    if state.is_packet_offload:
        lab.sa_runtime(node.name).count(
            state, packets=1, bytes=protected_length(bytes(outcome.data), state.mode)
        )
        return bytes(outcome.data)
    # Crypto offload: xfrm_input finishes in software with CRYPTO_DONE (3.2) [C].
    off = locate_esp(packet)[0]
    payload = outcome.data[off + 8 + hw_iv(state) :]
    return software_finish(
        lab,
        walk,
        node,
        state,
        packet,
        outcome.seq or 0,
        payload,
        outcome.next_header or 0,
        "crypto",
    )


def software_finish(
    lab: Board,
    walk: Any,
    node: Node,
    state: XfrmState,
    packet: bytes,
    seq_lo: int,
    payload: bytes,
    next_header: int,
    datapath: str,
) -> bytes | None:
    """What xfrm_input does after the crypto was done elsewhere: the replay check, the
    window update, and the mode's decapsulation (airoha-dsa-xfrm.md 3.2, 3.9) [C]."""
    from esplab.model.kernel.drivers.eip93.xmit import decapsulate

    runtime = lab.sa_runtime(node.name)
    sa = runtime.get(state)
    off, nh_off = locate_esp(packet)
    seq = sa.replay.infer(seq_lo)
    verdict = sa.replay.check(seq)
    if verdict.name != "OK":
        counter = "XfrmInStateSeqError"
        node.xfrm.mib.bump(counter)
        if verdict.name == "DUPLICATE":
            runtime.count(state, replay=1)
        elif verdict.name == "TOO_OLD":
            runtime.count(state, replay_window=1)
        walk.drop(
            f"{node.name}.xfrm",
            node.name,
            f"replay check: {verdict.name.lower()}",
            counter,
            "the replay window is checked in software after the engine "
            "decrypted (airoha-dsa-xfrm.md 3.9, 6.20)",
        )
        return None
    if esp_core.input_expiry(sa) == "hard":
        # xfrm_input checks the lifetime after the replay check, crypto done or not.
        counter = "XfrmInStateExpired"
        node.xfrm.mib.bump(counter)
        runtime.sync(state, sa)
        walk.drop(
            f"{node.name}.xfrm",
            node.name,
            "SA hard lifetime reached",
            counter,
            "xfrm_state_check_expire runs in xfrm_input after the engine decrypted, as for "
            "software (airoha-dsa-xfrm.md 3.9)",
        )
        expire(node, state, counter)
        return None
    sa.replay.advance(seq)
    runtime.count(state, packets=1, bytes=len(payload))
    inner = decapsulate(packet[:off], nh_off, payload, next_header, state.mode == "tunnel")
    walk.add(
        Stage(
            f"{node.name}.xfrm",
            node.name,
            f"{datapath} RX done: seq {seq} replay ok, trailer stripped, {len(inner)} bytes",
            why="xfrm_input after the crypto: replay check, "
            "input_tail and decapsulation in software (airoha-dsa-xfrm.md 3.2)",
            data=inner,
            kind="ip",
            meta={"spi": f"{state.spi:#010x}", "seq": seq, "datapath": datapath},
        )
    )
    return inner


def protected_length(packet: bytes, mode: str, info: IpInfo | None = None) -> int:
    """What a lifetime counts for one packet, as the software path does: the inner
    packet in tunnel mode, the upper-layer payload in transport mode (``info``:
    ``parse_ip(packet)``, when the caller has it)."""
    if mode == "tunnel":
        return len(packet)
    return len(packet) - (info if info is not None else parse_ip(packet)).hlen


def hw_iv(state: XfrmState) -> int:
    """The IV length of the state's engine SA (0 when it has none)."""
    hw = state.runtime.offloaded
    return int(hw.iv_size) if hw is not None else 0
