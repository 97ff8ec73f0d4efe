"""ESP cipher and integrity suites, named as the Linux kernel names them.

The canonical names are those of the kernel's algorithm table (``net/xfrm/xfrm_algo.c``,
reference/airoha-dsa-xfrm.md section 5.3); they are the contract with the rest of the
project. Aliases that ``ip xfrm`` accepts (``aes``, ``sha1``...) map to them.

A suite is keyed once per SA: cipher algorithm objects, running CBC contexts and the
HMAC inner/outer hash states are built at SA set-up, so the per-packet path only
copies a hash state and feeds bytes to an existing context.

Sources: RFC 4303 (ESP), RFC 3602 (AES-CBC), RFC 2451 (3DES/DES-CBC), RFC 3686
(AES-CTR), RFC 2410 (NULL), RFC 2104/2404/4868 (HMAC), RFC 4106 (AES-GCM in ESP).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from esplab.errors import InvalidValue, NotFound
from esplab.model.kernel.esp.layout import esp_align
from esplab.model.kernel.xfrm.algos import ALGORITHMS as KERNEL_ALGORITHMS
from esplab.model.kernel.xfrm.algos import AlgoInfo as KernelAlgo

try:
    from cryptography.hazmat.decrepit.ciphers import algorithms as _legacy
except ImportError:  # pragma: no cover - cryptography < 43 keeps TripleDES among the primitives
    _legacy = algorithms  # type: ignore[assignment,misc,unused-ignore]

__all__ = [
    "AEAD_ALGOS",
    "ALIASES",
    "AUTH_ALGOS",
    "ENC_ALGOS",
    "AeadSuite",
    "AlgoInfo",
    "AuthSuite",
    "EncSuite",
    "Kind",
    "algo_info",
    "canonical_name",
    "make_aead",
    "make_auth",
    "make_enc",
]

Kind = Literal["enc", "auth", "aead"]


@dataclass(frozen=True)
class AlgoInfo:
    """What is known about an algorithm before it is keyed.

    ``key_sizes`` counts bytes of key material as ``ip xfrm state`` takes it, salt or
    nonce included (``()`` means any length, as the kernel allows for HMAC keys).
    ``salt_size`` is the trailing part of that material used as nonce or salt.
    ``icv_bits`` lists the valid ICV/truncation lengths; ``default_icv_bits`` is what
    the kernel uses when none is given.
    """

    kind: Kind
    name: str
    aliases: tuple[str, ...]
    key_sizes: tuple[int, ...]
    block_size: int = 1
    iv_size: int = 0
    salt_size: int = 0
    icv_bits: tuple[int, ...] = ()
    default_icv_bits: int = 0
    digest_bits: int = 0
    scapy_name: str | None = None

    @property
    def align(self) -> int:
        """Alignment of payload + pad + pad length + next header (RFC 4303 2.4):
        the cipher block size, at least 4 bytes (kernel: ``ALIGN(blocksize, 4)``)."""
        return esp_align(self.block_size)


def _hmac_bits(digest_bits: int) -> tuple[int, ...]:
    # Kernel: any truncation up to the digest size (xfrm_user.c ``attach_auth_trunc``);
    # whole bytes only, because esp4/esp6 hand ``trunc_len / 8`` to the crypto API.
    return tuple(range(8, digest_bits + 1, 8))


# The names, aliases, key lengths, ICV lengths and Scapy names come from the kernel
# table in esplab.model.kernel.xfrm.algos; the ESP core adds what it needs to run a cipher:
# (block size, IV size) per cipher. RFC 3686 4 and RFC 4106 8.1: the key material
# ends with a 4-byte nonce/salt and the IV on the wire is 8 bytes.
_CIPHER_SHAPE: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "cbc(aes)": (16, 16),
        "cbc(des3_ede)": (8, 8),
        "cbc(des)": (8, 8),
        "rfc3686(ctr(aes))": (1, 8),
        "ecb(cipher_null)": (1, 0),
        "rfc4106(gcm(aes))": (1, 8),
    }
)
# ``auth digest_null ''``: no ICV at all (RFC 4303 3.2: confidentiality only).
_AUTH_NAMES = frozenset(
    {"digest_null", "hmac(md5)", "hmac(sha1)", "hmac(sha256)", "hmac(sha384)", "hmac(sha512)"}
)


def _from_kernel(k: KernelAlgo) -> AlgoInfo:
    scapy = k.scapy[0][1] if k.scapy else None
    if k.kind == "auth":
        if not k.full_bits:
            return AlgoInfo("auth", k.name, k.aliases, (0,), icv_bits=(0,), scapy_name=scapy)
        # The kernel's default truncation (sha256: 96, not RFC 4868's 128, which is what
        # ``auth-trunc ... 128`` and every IKE daemon set).
        return AlgoInfo(
            "auth",
            k.name,
            k.aliases,
            (),
            icv_bits=_hmac_bits(k.full_bits),
            default_icv_bits=k.default_icv_bits,
            digest_bits=k.full_bits,
            scapy_name=scapy,
        )
    block, iv = _CIPHER_SHAPE[k.name]
    kind: Kind = "aead" if k.kind == "aead" else "enc"
    return AlgoInfo(
        kind,
        k.name,
        k.aliases,
        k.key_bytes or (),
        block,
        iv,
        k.salt_bytes,
        icv_bits=k.icv_bits,
        default_icv_bits=k.icv_bits[-1] if k.icv_bits else 0,
        scapy_name=scapy,
    )


def _table(kind: str, names: Collection[str]) -> Mapping[str, AlgoInfo]:
    return MappingProxyType(
        {k.name: _from_kernel(k) for k in KERNEL_ALGORITHMS if k.kind == kind and k.name in names}
    )


ENC_ALGOS: Mapping[str, AlgoInfo] = _table("enc", _CIPHER_SHAPE)
AUTH_ALGOS: Mapping[str, AlgoInfo] = _table("auth", _AUTH_NAMES)
AEAD_ALGOS: Mapping[str, AlgoInfo] = _table("aead", _CIPHER_SHAPE)

_TABLES: Mapping[Kind, Mapping[str, AlgoInfo]] = MappingProxyType(
    {"enc": ENC_ALGOS, "auth": AUTH_ALGOS, "aead": AEAD_ALGOS}
)

#: Alias -> canonical name, per kind (``ip xfrm`` prints the canonical name).
ALIASES: Mapping[Kind, Mapping[str, str]] = MappingProxyType(
    {
        kind: MappingProxyType({a: info.name for info in table.values() for a in info.aliases})
        for kind, table in _TABLES.items()
    }
)


def canonical_name(kind: Kind, name: str) -> str:
    """The kernel's canonical name for ``name`` (itself or an alias) of this kind."""
    table = _TABLES[kind]
    if name in table:
        return name
    alias = ALIASES[kind].get(name)
    if alias is not None:
        return alias
    valid = [*table, *ALIASES[kind]]
    raise NotFound(f"unknown {kind} algorithm {name!r}", valid=valid, value=name)


