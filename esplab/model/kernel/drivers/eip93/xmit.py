"""ESP offload on the EIP-93: crypto/packet TX and RX (SA programming is in
:mod:`~esplab.model.kernel.drivers.eip93.sa_add`).

TX takes the skb as the kernel hands it to the driver: outer IP header(s), the ESP
header (SPI and, for crypto offload, the kernel's sequence number), room for the IV,
and the plaintext payload. The engine writes the ESP packet from the header on
(eip93.md 4.2, 4.3); the driver fixes the IP length. RX takes the received packet,
finds the SA by SPI, lets the engine check and decrypt the ESP in place (4.4) and
maps the status to ``xo->status`` and the XFRM counters (3.8, 3.10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.errors import EngineError, InvalidValue, RingFull
from esplab.model.hw.eip93.params import status_names
from esplab.model.kernel.drivers.eip93.iphead import (
    decapsulate,
    fix_outer,
    locate_esp,
)
from esplab.model.kernel.drivers.eip93.outcome import (
    DMA_BUFFER_SIZE,
    OffloadedSA,
    Outcome,
    Ticket,
)
from esplab.model.stage import Stage

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.rings import EIP93Rings

__all__ = [
    "CRYPTO_TX_WHY",
    "check_iv",
    "decapsulate",
    "esp_rx",
    "esp_tx",
    "fix_outer",
    "locate_esp",
    "rx_failures",
    "rx_status",
]

_U32 = 0xFFFFFFFF

# Engine errors the JM driver reports as a malformed packet [M] rx-status-map.
_MALFORMED = frozenset({"PAD_ERR", "INVALID_PK_LENGTH", "BLOCK_SIZE_ERR", "SPI", "ZERO_LENGTH"})
_TX_MAP_WHY = "the driver maps the skb: src = payload, dst = ESP header (eip93.md 4.2)"
#: Who writes the crypto-offload trailer (issue #21 item 3). Mainline: esp_xmit
#: (net/ipv4/esp4_offload.c, net/ipv6/esp6_offload.c) calls esp_output_head, which
#: writes padding, pad length and next header (esp_output_fill_trailer), reserves the
#: ICV room and sets the IP length before the driver sees the skb [C]. The seed-000
#: series ("xfrm: extend ESP offload infrastructure for packet engines") lets a driver
#: opt out of that software trailer and hand the skb to a packet engine that builds it;
#: the lab's EIP-93 backend is that series' design [M].
CRYPTO_TX_WHY = (
    "the skb holds headers, SPI, the kernel's sequence number, IV room and the plain "
    "payload, with no trailer: that is the seed-000 series' packet-engine contract "
    "(patch 1 lets a driver opt out of the software trailer; the EIP-93 then writes "
    "padding, pad length, next header and ICV) [M]. Mainline esp_xmit -> "
    "esp_output_head/esp_output_fill_trailer writes padding, pad length and next "
    "header, reserves the ICV room and sets the IP length before any driver sees the "
    "skb [C]; the wire bytes are the same. " + _TX_MAP_WHY
)
TX_DONE = "TX done: ESP seq {}, {} bytes; IP length set to {}"
TX_DONE_WHY = "the driver sets the IP length from the result length and resumes xfrm (eip93.md 4.3)"

RX_CRYPTO_DONE = (
    "RX done: seq {}, next header {}, {} bytes; CRYPTO_DONE, CRYPTO_SUCCESS, trailer removed"
)
RX_CRYPTO_SEQ_IGNORED = (
    "RX done: seq {}, next header {}, {} bytes; SEQNUM_ERR ignored: CRYPTO_DONE, "
    "CRYPTO_SUCCESS, trailer removed"
)
RX_PACKET_DONE = "RX done: seq {}, next header {}; decapsulated, {} bytes"
RX_CRYPTO_WHY = (
    "crypto offload: the kernel does the replay check, strips header and IV and "
    "decapsulates (airoha-dsa-xfrm.md 3.2; eip93.md 4.4)"
)
RX_CRYPTO_SEQ_WHY = (
    "crypto offload: the driver ignores SEQNUM_ERR as the vschagen ESP path does; the "
    "kernel's own replay check after CRYPTO_DONE decides (eip93.md 2.2, 4.6; "
    "airoha-dsa-xfrm.md 3.2, 3.9)"
)
RX_PACKET_WHY = (
    "packet offload: the hardware checks replay and decapsulates; the policy check "
    "sees CRYPTO_DONE only (airoha-dsa-xfrm.md 3.2) [M] packet-offload"
)

_RX_MAP_WHY = (
    "the driver looks up the inbound SA by SPI on this device and maps the ESP in "
    "place (airoha-dsa-xfrm.md 3.10; eip93.md 4.2)"
)


# --- TX -------------------------------------------------------------------------------


def _drop(
    drv: EIP93Rings, stages: list[Stage], reason: str, what: str, mib: str | None, **fields: Any
) -> Outcome:
    stages.append(
        drv.stage(
            what,
            fields.pop("why", "the driver drops the packet"),
            fields.pop("fidelity", "D"),
            drop=reason,
        )
    )
    if mib is not None:
        drv.stats.mib[mib] += 1
    return Outcome(False, stages=stages, reason=reason, mib=mib, **fields)


def check_iv(sa: OffloadedSA, iv: bytes | None) -> None:
    """A pinned IV must be the size the SA's cipher takes (:class:`InvalidValue`)."""
    if iv is not None and len(iv) != sa.iv_size:
        raise InvalidValue(f"IV of {len(iv)} bytes", valid=f"{sa.iv_size} bytes for {sa.enc}")


