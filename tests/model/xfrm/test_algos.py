"""The algorithm table (reference 5.3, kernel net/xfrm/xfrm_algo.c) and keys."""

from __future__ import annotations

import pytest

from esplab.errors import KernelError, ToolUsageError
from esplab.model.kernel.xfrm.algos import (
    ALGORITHMS,
    XfrmAlgo,
    algorithm,
    check_algo,
    lookup_algo,
    parse_key,
)

from .support import ip, make_node, snapshot

ID = "src 192.0.2.1 dst 192.0.2.2 proto esp spi 1"
SHA1_KEY = "0x0102030405060708090a0b0c0d0e0f1011121314"
GCM_KEY = "0x00112233445566778899aabbccddeeff01020304"


@pytest.mark.parametrize("word,name", [("auth", "sha384"), ("auth", "sha512"), ("enc", "foo")])
def test_unknown_names_are_the_kernels_enosys(word: str, name: str) -> None:
    # xfrm_algo.c gives hmac(sha384)/hmac(sha512) no compat name: Linux 6.12 answers
    # "Error: Requested AUTH algorithm not found." to "auth sha384" (tests/kernel/).
    with pytest.raises(KernelError) as caught:
        lookup_algo(word, name, word)  # type: ignore[arg-type]
    kind = {"auth": "AUTH", "enc": "CRYPT"}[word]
    assert caught.value.board == f"Error: Requested {kind} algorithm not found."
    assert caught.value.errno_name == "ENOSYS"


@pytest.mark.parametrize(
    ("kind", "alias", "canonical"),
    [
        ("auth", "sha1", "hmac(sha1)"),
        ("auth", "md5", "hmac(md5)"),
        ("auth", "sha256", "hmac(sha256)"),
        ("enc", "aes", "cbc(aes)"),
        ("enc", "des3_ede", "cbc(des3_ede)"),
        ("enc", "des", "cbc(des)"),
        ("enc", "cipher_null", "ecb(cipher_null)"),
        ("enc", "rfc3686(ctr(aes))", "rfc3686(ctr(aes))"),
        ("aead", "rfc4106(gcm(aes))", "rfc4106(gcm(aes))"),
    ],
)
def test_aliases_resolve_to_canonical(kind: str, alias: str, canonical: str) -> None:
    # xfrm_get_byname matches the name or the compat alias; the canonical name is stored.
    assert lookup_algo(kind, alias).name == canonical  # type: ignore[arg-type]


def test_default_truncations_and_digests() -> None:
    # Reference 5.3: icv_truncbits / icv_fullbits; sha256 defaults to 96, not 128.
    expect = {
        "hmac(md5)": (96, 128),
        "hmac(sha1)": (96, 160),
        "hmac(sha256)": (96, 256),
        "hmac(sha384)": (192, 384),
        "hmac(sha512)": (256, 512),
    }
    for name, (trunc, full) in expect.items():
        info = algorithm(name)
        assert (info.default_icv_bits, info.full_bits) == (trunc, full)
    assert algorithm("rfc4106(gcm(aes))").icv_bits == (64, 96, 128)
    assert algorithm("cbc(aes)").key_bytes == (16, 24, 32)
    assert algorithm("rfc4106(gcm(aes))").key_bytes == (20, 28, 36)


def test_scapy_names() -> None:
    # Reference 5.3, Scapy column (STYLE.md: reuse Scapy's names).
    assert XfrmAlgo("hmac(sha1)", b"k" * 20, 96).scapy_name == "HMAC-SHA1-96"
    assert XfrmAlgo("hmac(sha256)", b"k" * 32, 128).scapy_name == "SHA2-256-128"
    assert XfrmAlgo("hmac(sha256)", b"k" * 32, 96).scapy_name is None
    assert XfrmAlgo("cbc(aes)", b"k" * 16).scapy_name == "AES-CBC"
    assert XfrmAlgo("cbc(des3_ede)", b"k" * 24).scapy_name == "3DES"
    assert XfrmAlgo("rfc4106(gcm(aes))", b"k" * 20, 128).scapy_name == "AES-GCM"
    assert XfrmAlgo("ecb(cipher_null)").scapy_name == "NULL"
    names = {a.name for a in ALGORITHMS}
    assert {"cbc(aes)", "cbc(des3_ede)", "cbc(des)", "rfc3686(ctr(aes))"} <= names


