"""Driver faults injected into an offloaded SA: the mistakes ``esplab diagnose`` knows.

Each kind is one classic EIP-93 ESP-offload driver mistake. A *record* fault
rewrites the SA record in DMA memory as the mistaken driver would have written it
(the engine then computes from that record, as it always does); a *tx* fault is
something the mistaken driver does to the engine's output before it goes to the
wire. The injection itself is our design [M]; what the engine computes from a
faulty record is the engine's own.

The record the driver writes for an SA is ``EIP93SARecord.for_esp`` of the SA's
recipe (:attr:`OffloadedSA.recipe`); record faults rebuild it from the recipe and
every active fault, so faults combine and clear field by field. The fields the
engine itself writes back (``sa_seqnum``, ``sa_seqnum_mask``) are left as they are.

Every kind names the ``diagnose`` hypothesis (``esplab.capfile.hypotheses``) that
explains its packets; ``tests/capfile/test_diagnose_faults.py`` proves it for each.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from esplab.errors import InvalidValue, NotFound, StateConflict
from esplab.model.kernel.drivers.eip93.aead import AUTHENC_AUTH

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.outcome import OffloadedSA, Outcome
    from esplab.model.kernel.drivers.eip93.rings import EIP93Rings

__all__ = [
    "FAULTS",
    "RUNTIME_FIELDS",
    "FaultKind",
    "apply_tx",
    "clear_fault",
    "driver_record",
    "faulty_outcome",
    "faulty_record",
    "record_fields",
    "set_fault",
]

#: SA record fields the engine writes back at run time (eip93.md 4.6): not the
#: driver's, so never compared with or restored from the driver's record.
RUNTIME_FIELDS = frozenset({"sa_seqnum_0", "sa_seqnum_1", "sa_seqnum_mask_0", "sa_seqnum_mask_1"})
_RUNTIME = slice(0x6C, 0x7C)
_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class FaultKind:
    """One injectable driver mistake.

    ``field``: what it changes (SA record fields, or the packet for a tx fault);
    ``hypothesis``: the ``diagnose`` hypothesis key that names it; ``arg``: the
    argument it takes ("" for none), e.g. ``BITS`` or ``SPI``.
    """

    key: str
    where: str  # "record" or "tx"
    field: str
    what: str
    hypothesis: str
    arg: str = ""


FAULTS: Mapping[str, FaultKind] = MappingProxyType(
    {
        f.key: f
        for f in (
            FaultKind(
                "digest-byte-order",
                "record",
                "sa_i_digest, sa_o_digest",
                "every 32-bit word of the HMAC inner/outer hash state byte-reversed (the "
                "driver stored the state big-endian; the engine reads native LE u32s)",
                "hmac-state-byte-order",
            ),
            FaultKind(
                "icv-length",
                "record",
                "sa_cmd0.digest_length",
                "the ICV truncated to another length than the SA's (default: 128 bits, or "
                "96 for an SA of 128)",
                "icv-length",
                "[BITS]",
            ),
            FaultKind(
                "iv-source",
                "record",
                "sa_cmd0.iv_source",
                "IV source 0 instead of the PRNG (3): the engine puts the same all-zero IV "
                "in every packet",
                "iv-reuse",
            ),
            FaultKind(
                "keys-swapped",
                "record",
                "sa_key, sa_i_digest, sa_o_digest",
                "encryption and authentication keys swapped: the HMAC state from the "
                "cipher key, the cipher key from the authentication key",
                "keys-swapped",
            ),
            FaultKind(
                "key-byte-order",
                "record",
                "sa_key",
                "the encryption key's bytes reversed",
                "key-byte-order",
            ),
            FaultKind(
                "spi-byte-order",
                "record",
                "sa_spi",
                "the SPI written in wire (big-endian) order; sa_spi is a little-endian u32",
                "spi-byte-order",
            ),
            FaultKind(
                "wrong-sa",
                "record",
                "sa_key, sa_i_digest, sa_o_digest",
                "another SA's keys programmed under this SPI",
                "wrong-sa",
                "SPI",
            ),
            FaultKind(
                "icv-word-order",
                "tx",
                "the packet's ICV",
                "the driver byte-swaps each 32-bit word of the ICV, as it must in basic "
                "mode and must not in ESP mode",
                "icv-word-order",
            ),
            FaultKind(
                "esn",
                "tx",
                "the packet's ICV",
                "the ICV computed with ESN high bits 0 appended, for an SA without ESN",
                "esn",
            ),
            FaultKind(
                "seq-after-icv",
                "tx",
                "the packet's sequence number",
                "the driver writes the sequence number plus one into the ESP header after "
                "the engine computed the ICV (a stale number)",
                "seq-after-icv",
            ),
            FaultKind(
                "nat-t",
                "tx",
                "the packet's encapsulation",
                "the driver wraps the ESP in UDP 4500 > 4500 though the SA has no encap",
                "nat-t",
            ),
        )
    }
)


def _words_swapped(data: bytes) -> bytes:
    return b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))


def _fault_kind(kind: str) -> FaultKind:
    fault = FAULTS.get(kind)
    if fault is None:
        raise NotFound(f"unknown fault '{kind}'", valid=list(FAULTS), value=kind)
    return fault


def driver_record(sa: OffloadedSA) -> bytes:
    """The 128-byte SA record the driver writes for ``sa`` (no fault)."""
    from esplab.layers.sa_record import EIP93SARecord

    return bytes(EIP93SARecord.for_esp(**sa.recipe))


def faulty_record(sa: OffloadedSA, faults: Mapping[str, str]) -> bytes:
    """The record a driver with ``faults`` writes for ``sa`` (``wrong-sa`` programs the
    keys kept in ``sa.wrong_keys``)."""
    from esplab.layers.sa_record import EIP93SARecord

    recipe = dict(sa.recipe)
    if "keys-swapped" in faults:
        enc, auth = recipe["crypt_key"], recipe["auth_key"]
        recipe["crypt_key"] = (auth + bytes(len(enc)))[: len(enc)]
        recipe["auth_key"] = enc
    if "wrong-sa" in faults:
        recipe["crypt_key"], recipe["auth_key"] = sa.wrong_keys
    if "key-byte-order" in faults:
        key = recipe["crypt_key"]
        nonce = 4 if recipe["crypt_algo"] == "AES-CTR" else 0  # RFC 3686 5.1
        recipe["crypt_key"] = key[: len(key) - nonce][::-1] + key[len(key) - nonce :]
    if "icv-length" in faults:
        recipe["icv_size"] = int(faults["icv-length"]) // 8
    raw = bytearray(bytes(EIP93SARecord.for_esp(**recipe)))
    if "digest-byte-order" in faults:
        raw[0x28:0x68] = _words_swapped(bytes(raw[0x28:0x68]))
    if "iv-source" in faults:
        cmd0 = int.from_bytes(raw[0:4], "little") & ~(3 << 24)  # iv_source: bits 25:24
        raw[0:4] = cmd0.to_bytes(4, "little")
    if "spi-byte-order" in faults:
        raw[0x68:0x6C] = raw[0x68:0x6C][::-1]
    return bytes(raw)


def _rewrite(drv: EIP93Rings, sa: OffloadedSA, faults: dict[str, str]) -> None:
    """Write the record of ``faults`` for ``sa``, its runtime words kept (built before
    anything is written: callers make ``faults`` the SA's only after)."""
    live = drv.memory.read(sa.sa_addr, 0x80)
    want = bytearray(faulty_record(sa, faults))
    want[_RUNTIME] = live[_RUNTIME]
    drv.memory.write(sa.sa_addr, bytes(want))


def record_fields(raw: bytes) -> dict[str, str]:
    """An SA record's fields, each as the layer prints it."""
    from esplab.layers.sa_record import EIP93SARecord

    rec = EIP93SARecord(raw)
    return {f.name: str(f.i2repr(rec, rec.getfieldval(f.name))) for f in rec.fields_desc}


def _icv_default(sa: OffloadedSA) -> str:
    return "96" if sa.icv_bits == 128 else "128"


def set_fault(
    drv: EIP93Rings,
    sa: OffloadedSA,
    kind: str,
    arg: str = "",
    keys: Mapping[int, Any] | None = None,
) -> tuple[FaultKind, dict[str, tuple[str, str]]]:
    """Inject ``kind`` into ``sa``: (the kind, {field: (before, after)} of the record).

    Raises :class:`NotFound` for an unknown kind or SPI, :class:`InvalidValue` for a kind
    that does not apply or a bad argument, :class:`StateConflict` for a fault set already."""
    fault = _fault_kind(kind)
    keys = keys or {}
    if fault.where == "tx" and sa.direction != "out":
        raise InvalidValue(
            f"fault {kind} changes what the driver sends; SA {sa.spi:#x} is inbound",
            valid="an outbound SA, or a record fault: "
            + ", ".join(k for k, f in FAULTS.items() if f.where == "record"),
        )
    if kind == "icv-length":
        arg = arg or _icv_default(sa)
        bits = int(arg) if arg.isdigit() else -1  # (decimal bits, as ip xfrm takes them)
        digest = AUTHENC_AUTH[sa.auth][2] * 8
        if bits % 32 or not 32 <= bits <= digest or bits == sa.icv_bits:
            raise InvalidValue(
                f"ICV length '{arg}' for {sa.auth}/{sa.icv_bits}",
                valid=[str(b) for b in range(32, digest + 1, 32) if b != sa.icv_bits],
                value=arg,
            )
        arg = str(bits)
    elif kind == "wrong-sa":
        if not arg:
            raise InvalidValue(
                "fault wrong-sa needs the SPI whose keys to program",
                valid=[f"{k:#x}" for k in keys] or "none: offload another SA of these algorithms",
            )
        other = int(arg, 0) if _is_int(arg) else None
        if other is None or other not in keys:
            raise NotFound(
                f"SPI {arg} for wrong-sa: no other SA of the same algorithms",
                valid=[f"{k:#x}" for k in keys],
                value=arg,
            )
        arg = f"{other:#x}"
        sa.wrong_keys = (keys[other]["crypt_key"], keys[other]["auth_key"])
    elif arg:
        raise InvalidValue(f"fault {kind} takes no argument", value=arg)
    if kind in sa.faults and sa.faults[kind] == arg:
        raise StateConflict(
            f"SA {sa.spi:#x} ({sa.direction}) already has fault {kind}",
            hint=f"eip93 fault clear {sa.spi:#x} {kind}",
        )
    before = record_fields(drv.memory.read(sa.sa_addr, 0x80))
    faults = {**sa.faults, kind: arg}
    if fault.where == "record":
        _rewrite(drv, sa, faults)
    sa.faults = faults
    after = record_fields(drv.memory.read(sa.sa_addr, 0x80))
    return fault, _changed(before, after)


def clear_fault(
    drv: EIP93Rings, sa: OffloadedSA, kind: str | None
) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """Remove ``kind`` (None: every fault) from ``sa``: (the kinds removed, the record
    fields that changed back). :class:`NotFound` when there is no such fault."""
    if not sa.faults:
        raise NotFound(f"SA {sa.spi:#x} ({sa.direction}) has no fault", hint="eip93 fault")
    if kind is not None:
        _fault_kind(kind)
        if kind not in sa.faults:
            raise NotFound(
                f"SA {sa.spi:#x} ({sa.direction}) has no fault {kind}",
                valid=list(sa.faults) or "none: the SA has no fault",
                value=kind,
            )
    removed = [kind] if kind is not None else list(sa.faults)
    before = record_fields(drv.memory.read(sa.sa_addr, 0x80))
    faults = {k: v for k, v in sa.faults.items() if k not in removed}
    _rewrite(drv, sa, faults)
    sa.faults = faults
    after = record_fields(drv.memory.read(sa.sa_addr, 0x80))
    return removed, _changed(before, after)


def _is_int(text: str) -> bool:
    try:
        int(text, 0)
    except ValueError:
        return False
    return True


def _changed(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    return {k: (before[k], after[k]) for k in before if before[k] != after[k]}


# --- tx faults: what the mistaken driver does to the engine's output ---------------


def _esp_at(packet: bytes) -> tuple[int, int]:
    """(offset of the ESP header, offset of the byte that names it) in an engine output."""
    from esplab.model.kernel.esp.ip import locate_esp

    return locate_esp(packet)


def _icv_words(sa: OffloadedSA, drv: EIP93Rings, packet: bytes) -> bytes:
    n = sa.icv_len
    return packet[:-n] + _words_swapped(packet[-n:])


def _esn_icv(sa: OffloadedSA, drv: EIP93Rings, packet: bytes) -> bytes:
    from esplab.layers.hashstate import hmac_from_states, state_from_record_bytes

    off = _esp_at(packet)[0]
    alg = AUTHENC_AUTH[sa.auth][1]
    rec = drv.memory.read(sa.sa_addr, 0x80)
    inner = state_from_record_bytes(alg, rec[0x28:0x48])
    outer = state_from_record_bytes(alg, rec[0x48:0x68])
    n = sa.icv_len
    esp = packet[off:-n]
    icv = hmac_from_states(alg, inner, outer, esp + bytes(4))[:n]  # RFC 4303 2.2.1: hi 0
    return packet[:-n] + icv


def _seq_after(sa: OffloadedSA, drv: EIP93Rings, packet: bytes) -> bytes:
    off = _esp_at(packet)[0]
    seq = (int.from_bytes(packet[off + 4 : off + 8], "big") + 1) & _U32
    return packet[: off + 4] + seq.to_bytes(4, "big") + packet[off + 8 :]


def _nat_t(sa: OffloadedSA, drv: EIP93Rings, packet: bytes) -> bytes:
    from esplab.model.kernel.esp.ip import checksum

    off, nh_off = _esp_at(packet)
    esp = packet[off:]
    udp = bytearray(struct.pack("!HHHH", 4500, 4500, 8 + len(esp), 0) + esp)  # RFC 3948 2.1
    head = bytearray(packet[:off])
    head[nh_off] = 17
    if packet[0] >> 4 == 4:
        head[2:4] = (len(head) + len(udp)).to_bytes(2, "big")
        head[10:12] = b"\x00\x00"
        head[10:12] = checksum(bytes(head[:20])).to_bytes(2, "big")
        return bytes(head) + bytes(udp)
    head[4:6] = (len(head) - 40 + len(udp)).to_bytes(2, "big")
    # RFC 8200 8.1: the pseudo-header of source, destination, length and next header 17
    pseudo = bytes(head[8:40]) + len(udp).to_bytes(4, "big") + b"\x00\x00\x00\x11"
    udp[6:8] = (checksum(pseudo + bytes(udp)) or 0xFFFF).to_bytes(2, "big")
    return bytes(head) + bytes(udp)


_TX: Mapping[str, Callable[[OffloadedSA, EIP93Rings, bytes], bytes]] = MappingProxyType(
    {
        "icv-word-order": _icv_words,
        "esn": _esn_icv,
        "seq-after-icv": _seq_after,
        "nat-t": _nat_t,
    }
)


def apply_tx(drv: EIP93Rings, sa: OffloadedSA, packet: bytes) -> tuple[bytes, list[str]]:
    """The packet the mistaken driver sends for the engine's ``packet``, and one line
    per fault that changed it (the tx faults in the order set)."""
    lines: list[str] = []
    for kind in sa.faults:
        step = _TX.get(kind)
        if step is None:
            continue
        packet = step(sa, drv, packet)
        lines.append(f"fault {kind} [M]: {FAULTS[kind].what}")
    return packet, lines


def faulty_outcome(drv: EIP93Rings, sa: OffloadedSA, outcome: Outcome) -> Outcome:
    """What a driver with ``sa``'s injected faults sends: the engine's packet changed
    by the tx faults, and a stage naming every fault (record faults too, since the
    engine computed from the faulty record) [M]."""
    if not outcome.ok or not outcome.data or outcome.pending:
        return outcome
    packet, lines = apply_tx(drv, sa, bytes(outcome.data))
    record = [
        f"fault {k} [M]: the SA record's {FAULTS[k].field} as a driver with this mistake writes it"
        for k in sa.faults
        if FAULTS[k].where == "record"
    ]
    faults = ", ".join(f"{k} {a}".strip() for k, a in sa.faults.items())
    outcome.stages.append(
        drv.stage(
            f"injected fault(s) on SPI {sa.spi:#x}: {faults}",
            "; ".join(record + lines) + " (eip93 fault clear to remove)",
            "M",
            data=packet,
            kind="ip",
            faults=dict(sa.faults),
        )
    )
    outcome.data = packet
    return outcome