def esp_tx(
    drv: EIP93Rings,
    sa: OffloadedSA,
    skb: bytes,
    offload: str,
    *,
    proto: int,
    esp_offset: int | None = None,
    iv: bytes | None = None,
) -> Outcome:
    """Transmit one packet on an outbound SA: crypto offload (the kernel's sequence
    number goes on the wire [M] crypto-tx-seq) or packet offload (the engine's own).

    ``skb``: headers, ESP header, IV room and payload (module docstring); ``proto``
    the next header (``xo->proto``); ``iv`` pins the engine's IV for this packet.
    """
    if sa.direction != "out":
        raise InvalidValue(f"SA {sa.spi:#x} is inbound; TX needs an outbound SA")
    if sa.offload != offload:
        raise InvalidValue(f"SA {sa.spi:#x} is a {sa.offload} offload SA, not {offload}")
    if iv is not None:
        check_iv(sa, iv)
    off = locate_esp(skb)[0] if esp_offset is None else esp_offset
    start = off + 8 + sa.iv_size
    if len(skb) < start:
        raise InvalidValue(f"{len(skb)}-byte skb: no room for ESP header and IV at {off}")
    length = len(skb) - start
    first = (
        "{} TX SPI {:#x}: {} bytes, next header {}, trailer left to the engine",
        CRYPTO_TX_WHY if offload == "crypto" else _TX_MAP_WHY,
        "M",
        (offload, sa.spi, length, proto),
    )
    mib = "XfrmOutStateProtoError" if offload == "crypto" else None
    if drv.sas.get((sa.spi, sa.direction)) is not sa:
        return _drop(
            drv, drv.opening(first), "no-state", f"SA {sa.spi:#x} is no longer offloaded", mib
        )
    if len(skb) + 258 + sa.icv_bits // 8 > DMA_BUFFER_SIZE:
        return _drop(
            drv,
            drv.opening(first),
            "EMSGSIZE",
            f"{len(skb)} bytes do not fit a DMA buffer",
            mib,
            fidelity="M",
        )
    crypto = offload == "crypto"
    sync = crypto and drv.settings.crypto_tx_seq == "sync"
    if len(drv._inflight) < drv.entries and drv.probed:
        slot = drv.head  # (next_slot's answer while a slot is free)
    else:
        try:
            slot = drv.next_slot()
        except RingFull as exc:
            drv.stats.tx_errors += 1
            return _drop(drv, drv.opening(first), "ring-full", str(exc), mib)
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    mem[: len(skb)] = skb
    if sync:
        seq = int.from_bytes(skb[off + 4 : off + 8], "big")
        drv.memory.write(sa.sa_addr + 0x6C, ((seq - 1) & _U32).to_bytes(4, "little"))
    pinned = None
    if iv is not None:
        pinned = buf + start
        drv.device.engine.prng.pin(iv, pinned)
    words = (
        0x02000011 | (proto & 0xFF) << 8,
        buf + start,
        buf + off,
        sa.sa_addr,
        sa.state_addr,
        0,
        0x50000 | sa.handle & 0xFFFF,
        0x00400000 | length,
    )
    try:
        # The context _tx_finish unpacks.
        return drv.transact(
            words, _tx_finish, first, (sa, bytes(skb[:off]), pinned, crypto, length, mem, off)
        )
    except EngineError:
        if pinned is not None:
            drv.device.engine.prng.unpin(pinned)
        raise


