"""SA records the engine cannot run: reserved or impossible values get the engine's error
status, and the stage names the field (eip93.md 2.2, 3.2, 3.3) [U] reserved-codes."""

from __future__ import annotations

from typing import Any

import pytest

from esplab.layers.sa_record import EIP93SARecord
from esplab.model.hw.eip93.choices import CHOICES
from esplab.model.kernel.drivers.eip93 import new_eip93

from .support import raw_job, words

# A working basic-mode AES-128-CBC encrypt record, then one field spoiled per case.
GOOD: dict[str, Any] = dict(
    opcode=0,
    opgroup=0,
    cipher=3,
    hash=15,
    cipher_mode=1,
    aes_key_length=2,
    iv_source=2,
    pad_type=3,
    sa_key=bytes(32),
)

CASES = [
    ({"cipher": 7}, "INVALID_CRYPTO_ALGO", "sa_cmd0.cipher = 7 is reserved"),
    ({"cipher": 2}, "INVALID_CRYPTO_ALGO", "sa_cmd0.cipher = 2 (ARC4) is not modelled"),
    ({"opgroup": 3}, "INVALID_CRYPTO_OP", "sa_cmd0.opgroup = 3 is reserved"),
    ({"opgroup": 2}, "INVALID_CRYPTO_OP", "sa_cmd0.opgroup = 2 (extended"),
    ({"opcode": 5}, "INVALID_CRYPTO_OP", "sa_cmd0.opcode = 5 is reserved for opgroup 0"),
    ({"opcode": 7}, "INVALID_CRYPTO_OP", "sa_cmd0.opcode = 7 (PRNG) is not modelled"),
    ({"opgroup": 1, "opcode": 4}, "INVALID_CRYPTO_OP", "sa_cmd0.opcode = 4 (SSL)"),
    ({"opgroup": 1, "hdr_proc": 0}, "INVALID_CRYPTO_OP", "sa_cmd0.hdr_proc = 0"),
    ({"hash": 9}, "INVALID_CRYPTO_ALGO", "sa_cmd0.hash = 9 is reserved"),
    ({"hash": 1, "hash_source": 1}, "INVALID_CRYPTO_OP", "sa_cmd0.hash_source = 1"),
    ({"aes_key_length": 1}, "INVALID_CRYPTO_ALGO", "sa_cmd1.aes_key_length = 1 is reserved"),
    ({"cipher_mode": 3}, "INVALID_CRYPTO_ALGO", "sa_cmd1.cipher_mode = 3 (ICM)"),
    ({"cipher": 1, "cipher_mode": 2}, "INVALID_CRYPTO_ALGO", "CTR) needs AES"),
    ({"opgroup": 1, "hdr_proc": 1, "cipher_mode": 0}, "INVALID_CRYPTO_ALGO", "(ECB) cannot"),
    ({"aes_dec_key": 1}, "INVALID_CRYPTO_ALGO", "sa_cmd1.aes_dec_key = 1"),
    (
        {"hash": 0, "digest_length": 5},
        "INVALID_CRYPTO_ALGO",
        "sa_cmd0.digest_length = 5 words exceeds MD5's 4",
    ),
]


@pytest.mark.parametrize(("fields", "code", "text"), CASES, ids=[c[2] for c in CASES])
def test_impossible_record_gets_the_error_naming_the_field(
    fields: dict[str, Any], code: str, text: str
) -> None:
    drv = new_eip93(0)
    sa = drv.memory.allocate(128, label="SA", pool="sa")
    drv.memory.write(sa, bytes(EIP93SARecord(**{**GOOD, **fields})))
    buf = drv.memory.allocate(64, label="buf")
    result, outcome = raw_job(drv, *words(1, buf, buf, sa, 0, 32))
    assert result.errors() == ["EXT_ERR", code]
    sa_stage = next(s for s in outcome.stages if s.tap == "eip93.sa")
    assert text in sa_stage.decision
    assert text in outcome.stages[-1].decision  # the RDR stage says it too
    assert sa_stage.fidelity == "U"
    assert set(sa_stage.meta["choices"]) <= set(CHOICES)
    assert drv.device.engine.stats.errors[code] == 1
    assert text in drv.device.engine.last_error


def test_reserved_bits_are_ignored() -> None:
    # [U] reserved-bits: the same job with every reserved bit set runs the same.
    drv = new_eip93(0)
    sa = drv.memory.allocate(128, label="SA", pool="sa")
    record = EIP93SARecord(
        **GOOD,
        reserved_cmd0_31_30=3,
        reserved_cmd0_16=1,
        reserved_cmd1_7_4=15,
        reserved_cmd1_10=1,
        reserved_cmd1_27=1,
    )
    drv.memory.write(sa, bytes(record))
    state = drv.memory.allocate(56, label="state", pool="state")
    buf = drv.memory.allocate(64, label="buf")
    result, _ = raw_job(drv, *words(1, buf, buf, sa, state, 32))
    assert result.errors() == [] and result.length == 32
