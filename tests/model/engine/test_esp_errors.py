"""ESP error statuses: what the engine reports (eip93.md 2.2, 7.9) and what the driver
makes of it (airoha-dsa-xfrm.md 3.8, 3.10)."""

from __future__ import annotations

import hmac

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from esplab.layers import hashstate
from esplab.layers.crypto_desc import EIP93ResultDescriptor
from esplab.layers.sa_record import EIP93SARecord
from esplab.model.hw.eip93.choices import DriverSettings
from esplab.model.kernel.drivers.eip93 import new_eip93
from esplab.model.kernel.drivers.eip93.xmit import fix_outer, locate_esp
from esplab.model.kernel.esp import core as esp

from .support import Pair, kernel_skb, key, make_pair, plain_packet, raw_job, words

AES_SHA1 = ("cbc(aes)", 16, "hmac(sha1)", 20, 96)


def _pair(mode: str = "transport", offload: str = "crypto") -> Pair:
    return make_pair(*AES_SHA1, mode, 4, offload)


def _sw_packet(pair: Pair, seq: int, size: int = 100) -> tuple[bytes, bytes]:
    plain = plain_packet(4, size, ident=seq)
    return plain, esp.encrypt(pair.sw_out, plain, seq=seq, iv=key(16, seq))


@pytest.mark.parametrize("mode", ["transport", "tunnel"])
def test_flipped_icv_byte_is_auth_err_alone(mode: str) -> None:
    pair = _pair(mode)
    _, wire = _sw_packet(pair, 1)
    bad = wire[:-1] + bytes((wire[-1] ^ 0x01,))
    rx = pair.driver.rx(bad)
    assert rx is not None and not rx.ok
    assert rx.errors == ["AUTH_ERR"]
    # The vschagen driver tests the whole status byte == 0x01 (eip93.md 7.9).
    assert EIP93ResultDescriptor(rx.result).status_byte == 0x01
    kind = "TUNNEL" if mode == "tunnel" else "TRANSPORT"
    assert rx.status == f"CRYPTO_{kind}_ESP_AUTH_FAILED"
    assert rx.mib == "XfrmInStateProtoError"
    assert pair.inb.stats.integrity_failed == 1
    assert pair.driver.stats.mib["XfrmInStateProtoError"] == 1
    # Nothing was written and the window did not move: the good packet still passes.
    good = pair.driver.rx(wire)
    assert good is not None and good.ok


def test_flipped_ciphertext_byte_is_auth_err() -> None:
    pair = _pair()
    _, wire = _sw_packet(pair, 1)
    off, _ = locate_esp(wire)
    at = off + 8 + 16 + 3
    rx = pair.driver.rx(wire[:at] + bytes((wire[at] ^ 0x80,)) + wire[at + 1 :])
    assert rx is not None and rx.errors == ["AUTH_ERR"]


@pytest.mark.parametrize("offload", ["crypto", "packet"])
def test_replay_and_too_old_are_seqnum_err(offload: str) -> None:
    pair = _pair(offload=offload)
    drv = pair.driver
    packets = {seq: _sw_packet(pair, seq)[1] for seq in (1, 2, 100, 30, 37)}
    firsts = {seq: drv.rx(packets[seq]) for seq in (1, 2, 100)}
    assert all(first is not None and first.ok for first in firsts.values())
    replay = drv.rx(packets[2])
    assert replay is not None and replay.errors == ["SEQNUM_ERR"]
    assert EIP93ResultDescriptor(replay.result).status_byte == 0x04
    too_old = drv.rx(packets[30])  # 100 - 30 >= 64: left of the 64-bit window
    assert too_old is not None and too_old.errors == ["SEQNUM_ERR"]
    inside = drv.rx(packets[37])  # 100 - 37 = 63: inside, not seen yet
    assert inside is not None and inside.ok and inside.errors == []
    again = drv.rx(packets[37])
    assert again is not None and again.errors == ["SEQNUM_ERR"]
    record = EIP93SARecord(drv.memory.read(pair.inb.sa_addr, 128))
    assert record.sa_seqnum_0 == 100  # highest authenticated [U] replay-window
    assert record.sa_seqnum_mask_0 & 1 and record.sa_seqnum_mask_1 >> 31 & 1  # 100 and 37
    if offload == "crypto":
        # The driver ignores SEQNUM_ERR (eip93.md 2.2, 4.6): the packets go up decrypted
        # with CRYPTO_SUCCESS and xfrm_input's replay check decides (airoha-dsa-xfrm.md 3.9).
        for outcome in (replay, too_old, again):
            assert outcome.ok and outcome.status == "CRYPTO_SUCCESS" and outcome.mib is None
        assert replay.data == firsts[2].data and replay.seq == 2  # type: ignore[union-attr]
        assert pair.inb.stats.replay == 0 and not pair.inb.stats.errors
        assert drv.stats.rx_errors == 0 and not drv.stats.mib
    else:
        # Packet offload: the engine owns the window; the driver counts per SA, no MIB.
        for outcome in (replay, too_old, again):
            assert not outcome.ok and outcome.mib is None and outcome.reason == "SEQNUM_ERR"
        assert pair.inb.stats.replay == 3