def algo_info(kind: Kind, name: str) -> AlgoInfo:
    """The table entry for ``name`` (canonical or alias)."""
    return _TABLES[kind][canonical_name(kind, name)]


def _check_key(info: AlgoInfo, key: bytes) -> None:
    if info.key_sizes and len(key) not in info.key_sizes:
        valid = [f"{n} bytes ({n * 8} bits)" for n in info.key_sizes]
        raise InvalidValue(
            f"{info.name}: wrong key length {len(key)} bytes ({len(key) * 8} bits)",
            valid=valid,
            hint=f"the last {info.salt_size} bytes are the salt/nonce" if info.salt_size else None,
        )


def _check_icv(info: AlgoInfo, bits: int) -> None:
    if bits not in info.icv_bits:
        if info.kind == "auth" and len(info.icv_bits) > 3:
            valid: list[str] | str = f"a multiple of 8 from 8 to {info.digest_bits}"
        else:
            valid = [str(b) for b in info.icv_bits]
        raise InvalidValue(
            f"{info.name}: impossible ICV length {bits} bits", valid=valid, value=str(bits)
        )


# --------------------------------------------------------------------------- ciphers


class EncSuite:
    """An encryption algorithm keyed for one SA. ``encrypt``/``decrypt`` take the
    IV as it travels on the wire and data already padded to ``align``."""

    __slots__ = ("align", "block_size", "info", "iv_size", "name")

    def __init__(self, info: AlgoInfo) -> None:
        self.info = info
        self.name = info.name
        self.block_size = info.block_size
        self.iv_size = info.iv_size
        self.align = info.align

    def __repr__(self) -> str:
        return f"EncSuite({self.name!r})"  # never the key

    def encrypt(self, iv: bytes, data: bytes) -> bytes:
        raise NotImplementedError

    def decrypt(self, iv: bytes, data: bytes) -> bytes:
        raise NotImplementedError

    def decrypt_joined(self, iv_data: bytes) -> bytes:
        """:meth:`decrypt` of the IV and the data as they lie together on the wire."""
        ivs = self.iv_size
        return self.decrypt(iv_data[:ivs], iv_data[ivs:])


