"""The engine decodes an SA record once and reuses it per sa_addr only while memory still
holds the same static bytes: a record rewritten in place, or freed and allocated again at
the same address, is read afresh (eip93.md 1.3: the SA is read for every descriptor)."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from esplab.layers.sa_record import EIP93SARecord
from esplab.model.kernel.drivers.eip93 import EIP93Driver, new_eip93

from .support import raw_job, words

# Basic-mode AES-128-CBC encrypt, IV from the state record (as test_sa_checks' GOOD).
RECORD: dict[str, Any] = dict(
    opcode=0,
    opgroup=0,
    cipher=3,
    hash=15,
    cipher_mode=1,
    aes_key_length=2,
    iv_source=2,
    pad_type=3,
)
PLAIN = bytes(range(32))


def _cbc(key: bytes) -> bytes:
    """The reference: AES-128-CBC of PLAIN with a zero IV (the zeroed state record)."""
    enc = Cipher(algorithms.AES(key), modes.CBC(bytes(16))).encryptor()
    return enc.update(PLAIN) + enc.finalize()


def _buffers(drv: EIP93Driver) -> tuple[int, int]:
    """A state record and a buffer that stay allocated (no region is freed between jobs)."""
    return (
        drv.memory.allocate(56, label="state", pool="state"),
        drv.memory.allocate(64, label="buf"),
    )


def _encrypt(drv: EIP93Driver, sa: int, state: int, buf: int) -> bytes:
    """PLAIN through the engine on the record at ``sa``, a zero IV in the state record."""
    drv.memory.write(state, bytes(56))
    drv.memory.write(buf, PLAIN)
    result, _ = raw_job(drv, *words(1, buf, buf, sa, state, 32))
    assert result.errors() == []
    return drv.memory.read(buf, 32)


def test_record_rewritten_in_place_is_decoded_again() -> None:
    drv = new_eip93(0)
    sa = drv.memory.allocate(128, label="SA", pool="sa")
    state, buf = _buffers(drv)
    first, second = bytes(range(1, 33)), bytes(range(101, 133))
    drv.memory.write(sa, bytes(EIP93SARecord(**RECORD, sa_key=first)))
    assert _encrypt(drv, sa, state, buf) == _cbc(first[:16])
    assert _encrypt(drv, sa, state, buf) == _cbc(first[:16])  # the same record again
    drv.memory.write(sa + 8, second)  # sa_key, in place (eip93.md 3.1)
    assert _encrypt(drv, sa, state, buf) == _cbc(second[:16])


def test_record_freed_and_allocated_again_is_decoded_again() -> None:
    drv = new_eip93(0)
    sa = drv.memory.allocate(128, label="SA", pool="sa")
    state, buf = _buffers(drv)
    first, second = bytes(range(1, 33)), bytes(range(201, 233))
    drv.memory.write(sa, bytes(EIP93SARecord(**RECORD, sa_key=first)))
    assert _encrypt(drv, sa, state, buf) == _cbc(first[:16])
    drv.memory.free(sa)
    assert drv.memory.allocate(128, label="SA", pool="sa") == sa  # exact-size reuse
    drv.memory.write(sa, bytes(EIP93SARecord(**RECORD, sa_key=second)))
    assert _encrypt(drv, sa, state, buf) == _cbc(second[:16])
