"""The views behind ``eip93``: registers, rings, SA and state records, counters.

Everything is read the way the hardware holds it: registers through the register
file, descriptors and records from DMA memory, decoded with the esplab layers. The
views change nothing.

``fault`` (and its old name ``swap-digest``) writes: fault injection, in
:mod:`esplab.commands.handlers.eip93_faults`. ``sa`` marks an SA's faults and the
fields where its live record differs from the one the driver writes.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from esplab.commands.base import Session
from esplab.commands.parser import Invocation, parse_int
from esplab.commands.result import PacketResult, Result, TableResult
from esplab.errors import BadArgument, EngineError, NotFound
from esplab.layers.crypto_desc import (
    DESCRIPTOR_SIZE,
    READY_NAMES,
    EIP93CommandDescriptor,
    EIP93ResultDescriptor,
)
from esplab.layers.sa_record import (
    SA_RECORD_SIZE,
    STATE_RECORD_SIZE,
    EIP93SARecord,
    EIP93StateRecord,
)
from esplab.model.hw.eip93 import regs as R
from esplab.model.hw.eip93.params import status_names

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.model.kernel.drivers.eip93 import EIP93Driver

__all__ = ["complete", "run"]

from esplab.commands.handlers.eip93_words import SUBCOMMANDS
from esplab.commands.handlers.eip93_words import USAGE as _USAGE


def _driver(session: Session) -> EIP93Driver:
    driver: EIP93Driver = session.lab.eip93
    return driver


def _fields(packet: Packet) -> dict[str, str]:
    return {f.name: str(f.i2repr(packet, packet.getfieldval(f.name))) for f in packet.fields_desc}


def _regs(session: Session, words: list[str]) -> Result:
    if words:
        raise BadArgument(f"eip93 regs takes no argument, got '{words[0]}'", hint=_USAGE)
    device = _driver(session).device
    rows: list[tuple[str, ...]] = []
    values: dict[str, int] = {}
    for offset, name in R.REGISTERS.items():
        if offset < R.CDR_BASE:
            continue  # the direct-host-mode mirror: unused in ring mode
        if offset in R.WRITE_ONLY:
            rows.append((f"{offset:#05x}", name, "(write-only)", ""))
            continue
        value = device.read_reg(offset)
        values[name] = value
        rows.append((f"{offset:#05x}", name, f"{value:#010x}", R.decode(offset, value)))
    return TableResult(
        summary=f"{len(values)} EIP-93 registers",
        title="EIP-93 registers",
        columns=("offset", "register", "value", "fields"),
        rows=rows,
        data={"registers": values},
    )


def _ring(session: Session, words: list[str]) -> Result:
    if not words or words[0] not in ("cdr", "rdr"):
        raise BadArgument(
            "eip93 ring needs cdr or rdr",
            valid=["cdr", "rdr"],
            value=words[0] if words else None,
            hint=_USAGE,
        )
    which = words[0]
    driver = _driver(session)
    device = driver.device
    entries = device.ring_entries
    if not entries:
        raise EngineError("the rings are not set up: PE_RING_CONFIG (0x088) is not programmed")
    base = device.cdr_base if which == "cdr" else device.rdr_base
    if len(words) > 2:
        raise BadArgument(f"unexpected argument '{words[2]}'", hint=_USAGE)
    if len(words) == 2:
        index = parse_int(words[1], "ring index")
        if not 0 <= index < entries:
            raise BadArgument(f"{which.upper()} index {index}", valid=f"0..{entries - 1}")
        raw = driver.memory.read(base + index * DESCRIPTOR_SIZE, DESCRIPTOR_SIZE)
        cls = EIP93CommandDescriptor if which == "cdr" else EIP93ResultDescriptor
        packet = cls(raw)
        notes = [f"{which.upper()}[{index}] at {base + index * DESCRIPTOR_SIZE:#010x}"]
        if which == "rdr":
            errors = status_names(raw[2])
            notes.append("status: " + (", ".join(errors) if errors else "no error"))
        return PacketResult(
            summary=f"{which.upper()}[{index}]",
            packet=packet,
            title=f"{cls.__name__} {which.upper()}[{index}]",
            notes=notes,
            data={"index": index, "hex": raw.hex(), "fields": _fields(packet)},
        )
    data = driver.memory.read(base, entries * DESCRIPTOR_SIZE)
    rows: list[tuple[str, ...]] = []
    for index in range(entries):
        w = struct.unpack_from("<8I", data, index * DESCRIPTOR_SIZE)
        marks = []
        if index == device.index:
            marks.append("engine next")
        if which == "cdr" and index == driver.head:
            marks.append("driver head")
        if which == "rdr" and index == driver.tail:
            marks.append("driver tail")
        if not any(w) and not marks:
            continue
        owner = f"{READY_NAMES.get(w[0] & 3, '?')}/{READY_NAMES.get(w[7] >> 22 & 3, '?')}"
        status = ", ".join(status_names(w[0] >> 16 & 0xFF)) if which == "rdr" else ""
        rows.append(
            (
                str(index),
                owner,
                f"{w[0]:#010x}",
                f"{w[1]:#010x}",
                f"{w[2]:#010x}",
                f"{w[3]:#010x}",
                str(w[7] & 0xFFFFF),
                status or "-",
                ", ".join(marks),
            )
        )
    columns = (
        "index",
        "owner w0/w7",
        "ctrl" if which == "cdr" else "status word",
        "src",
        "dst",
        "sa",
        "length",
        "errors",
        "",
    )
    return TableResult(
        summary=f"{which.upper()}: {entries} entries at {base:#010x}, {len(rows)} shown",
        title=f"EIP-93 {which.upper()} ({entries} entries at {base:#010x})",
        columns=columns,
        rows=rows,
        data={
            "entries": entries,
            "base": base,
            "pending": device.pending,
            "ready": device.ready,
            "shown": [int(r[0]) for r in rows],
        },
    )


def _spi_and_dir(words: list[str], what: str) -> tuple[int, str | None]:
    if not words:
        raise BadArgument(f"eip93 {what} needs an SPI", hint=_USAGE)
    spi = parse_int(words[0], "SPI")
    if not 0 <= spi <= 0xFFFFFFFF:
        raise BadArgument(f"SPI {words[0]} out of range", valid="0..0xffffffff", value=words[0])
    direction = words[1] if len(words) > 1 else None
    if direction is not None and direction not in ("in", "out"):
        raise BadArgument(f"direction '{direction}'", valid=["in", "out"], value=direction)
    if len(words) > 2:
        raise BadArgument(f"unexpected argument '{words[2]}'", hint=_USAGE)
    return spi, direction


def _record(session: Session, words: list[str], what: str) -> Result:
    spi, direction = _spi_and_dir(words, what)
    driver = _driver(session)
    addr, size, label, notes = _find(driver, spi, direction, what)
    raw = driver.memory.read(addr, size)
    packet: Any = EIP93SARecord(raw) if what == "sa" else EIP93StateRecord(raw)
    data: dict[str, Any] = {
        "spi": spi,
        "address": addr,
        "hex": raw.hex(),
        "fields": _fields(packet),
    }
    if what == "sa":
        data.update(sa_cmd0=packet.sa_cmd0, sa_cmd1=packet.sa_cmd1)
    return PacketResult(
        summary=f"{label}, {size} bytes at {addr:#010x}",
        packet=packet,
        title=f"{type(packet).__name__}: {label}",
        notes=[f"{size} bytes at {addr:#010x}", *notes],
        data=data,
    )


def _find(
    driver: EIP93Driver, spi: int, direction: str | None, what: str
) -> tuple[int, int, str, list[str]]:
    """(address, size, label, notes) of an SA's SA or state record."""
    tfms = [t for t in driver.tfms.values() if t.spi == spi]
    try:
        sa = driver.lookup(spi, direction)
    except NotFound:
        if not tfms:
            valid = [
                f"{s.spi:#x} ({s.direction})"
                for s in sorted(driver.sas.values(), key=lambda s: s.key)
            ]
            valid += sorted(
                {f"{t.spi:#x} (sw+aead)" for t in driver.tfms.values() if t.spi is not None}
            )
            where = f" ({direction})" if direction else ""
            raise NotFound(f"no SA with SPI {spi:#x}{where} on the EIP-93", valid=valid) from None
        tfm = tfms[0]
        label = f"SPI {spi:#x} {tfm.name}"
        if what == "state":
            return tfm.state, STATE_RECORD_SIZE, label, ["the sw+aead request's state record"]
        inbound = direction == "in"
        return (
            tfm.sa_in if inbound else tfm.sa_out,
            SA_RECORD_SIZE,
            f"{label} {'decrypt' if inbound else 'encrypt'}",
            ["sw+aead: basic-mode authenc (eip93.md 3.5)"],
        )
    label = f"SPI {spi:#x} {sa.direction}"
    if what == "sa":
        from esplab.commands.handlers.eip93_faults import fault_notes

        return sa.sa_addr, SA_RECORD_SIZE, label, [sa.describe(), *fault_notes(driver, sa)]
    if not sa.state_addr:
        with_state = [f"{s.spi:#x} ({s.direction})" for s in driver.sas.values() if s.state_addr]
        with_state += [f"{t.spi:#x} (sw+aead)" for t in driver.tfms.values() if t.spi is not None]
        raise NotFound(
            f"SA {spi:#x} ({sa.direction}) has no state record: its descriptors "
            "carry state_addr 0, as the vschagen ESP path does (eip93.md 4.2)",
            valid=with_state,
            hint="sw+aead transforms have one: set "
            "crypto-provider eip93 and send through a software SA",
        )
    return sa.state_addr, STATE_RECORD_SIZE, label, [sa.describe()]