class _NullEnc(EncSuite):
    """``ecb(cipher_null)``: RFC 2410, identity, no IV."""

    __slots__ = ()

    def encrypt(self, iv: bytes, data: bytes) -> bytes:
        return data

    def decrypt(self, iv: bytes, data: bytes) -> bytes:
        return data


class _CbcEnc(EncSuite):
    """CBC with an explicit per-packet IV (RFC 3602 / RFC 2451).

    Building a cipher context costs far more than running one, so each SA keeps one
    running encryptor and one running decryptor. A running CBC context chains from
    the last ciphertext block it handled (``_last_*``); XORing the first plaintext
    block with ``iv ^ last`` makes its chaining value ``iv`` (encrypt), and XORing
    the first output block with ``iv ^ last`` does the same on decrypt. The result
    is CBC with the packet's IV, as if a fresh context had been built.
    """

    __slots__ = ("_dec", "_enc", "_last_dec", "_last_enc")

    def __init__(self, info: AlgoInfo, algorithm: Any) -> None:
        super().__init__(info)
        zero = bytes(info.block_size)
        self._enc: CipherContext = Cipher(algorithm, modes.CBC(zero)).encryptor()
        self._dec: CipherContext = Cipher(algorithm, modes.CBC(zero)).decryptor()
        self._last_enc = 0
        self._last_dec = 0

    def encrypt(self, iv: bytes, data: bytes) -> bytes:
        bs = self.block_size
        if not data or len(data) % bs or len(iv) != bs:
            raise ValueError("CBC needs whole blocks and a block-sized IV")
        first = int.from_bytes(data[:bs], "big") ^ int.from_bytes(iv, "big") ^ self._last_enc
        out = self._enc.update(first.to_bytes(bs, "big") + data[bs:])
        self._last_enc = int.from_bytes(out[-bs:], "big")
        return out

    def decrypt(self, iv: bytes, data: bytes) -> bytes:
        bs = self.block_size
        if not data or len(data) % bs or len(iv) != bs:
            raise ValueError("CBC needs whole blocks and a block-sized IV")
        out = self._dec.update(data)
        fix = int.from_bytes(iv, "big") ^ self._last_dec
        self._last_dec = int.from_bytes(data[-bs:], "big")
        if not fix:
            return out
        first = int.from_bytes(out[:bs], "big") ^ fix
        return first.to_bytes(bs, "big") + out[bs:]

    def decrypt_joined(self, iv_data: bytes) -> bytes:
        """IV || ciphertext: the IV goes through the chained context first, as one
        more block, so the first plaintext block comes out already XORed with it
        (CBC: P1 = D(C1) ^ IV); its own output block is dropped."""
        bs = self.block_size
        if len(iv_data) < 2 * bs or len(iv_data) % bs:
            raise ValueError("CBC needs whole blocks and a block-sized IV")
        out = self._dec.update(iv_data)
        self._last_dec = int.from_bytes(iv_data[-bs:], "big")
        return out[bs:]


class _CtrEnc(EncSuite):
    """``rfc3686(ctr(aes))``: counter block = nonce(4) || IV(8) || 0x00000001
    (RFC 3686 4); the nonce is the tail of the key material."""

    __slots__ = ("_aes", "_nonce")

    def __init__(self, info: AlgoInfo, key: bytes) -> None:
        super().__init__(info)
        self._aes = algorithms.AES(key[:-4])
        self._nonce = key[-4:]

    def _ctx(self, iv: bytes) -> CipherContext:
        if len(iv) != 8:
            raise ValueError("RFC 3686 needs an 8-byte IV")
        return Cipher(self._aes, modes.CTR(self._nonce + iv + b"\x00\x00\x00\x01")).encryptor()

    def encrypt(self, iv: bytes, data: bytes) -> bytes:
        return self._ctx(iv).update(data)

    def decrypt(self, iv: bytes, data: bytes) -> bytes:
        return self._ctx(iv).update(data)


def make_enc(name: str, key: bytes) -> EncSuite:
    """Key an encryption suite. Raises :class:`NotFound` for an unknown name,
    :class:`InvalidValue` for a key of the wrong length."""
    info = algo_info("enc", name)
    _check_key(info, key)
    if info.name == "ecb(cipher_null)":
        return _NullEnc(info)
    if info.name == "cbc(aes)":
        return _CbcEnc(info, algorithms.AES(key))
    if info.name == "cbc(des3_ede)":
        return _CbcEnc(info, _legacy.TripleDES(key))
    if info.name == "cbc(des)":
        return _CbcEnc(info, _legacy.TripleDES(key * 3))
    return _CtrEnc(info, key)


# --------------------------------------------------------------------------- integrity


