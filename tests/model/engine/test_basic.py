"""Basic mode (opgroup 0) as mainline uses it: authenc AEAD, skcipher, hash and HMAC
(eip93.md 3.4, 3.5, 5.3, facts 7.16-7.18), checked against cryptography and hashlib."""

from __future__ import annotations

import hashlib
import hmac
import struct
from typing import Any

import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from esplab.errors import KernelError
from esplab.layers.hashstate import compress, hmac_pad_blocks, initial_state, state_to_record_bytes
from esplab.layers.sa_record import EIP93SARecord, EIP93StateRecord
from esplab.model.kernel.drivers.eip93 import EIP93Driver, new_eip93
from esplab.model.kernel.drivers.eip93.aead import AUTHENC_AUTH, AUTHENC_ENC

from .support import key, raw_job, words


def _cipher(enc: str, ekey: bytes) -> Any:
    if enc == "cbc(des)":
        return TripleDES(ekey * 3)
    if enc == "cbc(des3_ede)":
        return TripleDES(ekey)
    return algorithms.AES(ekey[:-4] if enc.startswith("rfc3686") else ekey)


def _encrypt_ref(enc: str, ekey: bytes, iv: bytes, data: bytes) -> bytes:
    if enc.startswith("rfc3686"):
        mode: Any = modes.CTR(ekey[-4:] + iv + b"\x00\x00\x00\x01")
    else:
        mode = modes.CBC(iv)
    ctx = Cipher(_cipher(enc, ekey), mode).encryptor()
    return ctx.update(data) + ctx.finalize()


@pytest.mark.parametrize("auth", list(AUTHENC_AUTH))
@pytest.mark.parametrize(
    ("enc", "elen"),
    [
        ("cbc(aes)", 16),
        ("cbc(aes)", 24),
        ("cbc(aes)", 32),
        ("rfc3686(ctr(aes))", 20),
        ("cbc(des3_ede)", 24),
        ("cbc(des)", 8),
    ],
)
def test_authenc_matches_the_crypto_api(enc: str, elen: int, auth: str) -> None:
    drv = new_eip93(0)
    ekey, akey = key(elen, 3), key(20, 9)
    alg = AUTHENC_AUTH[auth][1]
    tfm = drv.aead_setkey(enc=enc, enc_key=ekey, auth=auth, auth_key=akey, authsize=12)
    iv = key(AUTHENC_ENC[enc][3], 0x40)
    assoc, plain = b"SPI-SEQ-" + iv, bytes(range(48))
    out = drv.aead_encrypt(tfm, assoc, iv, plain)
    assert out.ok, out.errors
    ct = _encrypt_ref(enc, ekey, iv, plain)
    tag = hmac.new(akey, assoc + ct, alg).digest()[:12]
    assert out.data == assoc + ct + tag  # the driver swapped the tag to wire order
    back = drv.aead_decrypt(tfm, assoc, iv, ct + tag)
    assert back.ok and back.data == assoc + plain
    bad = drv.aead_decrypt(tfm, assoc, iv, ct + tag[:-1] + bytes((tag[-1] ^ 1,)))
    assert not bad.ok and bad.errno == "EBADMSG" and bad.errors == ["AUTH_ERR"]


@pytest.mark.parametrize("enc", ["cbc(aes)", "cbc(des3_ede)"])
def test_authenc_without_plaintext_is_assoc_and_tag_and_leaves_the_cipher_as_it_was(
    enc: str,
) -> None:
    # The crypto API: an empty cryptlen seals to assoc || tag, tag = HMAC(assoc).
    drv = new_eip93(0)
    ekey, akey = key(24 if enc == "cbc(des3_ede)" else 16, 3), key(20, 9)
    tfm = drv.aead_setkey(enc=enc, enc_key=ekey, auth="hmac(sha1)", auth_key=akey, authsize=12)
    iv = key(AUTHENC_ENC[enc][3], 0x40)
    assoc = b"SPI-SEQ-" + iv
    tag = hmac.new(akey, assoc, "sha1").digest()[:12]
    empty = drv.aead_encrypt(tfm, assoc, iv, b"")
    assert empty.ok and empty.data == assoc + tag
    back = drv.aead_decrypt(tfm, assoc, iv, tag)
    assert back.ok and back.data == assoc
    # The next request with data is exactly the crypto API's: nothing carried over.
    plain = bytes(range(32))
    ct = _encrypt_ref(enc, ekey, iv, plain)
    out = drv.aead_encrypt(tfm, assoc, iv, plain)
    assert out.data == assoc + ct + hmac.new(akey, assoc + ct, "sha1").digest()[:12]
    assert drv.aead_decrypt(tfm, assoc, iv, out.data[len(assoc) :]).data == assoc + plain


