"""The descriptor rings: wrap-around, a full ring, an empty ring, ownership, bus errors,
rings that were never set up (eip93.md 1.5; model errors name the register)."""

from __future__ import annotations

import pytest

from esplab.errors import EngineError
from esplab.model.hw.eip93 import regs as R
from esplab.model.kernel.drivers.eip93 import DriverSettings, EIP93Device, new_eip93
from esplab.model.kernel.esp import core as esp
from esplab.model.stage import built_stages

from .support import Pair, kernel_skb, key, make_pair, plain_packet, raw_job, words


def _small_pair(entries: int = 4, offload: str = "packet") -> Pair:
    drv = new_eip93(3, settings=DriverSettings(ring_entries=entries))
    return make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, offload, driver=drv)


def _skb(pair: Pair, seq: int) -> tuple[bytes, int, bytes]:
    plain = plain_packet(4, 80, ident=seq)
    ref = esp.encrypt(pair.sw_out, plain, seq=seq, iv=key(16, seq))
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    return skb, proto, ref


def test_ring_wraps() -> None:
    pair = _small_pair(4)
    drv = pair.driver
    slots = []
    for seq in range(1, 11):
        skb, proto, ref = _skb(pair, seq)
        out = drv.packet_tx(pair.out, skb, proto=proto, iv=key(16, seq))
        assert out.ok and out.data == ref
        slots.append(out.slot)
    assert slots == [0, 1, 2, 3] * 2 + [0, 1]
    assert drv.device.read_reg(R.RING_RW_PNTR) == 2 | 2 << 16
    assert drv.stats.completed == 10 and drv.in_flight == 0


def test_full_ring_is_refused_counted_and_nothing_is_lost() -> None:
    pair = _small_pair(4)
    drv = pair.driver
    drv.pause()
    queued = []
    for seq in range(1, 5):
        skb, proto, _ = _skb(pair, seq)
        out = drv.packet_tx(pair.out, skb, proto=proto, iv=key(16, seq))
        assert out.pending and out.slot == seq - 1
        queued.append(out)
    assert drv.device.read_reg(R.CD_COUNT) == 4
    skb, proto, _ = _skb(pair, 5)
    refused = drv.packet_tx(pair.out, skb, proto=proto)
    assert not refused.ok and refused.reason == "ring-full"
    assert refused.stages[-1].drop == "ring-full"
    assert drv.stats.ring_full == 1 and drv.stats.tx_errors == 1
    done = drv.resume()
    assert [o.slot for o in done] == [0, 1, 2, 3]
    assert all(o.ok for o in done)
    assert [o.seq for o in done] == [1, 2, 3, 4]  # the engine's counter, in ring order
    assert [o.data for o in done] == [_skb(pair, s)[2] for s in range(1, 5)]
    taps = [s.tap for s in done[0].stages]
    assert taps[0] == "eip93.driver" and "eip93.cdr" in taps and taps[-1] == "eip93.driver"


def test_empty_ring_read() -> None:
    drv = new_eip93(0)
    assert drv.poll() == []
    assert drv.device.read_reg(R.RD_COUNT) == 0
    with pytest.raises(EngineError, match=r"PE_RD_COUNT \(0x094\): 1 results acknowledged with 0"):
        drv.device.write_reg(R.RD_COUNT, 1)


def test_engine_stalls_while_the_rdr_is_full() -> None:
    dev = EIP93Device()
    dev.write_reg(R.PE_CONFIG, 0x300)
    for reg in (R.CDR_BASE, R.RDR_BASE):
        dev.write_reg(reg, dev.memory.allocate(64, label="ring", pool="ring"))
    dev.write_reg(R.RING_CONFIG, 1)  # two entries
    sa = dev.memory.allocate(128, label="SA", pool="sa")
    dev.memory.write(sa, (0xFF00).to_bytes(4, "little"))  # NULL copy job
    buf = dev.memory.allocate(64, label="buf")
    cmd = b"".join(w.to_bytes(4, "little") for w in words(1, buf, buf + 32, sa, 0, 8))
    for slot in (0, 1):
        dev.memory.write(dev.cdr_base + 32 * slot, cmd)
    dev.write_reg(R.CD_COUNT, 2)
    assert dev.read_reg(R.RD_COUNT) == 2
    dev.memory.write(dev.cdr_base, cmd)  # slot 0 again before its result is consumed
    assert dev.write_reg(R.CD_COUNT, 1) == []
    assert dev.read_reg(R.CD_COUNT) == 1 and dev.stalls == 1  # [U] rdr-full-stall
    stages = built_stages(dev.write_reg(R.RD_COUNT, 1))  # the job it let run
    assert stages[0].tap == "eip93.cdr"
    assert dev.read_reg(R.CD_COUNT) == 0 and dev.read_reg(R.RD_COUNT) == 2