def test_parse_key_forms() -> None:
    # iproute2 xfrm_algo_parse: 0x-hex, odd digit count gets a leading 0, else literal.
    assert parse_key("0x0102") == b"\x01\x02"
    assert parse_key("0x102") == b"\x01\x02"
    assert parse_key("0xABcd") == b"\xab\xcd"
    assert parse_key("1234567890123456") == b"1234567890123456"
    assert parse_key("0x") == b"0x"
    assert parse_key("0x" + "00" * 512) == bytes(512)
    with pytest.raises(ToolUsageError, match="buffer overflow"):
        parse_key("0x" + "00" * 513)
    with pytest.raises(ToolUsageError, match="ALGO-KEYMAT value is invalid"):
        parse_key("0xzz")


def test_wrong_key_length_is_einval() -> None:
    # Reference 3.5: a 15-byte AES key fails setkey -> -EINVAL.
    with pytest.raises(KernelError) as err:
        check_algo("enc", XfrmAlgo("cbc(aes)", bytes(15)), truncated=False)
    assert err.value.errno_name == "EINVAL"
    assert "RTNETLINK answers: Invalid argument" in str(err.value)
    node = make_node()
    before = snapshot(node)
    with pytest.raises(KernelError, match="Invalid argument"):
        ip(
            node,
            "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 "
            "enc aes 0x000102030405060708090a0b0c0d0e",
        )
    assert snapshot(node) == before


def test_hmac_takes_any_key_length() -> None:
    # The hmac template's setkey accepts any key; only ciphers check lengths.
    algo = check_algo("auth", XfrmAlgo("hmac(sha1)", b"short"), truncated=False)
    assert algo.icv_bits == 96


def test_icv_length_the_algorithm_cannot_have() -> None:
    # auth-trunc longer than the digest: attach_auth_trunc -> -EINVAL.
    node = make_node()
    with pytest.raises(KernelError) as err:
        ip(node, f"ip xfrm state add {ID} auth-trunc sha1 {SHA1_KEY} 192 enc cipher_null ''")
    assert err.value.errno_name == "EINVAL"
    # An AEAD ICV with no xfrm_aead_list entry: attach_aead -> -ENOSYS.
    with pytest.raises(KernelError) as err:
        ip(node, f"ip xfrm state add {ID} aead 'rfc4106(gcm(aes))' {GCM_KEY} 100")
    assert err.value.errno_name == "ENOSYS"
    assert "valid ICV lengths: 64, 96, 128" in str(err.value)
    assert ip(node, "ip xfrm state count").text == "\t SAD count 0\n"


def test_auth_trunc_zero_takes_the_default() -> None:
    # attach_auth_trunc: a zero length becomes icv_truncbits.
    assert check_algo("auth", XfrmAlgo("sha256", bytes(32), 0), truncated=True).icv_bits == 96
    assert check_algo("auth", XfrmAlgo("sha256", bytes(32), 128), truncated=True).icv_bits == 128


def test_misspelt_algorithm_did_you_mean() -> None:
    node = make_node()
    with pytest.raises(KernelError) as err:
        ip(
            node,
            "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 "
            "aead aes-gmc 0x00112233445566778899aabbccddeeff01020304 128",
        )
    msg = str(err.value)
    # The kernel's answer first (iproute2 passes any name on), then what is valid.
    assert msg.startswith(
        "RTNETLINK answers: Function not implemented "
        "(Requested AEAD algorithm not found: 'aes-gmc')"
    )
    assert "valid: rfc4106(gcm(aes))" in msg
    # Scapy's AES-GCM is the closest spelling; the hint names the kernel algorithm.
    assert msg.endswith("did you mean rfc4106(gcm(aes))? (AES-GCM)")
    with pytest.raises(KernelError, match="did you mean hmac\\(sha1\\)"):
        lookup_algo("auth", "hmac(sh1)")
    with pytest.raises(KernelError, match="'sha1' is an auth algorithm, not enc"):
        lookup_algo("enc", "sha1")