@pytest.mark.parametrize("mode", ["transport", "tunnel"])
def test_crypto_offload_replay_is_decrypted_and_handed_up(mode: str) -> None:
    pair = _pair(mode)
    drv = pair.driver
    _, wire = _sw_packet(pair, 5)
    first = drv.rx(wire)
    window = drv.memory.read(pair.inb.sa_addr + 0x6C, 16)
    again = drv.rx(wire)
    assert first is not None and again is not None
    assert again.ok and again.errors == ["SEQNUM_ERR"]
    # The same bytes as the first time, for the kernel to check (CRYPTO_DONE).
    assert again.data == first.data and again.seq == 5 and again.next_header == first.next_header
    assert drv.memory.read(pair.inb.sa_addr + 0x6C, 16) == window  # the window stays
    done = again.stages[-1]
    assert done.tap == "eip93.driver" and "SEQNUM_ERR ignored" in done.decision
    # eip93.md 2.2, 4.6, as the public sources they stand for
    assert "drivers/crypto/inside-secure/eip93/eip93-common.c" in done.why
    assert ".md" not in done.why and done.fidelity == "D"
    rdr = next(s for s in again.stages if s.tap == "eip93.rdr")
    assert "replay-before-icv" in rdr.meta["choices"]
    assert pair.inb.stats.packets == 2 and pair.inb.stats.replay == 0


@pytest.mark.parametrize("offload", ["crypto", "packet"])
def test_replay_with_a_bad_icv_is_an_auth_failure(offload: str) -> None:
    pair = _pair(offload=offload)
    drv = pair.driver
    _, wire = _sw_packet(pair, 3)
    assert drv.rx(wire).ok  # type: ignore[union-attr]
    bad = wire[:-1] + bytes((wire[-1] ^ 0x01,))
    rx = drv.rx(bad)
    assert rx is not None and not rx.ok
    assert rx.errors == ["AUTH_ERR", "SEQNUM_ERR"]  # [U] replay-before-icv
    assert rx.status == "CRYPTO_TRANSPORT_ESP_AUTH_FAILED" and rx.reason is not None
    assert pair.inb.stats.integrity_failed == 1
    if offload == "crypto":
        assert rx.mib == "XfrmInStateProtoError" and rx.reason == "AUTH_ERR"
        assert pair.inb.stats.replay == 0
    else:
        assert rx.mib is None and pair.inb.stats.replay == 1


@pytest.mark.parametrize("offload", ["crypto", "packet"])
def test_sequence_number_zero_is_flagged_by_the_initial_window(offload: str) -> None:
    # V-esp starts the window at 0xffffffff/0: 0 counts as seen [U] replay-window.
    pair = _pair(offload=offload)
    plain = plain_packet(4)
    wire = esp.encrypt(pair.sw_out, plain, seq=0, iv=key(16, 1))
    rx = pair.driver.rx(wire)
    assert rx is not None and rx.errors == ["SEQNUM_ERR"]
    # Crypto offload leaves seq 0 to the kernel (which refuses it when the SA has a
    # window, airoha-dsa-xfrm.md 6.20); packet offload drops it.
    assert rx.ok == (offload == "crypto")


def test_swapped_digest_words_give_a_wrong_icv() -> None:
    # A driver that stored the HMAC states big-endian (each 4-byte group reversed): the
    # engine computes from what is in memory, so the ICV is wrong, exactly as on hardware.
    pair = _pair(offload="packet")
    drv = pair.driver
    record = bytearray(drv.memory.read(pair.out.sa_addr, 128))
    for base in (0x28, 0x48):
        for i in range(base, base + 32, 4):
            record[i : i + 4] = record[i : i + 4][::-1]
    drv.memory.write(pair.out.sa_addr, bytes(record))
    plain, ref = _sw_packet(pair, 1)
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    out = drv.packet_tx(pair.out, skb, proto=proto, iv=key(16, 1))
    assert out.ok and out.data[:-12] == ref[:-12]
    assert out.data[-12:] != ref[-12:]
    # It is the HMAC from the swapped states, computed by hashstate.
    inner = hashstate.state_from_record_bytes("sha1", bytes(record[0x28:0x48]))
    outer = hashstate.state_from_record_bytes("sha1", bytes(record[0x48:0x68]))
    off, _ = locate_esp(out.data)
    mac = hashstate.hmac_from_states("sha1", inner, outer, out.data[off:-12])
    assert out.data[-12:] == mac[:12]
    assert not esp.decrypt(pair.sw_in, out.data).ok  # the peer drops it: auth failed
    # The same mistake on the inbound record: every good packet fails its ICV.
    record_in = bytearray(drv.memory.read(pair.inb.sa_addr, 128))
    record_in[0x28:0x68] = record[0x28:0x68]
    drv.memory.write(pair.inb.sa_addr, bytes(record_in))
    rx = drv.rx(ref)
    assert rx is not None and rx.errors == ["AUTH_ERR"]