def test_command_without_host_ready_is_desc_owner() -> None:
    drv = new_eip93(0)
    w = list(words(0x11, 0, 0, 0, 0, 8))
    w[0] &= ~3  # word 0 not HOST_READY
    result, outcome = raw_job(drv, *w)
    assert result.errors() == ["EXT_ERR", "DESC_OWNER"]
    assert "ownership" in outcome.stages[-1].decision


@pytest.mark.parametrize("field", ["src", "dst", "sa", "state"])
def test_descriptor_pointing_outside_memory_is_bus_error(field: str) -> None:
    drv = new_eip93(0)
    sa = drv.memory.allocate(128, label="SA", pool="sa")
    drv.memory.write(sa, (0xFF00).to_bytes(4, "little"))
    state = drv.memory.allocate(56, label="state", pool="state")
    buf = drv.memory.allocate(64, label="buf")
    addrs = {"src": buf, "dst": buf, "sa": sa, "state": state}
    addrs[field] = 0x7FFF0000  # nothing is mapped there
    result, outcome = raw_job(
        drv, *words(0x11, addrs["src"], addrs["dst"], addrs["sa"], addrs["state"], 16)
    )
    assert result.errors() == ["EXT_ERR", "BUS"]
    assert result.length == 0
    assert "0x7fff0000" in outcome.stages[-1].decision
    assert drv.device.engine.stats.errors["BUS"] == 1


def test_dma_error_flushes_every_offloaded_sa() -> None:
    # JM: a DMA error flushes the port's SAs (airoha-dsa-xfrm.md 3.10).
    pair = _small_pair(8, "packet")
    drv = pair.driver
    other = drv.state_add(
        direction="out",
        spi=0x200,
        enc="cbc(des)",
        enc_key=key(8, 1),
        auth="hmac(md5)",
        auth_key=key(16, 2),
    ).sa
    assert other is not None
    pair.out.sa_addr = 0x7FFF0000  # the SA record pointer is corrupt
    skb, proto, _ = _skb(pair, 1)
    out = drv.packet_tx(pair.out, skb, proto=proto)
    assert not out.ok and out.errors == ["EXT_ERR", "BUS"]
    assert {(s.spi, s.direction) for s in out.flushed} == {
        (0x100, "out"),
        (0x100, "in"),
        (0x200, "out"),
    }
    assert drv.sas == {} and drv.stats.flushes == 1
    assert "flush after a DMA error" in out.stages[-1].decision
    assert drv.rx(_skb(pair, 2)[2]) is None  # no SA left: software takes it


def test_ring_size_zero_is_a_model_error_naming_the_register() -> None:
    with pytest.raises(EngineError, match=r"PE_RING_CONFIG \(0x088\)"):
        new_eip93(0, settings=DriverSettings(ring_entries=0))
    dev = EIP93Device()
    dev.write_reg(R.PE_CONFIG, 0x300)
    dev.write_reg(R.CDR_BASE, dev.memory.allocate(32, label="CDR", pool="ring"))
    dev.write_reg(R.RDR_BASE, dev.memory.allocate(32, label="RDR", pool="ring"))
    with pytest.raises(EngineError, match=r"ring size 0: PE_RING_CONFIG \(0x088\)"):
        dev.write_reg(R.CD_COUNT, 1)


def test_unset_or_unmapped_ring_base_is_a_model_error_naming_the_register() -> None:
    dev = EIP93Device()
    dev.write_reg(R.PE_CONFIG, 0x300)
    dev.write_reg(R.RING_CONFIG, 3)
    with pytest.raises(EngineError, match=r"PE_CDR_BASE \(0x080\) is not set"):
        dev.write_reg(R.CD_COUNT, 1)
    dev.write_reg(R.CDR_BASE, dev.memory.allocate(128, label="CDR", pool="ring"))
    dev.write_reg(R.RDR_BASE, 0x7F000000)
    with pytest.raises(EngineError, match=r"PE_RDR_BASE \(0x084\) = 0x7f000000"):
        dev.write_reg(R.CD_COUNT, 1)
    assert dev.read_reg(R.CD_COUNT) == 0  # refused: nothing half-done


def test_a_refused_kick_leaves_the_driver_as_it_was() -> None:
    pair = _small_pair(4)
    drv = pair.driver
    drv.device.write_reg(R.PE_CONFIG, 0x100)  # someone switched the engine out of ring mode
    skb, proto, _ = _skb(pair, 1)
    with pytest.raises(EngineError, match="PE_CONFIG"):
        drv.packet_tx(pair.out, skb, proto=proto, iv=key(16, 7))
    assert drv.in_flight == 0 and drv.head == 0 and drv.stats.submitted == 0
    drv.device.write_reg(R.PE_CONFIG, 0x700)
    out = drv.packet_tx(pair.out, skb, proto=proto)
    assert out.ok and out.slot == 0
    assert out.data[28:44] != key(16, 7)  # the refused packet's IV pin went with it