def _tx_finish(drv: EIP93Rings, words: tuple[int, ...], ticket: Ticket) -> Outcome:
    sa: OffloadedSA
    head: bytes
    sa, head, pinned, crypto, length, mem, off = ticket.context  # as esp_tx packed it
    if pinned is not None:
        drv.device.engine.prng.unpin(pinned)
    status = words[0] >> 16 & 0xFF
    if status:
        names = status_names(status)
        sa.stats.errors.update(names)
        drv.stats.tx_errors += 1
        outcome = _drop(
            drv,
            ticket.stages,
            names[-1],
            f"TX failed: {', '.join(names)}",
            "XfrmOutStateProtoError" if crypto else None,
            errors=names,
            why="JM: engine errors on TX count as XfrmOutStateProtoError (airoha-dsa-xfrm.md 3.10)"
            if crypto
            else "packet offload: the driver counts the error for update_stats [M] packet-offload",
        )
        if "BUS" in names:
            outcome.flushed, more = drv.flush("a DMA error")
            ticket.stages += more
        return outcome
    # The driver's own buffer: dst = ESP header (eip93.md 4.2).
    esp = bytes(mem[off : off + (words[7] & 0xFFFFF)])
    packet = fix_outer(head, len(esp)) + esp
    seq = int.from_bytes(esp[4:8], "big")
    stats = sa.stats
    stats.packets += 1
    stats.bytes += length
    drv.stats.tx_packets += 1
    drv.closing(ticket, TX_DONE, TX_DONE_WHY, "D", (seq, len(esp), len(packet)), packet, "ip")
    return Outcome(True, packet, ticket.stages, seq=seq, status="CRYPTO_SUCCESS")


# --- RX -------------------------------------------------------------------------------


def rx_failures(names: list[str], sa: OffloadedSA) -> list[str]:
    """The engine errors the driver fails an RX packet for: all of them, except that
    crypto offload ignores SEQNUM_ERR as mainline's ``eip93_parse_ctrl_stat_err``
    does (eip93.md 2.2, 4.6) [D]. The vschagen ESP path differs when AUTH_ERR comes
    with it (it compares the whole status byte with 1, so AUTH|SEQNUM would pass); the
    lab follows mainline and fails that as an ICV error. The engine still decrypted
    the packet (eip93.md 4.6 [U] replay-before-icv), and ``xfrm_input`` with
    CRYPTO_DONE runs the kernel's own replay check on it: XfrmInStateSeqError and the
    SA's replay counter, only when the SA has a window (airoha-dsa-xfrm.md 3.2, 3.9,
    6.20) [C]. Packet offload has no software check after the engine: there
    SEQNUM_ERR drops the packet [M] packet-offload."""
    if sa.offload == "crypto" and "SEQNUM_ERR" in names:
        return [name for name in names if name != "SEQNUM_ERR"]
    return names


def rx_status(names: list[str], sa: OffloadedSA) -> tuple[str, str | None]:
    """(``xo->status`` name, XFRM counter) for engine errors on RX (airoha-dsa-xfrm.md 3.10:
    bad ICV -> auth failed; malformed -> invalid packet syntax; other -> generic).

    ``xfrm_input`` counts an auth failure (and CRYPTO_INVALID_PROTOCOL) as
    XfrmInStateProtoError and every other failure as XfrmInBufferError (3.8). Packet
    offload bypasses ``xfrm_input``: no counter, only the SA's statistics (3.2).
    """
    if "AUTH_ERR" in names:
        status = f"CRYPTO_{'TUNNEL' if sa.mode == 'tunnel' else 'TRANSPORT'}_ESP_AUTH_FAILED"
        mib = "XfrmInStateProtoError"
    elif _MALFORMED.intersection(names):
        status, mib = "CRYPTO_INVALID_PACKET_SYNTAX", "XfrmInBufferError"  # [M] rx-status-map
    else:
        status, mib = "CRYPTO_GENERIC_ERROR", "XfrmInBufferError"
    return status, None if sa.offload == "packet" else mib