class AuthSuite:
    """HMAC keyed for one SA (RFC 2104), truncated to ``icv_len`` bytes.

    The inner and outer hash states after the padded key block are computed once;
    each ICV copies them. ``icv(data, tail)`` MACs ``data || tail``: with ESN the tail
    is the high 32 bits of the sequence number (RFC 4303 2.2.1).
    """

    __slots__ = ("_inner", "_outer", "icv_len", "info", "name", "trunc_bits")

    def __init__(self, info: AlgoInfo, key: bytes, trunc_bits: int) -> None:
        self.info = info
        self.name = info.name
        self.trunc_bits = trunc_bits
        self.icv_len = trunc_bits // 8
        if info.digest_bits:
            hash_name = info.name[5:-1]
            block = hashlib.new(hash_name).block_size
            if len(key) > block:
                key = hashlib.new(hash_name, key).digest()
            key = key.ljust(block, b"\x00")
            self._inner: Any = hashlib.new(hash_name, bytes(b ^ 0x36 for b in key))
            self._outer: Any = hashlib.new(hash_name, bytes(b ^ 0x5C for b in key))
        else:
            self._inner = self._outer = None

    def __repr__(self) -> str:
        return f"AuthSuite({self.name!r}, {self.trunc_bits})"  # never the key

    def icv(self, data: bytes, tail: bytes = b"") -> bytes:
        if self._inner is None:
            return b""
        inner = self._inner.copy()
        inner.update(data)
        if tail:
            inner.update(tail)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return bytes(outer.digest()[: self.icv_len])

    def verify(self, data: bytes, icv: bytes, tail: bytes = b"") -> bool:
        """Constant-time comparison (RFC 4303 3.4.4.1)."""
        return hmac.compare_digest(self.icv(data, tail), icv)


def make_auth(name: str, key: bytes, trunc_bits: int | None = None) -> AuthSuite:
    """Key an integrity suite; ``trunc_bits`` defaults to the kernel default."""
    info = algo_info("auth", name)
    _check_key(info, key)
    bits = info.default_icv_bits if trunc_bits is None else trunc_bits
    _check_icv(info, bits)
    return AuthSuite(info, key, bits)


# --------------------------------------------------------------------------- AEAD


class AeadSuite:
    """``rfc4106(gcm(aes))`` keyed for one SA.

    RFC 4106 4: nonce = salt(4) || IV(8). RFC 4106 5: AAD = SPI || SEQ (8 bytes), or
    SPI || SEQ-hi || SEQ-lo (12 bytes) with ESN. The ICV is the GCM tag truncated to
    ``icv_len`` bytes (NIST SP 800-38D 5.2.1.2: the leftmost bits).
    """

    __slots__ = (
        "_aes",
        "_gcm",
        "_salt",
        "align",
        "block_size",
        "icv_len",
        "info",
        "iv_size",
        "name",
    )

    def __init__(self, info: AlgoInfo, key: bytes, icv_bits: int) -> None:
        self.info = info
        self.name = info.name
        self.block_size = info.block_size
        self.iv_size = info.iv_size
        self.align = info.align
        self.icv_len = icv_bits // 8
        self._gcm = AESGCM(key[:-4])
        self._aes = algorithms.AES(key[:-4])
        self._salt = key[-4:]

    def __repr__(self) -> str:
        return f"AeadSuite({self.name!r}, {self.icv_len * 8})"  # never the key

    def seal(self, iv: bytes, plaintext: bytes, aad: bytes) -> bytes:
        """Ciphertext || ICV."""
        out = self._gcm.encrypt(self._salt + iv, plaintext, aad)
        if self.icv_len == 16:
            return out
        return out[: len(plaintext) + self.icv_len]

    def open(self, iv: bytes, sealed: bytes, aad: bytes) -> bytes | None:
        """Plaintext of ciphertext || ICV, or None when the ICV does not verify."""
        try:
            if self.icv_len == 16:
                return self._gcm.decrypt(self._salt + iv, sealed, aad)
            cut = len(sealed) - self.icv_len
            ctx = Cipher(
                self._aes, modes.GCM(self._salt + iv, sealed[cut:], min_tag_length=self.icv_len)
            ).decryptor()
            ctx.authenticate_additional_data(aad)
            return ctx.update(sealed[:cut]) + ctx.finalize()
        except InvalidTag:
            return None


def make_aead(name: str, key: bytes, icv_bits: int | None = None) -> AeadSuite:
    """Key an AEAD suite; ``icv_bits`` defaults to 128."""
    info = algo_info("aead", name)
    _check_key(info, key)
    bits = info.default_icv_bits if icv_bits is None else icv_bits
    _check_icv(info, bits)
    return AeadSuite(info, key, bits)