def test_authenc_records_are_mainline_words() -> None:
    # eip93.md 3.5: AES-128 + HMAC-SHA1, authsize 12, assoclen 8.
    drv = new_eip93(0)
    tfm = drv.aead_setkey(
        enc="cbc(aes)", enc_key=key(16, 1), auth="hmac(sha1)", auth_key=key(20, 2)
    )
    iv = bytes(16)
    out = drv.aead_encrypt(tfm, b"12345678", iv, bytes(32))
    back = drv.aead_decrypt(tfm, b"12345678", iv, out.data[8:])
    assert back.ok
    enc_rec = EIP93SARecord(drv.memory.read(tfm.sa_out, 128))
    dec_rec = EIP93SARecord(drv.memory.read(tfm.sa_in, 128))
    assert (enc_rec.sa_cmd0, enc_rec.sa_cmd1) == (0x123013C1, 0x0202110B)
    assert (dec_rec.sa_cmd0, dec_rec.sa_cmd1) == (0x123013C9, 0x02021102)


@pytest.mark.parametrize(
    ("auth", "swapped"), [("hmac(sha1)", True), ("hmac(sha256)", True), ("hmac(md5)", False)]
)
def test_engine_tag_is_in_hash_state_word_order(auth: str, swapped: bool) -> None:
    # eip93.md 5.3 / 7.17: the engine writes SHA tags word-reversed, MD5 as is.
    drv = new_eip93(0)
    akey = key(16, 2)
    tfm = drv.aead_setkey(enc="cbc(aes)", enc_key=key(16, 1), auth=auth, auth_key=akey)
    out = drv.aead_encrypt(tfm, b"abcdefgh", bytes(16), bytes(16))
    dst = int.from_bytes(out.result[8:12], "little")  # result word 2 (eip93.md 2)
    engine_out = drv.memory.read(dst, 8 + 16 + 12)
    wire_tag = out.data[-12:]
    engine_tag = engine_out[-12:]
    reversed_words = b"".join(wire_tag[i : i + 4][::-1] for i in range(0, 12, 4))
    assert engine_tag == (reversed_words if swapped else wire_tag)


def test_authenc_with_a_cipher_mainline_lacks_is_enoent() -> None:
    with pytest.raises(KernelError) as info:
        new_eip93(0).aead_setkey(
            enc="ecb(cipher_null)", enc_key=b"", auth="hmac(sha1)", auth_key=b"k"
        )
    assert info.value.errno_name == "ENOENT"


def _job(
    drv: EIP93Driver,
    record: EIP93SARecord,
    data: bytes,
    *,
    state: bytes | None = None,
    ctrl: int = 1,
    length: int | None = None,
) -> tuple[Any, bytes, bytes | None]:
    """Run a raw job; returns (result descriptor, output bytes, state record after)."""
    sa = drv.memory.allocate(128, label="SA", pool="sa")
    drv.memory.write(sa, bytes(record))
    st = 0
    if state is not None:
        st = drv.memory.allocate(56, label="state", pool="state")
        drv.memory.write(st, state)
    src = drv.memory.allocate(max(len(data), 1) + 64, label="src")
    dst = drv.memory.allocate(len(data) + 64, label="dst")
    drv.memory.write(src, data)
    result, _ = raw_job(
        drv, *words(ctrl, src, dst, sa, st, len(data) if length is None else length)
    )
    out = drv.memory.read(dst, result.length)
    return result, out, drv.memory.read(st, 56) if st else None


AES_CBC: dict[str, Any] = dict(
    opcode=0,
    opgroup=0,
    cipher=3,
    hash=15,
    cipher_mode=1,
    aes_key_length=2,
    iv_source=2,
    save_iv=1,
    pad_type=3,
)


@pytest.mark.parametrize("direction", [0, 1])
def test_skcipher_cbc_saves_the_chaining_iv(direction: int) -> None:
    drv = new_eip93(0)
    k, iv, data = key(16, 5), key(16, 6), key(64, 7)
    record = EIP93SARecord(**AES_CBC, direction=direction, sa_key=k.ljust(32, b"\x00"))
    result, out, state = _job(drv, record, data, state=iv + bytes(40))
    ctx = Cipher(algorithms.AES(k), modes.CBC(iv))
    ref = ctx.encryptor().update(data) if direction == 0 else ctx.decryptor().update(data)
    assert result.errors() == [] and out == ref
    assert state is not None
    # save_iv: the last ciphertext block, what the crypto API wants back as the IV (3.4).
    last = (ref if direction == 0 else data)[-16:]
    assert EIP93StateRecord(state).state_iv == last


def test_ctr_counts_32_bits_without_carry() -> None:
    # eip93.md 3.4 / 7.16: only the low big-endian word counts, and it wraps alone.
    drv = new_eip93(0)
    k = key(16, 5)
    upper = bytes.fromhex("00112233445566778899aabb")
    counter = upper + b"\xff\xff\xff\xff"
    record = EIP93SARecord(**{**AES_CBC, "cipher_mode": 2}, sa_key=k.ljust(32, b"\x00"))
    data = key(40, 3)  # three blocks, the last one partial
    result, out, state = _job(drv, record, data, state=counter + bytes(40))
    ecb = Cipher(algorithms.AES(k), modes.ECB()).encryptor()
    stream = ecb.update(counter + upper + bytes(4) + upper + b"\x00\x00\x00\x01")
    assert result.errors() == []
    assert out == bytes(a ^ b for a, b in zip(data, stream, strict=False))
    assert state is not None and state[:16] == upper + b"\x00\x00\x00\x02"


