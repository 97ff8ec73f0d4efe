"""Cipher and integrity suites: names, key/ICV validation, known answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from esplab.errors import InvalidValue, NotFound
from esplab.model.kernel.esp.algos import (
    AEAD_ALGOS,
    AUTH_ALGOS,
    ENC_ALGOS,
    algo_info,
    canonical_name,
    make_aead,
    make_auth,
    make_enc,
)

DATA = json.loads((Path(__file__).parent / "data" / "esp_vectors.json").read_text())


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("kind", "alias", "canonical"),
    [
        ("enc", "aes", "cbc(aes)"),
        ("enc", "des3_ede", "cbc(des3_ede)"),
        ("enc", "des", "cbc(des)"),
        ("enc", "cipher_null", "ecb(cipher_null)"),
        ("enc", "rfc3686(ctr(aes))", "rfc3686(ctr(aes))"),
        ("auth", "md5", "hmac(md5)"),
        ("auth", "sha1", "hmac(sha1)"),
        ("auth", "sha256", "hmac(sha256)"),
        ("aead", "rfc4106(gcm(aes))", "rfc4106(gcm(aes))"),
    ],
)
def test_aliases_map_to_the_kernel_name(kind, alias, canonical):
    # airoha-dsa-xfrm.md 5.3 / fact 27: the kernel stores and prints the canonical name.
    assert canonical_name(kind, alias) == canonical
    assert algo_info(kind, alias).name == canonical


def test_unknown_name_suggests_the_closest():
    with pytest.raises(NotFound) as exc:
        make_enc("cbc(aes", bytes(16))
    msg = str(exc.value)
    assert "unknown enc algorithm 'cbc(aes'" in msg
    assert "cbc(aes)" in msg.split("valid:")[1].split(";")[0].split(", ")
    assert "did you mean cbc(aes)?" in msg


def test_kind_matters():
    with pytest.raises(NotFound):
        make_auth("cbc(aes)", bytes(16))


@pytest.mark.parametrize(
    ("name", "block", "iv", "align", "scapy"),
    [
        ("cbc(aes)", 16, 16, 16, "AES-CBC"),
        ("cbc(des3_ede)", 8, 8, 8, "3DES"),
        ("cbc(des)", 8, 8, 8, "DES"),
        ("rfc3686(ctr(aes))", 1, 8, 4, "AES-CTR"),
        ("ecb(cipher_null)", 1, 0, 4, "NULL"),
    ],
)
def test_cipher_table(name, block, iv, align, scapy):
    info = ENC_ALGOS[name]
    assert (info.block_size, info.iv_size, info.align, info.scapy_name) == (block, iv, align, scapy)


def test_aead_and_auth_tables():
    gcm = AEAD_ALGOS["rfc4106(gcm(aes))"]
    assert (gcm.key_sizes, gcm.salt_size, gcm.iv_size, gcm.align) == ((20, 28, 36), 4, 8, 4)
    assert gcm.icv_bits == (64, 96, 128)
    defaults = {n: AUTH_ALGOS[n].default_icv_bits for n in AUTH_ALGOS}
    assert defaults == {
        "hmac(md5)": 96,
        "hmac(sha1)": 96,
        "hmac(sha256)": 96,
        "hmac(sha384)": 192,
        "hmac(sha512)": 256,
        "digest_null": 0,
    }


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("cbc(aes)", (16, 24, 32), (0, 15, 20, 33)),
        ("cbc(des3_ede)", (24,), (8, 16, 23)),
        ("cbc(des)", (8,), (7, 24)),
        ("rfc3686(ctr(aes))", (20, 28, 36), (16, 32, 4)),
        ("ecb(cipher_null)", (0,), (1, 16)),
    ],
)
def test_cipher_key_lengths(name, good, bad):
    for n in good:
        assert make_enc(name, bytes(range(n))).name == name
    for n in bad:
        with pytest.raises(InvalidValue) as exc:
            make_enc(name, bytes(n))
        assert f"wrong key length {n} bytes" in str(exc.value)
        assert "valid:" in str(exc.value)


def test_gcm_key_and_icv_lengths():
    for n in (20, 28, 36):
        for bits in (64, 96, 128):
            assert make_aead("rfc4106(gcm(aes))", bytes(n), bits).icv_len == bits // 8
    with pytest.raises(InvalidValue, match="wrong key length 16 bytes"):
        make_aead("rfc4106(gcm(aes))", bytes(16))
    with pytest.raises(InvalidValue) as exc:
        make_aead("rfc4106(gcm(aes))", bytes(20), 100)
    assert "impossible ICV length 100 bits" in str(exc.value)
    assert "valid: 64, 96, 128" in str(exc.value)


def test_hmac_truncation_lengths():
    assert make_auth("sha1", b"k").trunc_bits == 96
    assert make_auth("hmac(sha256)", b"k", 128).icv_len == 16
    assert make_auth("hmac(sha512)", b"k", 512).icv_len == 64
    for bits in (0, 100, 168, 200):
        with pytest.raises(InvalidValue, match=f"impossible ICV length {bits} bits"):
            make_auth("hmac(sha1)", b"k", bits)
    # HMAC keys of any length are accepted, as by the kernel.
    assert make_auth("hmac(md5)", bytes(200)).icv_len == 12


# --------------------------------------------------------------------------- known answers

# RFC 2202 test cases 1 and 6/7, RFC 4231 test cases 1 and 6: full-length digests.
HMAC_KAT = [
    ("hmac(md5)", b"\x0b" * 16, b"Hi There", "9294727a3638bb1c13f48ef8158bfc9d"),
    ("hmac(sha1)", b"\x0b" * 20, b"Hi There", "b617318655057264e28bc0b6fb378c8ef146be00"),
    (
        "hmac(sha1)",
        b"\xaa" * 80,
        b"Test Using Larger Than Block-Size Key - Hash Key First",
        "aa4ae5e15272d00e95705637ce8a3b55ed402112",
    ),
    (
        "hmac(sha256)",
        b"\x0b" * 20,
        b"Hi There",
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    ),
    (
        "hmac(sha384)",
        b"\x0b" * 20,
        b"Hi There",
        "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c"
        "faea9ea9076ede7f4af152e8b2fa9cb6",
    ),
    (
        "hmac(sha512)",
        b"\xaa" * 131,
        b"Test Using Larger Than Block-Size Key - Hash Key First",
        "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352"
        "6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598",
    ),
]


@pytest.mark.parametrize(("name", "key", "msg", "digest"), HMAC_KAT)
def test_hmac_known_answers(name, key, msg, digest):
    full = AUTH_ALGOS[name].digest_bits
    suite = make_auth(name, key, full)
    assert suite.icv(msg).hex() == digest
    # The ICV of the data split in two is the same; truncation keeps the leftmost bytes.
    assert suite.icv(msg[:3], msg[3:]).hex() == digest
    short = make_auth(name, key)
    assert short.icv(msg).hex() == digest[: short.icv_len * 2]
    assert short.verify(msg, bytes.fromhex(digest[: short.icv_len * 2]))
    assert not short.verify(msg + b"!", bytes.fromhex(digest[: short.icv_len * 2]))


def test_digest_null_has_no_icv():
    suite = make_auth("digest_null", b"")
    assert suite.icv_len == 0
    assert suite.icv(b"anything") == b""


def test_aes_cbc_rfc3602_cases_1_and_2():
    # RFC 3602 section 4, cases #1 and #2.
    enc = make_enc("cbc(aes)", bytes.fromhex("06a9214036b8a15b512e03d534120006"))
    iv = bytes.fromhex("3dafba429d9eb430b422da802c9fac41")
    assert enc.encrypt(iv, b"Single block msg").hex() == "e353779c1079aeb82708942dbe77181a"
    enc = make_enc("cbc(aes)", bytes.fromhex("c286696d887c9aa0611bbb3e2025a45a"))
    iv = bytes.fromhex("562e17996d093d28ddb3ba695a2e6f58")
    ct = enc.encrypt(iv, bytes(range(32)))
    assert ct.hex() == ("d296cd94c2cccf8a3a863028b5e1dc0a7586602d253cfff91b8266bea6d61ab1")
    assert enc.decrypt(iv, ct) == bytes(range(32))


def test_cbc_decrypt_joined_matches_decrypt_across_packets():
    # RFC 3602 section 4, case #2 first, then packets with other IVs through the same
    # chained context: IV || ciphertext in one slice decrypts as decrypt(iv, ct) does.
    enc = make_enc("cbc(aes)", bytes.fromhex("c286696d887c9aa0611bbb3e2025a45a"))
    iv = bytes.fromhex("562e17996d093d28ddb3ba695a2e6f58")
    ct = bytes.fromhex("d296cd94c2cccf8a3a863028b5e1dc0a7586602d253cfff91b8266bea6d61ab1")
    assert enc.decrypt_joined(iv + ct) == bytes(range(32))
    sender = make_enc("cbc(aes)", bytes.fromhex("c286696d887c9aa0611bbb3e2025a45a"))
    for n in range(1, 6):
        iv, plain = bytes([n]) * 16, bytes(range(n, n + 16 * n))
        sealed = sender.encrypt(iv, plain)
        assert enc.decrypt_joined(iv + sealed) == plain
        assert enc.decrypt(iv, sealed) == plain  # the plain method still agrees after it
    with pytest.raises(ValueError, match="whole blocks"):
        enc.decrypt_joined(iv + sealed[:-1])
    null = make_enc("ecb(cipher_null)", b"")
    assert null.decrypt_joined(b"payload") == b"payload"


def test_aes_ctr_rfc3686_vector_1():
    # RFC 3686 section 6, test vector #1: key || nonce 00000030, IV 0.
    enc = make_enc("rfc3686(ctr(aes))", bytes.fromhex("ae6852f8121067cc4bf7a5765577f39e00000030"))
    ct = enc.encrypt(bytes(8), b"Single block msg")
    assert ct.hex() == "e4095d4fb7a7b3792d6175a3261311b8"
    assert enc.decrypt(bytes(8), ct) == b"Single block msg"


def test_des_is_triple_des_with_one_key():
    key = bytes.fromhex("0123456789abcdef")
    iv = bytes(range(8))
    ref = Cipher(TripleDES(key * 3), modes.CBC(iv)).encryptor()
    assert make_enc("cbc(des)", key).encrypt(iv, bytes(24)) == ref.update(bytes(24))


@pytest.mark.parametrize("case", DATA["gcm"], ids=lambda c: f"mcgrew-{c['case']}")
def test_gcm_draft_mcgrew_vectors(case):
    # draft-mcgrew-gcm-test-01 section 4: nonce = salt || IV, AAD = SPI || SEQ(-hi || -lo).
    nonce = bytes.fromhex(case["nonce"])
    salt, iv = nonce[:4], nonce[4:]
    suite = make_aead("rfc4106(gcm(aes))", bytes.fromhex(case["key"]) + salt, 128)
    aad = bytes.fromhex(case["aad"])
    plain = bytes.fromhex(case["plaintext"])
    sealed = suite.seal(iv, plain, aad)
    assert sealed.hex() == case["ctext_tag"]
    assert suite.open(iv, sealed, aad) == plain
    spi, seq = bytes.fromhex(case["spi"]), bytes.fromhex(case["seq"])
    assert aad == spi + seq
    assert (spi + seq[-4:] + iv + sealed).hex() == case["packet"]
    for bits in (64, 96):
        short = make_aead("rfc4106(gcm(aes))", bytes.fromhex(case["key"]) + salt, bits)
        cut = short.seal(iv, plain, aad)
        assert cut == sealed[: len(plain) + bits // 8]
        assert short.open(iv, cut, aad) == plain
        bad = cut[:-1] + bytes((cut[-1] ^ 1,))
        assert short.open(iv, bad, aad) is None
    assert suite.open(iv, sealed, aad[:-1] + bytes((aad[-1] ^ 1,))) is None


# --------------------------------------------------------------------------- running CBC


@settings(max_examples=60, deadline=None)
@given(
    key_len=st.sampled_from([16, 24, 32]),
    packets=st.lists(
        st.tuples(st.binary(min_size=16, max_size=16), st.integers(1, 6)), min_size=1, max_size=8
    ),
    data=st.data(),
)
def test_running_cbc_context_equals_fresh_contexts(key_len, packets, data):
    key = bytes(range(key_len))
    suite = make_enc("cbc(aes)", key)
    for iv, blocks in packets:
        plain = data.draw(st.binary(min_size=16 * blocks, max_size=16 * blocks))
        fresh = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor().update(plain)
        assert suite.encrypt(iv, plain) == fresh
        assert suite.decrypt(iv, fresh) == plain


def test_running_3des_context_equals_fresh_contexts():
    key = bytes(range(24))
    suite = make_enc("cbc(des3_ede)", key)
    for n in range(1, 6):
        iv, plain = bytes([n]) * 8, bytes(range(8 * n))
        fresh = Cipher(TripleDES(key), modes.CBC(iv)).encryptor().update(plain)
        assert suite.encrypt(iv, plain) == fresh
        assert suite.decrypt(iv, fresh) == plain


def test_cbc_refuses_partial_blocks():
    suite = make_enc("cbc(aes)", bytes(16))
    with pytest.raises(ValueError):
        suite.encrypt(bytes(16), bytes(15))
    with pytest.raises(ValueError):
        suite.decrypt(bytes(8), bytes(16))


def test_suites_never_show_their_keys():
    key = bytes.fromhex("c0ffee00" * 4)
    shown = [
        repr(make_enc("cbc(aes)", key)),
        repr(make_auth("hmac(sha1)", key)),
        repr(make_aead("rfc4106(gcm(aes))", key + b"salt", 96)),
    ]
    assert shown == [
        "EncSuite('cbc(aes)')",
        "AuthSuite('hmac(sha1)', 96)",
        "AeadSuite('rfc4106(gcm(aes))', 96)",
    ]
    assert all("c0ffee" not in s for s in shown)