def _aes_cbc(ekey: bytes, iv: bytes, data: bytes) -> bytes:
    enc = Cipher(algorithms.AES(ekey), modes.CBC(iv)).encryptor()
    return enc.update(data) + enc.finalize()


def _hand_made(pair: Pair, plaintext: bytes, seq: int = 1) -> bytes:
    """IPv4 transport ESP from ``plaintext`` (already padded and trailed) with a good ICV."""
    plain = plain_packet(4)
    ref = esp.encrypt(pair.sw_out, plain, seq=seq, iv=bytes(16))
    off, _ = locate_esp(ref)
    iv = bytes(16)
    body = (
        ref[off : off + 8]
        + iv
        + (_aes_cbc(key(16, 0x11), iv, plaintext) if len(plaintext) % 16 == 0 else plaintext)
    )
    icv = hmac.new(key(20, 0x80), body, "sha1").digest()[:12]
    return fix_outer(ref[:off], len(body) + 12) + body + icv


def test_bad_padding_is_pad_err_and_invalid_packet_syntax() -> None:
    pair = _pair()
    payload = b"p" * 20
    trailer = bytes([9, 9, 9, 9, 9, 9, 9, 9, 9, 9]) + bytes((10, 17))  # not 1, 2, 3, ...
    rx = pair.driver.rx(_hand_made(pair, payload + trailer))
    assert rx is not None and rx.errors == ["PAD_ERR"]
    assert rx.status == "CRYPTO_INVALID_PACKET_SYNTAX" and rx.mib == "XfrmInBufferError"


def test_pad_length_longer_than_the_packet_is_pad_err() -> None:
    pair = _pair()
    rx = pair.driver.rx(_hand_made(pair, b"q" * 14 + bytes((200, 17))))
    assert rx is not None and rx.errors == ["PAD_ERR"]


def test_ciphertext_not_whole_blocks_is_block_size_err() -> None:
    pair = _pair()
    rx = pair.driver.rx(_hand_made(pair, b"r" * 21))  # 21 bytes: not AES blocks
    assert rx is not None and rx.errors == ["EXT_ERR", "BLOCK_SIZE_ERR"]
    assert rx.status == "CRYPTO_INVALID_PACKET_SYNTAX"


def test_truncated_esp_is_invalid_pk_length() -> None:
    pair = _pair()
    _, wire = _sw_packet(pair, 1)
    off, _ = locate_esp(wire)
    short = fix_outer(wire[:off], 30) + wire[off : off + 30]
    rx = pair.driver.rx(short)
    assert rx is not None and rx.errors == ["EXT_ERR", "INVALID_PK_LENGTH"]


def test_spi_mismatch_is_ext_error_spi() -> None:
    # Only a raw descriptor can get here: the driver looks SAs up by SPI.
    pair = _pair()
    drv = pair.driver
    _, wire = _sw_packet(pair, 1)
    off, _ = locate_esp(wire)
    body = b"\x00\x00\x02\x00" + wire[off + 4 :]
    buf = drv.memory.allocate(len(body), label="test")
    drv.memory.write(buf, body)
    result, outcome = raw_job(drv, *words(0x02000011, buf, buf, pair.inb.sa_addr, 0, len(body)))
    assert result.errors() == ["EXT_ERR", "SPI"]
    assert "sa_spi" in outcome.stages[-1].decision


def test_outbound_sequence_overflow_is_seqnum_err() -> None:
    pair = _pair(offload="packet")
    drv = pair.driver
    drv.memory.write(pair.out.sa_addr + 0x6C, (0xFFFFFFFF).to_bytes(4, "little"))
    plain, ref = _sw_packet(pair, 1)
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    out = drv.packet_tx(pair.out, skb, proto=proto)
    assert not out.ok and out.errors == ["SEQNUM_ERR"]
    assert out.mib is None and pair.out.stats.errors["SEQNUM_ERR"] == 1
    record = EIP93SARecord(drv.memory.read(pair.out.sa_addr, 128))
    assert record.sa_seqnum_0 == 0xFFFFFFFF  # no wrap [U] esp-seq-overflow


def test_crypto_tx_with_kernel_sequence_zero_overflows() -> None:
    # The driver writes seq - 1 into sa_seqnum [M] crypto-tx-seq: 0 becomes 0xffffffff.
    pair = _pair()
    plain, ref = _sw_packet(pair, 0)
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    out = pair.driver.crypto_tx(pair.out, skb, proto=proto)
    assert out.errors == ["SEQNUM_ERR"] and out.mib == "XfrmOutStateProtoError"
    assert out.stages[-1].drop == "SEQNUM_ERR"


def test_engine_counter_mode_puts_its_own_number_on_the_wire() -> None:
    drv = new_eip93(2, settings=DriverSettings(crypto_tx_seq="engine"))
    pair = make_pair(*AES_SHA1, "transport", 4, "crypto", driver=drv)
    plain, ref = _sw_packet(pair, 9)  # the kernel says 9 ...
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    out = drv.crypto_tx(pair.out, skb, proto=proto)
    assert out.ok and out.seq == 1  # ... the engine's counter wins, as with vschagen
