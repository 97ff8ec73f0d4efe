"""The one-step paths (``EIP93Driver.transact``, ``esplab.model.kernel.drivers.eip93.fast``,
``fastesp``, ``fastaead``) leave exactly what the full ring protocol leaves: the same
sequence of requests is run twice, once with ``fast_path`` on and once with it off,
and memory, registers, counters, outcomes
and stages are compared after every request."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from esplab.model.hw.eip93 import regs as R
from esplab.model.kernel.drivers.eip93 import (
    DriverSettings,
    EIP93Driver,
    Outcome,
    fastaead,
    fastesp,
    new_eip93,
)
from esplab.model.kernel.esp import core as esp
from esplab.model.kernel.esp.sa import EspSA
from esplab.model.stages import Stage

from .support import kernel_skb, key, make_pair, plain_packet

Step = Callable[[], Any]
#: The one-step paths: (module, function).
FAST = ((fastesp, "esp_tx"), (fastesp, "esp_rx"), (fastaead, "encrypt"), (fastaead, "decrypt"))


def machine_state(drv: EIP93Driver) -> dict[str, Any]:
    """Everything a request can change, outside the outcome."""
    dev, memory = drv.device, drv.memory
    engine = dev.engine
    return {
        "regions": [(r.base, r.label, r.pool, bytes(r.data)) for r in memory.regions()],
        "allocator": (
            dict(memory._next),
            {k: list(v) for k, v in memory._free.items()},
            memory.frees,
        ),
        "regs": {off: dev.read_reg(off) for off in R.REGISTERS},
        "device": (
            dev.pending,
            dev.ready,
            dev.index,
            dev.stalls,
            dev.raw_int,
            dev.int_mask,
            dict(dev._regs),
            dev.running,
            dev.irq_pending,
        ),
        "engine": (
            copy.deepcopy(engine.stats),
            engine.last_error,
            engine.prng._rng.getstate(),
            dict(engine.prng._pinned),
            list(engine._records),
            _job(engine._shown),
        ),
        "driver": (
            copy.deepcopy(drv.stats),
            drv.head,
            drv.tail,
            drv.in_flight,
            len(drv._done),
            drv.sw_rng.getstate(),
            sorted(drv._buffers),
        ),
        "sas": {k: copy.deepcopy(sa.stats) for k, sa in drv.sas.items()},
    }


def _job(job: Any) -> Any:
    """A job by what it holds (its SA's cipher and hash objects differ between drivers)."""
    if job is None:
        return None
    return (
        job.status,
        job.out,
        job.pad_value,
        job.pad_count,
        job.sa_write,
        job.state,
        job.text,
        job.choices,
        job.fidelity,
    )


def seen(result: Any) -> Any:
    """A request's outcome (or outcomes, or stages) as plain comparable values."""
    if isinstance(result, Outcome):
        return (
            "outcome",
            result.ok,
            result.data,
            result.errors,
            result.status,
            result.errno,
            result.mib,
            result.reason,
            result.seq,
            result.next_header,
            [s.key for s in result.flushed],
            result.slot,
            result.pending,
            result.result,
            [seen(s) for s in result.stages],
        )
    if isinstance(result, list | tuple):
        return [seen(r) for r in result]
    if isinstance(result, Stage):
        return (
            "stage",
            result.tap,
            result.device,
            result.decision,
            result.why,
            result.fidelity,
            result.counters,
            result.data,
            result.kind,
            result.drop,
            result.meta,
        )
    return result


class Run:
    """One driver running steps, with the fast paths on or off, and what it saw."""

    def __init__(self, fast_path: bool) -> None:
        self.fast_path = fast_path
        self.results: list[Any] = []
        self.states: list[dict[str, Any]] = []
        self.ran: dict[str, int] = {name: 0 for _, name in FAST}  # one-step requests done
        self.submitted = 0  # requests through the ring protocol

    def driver(self, seed: int = 5, **settings: Any) -> EIP93Driver:
        drv = new_eip93(seed, settings=DriverSettings(**settings))
        drv.snapshots = False
        drv.fast_path = self.fast_path
        real_submit = drv.submit

        def submit(*args: Any, **kwargs: Any) -> Any:
            self.submitted += 1
            return real_submit(*args, **kwargs)

        drv.submit = submit  # type: ignore[method-assign]
        return drv

    def step(self, drv: EIP93Driver, action: Step) -> None:
        self.results.append(action())  # stages stay unread until the end
        self.states.append(machine_state(drv))


def both(monkeypatch: pytest.MonkeyPatch, scenario: Callable[[Run], None]) -> tuple[Run, Run]:
    """Run ``scenario`` with the fast paths and without; assert they saw the same."""
    runs: list[Run] = []

    def spy(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            ran = real(*args, **kwargs)
            runs[-1].ran[name] += ran is not None
            return ran

        return counted

    for module, name in FAST:
        monkeypatch.setattr(module, name, spy(name, getattr(module, name)))
    for on in (True, False):
        runs.append(Run(on))
        scenario(runs[-1])
    quick, full = runs
    assert len(quick.states) == len(full.states)
    for n, (a, b) in enumerate(zip(quick.states, full.states, strict=True)):
        for part in a:
            assert a[part] == b[part], f"step {n}: {part} differs"
    # Stages are read only now: deferred ones show what was true when the job ran.
    for n, (a, b) in enumerate(zip(quick.results, full.results, strict=True)):
        assert seen(a) == seen(b), f"step {n}: outcome differs"
    assert not any(full.ran.values())
    assert quick.submitted < full.submitted
    return quick, full


def _wire(sw: EspSA, family: int, mode: str, n: int) -> tuple[bytes, bytes]:
    plain = plain_packet(family, 60 + 37 * n, ident=n)
    return plain, esp.encrypt(sw, plain, seq=n, iv=key(sw.iv_size, n))


CONFIGS = [
    ("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, "crypto"),
    ("cbc(aes)", 32, "hmac(sha256)", 32, 128, "tunnel", 6, "packet"),
    ("rfc3686(ctr(aes))", 20, "hmac(md5)", 16, 96, "tunnel", 4, "crypto"),
    ("cbc(des3_ede)", 24, "hmac(sha1)", 20, 96, "transport", 6, "packet"),
    ("ecb(cipher_null)", 0, "hmac(sha256)", 32, 128, "transport", 4, "packet"),
    ("cbc(des)", 8, "hmac(md5)", 16, 96, "tunnel", 6, "crypto"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_offload_tx_and_rx_end_as_the_full_protocol(
    config: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    enc, elen, auth, alen, bits, mode, family, offload = config

    def scenario(run: Run) -> None:
        drv = run.driver(ring_entries=4)  # the slots wrap during the run
        pair = make_pair(enc, elen, auth, alen, bits, mode, family, offload, driver=drv)
        send = drv.crypto_tx if offload == "crypto" else drv.packet_tx

        def tx(n: int, **kwargs: Any) -> Step:
            plain, ref = _wire(pair.sw_out, family, mode, n)
            skb, proto = kernel_skb(ref, plain, mode, pair.iv_size)
            return lambda: send(pair.out, skb, proto=proto, **kwargs)

        wires = {n: _wire(pair.sw_in, family, mode, n)[1] for n in range(1, 9)}
        bad = bytearray(wires[3])
        bad[-1] ^= 0x40  # flipped ICV
        steps: list[Step] = [tx(1), tx(2), tx(3)]
        steps += [
            lambda: drv.rx(wires[1]),
            lambda: drv.rx(wires[2]),
            lambda: drv.rx(wires[1]),  # replay
            lambda: drv.rx(bytes(bad)),
            lambda: drv.rx(wires[3]),
            lambda: drv.rx(wires[6]),
            lambda: drv.rx(wires[4]),
        ]  # out of order
        steps += [tx(4, iv=key(pair.iv_size, 4)), tx(5)]  # a pinned IV, then none
        steps += [
            drv.pause,
            tx(6),
            lambda: drv.rx(wires[5]),
            drv.resume,
            tx(7),
            lambda: drv.rx(wires[7]),
        ]
        # The interrupt handler masks the RDR interrupt; the tasklet's end unmasks it.
        steps += [lambda: drv.device.write_reg(R.MASK_DISABLE, R.INT_RDR_THRESH), tx(8)]
        steps += [
            lambda: setattr(drv, "snapshots", True),
            tx(8),
            lambda: setattr(drv, "snapshots", False),
            tx(9),
        ]
        for step in steps:
            run.step(drv, step)
        # Another SA: the engine's decoded records are forgotten (learn_hmac_blocks).
        run.step(
            drv,
            lambda: (
                make_pair(
                    "cbc(aes)",
                    16,
                    "hmac(sha1)",
                    20,
                    96,
                    "transport",
                    4,
                    offload,
                    spi=0x200,
                    driver=drv,
                ).out.spi
            ),
        )
        run.step(drv, tx(10))
        run.step(drv, lambda: drv.rx(wires[8]))
        # The driver changes the record's key in memory: the engine decodes it again.
        sa_key = key(elen - 4 if enc.startswith("rfc3686") else elen, 0x33)  # sans nonce
        run.step(drv, lambda: drv.memory.write(pair.out.sa_addr + 8, sa_key))
        run.step(drv, tx(11))
        run.step(drv, tx(12))

    quick, full = both(monkeypatch, scenario)
    assert quick.ran["esp_tx"] >= 6 and quick.ran["esp_rx"] >= 5
    assert [r.ok for r in full.results if isinstance(r, Outcome)].count(False) >= 2


@pytest.mark.parametrize("offload", ["crypto", "packet"])
def test_sa_deleted_and_added_again_at_the_same_address(
    offload: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scenario(run: Run) -> None:
        drv = run.driver(seed=9)
        pair = make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, offload, driver=drv)
        plain, ref = _wire(pair.sw_out, 4, "transport", 1)
        skb, proto = kernel_skb(ref, plain, "transport", 16)
        send = drv.crypto_tx if offload == "crypto" else drv.packet_tx
        run.step(drv, lambda: send(pair.out, skb, proto=proto))
        run.step(drv, lambda: drv.rx(ref))
        run.step(drv, lambda: drv.state_delete(pair.out))
        run.step(drv, lambda: drv.state_delete(pair.inb))
        again = make_pair(
            "cbc(aes)", 32, "hmac(sha256)", 32, 128, "transport", 4, offload, driver=drv
        )
        assert again.out.sa_addr == pair.out.sa_addr  # the freed record is reused
        plain2, ref2 = _wire(again.sw_out, 4, "transport", 1)
        skb2, _ = kernel_skb(ref2, plain2, "transport", 16)
        run.step(drv, lambda: send(again.out, skb2, proto=proto))
        run.step(drv, lambda: send(pair.out, skb, proto=proto))  # no longer offloaded
        run.step(drv, lambda: drv.rx(ref2))
        run.step(drv, lambda: drv.rx(ref2))  # replay

    quick, _ = both(monkeypatch, scenario)
    assert quick.ran["esp_tx"] == 2 and quick.ran["esp_rx"] == 2


def test_engine_counter_and_state_records(monkeypatch: pytest.MonkeyPatch) -> None:
    def scenario(run: Run) -> None:
        for settings in ({"crypto_tx_seq": "engine"}, {"esp_state_record": True}):
            drv = run.driver(**settings)
            pair = make_pair(
                "cbc(aes)", 16, "hmac(sha1)", 20, 96, "tunnel", 4, "crypto", driver=drv
            )
            for n in (1, 2, 5):
                plain, ref = _wire(pair.sw_out, 4, "tunnel", n)
                skb, proto = kernel_skb(ref, plain, "tunnel", 16)
                run.step(drv, partial(drv.crypto_tx, pair.out, skb, proto=proto))
                run.step(drv, partial(drv.rx, ref))

    quick, _ = both(monkeypatch, scenario)
    assert quick.ran["esp_tx"] == 3 and quick.ran["esp_rx"] == 3  # not with a state record


def _aead_steps(
    drv: EIP93Driver, enc: str, elen: int, auth: str, alen: int, family: int
) -> Iterator[Step]:
    ekey, akey = key(elen, 0x11), key(alen, 0x80)
    tfm = drv.aead_setkey(enc=enc, enc_key=ekey, auth=auth, auth_key=akey, spi=0x100)
    # ESP in software where the kernel has the algorithm; plain authenc requests always.
    sw = (
        EspSA.build(0x100, enc=enc, enc_key=ekey, auth=auth, auth_key=akey)
        if auth != "hmac(sha224)"
        else None
    )
    for n in range(1, 5):
        if sw is None:
            break
        plain = plain_packet(family, 50 + 41 * n, ident=n)
        ref = esp.encrypt(sw, plain, seq=n, iv=key(tfm.iv_size, n))
        skb, proto = kernel_skb(ref, plain, "transport", tfm.iv_size)
        iv = key(tfm.iv_size, n) if n % 2 else None  # else from the kernel's generator
        yield partial(drv.sw_aead_tx, tfm, skb, proto=proto, iv=iv)
        yield partial(drv.sw_aead_rx, tfm, ref)
        bad = bytearray(ref)
        bad[-3] ^= 1
        yield partial(drv.sw_aead_rx, tfm, bytes(bad))  # EBADMSG
    iv = key(tfm.iv_size, 7)
    # A valid tag over a trailer whose pad length runs past the payload: bad-padding.
    header = (0x100).to_bytes(4, "big") + (9).to_bytes(4, "big") + iv
    padded = drv.aead_encrypt(tfm, header, iv, b"x" * 14 + b"\xff\x11").data
    outer = bytearray(plain_packet(family, 60)[: 20 if family == 4 else 40])
    outer[9 if family == 4 else 6] = 50  # ESP
    yield partial(drv.sw_aead_rx, tfm, bytes(outer) + padded)
    yield lambda: drv.aead_encrypt(tfm, b"assoc-12byte", iv, b"p" * 48)
    yield lambda: drv.aead_encrypt(tfm, b"assoc-12byte", iv, b"")  # nothing to cipher
    yield lambda: drv.aead_decrypt(tfm, b"assoc-12byte", iv, b"t" * tfm.authsize)
    yield lambda: drv.aead_decrypt(tfm, b"assoc-12byte", iv, b"s" * 60)  # EBADMSG
    sealed = drv.aead_encrypt(tfm, b"", iv, b"q" * 32)
    yield lambda: sealed
    yield lambda: drv.aead_decrypt(tfm, b"", iv, sealed.data)
    yield lambda: drv.aead_decrypt(tfm, b"", iv, sealed.data[-tfm.authsize :])  # ZERO_LENGTH
    yield lambda: drv.aead_encrypt(tfm, b"", iv, b"odd")  # not whole blocks for CBC


@pytest.mark.parametrize(
    ("enc", "elen", "auth", "alen", "family"),
    [
        ("cbc(aes)", 16, "hmac(sha1)", 20, 4),
        ("cbc(aes)", 32, "hmac(sha256)", 32, 6),
        ("rfc3686(ctr(aes))", 20, "hmac(md5)", 16, 4),
        ("cbc(des3_ede)", 24, "hmac(sha256)", 32, 6),
        ("cbc(des)", 8, "hmac(sha224)", 28, 4),
    ],
)
def test_sw_aead_ends_as_the_full_protocol(
    enc: str, elen: int, auth: str, alen: int, family: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scenario(run: Run) -> None:
        drv = run.driver(ring_entries=3)
        for step in _aead_steps(drv, enc, elen, auth, alen, family):
            run.step(drv, step)

    quick, full = both(monkeypatch, scenario)
    assert quick.ran["encrypt"] >= (2 if auth == "hmac(sha224)" else 6)
    assert quick.ran["decrypt"] >= (1 if auth == "hmac(sha224)" else 5)
    assert sum(not r.ok for r in full.results if isinstance(r, Outcome)) >= 3


def test_stages_read_late_show_the_job_as_it_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reading stages after many later packets (and after the SA is gone) changes nothing.
    def scenario(run: Run) -> None:
        drv = run.driver()
        pair = make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, "packet", driver=drv)
        for n in range(1, 6):
            plain, ref = _wire(pair.sw_out, 4, "transport", n)
            skb, proto = kernel_skb(ref, plain, "transport", 16)
            run.step(drv, partial(drv.packet_tx, pair.out, skb, proto=proto))
        run.step(drv, lambda: drv.state_delete(pair.out))
        run.step(drv, drv.reset)

    quick, _ = both(monkeypatch, scenario)
    first = quick.results[0]
    assert [s.tap for s in first.stages] == [
        "eip93.driver",
        "eip93.cdr",
        "eip93.sa",
        "eip93.in",
        "eip93.out",
        "eip93.rdr",
        "eip93.driver",
    ]
    assert "writes 00000001 back" in first.stages[2].decision


def test_records_changed_behind_the_driver_and_outputs_past_the_buffer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the engine reads decides: a direction bit flipped in memory, a cipher the
    # record no longer names (so the ESP packet no longer covers the driver's IV room),
    # an authenc output one tag larger than the DMA buffer (the engine's BUS error).
    def scenario(run: Run) -> None:
        drv = run.driver()
        tfm = drv.aead_setkey(
            enc="cbc(aes)", enc_key=key(16, 1), auth="hmac(sha1)", auth_key=key(20, 2), spi=0x300
        )
        iv = key(16, 3)
        sealed = drv.aead_encrypt(tfm, b"assoc-8b", iv, b"p" * 32)
        cmd0_out = int.from_bytes(drv.memory.read(tfm.sa_out, 4), "little")
        cmd0_in = int.from_bytes(drv.memory.read(tfm.sa_in, 4), "little")
        run.step(drv, lambda: drv.memory.write(tfm.sa_out, (cmd0_out | 8).to_bytes(4, "little")))
        run.step(drv, lambda: drv.aead_encrypt(tfm, b"assoc-8b", iv, b"p" * 32))
        run.step(drv, lambda: drv.memory.write(tfm.sa_out, cmd0_out.to_bytes(4, "little")))
        run.step(drv, lambda: drv.memory.write(tfm.sa_in, (cmd0_in & ~8).to_bytes(4, "little")))
        run.step(drv, lambda: drv.aead_decrypt(tfm, b"assoc-8b", iv, sealed.data[8:]))
        run.step(drv, lambda: drv.memory.write(tfm.sa_in, cmd0_in.to_bytes(4, "little")))
        run.step(drv, lambda: drv.aead_decrypt(tfm, b"assoc-8b", iv, sealed.data[8:]))
        run.step(drv, lambda: drv.aead_encrypt(tfm, b"A" * 8, iv, b"p" * 16368))  # too big
        pair = make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, "packet", driver=drv)
        for n, pad in ((1, 0), (2, 1), (3, 2), (4, 3)):
            plain, ref = _wire(pair.sw_out, 4, "transport", n)
            skb, proto = kernel_skb(ref, plain, "transport", 16)
            run.step(drv, partial(drv.packet_tx, pair.out, skb + bytes(pad), proto=proto))
            if n == 2:  # sa_cmd0.cipher = 15 (NULL): no IV on the wire from now on
                record = int.from_bytes(drv.memory.read(pair.out.sa_addr, 4), "little")
                run.step(
                    drv,
                    partial(
                        drv.memory.write, pair.out.sa_addr, (record | 0xF00).to_bytes(4, "little")
                    ),
                )

    quick, full = both(monkeypatch, scenario)
    errors = [r.errors for r in full.results if isinstance(r, Outcome) and not r.ok]
    assert ["AUTH_ERR"] in errors and ["EXT_ERR", "BUS"] in errors
    assert quick.ran["esp_tx"] == 2  # before the record changed