def esp_rx(
    drv: EIP93Rings, skb: bytes, *, dev: str = "wan", esp_offset: int | None = None
) -> Outcome | None:
    """Receive one packet: None when the driver does not handle it (not ESP, a fragment,
    no inbound SA offloaded to ``dev`` for its SPI), so software XFRM takes it; else
    the outcome of decrypting it on the engine (airoha-dsa-xfrm.md 3.2, 3.10)."""
    if esp_offset is None:
        try:
            off, nh_off = locate_esp(skb)
        except InvalidValue:
            return None
    else:
        off, nh_off = esp_offset, 9 if skb[:1] and skb[0] >> 4 == 4 else 6
    if skb[0] >> 4 == 4:
        if int.from_bytes(skb[6:8], "big") & 0x3FFF:
            return None  # JM rejects fragments: software reassembles and decrypts
        skb = skb[: int.from_bytes(skb[2:4], "big")]  # drop link-layer padding
    spi = int.from_bytes(skb[off : off + 4], "big")
    sa = drv.sas.get((spi, "in"))
    if sa is None or sa.dev != dev:
        return None
    esp = skb[off:]
    first = (
        "{} RX SPI {:#x}: {} bytes of ESP",
        _RX_MAP_WHY,
        "C" if sa.offload == "crypto" else "M",
        (sa.offload, spi, len(esp)),
    )
    if len(esp) > DMA_BUFFER_SIZE:
        drv.stats.rx_errors += 1
        return _drop(
            drv,
            drv.opening(first),
            "EMSGSIZE",
            f"{len(esp)} bytes do not fit a DMA buffer",
            rx_status(["PROCESSING"], sa)[1],
            fidelity="M",
        )
    if len(drv._inflight) < drv.entries and drv.probed:
        slot = drv.head  # (next_slot's answer while a slot is free)
    else:
        try:
            slot = drv.next_slot()
        except RingFull as exc:
            drv.stats.rx_errors += 1
            return _drop(drv, drv.opening(first), "ring-full", str(exc), rx_status([], sa)[1])
    buf, mem = drv._buffers.get(slot) or drv.buffer(slot)
    mem[: len(esp)] = esp
    words = (
        0x02000011,
        buf,
        buf,
        sa.sa_addr,
        sa.state_addr,
        0,
        0x60000 | sa.handle & 0xFFFF,
        0x00400000 | len(esp),
    )
    # The context _rx_finish unpacks.
    return drv.transact(words, _rx_finish, first, (sa, bytes(skb[:off]), nh_off, mem))


def _rx_finish(drv: EIP93Rings, words: tuple[int, ...], ticket: Ticket) -> Outcome:
    sa: OffloadedSA
    head: bytes
    sa, head, nh_off, mem = ticket.context  # as esp_rx packed it
    status = words[0] >> 16 & 0xFF
    names = status_names(status) if status else []
    failed = rx_failures(names, sa) if status else names
    if failed:
        xo_status, mib = rx_status(failed, sa)
        sa.stats.errors.update(failed)
        sa.stats.integrity_failed += "AUTH_ERR" in failed
        sa.stats.replay += "SEQNUM_ERR" in failed
        drv.stats.rx_errors += 1
        outcome = _drop(
            drv,
            ticket.stages,
            failed[-1],
            f"RX failed: {', '.join(names)} -> {xo_status}" + (f", {mib}" if mib else ""),
            mib,
            errors=names,
            status=xo_status,
            why="engine status mapped to xo->status "
            "(airoha-dsa-xfrm.md 3.8, 3.10) [M] rx-status-map",
        )
        if "BUS" in names:
            outcome.flushed, more = drv.flush("a DMA error")
            ticket.stages += more
        return outcome
    out = bytes(mem[: words[7] & 0xFFFFF])  # in place, in the driver's buffer
    next_header = words[0] >> 8 & 0xFF
    seq = int.from_bytes(out[4:8], "big")
    payload = out[8 + sa.iv_size :]
    sa.stats.packets += 1
    sa.stats.bytes += len(payload)
    drv.stats.rx_packets += 1
    if sa.offload == "crypto":
        data = head + out
        done, why = (
            (RX_CRYPTO_SEQ_IGNORED, RX_CRYPTO_SEQ_WHY) if names else (RX_CRYPTO_DONE, RX_CRYPTO_WHY)
        )
        drv.closing(ticket, done, why, "D", (seq, next_header, len(payload)), data, "ip")
    else:
        data = decapsulate(head, nh_off, payload, next_header, sa.mode == "tunnel")
        drv.closing(
            ticket, RX_PACKET_DONE, RX_PACKET_WHY, "M", (seq, next_header, len(data)), data, "ip"
        )
    return Outcome(
        True,
        data,
        ticket.stages,
        errors=names,
        status="CRYPTO_SUCCESS",
        seq=seq,
        next_header=next_header,
    )
