"""Register semantics (eip93.md 6.1 and facts 7.10, 7.13, 7.14, 7.15)."""

from __future__ import annotations

import pytest

from esplab.errors import EngineError
from esplab.layers.crypto_desc import EIP93CommandDescriptor, EIP93ResultDescriptor
from esplab.model.hw.eip93 import regs as R
from esplab.model.kernel.drivers.eip93 import EIP93Device, new_eip93
from esplab.model.kernel.esp import core as esp

from .support import AUTHS, kernel_skb, key, make_pair, plain_packet


def _device(entries: int = 4) -> EIP93Device:
    """A device programmed by hand: ring mode with CDR update, ``entries`` entries."""
    dev = EIP93Device(seed=1)
    dev.write_reg(R.PE_CONFIG, 0x700)
    size = entries * 32
    dev.write_reg(R.CDR_BASE, dev.memory.allocate(size, label="CDR", pool="ring"))
    dev.write_reg(R.RDR_BASE, dev.memory.allocate(size, label="RDR", pool="ring"))
    dev.write_reg(R.RING_CONFIG, entries - 1)
    return dev


def _sa_and_buffer(dev: EIP93Device) -> tuple[int, int]:
    # A basic-mode NULL-cipher copy job: opgroup 0, opcode 0, cipher 15, hash 15.
    sa = dev.memory.allocate(128, label="SA", pool="sa")
    dev.memory.write(sa, (0xFF00).to_bytes(4, "little"))
    buf = dev.memory.allocate(64, label="buf")
    return sa, buf


def _command(dev: EIP93Device, slot: int, sa: int, buf: int, ctrl: int = 0x11) -> bytes:
    cmd = bytes(
        EIP93CommandDescriptor(
            hash_final=ctrl >> 4 & 1,
            src_addr=buf,
            dst_addr=buf + 32,
            sa_addr=sa,
            arc4_addr=0xA4C,
            user_id=0xC00C1E + slot,
            length=16,
        )
    )
    dev.memory.write(dev.cdr_base + 32 * slot, cmd)
    return cmd


def test_identification_registers_are_the_en7581_readout() -> None:
    # eip93.md 1.1 / 7.14 (OWRT-20130): EIP 93, major 3 minor 0 patch 1.
    dev = new_eip93(0).device
    rev = dev.read_reg(R.REVISION)
    assert rev & 0xFF == 0x5D and rev >> 8 & 0xFF == 0xA2
    assert (rev >> 24 & 0xF, rev >> 20 & 0xF, rev >> 16 & 0xF) == (3, 0, 1)
    assert dev.read_reg(R.OPTION_0) == 0x41710041
    assert dev.read_reg(R.OPTION_1) == 0x000FE007
    assert "v3.0.1" in R.decode(R.REVISION, rev)
    for reg in (R.REVISION, R.OPTION_0, R.OPTION_1, R.RING_RW_PNTR):
        with pytest.raises(EngineError, match="read-only"):
            dev.write_reg(reg, 0)


def test_probe_programs_the_mainline_sequence() -> None:
    drv = new_eip93(0)
    dev = drv.device
    assert dev.read_reg(R.PE_CONFIG) == 0x700  # ring mode + CDR update, out of reset
    assert dev.read_reg(R.RING_CONFIG) == 511  # 7.13: bits 9:0 hold entries - 1
    assert dev.read_reg(R.RING_THRESH) == 480 | 5 << 26 | 1 << 31
    assert dev.read_reg(R.BUF_THRESH) == 0x00800080
    assert dev.read_reg(R.CLOCK_CTRL) == 0x17  # PE, DES, AES, hash from OPTION_1
    assert dev.read_reg(R.INT_MASK) == R.INT_RDR_THRESH  # only bit 1 (1.5 step 6)
    assert (dev.read_reg(R.CDR_BASE), dev.read_reg(R.RDR_BASE)) == (drv.cdr, drv.rdr)


def test_cd_count_adds_and_rd_count_consumes() -> None:
    # eip93.md 7.13: CD_COUNT += N on a write of N (bits 7:0 only); RD_COUNT -= N.
    dev = _device(8)
    dev.running = False
    sa, buf = _sa_and_buffer(dev)
    for slot in range(5):
        _command(dev, slot, sa, buf)
    dev.write_reg(R.CD_COUNT, 2)
    assert dev.read_reg(R.CD_COUNT) == 2
    dev.write_reg(R.CD_COUNT, 0x103)  # only 7:0 count: 3 more
    assert dev.read_reg(R.CD_COUNT) == 5
    assert dev.read_reg(R.RD_COUNT) == 0
    dev.run()
    assert (dev.read_reg(R.CD_COUNT), dev.read_reg(R.RD_COUNT)) == (0, 5)
    assert dev.read_reg(R.RING_RW_PNTR) == 5 | 5 << 16
    dev.write_reg(R.RD_COUNT, 3)
    assert dev.read_reg(R.RD_COUNT) == 2
    with pytest.raises(EngineError, match="PE_RD_COUNT"):
        dev.write_reg(R.RD_COUNT, 3)
    with pytest.raises(EngineError, match="PE_CD_COUNT"):
        dev.write_reg(R.CD_COUNT, 9)  # more than the ring holds


