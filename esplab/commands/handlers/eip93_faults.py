"""``eip93 fault``: inject, list and clear driver faults in offloaded SAs.

``eip93 fault`` lists the kinds (and which SAs carry one), ``eip93 fault set SPI KIND
[ARG] [in|out]`` injects one, ``eip93 fault clear SPI [KIND] [in|out]`` removes one or
all. ``eip93 swap-digest SPI`` is the old name of ``digest-byte-order``: it sets the
fault, or clears it when set, and says which it did. The kinds and what they do are
:data:`esplab.model.kernel.drivers.eip93.faults.FAULTS` [M].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.commands.base import Session
from esplab.commands.parser import parse_int
from esplab.commands.result import MessageResult, Result, TableResult
from esplab.errors import BadArgument, NotFound
from esplab.model.kernel.drivers.eip93.faults import (
    FAULTS,
    clear_fault,
    driver_record,
    record_fields,
    set_fault,
)

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93 import EIP93Driver
    from esplab.model.kernel.drivers.eip93.outcome import OffloadedSA

__all__ = ["FAULT_USAGE", "fault", "fault_notes", "record_diff", "swap_digest"]

FAULT_USAGE = "eip93 fault | fault set SPI KIND [ARG] [in|out] | fault clear SPI [KIND] [in|out]"


def _sa(driver: EIP93Driver, spi_word: str, direction: str | None) -> OffloadedSA:
    spi = parse_int(spi_word, "SPI")
    try:
        return driver.lookup(spi, direction)
    except NotFound:
        valid = [f"{s.spi:#x} ({s.direction})" for s in driver.sas.values()]
        where = f" ({direction})" if direction else ""
        raise NotFound(
            f"no offloaded SA with SPI {spi:#x}{where}: faults go into the SA records the "
            "driver programs",
            valid=valid or "none: add a state with offload dev wan dir in|out",
        ) from None


def _other_keys(driver: EIP93Driver, sa: OffloadedSA) -> dict[int, Any]:
    """SPI -> recipe of the other offloaded SAs whose algorithms are ``sa``'s."""
    same = ("crypt_algo", "auth_algo")
    return {
        o.spi: o.recipe
        for o in driver.sas.values()
        if o is not sa
        and o.spi != sa.spi
        and all(o.recipe.get(k) == sa.recipe.get(k) for k in same)
        and len(o.recipe.get("crypt_key", b"")) == len(sa.recipe.get("crypt_key", b""))
    }


def _split_dir(words: list[str]) -> tuple[list[str], str | None]:
    if words and words[-1] in ("in", "out"):
        return words[:-1], words[-1]
    return words, None


def _changes(changed: dict[str, tuple[str, str]]) -> str:
    if not changed:
        return "no SA record field changes"
    return "; ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())


def fault(session: Session, words: list[str]) -> Result:
    """``eip93 fault ...`` (module docstring)."""
    driver: EIP93Driver = session.lab.eip93
    if not words:
        return _list(driver)
    sub, rest = words[0], words[1:]
    rest, direction = _split_dir(rest)
    if sub == "set":
        if len(rest) not in (2, 3):
            raise BadArgument("eip93 fault set needs SPI KIND [ARG]", hint=FAULT_USAGE)
        sa = _sa(driver, rest[0], direction)
        kind = rest[1]
        arg = rest[2] if len(rest) == 3 else ""
        f, changed = set_fault(driver, sa, kind, arg, _other_keys(driver, sa))
        label = f"SPI {sa.spi:#x} ({sa.direction}, SA record at {sa.sa_addr:#010x})"
        what = f"{kind} {sa.faults[kind]}".strip()
        return MessageResult(
            summary=f"fault set [M]: {what} on {label}: {f.what}; field: {f.field}; "
            + (_changes(changed) if f.where == "record" else "applied to each packet sent")
            + f" (eip93 fault clear {sa.spi:#x} {kind} removes it)",
            data={
                "action": "set",
                "fault": kind,
                "arg": sa.faults[kind],
                "spi": sa.spi,
                "direction": sa.direction,
                "field": f.field,
                "changed": {k: list(v) for k, v in changed.items()},
                "faults": dict(sa.faults),
            },
        )
    if sub == "clear":
        if len(rest) not in (1, 2):
            raise BadArgument("eip93 fault clear needs SPI [KIND]", hint=FAULT_USAGE)
        sa = _sa(driver, rest[0], direction)
        kinds, changed = clear_fault(driver, sa, rest[1] if len(rest) == 2 else None)
        return MessageResult(
            summary=f"fault(s) cleared on SPI {sa.spi:#x} ({sa.direction}): {', '.join(kinds)}; "
            + _changes(changed),
            data={
                "action": "clear",
                "cleared": kinds,
                "spi": sa.spi,
                "direction": sa.direction,
                "changed": {k: list(v) for k, v in changed.items()},
                "faults": dict(sa.faults),
            },
        )
    raise BadArgument(f"eip93 fault subcommand '{sub}'", valid=["set", "clear"], value=sub)