def test_ecb_and_block_size_errors() -> None:
    drv = new_eip93(0)
    k = key(16, 5)
    record = EIP93SARecord(**{**AES_CBC, "cipher_mode": 0}, sa_key=k.ljust(32, b"\x00"))
    result, out, _ = _job(drv, record, key(32, 1), state=bytes(56))
    assert out == Cipher(algorithms.AES(k), modes.ECB()).encryptor().update(key(32, 1))
    result, out, _ = _job(drv, record, key(17, 1), state=bytes(56))
    assert result.errors() == ["EXT_ERR", "BLOCK_SIZE_ERR"] and out == b""


def test_zero_length_is_zero_length() -> None:
    drv = new_eip93(0)
    record = EIP93SARecord(**AES_CBC, sa_key=bytes(32))
    result, _, _ = _job(drv, record, b"", state=bytes(56))
    assert result.errors() == ["EXT_ERR", "ZERO_LENGTH"]  # [U] zero-length (7.18)


def test_state_addr_zero_loads_zeros_and_saves_nothing() -> None:
    # eip93.md 8.5 [U] state-addr-zero.
    drv = new_eip93(0)
    k = key(16, 5)
    record = EIP93SARecord(**AES_CBC, sa_key=k.ljust(32, b"\x00"))
    result, out, state = _job(drv, record, key(32, 1))
    assert state is None and result.errors() == []
    assert out == Cipher(algorithms.AES(k), modes.CBC(bytes(16))).encryptor().update(key(32, 1))


def _words_le(digest: bytes, alg: str) -> bytes:
    if alg == "md5":
        return digest
    n = len(digest) // 4
    return struct.pack(f"<{n}I", *struct.unpack(f">{n}I", digest))


HASHES = [(0, "md5", 4), (1, "sha1", 5), (2, "sha224", 7), (3, "sha256", 8)]


@pytest.mark.parametrize(("code", "alg", "nwords"), HASHES)
def test_hash_over_two_descriptors_sharing_a_state_record(code: int, alg: str, nwords: int) -> None:
    # Mainline hash: 64-byte blocks with hash_final 0, then the last part with hash_final 1,
    # the state record carrying the digest and byte count (eip93.md 1.5 step 7, 3.5).
    drv = new_eip93(0)
    first = EIP93SARecord(
        opcode=3, cipher=15, hash=code, hash_source=3, save_hash=1, digest_length=nwords
    )
    data = key(128 + 37, 4)
    result, _, state = _job(drv, first, data[:128], state=bytes(56), ctrl=1)
    assert result.errors() == [] and state is not None
    assert EIP93StateRecord(state).state_byte_cnt_0 == 128
    rest = EIP93SARecord(
        opcode=3,
        cipher=15,
        hash=code,
        hash_source=2,
        save_hash=1,
        digest_length=nwords,
        copy_digest=1,
    )
    result, out, state = _job(drv, rest, data[128:], state=state, ctrl=0x11)
    digest = hashlib.new(alg, data).digest()
    assert state is not None
    assert EIP93StateRecord(state).state_i_digest[: len(digest)] == _words_le(digest, alg)
    assert out == _words_le(digest, alg)  # copied out, in state-word order [U]
    assert EIP93StateRecord(state).state_byte_cnt_0 == len(data)


def test_hmac_in_hash_mode_feeds_the_ipad_block_first() -> None:
    # eip93.md 3.5: the ipad block is the first 64 data bytes; hmac set on the last
    # block with sa_o_digest = the opad state.
    drv = new_eip93(0)
    akey, msg = key(20, 1), b"message for the outer hash"
    ipad, opad = hmac_pad_blocks("sha256", akey)
    o_state = state_to_record_bytes("sha256", compress("sha256", initial_state("sha256"), opad))
    record = EIP93SARecord(
        opcode=3,
        cipher=15,
        hash=3,
        hash_source=3,
        save_hash=1,
        hmac=1,
        digest_length=8,
        sa_o_digest=o_state,
    )
    _, _, state = _job(drv, record, ipad + msg, state=bytes(56), ctrl=0x11)
    assert state is not None
    want = hmac.new(akey, msg, "sha256").digest()
    assert EIP93StateRecord(state).state_i_digest == _words_le(want, "sha256")


def test_partial_block_without_hash_final_is_block_size_err() -> None:
    drv = new_eip93(0)
    record = EIP93SARecord(opcode=3, cipher=15, hash=1, hash_source=3, save_hash=1)
    result, _, _ = _job(drv, record, key(70, 1), state=bytes(56), ctrl=1)
    assert result.errors() == ["EXT_ERR", "BLOCK_SIZE_ERR"]