def _stats(session: Session, words: list[str]) -> Result:
    if words:
        raise BadArgument(f"eip93 stats takes no argument, got '{words[0]}'", hint=_USAGE)
    driver = _driver(session)
    device, engine = driver.device, driver.device.engine.stats
    dstats = driver.stats
    counters: dict[str, int] = {
        "processed": engine.processed,
        "succeeded": engine.succeeded,
        "esp outbound": engine.esp_out,
        "esp inbound": engine.esp_in,
        "basic": engine.basic,
        "bytes in": engine.bytes_in,
        "bytes out": engine.bytes_out,
        **{f"error {name}": count for name, count in sorted(engine.errors.items())},
        "ring full (refused)": dstats.ring_full,
        "rdr full stalls": device.stalls,
        "submitted": dstats.submitted,
        "completed": dstats.completed,
        "in flight": driver.in_flight,
        "tx packets": dstats.tx_packets,
        "tx errors": dstats.tx_errors,
        "rx packets": dstats.rx_packets,
        "rx errors": dstats.rx_errors,
        "flushes": dstats.flushes,
        "offloaded SAs": len(driver.sas),
        **{name: count for name, count in sorted(dstats.mib.items())},
    }
    rows = [(name, str(value)) for name, value in counters.items()]
    if device.engine.last_error:
        rows.append(("last error", device.engine.last_error))
    return TableResult(
        summary=f"{engine.processed} descriptors processed, "
        f"{sum(engine.errors.values())} with errors",
        title="EIP-93 statistics",
        columns=("counter", "value"),
        rows=rows,
        data=counters,
    )