def test_result_echoes_words_and_sets_ownership() -> None:
    # eip93.md 7.10: result words 1-6 equal the command's, both ready fields PE_READY,
    # hash_final preserved; EN_CDR_UPDATE marks the CDR entry PE_READY too.
    dev = _device()
    sa, buf = _sa_and_buffer(dev)
    cmd = _command(dev, 0, sa, buf, ctrl=0x11)
    dev.write_reg(R.CD_COUNT, 1)
    raw = dev.memory.read(dev.rdr_base, 32)
    result = EIP93ResultDescriptor(raw)
    command = EIP93CommandDescriptor(cmd)
    assert raw[4:28] == cmd[4:28]
    assert result.ready == 2 and result.length_ready == 2 and result.hash_final == 1
    assert result.errors() == [] and result.length == 16
    cdr = EIP93CommandDescriptor(dev.memory.read(dev.cdr_base, 32))
    assert (cdr.ready, cdr.length_ready) == (2, 2)
    assert cdr.src_addr == command.src_addr


def test_rdr_threshold_interrupt() -> None:
    # eip93.md 7.15: bit 1 rises in INT_UNMASK_STAT when results wait beyond RDR_THRESH;
    # INT_MASK_STAT shows it only when enabled; INT_CLR clears it.
    dev = _device()
    sa, buf = _sa_and_buffer(dev)
    dev.write_reg(R.RING_THRESH, 1 << 16)  # RDR threshold 1, no timeout
    _command(dev, 0, sa, buf)
    dev.write_reg(R.CD_COUNT, 1)
    assert not dev.read_reg(R.INT_UNMASK_STAT) & R.INT_RDR_THRESH  # 1 is not beyond 1
    _command(dev, 1, sa, buf)
    dev.write_reg(R.CD_COUNT, 1)
    assert dev.read_reg(R.INT_UNMASK_STAT) & R.INT_RDR_THRESH
    assert not dev.read_reg(R.INT_MASK_STAT) & R.INT_RDR_THRESH  # masked
    dev.write_reg(R.MASK_ENABLE, R.INT_RDR_THRESH)
    assert dev.read_reg(R.INT_MASK_STAT) & R.INT_RDR_THRESH and dev.irq_pending
    dev.write_reg(R.MASK_DISABLE, R.INT_RDR_THRESH)  # the hard IRQ masks it
    assert not dev.irq_pending
    dev.write_reg(R.RD_COUNT, 2)  # the tasklet drains ...
    dev.write_reg(R.INT_CLR, R.INT_RDR_THRESH)  # ... clears ...
    dev.write_reg(R.MASK_ENABLE, R.INT_RDR_THRESH)  # ... and unmasks
    assert not dev.read_reg(R.INT_UNMASK_STAT) & R.INT_RDR_THRESH
    assert dev.read_reg(R.INT_MASK) == R.INT_RDR_THRESH


def test_int_clr_while_results_wait_re_latches() -> None:
    # With the timeout enabled any waiting result raises bit 1 [U] rdr-interrupt.
    dev = _device()
    sa, buf = _sa_and_buffer(dev)
    dev.write_reg(R.RING_THRESH, 1 << 31)
    _command(dev, 0, sa, buf)
    dev.write_reg(R.CD_COUNT, 1)
    dev.write_reg(R.INT_CLR, 0xFFFFFFFF)
    assert dev.read_reg(R.INT_UNMASK_STAT) & R.INT_RDR_THRESH


def test_driver_poll_clears_the_interrupt_like_the_tasklet() -> None:
    enc, elen = "cbc(aes)", 16
    auth, alen, bits = AUTHS[1]
    pair = make_pair(enc, elen, auth, alen, bits, "transport", 4, "crypto")
    plain = plain_packet(4)
    ref = esp.encrypt(pair.sw_out, plain, seq=1, iv=key(16, 1))
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    assert pair.driver.crypto_tx(pair.out, skb, proto=proto).ok
    dev = pair.driver.device
    assert dev.read_reg(R.RD_COUNT) == 0
    assert not dev.read_reg(R.INT_UNMASK_STAT) & R.INT_RDR_THRESH
    assert dev.read_reg(R.INT_MASK) == R.INT_RDR_THRESH


@pytest.mark.parametrize("bit", [1, 2])
def test_either_reset_ring_bit_clears_the_counts(bit: int) -> None:
    # eip93.md 8.8: bit 1 (VND, vschagen) or bit 2 (mainline) [U] reset-ring-bit.
    dev = _device()
    dev.running = False
    sa, buf = _sa_and_buffer(dev)
    _command(dev, 0, sa, buf)
    dev.write_reg(R.CD_COUNT, 1)
    dev.write_reg(R.PE_CONFIG, 0x700 | 1 << bit)
    dev.write_reg(R.PE_CONFIG, 0x700)
    assert dev.read_reg(R.CD_COUNT) == 0 and dev.read_reg(R.RING_RW_PNTR) == 0


def test_bad_register_accesses_are_engine_errors() -> None:
    dev = EIP93Device()
    with pytest.raises(EngineError, match="no EIP-93 register at 0x0f0"):
        dev.read_reg(0x0F0)
    with pytest.raises(EngineError, match="no EIP-93 register"):
        dev.write_reg(0x0F0, 1)
    with pytest.raises(EngineError, match="32-bit"):
        dev.write_reg(R.CLOCK_CTRL, 1 << 32)


def test_other_modes_and_byte_swaps_are_refused_when_kicked() -> None:
    dev = _device()
    dev.write_reg(R.PE_CONFIG, 0x100)  # target command mode
    with pytest.raises(EngineError, match="PE_CONFIG"):
        dev.write_reg(R.CD_COUNT, 1)
    dev.write_reg(R.PE_CONFIG, 0x700 | 1 << 17)
    with pytest.raises(EngineError, match="swap SA"):
        dev.write_reg(R.CD_COUNT, 1)
