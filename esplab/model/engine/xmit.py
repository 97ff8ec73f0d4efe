"""ESP offload on the EIP-93: SA programming, crypto/packet TX and RX.

``state_add`` is the JM series' ``xdo_dev_state_add`` (airoha-dsa-xfrm.md 3.10): it
refuses with EOPNOTSUPP what the engine or the driver cannot do, and otherwise
programs the vschagen SA record (eip93.md 4.1) at a DMA address.

TX takes the skb as the kernel hands it to the driver: outer IP header(s), the ESP
header (SPI and, for crypto offload, the kernel's sequence number), room for the IV,
and the plaintext payload. The engine writes the ESP packet from the header on
(eip93.md 4.2, 4.3); the driver fixes the IP length. RX takes the received packet,
finds the SA by SPI, lets the engine check and decrypt the ESP in place (4.4) and
maps the status to ``xo->status`` and the XFRM counters (3.8, 3.10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.errors import BadArgument, EngineError, RingFull
from esplab.layers.hashstate import hmac_pad_blocks
from esplab.layers.sa_record import ESP_AUTH_ALGOS, ESP_CRYPT_ALGOS, SA_RECORD_SIZE, EIP93SARecord
from esplab.model.engine import fastesp
from esplab.model.engine.fastesp import (
    RX_CRYPTO_DONE,
    RX_CRYPTO_SEQ_IGNORED,
    RX_CRYPTO_SEQ_WHY,
    RX_CRYPTO_WHY,
    RX_PACKET_DONE,
    RX_PACKET_WHY,
    TX_DONE,
    TX_DONE_WHY,
)
from esplab.model.engine.iphead import decapsulate, fix_outer, locate_esp
from esplab.model.engine.outcome import DMA_BUFFER_SIZE, OffloadedSA, Outcome, StateAdd, Ticket
from esplab.model.engine.params import status_names
from esplab.model.engine.regs import OPTION_1
from esplab.model.journey import Stage
from esplab.model.xfrm.algos import algorithm

if TYPE_CHECKING:
    from esplab.model.engine.driver import EIP93Driver

__all__ = [
    "AUTH_ALGOS",
    "ENC_ALGOS",
    "decapsulate",
    "esp_rx",
    "esp_tx",
    "fix_outer",
    "locate_esp",
    "rx_failures",
    "rx_status",
    "state_add",
]

_U32 = 0xFFFFFFFF

#: What the engine offloads, by kernel name, with the OPTION_1 bit each needs (the
#: names, key sizes and Scapy names are the kernel table's: esplab.model.xfrm.algos).
ENC_ALGOS = {
    "cbc(aes)": 2,
    "rfc3686(ctr(aes))": 2,
    "cbc(des3_ede)": 0,
    "cbc(des)": 0,
    "ecb(cipher_null)": None,
}
AUTH_ALGOS = {"hmac(md5)": 16, "hmac(sha1)": 17, "hmac(sha256)": 19}
_AES_KEY_BITS = {24: 14, 32: 15}  # OPTION_1 bits for AES-192/256 (13 is AES-128)

# Engine errors the JM driver reports as a malformed packet [M] rx-status-map.
_MALFORMED = frozenset({"PAD_ERR", "INVALID_PK_LENGTH", "BLOCK_SIZE_ERR", "SPI", "ZERO_LENGTH"})
_TX_MAP_WHY = "the driver maps the skb: src = payload, dst = ESP header (eip93.md 4.2)"
_RX_MAP_WHY = (
    "the driver looks up the inbound SA by SPI on this device and maps the ESP in "
    "place (airoha-dsa-xfrm.md 3.10; eip93.md 4.2)"
)


# --- xdo_dev_state_add ------------------------------------------------------------------


def _refuse(
    drv: EIP93Driver,
    errno: str,
    what: str,
    dev: str,
    spi: int,
    why: str = "the JM series refuses what the EIP-93 backend cannot offload; crypto "
    "offload then stays in software (airoha-dsa-xfrm.md 3.3, 3.10)",
    fidelity: str = "C",
) -> StateAdd:
    stage = drv.stage(
        f"xdo_dev_state_add({dev}, spi {spi:#x}): {errno} ({what})", why, fidelity, errno=errno
    )
    return StateAdd(errno, what, None, [stage])


#: Why an ESN SA is not offloaded, though the series would take it.
ESN_NOT_OFFLOADED_WHY = (
    "the JM series takes ESN SAs: patch 3's airoha_xfrmdev_ops sets "
    "xdo_dev_state_advance_esn (airoha_xfrm.c), and patch 2's "
    "eip93_ipsec_init_sa_record programs sa_seqnum[1] from replay_esn seq_hi (in) / "
    "oseq_hi (out) with sa_seqmum_mask[1] (the struct's spelling) 0xffffffff, and "
    "eip93_ipsec_state_advance_esn rewrites it (eip93-ipsec.c) [C, the patches; "
    "airoha-dsa-xfrm.md 3.10 does not mention ESN, and eip93.md 3.1 has drivers write "
    "0 there, as the mainline and vschagen ones do]; it sets no ESN command bit, and "
    "whether the EN7581's EIP-93 hashes sa_seqnum[1] into the ICV is not known "
    "(OPTION_0 bit 15, ESN, is clear on the board readout; eip93.md 1.1, 6.1) "
    "[U]. The engine model ignores sa_seqnum[1] (choice esn-ignored), so its ICVs would "
    "fail at an ESN peer: the model's backend declines the SA instead and crypto "
    "offload stays in software (airoha-dsa-xfrm.md 3.3) [M]"
)


def state_add(
    drv: EIP93Driver,
    *,
    dev: str = "wan",
    direction: str,
    spi: int,
    mode: str = "transport",
    enc: str | None = None,
    enc_key: bytes = b"",
    auth: str | None = None,
    auth_key: bytes = b"",
    auth_trunc_bits: int | None = None,
    aead: str | None = None,
    offload: str = "crypto",
    family: int = 4,
    encap: bool = False,
    esn: bool = False,
    tfcpad: int = 0,
) -> StateAdd:
    """Offload one ESP SA given kernel-style parameters (``ip xfrm state add ... offload``).

    Algorithms are kernel names (``cbc(aes)``, ``rfc3686(ctr(aes))``, ``cbc(des3_ede)``,
    ``cbc(des)``, ``ecb(cipher_null)``; ``hmac(md5|sha1|sha256)``); keys as the kernel
    holds them (RFC 3686: key + 4-byte nonce); ``auth_trunc_bits`` the ICV truncation
    (kernel default 96). Refusals come back as ``errno`` "EOPNOTSUPP" (crypto offload
    then stays in software), "EINVAL" for a key the cipher rejects, "EEXIST" for an
    SPI and direction already offloaded.
    """

    def refuse(errno: str, what: str) -> StateAdd:
        return _refuse(drv, errno, what, dev, spi)

    if not drv.probed:
        return refuse("EOPNOTSUPP", "the EIP-93 backend is not present")
    if offload not in ("crypto", "packet"):
        return refuse("EOPNOTSUPP", f"offload type {offload!r}; valid: crypto, packet")
    if direction not in ("in", "out"):
        return refuse("EOPNOTSUPP", f"direction {direction!r}; valid: in, out")
    if family not in (4, 6):
        return refuse("EOPNOTSUPP", f"address family {family}; valid: 4, 6")
    if mode not in ("transport", "tunnel"):
        return refuse("EOPNOTSUPP", f"mode {mode}; valid: transport, tunnel")
    if encap:
        return refuse("EOPNOTSUPP", "NAT-T (UDP encapsulation) is not offloaded")
    if tfcpad:
        return refuse("EOPNOTSUPP", "TFC padding is not offloaded")
    if aead is not None:
        return refuse("EOPNOTSUPP", f"AEAD {aead} is not offloaded: the EIP-93 has no GCM")
    if enc is None or auth is None:
        return refuse("EOPNOTSUPP", "the SA needs both an encryption and an auth algorithm")
    if esn:
        return _refuse(
            drv,
            "EOPNOTSUPP",
            "ESN is not offloaded: the modelled engine ignores sa_seqnum[1]",
            dev,
            spi,
            ESN_NOT_OFFLOADED_WHY,
            "M",
        )
    option1 = drv.device.read_reg(OPTION_1)
    if enc not in ENC_ALGOS:
        return refuse("EOPNOTSUPP", f"encryption {enc}; valid: {', '.join(ENC_ALGOS)}")
    if auth not in AUTH_ALGOS:
        return refuse("EOPNOTSUPP", f"auth {auth}; valid: {', '.join(AUTH_ALGOS)}")
    enc_info, auth_info = algorithm(enc), algorithm(auth)
    crypt_name, auth_name = enc_info.scapy[0][1], auth_info.scapy[0][1]
    enc_bit, auth_bit = ENC_ALGOS[enc], AUTH_ALGOS[auth]
    aes_bit = _AES_KEY_BITS.get(len(enc_key) - enc_info.salt_bytes)
    for bit in (enc_bit, auth_bit, aes_bit if enc_bit == 2 else None):
        if bit is not None and not option1 >> bit & 1:
            return refuse("EOPNOTSUPP", f"OPTION_1 bit {bit} is clear: this engine lacks it")
    bits = auth_info.default_icv_bits if auth_trunc_bits is None else auth_trunc_bits
    digest_bits = auth_info.full_bits
    if bits % 32 or not 32 <= bits <= digest_bits:
        return refuse(
            "EOPNOTSUPP",
            f"ICV of {bits} bits; the engine counts ICVs in words: "
            f"valid: 32, 64, ... {digest_bits}",
        )
    if (spi, direction) in drv.sas:
        return refuse("EEXIST", f"SPI {spi:#x} {direction} is offloaded already")
    try:
        record = EIP93SARecord.for_esp(
            direction,
            spi=spi,
            crypt_algo=crypt_name,
            crypt_key=enc_key,
            auth_algo=auth_name,
            auth_key=auth_key,
            icv_size=bits // 8,
            mode=mode,
        )
    except ValueError as exc:
        return refuse("EINVAL", str(exc))
    memory = drv.memory
    sa_addr = memory.allocate(
        SA_RECORD_SIZE, label=f"SA {spi:#x} {direction}", pool="sa", align=128
    )
    raw = bytes(record)
    alg = ESP_AUTH_ALGOS[auth_name].algorithm
    drv.device.engine.learn_hmac_blocks(alg, *hmac_pad_blocks(alg, auth_key))
    memory.write(sa_addr, raw)
    state_addr = 0
    if drv.settings.esp_state_record:  # [M] esp-state-record
        state_addr = memory.allocate(56, label=f"state {spi:#x} {direction}", pool="state")
    sa = OffloadedSA(
        handle=drv.new_handle(),
        dev=dev,
        direction="in" if direction == "in" else "out",
        spi=spi,
        mode=mode,
        family=family,
        offload="packet" if offload == "packet" else "crypto",
        enc=enc,
        auth=auth,
        icv_bits=bits,
        sa_addr=sa_addr,
        state_addr=state_addr,
        iv_size=ESP_CRYPT_ALGOS[crypt_name].iv_size,
    )
    drv.sas[sa.key] = sa
    stage = drv.stage(
        f"xdo_dev_state_add({dev}, spi {spi:#x}): SA record at {sa_addr:#010x}",
        f"{direction}bound {mode} {offload} offload, {enc} + {auth}/{bits}: sa_cmd0 "
        f"{record.sa_cmd0:#010x}, sa_cmd1 {record.sa_cmd1:#010x} as the vschagen ESP offload "
        "programs them (eip93.md 4.1)",
        "D",
        data=raw,
        kind="sa",
        handle=sa.handle,
    )
    return StateAdd(None, "offloaded", sa, [stage])


# --- TX -------------------------------------------------------------------------------


def _drop(
    drv: EIP93Driver, stages: list[Stage], reason: str, what: str, mib: str | None, **fields: Any
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


def esp_tx(
    drv: EIP93Driver,
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
        raise BadArgument(f"SA {sa.spi:#x} is inbound; TX needs an outbound SA")
    if sa.offload != offload:
        raise BadArgument(f"SA {sa.spi:#x} is a {sa.offload} offload SA, not {offload}")
    if iv is not None and len(iv) != sa.iv_size:
        raise BadArgument(f"IV of {len(iv)} bytes", valid=f"{sa.iv_size} bytes for {sa.enc}")
    off = locate_esp(skb)[0] if esp_offset is None else esp_offset
    start = off + 8 + sa.iv_size
    if len(skb) < start:
        raise BadArgument(f"{len(skb)}-byte skb: no room for ESP header and IV at {off}")
    length = len(skb) - start
    first = (
        "{} TX SPI {:#x}: {} bytes, next header {}",
        _TX_MAP_WHY,
        "C" if offload == "crypto" else "M",
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
    sync = offload == "crypto" and drv.settings.crypto_tx_seq == "sync"
    if iv is None:
        outcome = fastesp.esp_tx(drv, sa, skb, off, start, proto, sync, first)
        if outcome is not None:
            return outcome
    try:
        slot = drv.next_slot()
    except RingFull as exc:
        drv.stats.tx_errors += 1
        return _drop(drv, drv.opening(first), "ring-full", str(exc), mib)
    buf, mem = drv.buffer(slot)
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
        return drv.transact(
            words,
            _tx_finish,
            first,
            {
                "sa": sa,
                "head": skb[:off],
                "pinned": pinned,
                "offload": offload,
                "length": length,
                "mem": mem,
                "off": off,
            },
        )
    except EngineError:
        if pinned is not None:
            drv.device.engine.prng.unpin(pinned)
        raise


def _tx_finish(drv: EIP93Driver, words: tuple[int, ...], ticket: Ticket) -> Outcome:
    ctx = ticket.context
    sa: OffloadedSA = ctx["sa"]
    if ctx["pinned"] is not None:
        drv.device.engine.prng.unpin(ctx["pinned"])
    status = words[0] >> 16 & 0xFF
    if status:
        names = status_names(status)
        sa.stats.errors.update(names)
        drv.stats.tx_errors += 1
        crypto = ctx["offload"] == "crypto"
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
    off = ctx["off"]  # the driver's own buffer: dst = ESP header (eip93.md 4.2)
    esp = bytes(ctx["mem"][off : off + (words[7] & 0xFFFFF)])
    packet = fix_outer(ctx["head"], len(esp)) + esp
    seq = int.from_bytes(esp[4:8], "big")
    stats = sa.stats
    stats.packets += 1
    stats.bytes += ctx["length"]
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
    drv: EIP93Driver, skb: bytes, *, dev: str = "wan", esp_offset: int | None = None
) -> Outcome | None:
    """Receive one packet: None when the driver does not handle it (not ESP, a fragment,
    no inbound SA offloaded to ``dev`` for its SPI), so software XFRM takes it; else
    the outcome of decrypting it on the engine (airoha-dsa-xfrm.md 3.2, 3.10)."""
    if esp_offset is None:
        try:
            off, nh_off = locate_esp(skb)
        except BadArgument:
            return None
    else:
        off, nh_off = esp_offset, 9 if skb[:1] and skb[0] >> 4 == 4 else 6
    if skb[0] >> 4 == 4 and int.from_bytes(skb[6:8], "big") & 0x3FFF:
        return None  # JM rejects fragments: software reassembles and decrypts
    if skb[0] >> 4 == 4:
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
    outcome = fastesp.esp_rx(drv, sa, skb, off, nh_off, esp, first)
    if outcome is not None:
        return outcome
    try:
        slot = drv.next_slot()
    except RingFull as exc:
        drv.stats.rx_errors += 1
        return _drop(drv, drv.opening(first), "ring-full", str(exc), rx_status([], sa)[1])
    buf, mem = drv.buffer(slot)
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
    return drv.transact(
        words, _rx_finish, first, {"sa": sa, "head": skb[:off], "nh_off": nh_off, "mem": mem}
    )


def _rx_finish(drv: EIP93Driver, words: tuple[int, ...], ticket: Ticket) -> Outcome:
    ctx = ticket.context
    sa: OffloadedSA = ctx["sa"]
    status = words[0] >> 16 & 0xFF
    seq = None
    names = status_names(status)
    failed = rx_failures(names, sa)
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
    out = bytes(ctx["mem"][: words[7] & 0xFFFFF])  # in place, in the driver's buffer
    next_header = words[0] >> 8 & 0xFF
    seq = int.from_bytes(out[4:8], "big")
    payload = out[8 + sa.iv_size :]
    sa.stats.packets += 1
    sa.stats.bytes += len(payload)
    drv.stats.rx_packets += 1
    if sa.offload == "crypto":
        data = ctx["head"] + out
        done, why = (
            (RX_CRYPTO_SEQ_IGNORED, RX_CRYPTO_SEQ_WHY) if names else (RX_CRYPTO_DONE, RX_CRYPTO_WHY)
        )
        drv.closing(ticket, done, why, "D", (seq, next_header, len(payload)), data, "ip")
    else:
        data = decapsulate(ctx["head"], ctx["nh_off"], payload, next_header, sa.mode == "tunnel")
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
