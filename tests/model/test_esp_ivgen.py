"""Software IVs as the kernel's generators make them (issue #21 item 7).

crypto/seqiv.c: IV = 64-bit sequence number (big-endian, from esp_output_tail) XOR a
per-transform salt. crypto/echainiv.c: per 8-byte chunk ``a = (salt chunk | 1) *
seqno`` (native u64, little-endian), and the wire IV is ``E_K`` of that block (the
zero block encrypted ahead of the payload). The salt is random in the kernel and
seeded here, so the checks below are the relations any salt satisfies.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from esplab.commands.session import Session
from esplab.model.kernel.esp.algos import make_aead, make_enc
from esplab.model.kernel.esp.ivgen import generator_name, kernel_iv_source
from tests.commands import seed
from tests.commands.results import journey

KEY = bytes(range(16))
U64 = (1 << 64) - 1


def _ecb_decrypt(block: bytes) -> bytes:
    dec = Cipher(algorithms.AES(KEY), modes.ECB()).decryptor()
    return dec.update(block) + dec.finalize()


def test_each_algorithm_has_the_kernels_generator() -> None:
    assert generator_name(make_enc("cbc(aes)", KEY)) == "echainiv"
    assert generator_name(make_enc("rfc3686(ctr(aes))", KEY + b"salt")) == "seqiv"
    assert generator_name(make_aead("rfc4106(gcm(aes))", KEY + b"salt", 128)) == "seqiv"
    assert generator_name(make_enc("ecb(cipher_null)", b"")) == "none"


def test_seqiv_is_the_sequence_number_xor_a_salt() -> None:
    gen = kernel_iv_source(make_aead("rfc4106(gcm(aes))", KEY + b"salt", 128), "s")
    assert gen is not None
    one, two, big = gen(1), gen(2), gen((5 << 32) | 7)
    assert bytes(a ^ b for a, b in zip(one, two, strict=True)) == (1 ^ 2).to_bytes(8, "big")
    xored = bytes(a ^ b for a, b in zip(one, big, strict=True))
    assert xored == (1 ^ (5 << 32 | 7)).to_bytes(8, "big")
    assert gen(1) == one  # a function of the number: the same number, the same IV


def test_echainiv_is_the_encrypted_product_of_salt_and_number() -> None:
    gen = kernel_iv_source(make_enc("cbc(aes)", KEY), "s")
    assert gen is not None
    first = _ecb_decrypt(gen(1))
    salts = [int.from_bytes(first[i : i + 8], "little") for i in (0, 8)]
    assert all(s & 1 for s in salts)  # (salt | 1) * 1
    for seq in (2, 3, 0xFFFFFFFF, (1 << 40) + 9):
        info = _ecb_decrypt(gen(seq))
        assert info == b"".join(((s * seq) & U64).to_bytes(8, "little") for s in salts)


def test_the_labs_software_path_uses_them_deterministically() -> None:
    def ivs() -> list[bytes]:
        s = Session()
        for line in seed.software():
            s.execute(line)
        out = []
        for _ in range(2):
            j = journey(s, f"send ap wan {seed.UDP}")
            wire = next(st for st in j.stages if st.tap == "ap.esp")
            assert "echainiv" in wire.why
            assert wire.data is not None
            out.append(bytes(wire.data)[28:44])  # IPv4 20 + SPI 4 + seq 4
        return out

    first, again = ivs(), ivs()
    assert first == again and first[0] != first[1]
    key = bytes.fromhex(seed.ENC[2:])
    dec = Cipher(algorithms.AES(key), modes.ECB()).decryptor()
    one, two = (dec.update(iv) for iv in first)
    for i in (0, 8):  # packet 2's block is twice packet 1's, chunk by chunk
        a, b = (int.from_bytes(x[i : i + 8], "little") for x in (one, two))
        assert a & 1 and b == (2 * a) & U64
