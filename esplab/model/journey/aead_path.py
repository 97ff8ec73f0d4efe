"""The sw+aead datapath: the kernel's software ESP with the EIP-93 as its AEAD
(``authenc(hmac(*),cbc(*))``, which the mainline eip93 driver registers above the
generic code; DESIGN.md datapaths). ESP output and input ask :func:`uses_engine_aead`
whether a node's software ESP runs here; a state the driver has no transform for runs
on the generic software crypto instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.model.journey.engine_path import (
    SW_INPUT,
    add_stages,
    build_skb,
    rx_failed,
    software_finish,
)
from esplab.model.kernel.esp import core as esp_core
from esplab.model.kernel.esp.ip import locate_esp
from esplab.model.kernel.esp.layout import esp_head_len
from esplab.model.kernel.esp.tfc import tfc_len

if TYPE_CHECKING:
    from esplab.model.journey.board import Board
    from esplab.model.kernel.node import Node
    from esplab.model.kernel.xfrm.objects import XfrmState

__all__ = ["NO_TFM", "aead_input", "aead_output", "key_stage", "uses_engine_aead"]

#: What :func:`aead_output` returns when the driver has no transform for the state.
NO_TFM = object()


def _tfm(lab: Board, state: XfrmState) -> Any:
    """The engine's authenc transform for a software SA (sw+aead), or None when the
    eip93 driver has no authenc for its algorithms (then generic software crypto runs).
    An ESN SA takes ``authencesn(...)`` (esp_init_authenc), which the eip93 driver
    does not register (it has ``authenc(...)`` only) [D]: it runs in software. So does
    an SA with UDP encapsulation [M]: the kernel's ESP would hand the engine the ESP
    after the UDP header, but the lab's authenc path finds ESP right after the IP
    header only."""
    from esplab.errors import KernelError

    record = state.runtime
    if record.aead is not None:
        return record.aead
    if state.enc is None or state.auth is None or "esn" in state.flags or state.encap:
        return None
    try:
        tfm = lab.eip93.aead_setkey(
            enc=state.enc.name,
            enc_key=state.enc.key,
            auth=state.auth.name,
            auth_key=state.auth.key,
            authsize=state.auth.icv_bits // 8,
            spi=state.spi,
        )
    except KernelError:
        return None
    record.aead = tfm
    return tfm


def key_stage(walk: Any, tfm: Any) -> None:
    """A stage saying how the driver keyed an HMAC key longer than a block, for a
    transform that has one (mainline's truncation, or the labelled fix) [C]."""
    if tfm.key_note:
        from esplab.model.kernel.drivers.eip93.aead import LONG_KEY_WHY
        from esplab.model.stage import Stage

        walk.add(Stage("eip93.driver", "eip93", tfm.key_note, why=LONG_KEY_WHY, fidelity="C"))


def uses_engine_aead(lab: Board, node: Node) -> bool:
    """The node's software ESP runs on the engine's authenc (the ap, with the
    crypto-provider setting eip93: the sw+aead datapath)."""
    return node.role == "ap" and lab.settings.crypto_provider == "eip93"


def aead_output(
    lab: Board, node: Node, state: XfrmState, mtu: int | None, walk: Any, packet: bytes
) -> bytes | object | None:
    """sw+aead TX: the kernel's ESP with the engine as its AEAD; the ESP packet, None
    for a drop, or :data:`NO_TFM` when the driver has no transform for these
    algorithms (generic software crypto then runs). ``mtu``: the route's, which bounds
    TFC padding."""
    tfm = _tfm(lab, state)
    if tfm is None:
        return NO_TFM
    runtime = lab.sa_runtime(node.name)
    sa = runtime.get(state)
    esp_core.check_pins(sa, walk.opts.seq, walk.opts.iv)  # (as software ESP: first)
    skb, off, proto = build_skb(sa, packet, walk.opts.seq)
    # esp_output's TFC zeros go before the padding the engine's caller adds, exactly as
    # software ESP places them (esp_output_fill_trailer) [C].
    skb += bytes(tfc_len(sa, len(skb) - off - esp_head_len(sa.iv_size), mtu))
    runtime.sync(state, sa)
    outcome = lab.eip93.sw_aead_tx(tfm, skb, proto=proto, esp_offset=off, iv=walk.opts.iv)
    key_stage(walk, tfm)
    add_stages(walk, outcome)
    if not outcome.ok:
        if outcome.mib:
            node.xfrm.mib.bump(outcome.mib)
        walk.drop(
            "eip93.driver",
            "eip93",
            f"authenc on the engine failed: {outcome.reason}",
            outcome.mib,
            "; ".join(outcome.errors),
        )
        return None
    return bytes(outcome.data)


def aead_input(
    lab: Board, walk: Any, node: Node, state: XfrmState, packet: bytes
) -> bytes | object | None:
    """sw+aead RX: the engine checks the ICV and decrypts; software does the rest."""
    tfm = _tfm(lab, state)
    if tfm is None:
        return SW_INPUT
    off = locate_esp(packet)[0]
    outcome = lab.eip93.sw_aead_rx(tfm, packet, esp_offset=off)
    key_stage(walk, tfm)
    add_stages(walk, outcome)
    if not outcome.ok:
        integrity = outcome.mib == "XfrmInStateProtoError"
        rx_failed(
            lab, walk, node, state, outcome, f"authenc on the engine: {outcome.reason}", integrity
        )
        return None
    return software_finish(
        lab,
        walk,
        node,
        state,
        packet,
        outcome.seq or 0,
        bytes(outcome.data),
        outcome.next_header or 0,
        "sw+aead",
    )