_HANDLERS = {
    "regs": _regs,
    "ring": _ring,
    "stats": _stats,
}


def run(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    if not words:
        raise BadArgument("eip93 needs a subcommand", valid=list(SUBCOMMANDS), hint=_USAGE)
    sub, rest = words[0], words[1:]
    if sub in ("sa", "state"):
        return _record(session, rest, sub)
    if sub in ("fault", "swap-digest"):
        from esplab.commands.handlers.eip93_faults import fault, swap_digest

        return (fault if sub == "fault" else swap_digest)(session, rest)
    handler = _HANDLERS.get(sub)
    if handler is None:
        raise BadArgument(f"unknown eip93 subcommand '{sub}'", valid=list(SUBCOMMANDS), value=sub)
    return handler(session, rest)


def complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return list(SUBCOMMANDS)
    if words[0] == "ring" and len(words) == 1:
        return ["cdr", "rdr"]
    if words[0] == "fault":
        return _complete_fault(session, words[1:])
    if words[0] in ("sa", "state", "swap-digest"):
        driver = _driver(session)
        if len(words) == 1:
            return sorted({f"{s.spi:#x}" for s in driver.sas.values()})
        if len(words) == 2:
            return ["in", "out"]
    return []


def _complete_fault(session: Session, words: list[str]) -> list[str]:
    from esplab.model.kernel.drivers.eip93.faults import FAULTS

    if not words:
        return ["set", "clear"]
    if len(words) == 1:
        return sorted({f"{s.spi:#x}" for s in _driver(session).sas.values()})
    if len(words) == 2:
        return list(FAULTS)
    return []