def _list(driver: EIP93Driver) -> Result:
    rows: list[tuple[str, ...]] = []
    active = {f"{s.spi:#x} ({s.direction})": dict(s.faults) for s in driver.sas.values()}
    for key, f in FAULTS.items():
        on = [sa for sa, faults in active.items() if key in faults]
        rows.append((key + (f" {f.arg}" if f.arg else ""), f.field, f.what, ", ".join(on) or "-"))
    return TableResult(
        summary=f"{len(FAULTS)} fault kinds, {sum(len(v) for v in active.values())} set",
        title="EIP-93 driver faults [M] (eip93 fault set SPI KIND)",
        columns=("kind", "field", "what the mistaken driver does", "set on"),
        rows=rows,
        data={"kinds": list(FAULTS), "active": {k: v for k, v in active.items() if v}},
    )


def swap_digest(session: Session, words: list[str]) -> Result:
    """The old ``swap-digest SPI [in|out]``: toggles ``digest-byte-order``, saying which."""
    driver: EIP93Driver = session.lab.eip93
    rest, direction = _split_dir(words[:2])
    if not words:
        raise BadArgument("eip93 swap-digest needs an SPI", hint="eip93 swap-digest SPI [in|out]")
    if len(words) > 2:
        raise BadArgument(
            f"unexpected argument '{words[2]}'", hint="eip93 swap-digest SPI [in|out]"
        )
    if len(rest) != 1:
        raise BadArgument(f"direction '{words[1]}'", valid=["in", "out"], value=words[1])
    spi = parse_int(rest[0], "SPI")
    tfms = [t for t in driver.tfms.values() if t.spi == spi]
    if tfms and not any(s.spi == spi for s in driver.sas.values()):
        return _swap_tfm(driver, tfms[0], direction or "out")
    sa = _sa(driver, rest[0], direction)
    kind = "digest-byte-order"
    if kind in sa.faults:
        result = fault(session, ["clear", rest[0], kind, sa.direction])
        result.summary = (
            "swap-digest (eip93 fault clear ... digest-byte-order): fault REMOVED, "
            + (result.summary)
        )
    else:
        result = fault(session, ["set", rest[0], kind, sa.direction])
        result.summary = "swap-digest (eip93 fault set ... digest-byte-order): fault INJECTED, " + (
            result.summary
        )
    result.data["alias"] = "swap-digest"
    return result


def _swap_tfm(driver: EIP93Driver, tfm: Any, direction: str) -> Result:
    """swap-digest on a sw+aead transform's SA record (encrypt, or decrypt for ``in``):
    its digest words reversed, or put back when they were [M]."""
    addr = tfm.sa_in if direction == "in" else tfm.sa_out
    before = driver.memory.read(addr + 0x28, 0x40)
    after = b"".join(before[i : i + 4][::-1] for i in range(0, 0x40, 4))
    driver.memory.write(addr + 0x28, after)
    injected = addr not in tfm.swapped
    (tfm.swapped.add if injected else tfm.swapped.discard)(addr)
    label = f"SPI {tfm.spi:#x} {tfm.name} {'decrypt' if direction == 'in' else 'encrypt'}"
    now = "byte-reversed" if injected else "back in the driver's byte order"
    return MessageResult(
        summary=f"swap-digest: fault {'INJECTED' if injected else 'REMOVED'} [M] on {label} "
        f"(sw+aead SA record at {addr:#010x}): every 32-bit word of sa_i_digest and "
        f"sa_o_digest {now} "
        f"(sa_i_digest word 0 {before[:4].hex()} -> {after[:4].hex()})",
        data={
            "action": "set" if injected else "clear",
            "alias": "swap-digest",
            "fault": "digest-byte-order",
            "spi": tfm.spi,
            "direction": direction,
            "sa_addr": addr,
        },
    )


def record_diff(driver: EIP93Driver, sa: OffloadedSA) -> list[tuple[str, str, str]]:
    """(field, live value, the driver's value) for every SA record field that differs
    from the record the driver writes for ``sa`` (the engine's run-time fields aside)."""
    from esplab.model.kernel.drivers.eip93.faults import RUNTIME_FIELDS

    live = record_fields(driver.memory.read(sa.sa_addr, 0x80))
    want = record_fields(driver_record(sa))
    return [(k, live[k], want[k]) for k in live if k not in RUNTIME_FIELDS and live[k] != want[k]]


def fault_notes(driver: EIP93Driver, sa: OffloadedSA) -> list[str]:
    """Lines for ``eip93 sa``: the SA's faults, and the fields that differ from the
    driver's record."""
    notes = [
        f"FAULT {k}{' ' + a if a else ''} [M]: {FAULTS[k].what} ({FAULTS[k].field})"
        for k, a in sa.faults.items()
    ]
    notes += [
        f"differs from the driver's record: {name} is {live}, the driver writes {want}"
        for name, live, want in record_diff(driver, sa)
    ]
    return notes
