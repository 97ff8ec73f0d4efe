"""The driver's IP header fixes (esplab.model.kernel.drivers.eip93.iphead) against the software ESP
core's reference (RFC 791 header, RFC 1071 checksum)."""

from __future__ import annotations

import random

import pytest

from esplab.model.kernel.drivers.eip93.iphead import fix_ipv4, fix_outer
from esplab.model.kernel.esp.ip import checksum, ipv4_fix


@pytest.mark.parametrize("options", [0, 4, 8])
def test_fix_ipv4_is_the_reference_fix(options: int) -> None:
    rng = random.Random(options)
    for _ in range(2000):
        head = bytes((0x45 + options // 4,)) + rng.randbytes(19 + options)
        total, proto = rng.randrange(0x10000), rng.randrange(0x100)
        fixed = fix_ipv4(head, total, proto)
        assert fixed == ipv4_fix(head, total, proto)
        assert checksum(fixed) == 0  # a valid header sums to 0xffff


def test_every_total_length_including_a_zero_checksum() -> None:
    base = bytes.fromhex("4500001c00004000401100000a0000010a000002")
    sums = set()
    for total in range(0x10000):
        fixed = fix_ipv4(base, total, 17)
        assert fixed == ipv4_fix(base, total, 17)
        sums.add(fixed[10:12])
    assert b"\x00\x00" in sums  # the one's-complement sum 0xffff (RFC 1071)
    assert fix_outer(base, 100)[2:4] == (120).to_bytes(2, "big")
