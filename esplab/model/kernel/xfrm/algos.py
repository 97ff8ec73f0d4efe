"""The XFRM algorithm table, as the kernel's ``net/xfrm/xfrm_algo.c`` knows it.

Reference ``airoha-dsa-xfrm.md`` 5.3 [C]. Each entry has the canonical name the
kernel stores and prints (``hmac(sha1)``), the compat alias it also accepts
(``sha1``), its kind, the key lengths the crypto layer's ``setkey`` accepts, the
ICV lengths, and Scapy's name for it. An SA keeps an :class:`XfrmAlgo` per
algorithm: (canonical name, key bytes, ICV bits), which is all the ESP data path
(``esplab.model.kernel.esp.algos``) needs. No crypto happens here.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, TypeAlias

from esplab.errors import KernelError, ToolUsageError, did_you_mean

__all__ = [
    "ALGORITHMS",
    "MAX_KEY_BYTES",
    "AlgoInfo",
    "AlgoKind",
    "XfrmAlgo",
    "algorithm",
    "check_algo",
    "lookup_algo",
    "parse_key",
]

AlgoKind: TypeAlias = Literal["enc", "auth", "aead", "comp"]

# iproute2 ip/xfrm_state.c XFRM_ALGO_KEY_BUF_SIZE: "ALGO-KEYMAT value makes buffer overflow".
MAX_KEY_BYTES = 512


@dataclass(frozen=True)
class AlgoInfo:
    """One row of the kernel table.

    ``key_bytes`` lists the key lengths ``setkey`` accepts (None: any length, as
    for HMAC, whose setkey hashes or pads any key). For AEAD and RFC 3686 the
    length includes the salt/nonce. ``icv_bits`` are the allowed ICV lengths
    (AEAD: the ``xfrm_aead_list`` entries; auth: the default truncation first).
    ``full_bits`` is the digest size an ``auth-trunc`` length may not exceed.
    """

    name: str
    kind: AlgoKind
    aliases: tuple[str, ...] = ()
    key_bytes: tuple[int, ...] | None = None
    nominal_key_bits: int = 0
    icv_bits: tuple[int, ...] = ()
    full_bits: int = 0
    salt_bytes: int = 0
    scapy: tuple[tuple[int, str], ...] = ()

    @property
    def default_icv_bits(self) -> int:
        """``auth`` without ``-trunc`` gets ``icv_truncbits`` (kernel ``attach_auth``)."""
        return self.icv_bits[0] if self.icv_bits else 0

    def scapy_name(self, icv_bits: int = 0) -> str | None:
        """Scapy's ``CRYPT_ALGOS``/``AUTH_ALGOS`` name, or None if Scapy has no match
        (e.g. ``hmac(sha256)`` truncated to 96 bits)."""
        for bits, name in self.scapy:
            if bits in (0, icv_bits):
                return name
        return None


def _aes_salted(salt: int) -> tuple[int, ...]:
    return tuple(k + salt for k in (16, 24, 32))


# Kernel net/xfrm/xfrm_algo.c (aalg_list, ealg_list, aead_list, calg_list); key
# lengths from the crypto setkey functions; Scapy names from scapy.layers.ipsec.
ALGORITHMS: tuple[AlgoInfo, ...] = (
    # auth (aalg_list): key_bytes None = HMAC takes any key; icv_bits[0] = icv_truncbits.
    AlgoInfo("digest_null", "auth", key_bytes=(0,), icv_bits=(0,), scapy=((0, "NULL"),)),
    AlgoInfo(
        "hmac(md5)",
        "auth",
        ("md5",),
        nominal_key_bits=128,
        icv_bits=(96,),
        full_bits=128,
        scapy=((96, "HMAC-MD5-96"),),
    ),
    AlgoInfo(
        "hmac(sha1)",
        "auth",
        ("sha1",),
        nominal_key_bits=160,
        icv_bits=(96,),
        full_bits=160,
        scapy=((96, "HMAC-SHA1-96"),),
    ),
    # The kernel's default truncation for sha256 is 96, not RFC 4868's 128.
    AlgoInfo(
        "hmac(sha256)",
        "auth",
        ("sha256",),
        nominal_key_bits=256,
        icv_bits=(96,),
        full_bits=256,
        scapy=((128, "SHA2-256-128"),),
    ),
    AlgoInfo(
        "hmac(sha384)",
        "auth",
        (),  # no compat name in xfrm_algo.c: "auth sha384" is refused [K]
        nominal_key_bits=384,
        icv_bits=(192,),
        full_bits=384,
        scapy=((192, "SHA2-384-192"),),
    ),
    AlgoInfo(
        "hmac(sha512)",
        "auth",
        (),  # no compat name in xfrm_algo.c: "auth sha512" is refused [K]
        nominal_key_bits=512,
        icv_bits=(256,),
        full_bits=512,
        scapy=((256, "SHA2-512-256"),),
    ),
    AlgoInfo(
        "xcbc(aes)",
        "auth",
        key_bytes=(16,),
        nominal_key_bits=128,
        icv_bits=(96,),
        full_bits=128,
    ),
    AlgoInfo(
        "cmac(aes)",
        "auth",
        key_bytes=(16, 24, 32),
        nominal_key_bits=128,
        icv_bits=(96,),
        full_bits=128,
        scapy=((96, "AES-CMAC-96"),),
    ),
    # enc (ealg_list)
    AlgoInfo("ecb(cipher_null)", "enc", ("cipher_null",), key_bytes=(0,), scapy=((0, "NULL"),)),
    AlgoInfo("cbc(des)", "enc", ("des",), key_bytes=(8,), nominal_key_bits=64, scapy=((0, "DES"),)),
    AlgoInfo(
        "cbc(des3_ede)",
        "enc",
        ("des3_ede",),
        key_bytes=(24,),
        nominal_key_bits=192,
        scapy=((0, "3DES"),),
    ),
    AlgoInfo(
        "cbc(aes)",
        "enc",
        ("aes",),
        key_bytes=(16, 24, 32),
        nominal_key_bits=128,
        scapy=((0, "AES-CBC"),),
    ),
    AlgoInfo(
        "rfc3686(ctr(aes))",
        "enc",
        key_bytes=_aes_salted(4),
        nominal_key_bits=160,
        salt_bytes=4,
        scapy=((0, "AES-CTR"),),
    ),
    # aead (aead_list): one kernel entry per ICV length.
    AlgoInfo(
        "rfc4106(gcm(aes))",
        "aead",
        key_bytes=_aes_salted(4),
        nominal_key_bits=160,
        icv_bits=(64, 96, 128),
        full_bits=128,
        salt_bytes=4,
        scapy=((0, "AES-GCM"),),
    ),
    AlgoInfo(
        "rfc4309(ccm(aes))",
        "aead",
        key_bytes=_aes_salted(3),
        nominal_key_bits=152,
        icv_bits=(64, 96, 128),
        full_bits=128,
        salt_bytes=3,
        scapy=((0, "AES-CCM"),),
    ),
    AlgoInfo(
        "rfc4543(gcm(aes))",
        "aead",
        key_bytes=_aes_salted(4),
        nominal_key_bits=160,
        icv_bits=(128,),
        full_bits=128,
        salt_bytes=4,
        scapy=((0, "AES-NULL-GMAC"),),
    ),
    AlgoInfo(
        "rfc7539esp(chacha20,poly1305)",
        "aead",
        key_bytes=(36,),
        nominal_key_bits=288,
        icv_bits=(128,),
        full_bits=128,
        salt_bytes=4,
        scapy=((0, "CHACHA20-POLY1305"),),
    ),
    # comp (calg_list)
    AlgoInfo("deflate", "comp"),
    AlgoInfo("lzs", "comp"),
    AlgoInfo("lzjh", "comp"),
)

_BY_KIND: MappingProxyType[str, tuple[AlgoInfo, ...]] = MappingProxyType(
    {k: tuple(a for a in ALGORITHMS if a.kind == k) for k in ("enc", "auth", "aead", "comp")}
)


def algorithm(name: str) -> AlgoInfo:
    """The table row for a canonical name (KeyError if unknown)."""
    for info in ALGORITHMS:
        if info.name == name:
            return info
    raise KeyError(name)


#: The netlink attribute each ALGO-TYPE travels in, as the kernel names it in its
#: refusal (xfrm_user.c attach_*: "Requested <ATTR> algorithm not found").
ALGO_ATTRS = {"enc": "CRYPT", "auth": "AUTH", "auth-trunc": "AUTH_TRUNC", "aead": "AEAD"}


def lookup_algo(kind: AlgoKind, name: str, word: str | None = None) -> AlgoInfo:
    """Resolve a name or alias for an ``enc``/``auth``/``aead``/``comp`` slot.

    The kernel matches the canonical name or the compat alias
    (``xfrm_get_byname``) and answers ``-ENOSYS`` otherwise, with "Requested
    <ATTR> algorithm not found" (``word`` is the ALGO-TYPE typed, e.g. ``auth-trunc``);
    esplab adds what is valid and a did-you-mean [K].
    """
    for info in _BY_KIND[kind]:
        if name == info.name or name in info.aliases:
            return info
    attr = ALGO_ATTRS.get(word or kind, kind.upper())
    valid = ", ".join(a.name for a in _BY_KIND[kind])
    hint = _algo_hint(kind, name)
    raise KernelError(
        "ENOSYS",
        f"Requested {attr} algorithm not found: '{name}'",
        hint=f"valid: {valid}" + (f"; {hint}" if hint else ""),
    )


def _algo_hint(kind: AlgoKind, name: str) -> str | None:
    """A did-you-mean over kernel names, aliases and Scapy's names (``AES-GCM``)."""
    other = next((a for a in ALGORITHMS if name == a.name or name in a.aliases), None)
    if other is not None:
        return f"'{name}' is an {other.kind} algorithm, not {kind}"
    spelled: dict[str, str] = {}
    for info in _BY_KIND[kind]:
        spelled.update({n: info.name for n in (info.name, *info.aliases)})
        spelled.update({scapy: info.name for _, scapy in info.scapy})
    guess = did_you_mean(name, spelled)
    if guess is None:
        return None
    if guess == spelled[guess]:
        return f"did you mean {guess}?"
    return f"did you mean {spelled[guess]}? ({guess})"


def parse_key(text: str) -> bytes:
    """ALGO-KEYMAT as iproute2 reads it (ip/xfrm_state.c ``xfrm_algo_parse``).

    ``0x`` followed by hex digits gives raw bytes, an odd digit count getting a
    leading 0; anything else (including a bare ``0x``) is the literal string.
    At most 512 bytes.
    """
    if len(text) > 2 and text.startswith("0x"):
        digits = text[2:]
        if len(digits) % 2:
            digits = "0" + digits
        if (len(digits) // 2) > MAX_KEY_BYTES:
            raise ToolUsageError(
                f'argument "{text}" is wrong: ALGO-KEYMAT value makes buffer overflow',
                valid=f"at most {MAX_KEY_BYTES} bytes",
            )
        try:
            return bytes.fromhex(digits)
        except ValueError as exc:
            raise ToolUsageError(
                f'argument "{text}" is wrong: ALGO-KEYMAT value is invalid',
                valid="0x followed by hex digits, or a literal string",
            ) from exc
    raw = text.encode()
    if len(raw) > MAX_KEY_BYTES:
        raise ToolUsageError(
            f'argument "{text[:16]}..." is wrong: ALGO-KEYMAT value makes buffer overflow',
            valid=f"at most {MAX_KEY_BYTES} bytes",
        )
    return raw


@dataclass(frozen=True)
class XfrmAlgo:
    """An algorithm as an SA holds it: canonical kernel name, key, ICV bits.

    ``icv_bits`` is the truncation for ``auth`` (``alg_trunc_len``), the ICV for
    ``aead`` (``alg_icv_len``) and 0 for ``enc``/``comp``.
    """

    name: str
    key: bytes = b""
    icv_bits: int = 0

    @property
    def info(self) -> AlgoInfo:
        return algorithm(self.name)

    @property
    def key_bits(self) -> int:
        return len(self.key) * 8

    @property
    def scapy_name(self) -> str | None:
        return self.info.scapy_name(self.icv_bits)


def check_algo(kind: AlgoKind, algo: XfrmAlgo, *, truncated: bool) -> XfrmAlgo:
    """What the kernel does with an algorithm attribute, returning the stored form.

    * ``auth`` gets the default truncation (kernel ``attach_auth``); ``auth-trunc``
      0 does too, and more than the digest is ``-EINVAL`` (``attach_auth_trunc``:
      "Invalid length requested for truncated ICV").
    * an AEAD ICV outside the table has no ``xfrm_aead_list`` entry: ``-ENOSYS``.
    * a key length the cipher rejects fails ``setkey`` in ``esp_init_state``:
      ``-EINVAL``.
    """
    info = lookup_algo(kind, algo.name)
    icv = algo.icv_bits
    if kind == "auth":
        if not truncated or icv == 0:
            icv = info.default_icv_bits
        elif icv > info.full_bits:
            raise KernelError(
                "EINVAL",
                f"Invalid length requested for truncated ICV: {icv} bits > "
                f"{info.full_bits}-bit {info.name} digest",
                hint=f"auth-trunc {info.name} takes at most {info.full_bits}",
            )
    elif kind == "aead" and icv not in info.icv_bits:
        raise KernelError(
            "ENOSYS",
            f"Requested AEAD algorithm not found: {info.name} has no {icv}-bit ICV",
            hint="valid ICV lengths: " + ", ".join(str(b) for b in info.icv_bits),
        )
    elif kind in ("enc", "comp"):
        icv = 0
    if info.key_bytes is not None and len(algo.key) not in info.key_bytes:
        valid = ", ".join(f"{n} bytes" for n in info.key_bytes)
        # esp_init_aead says why (extack) [K]; esp_init_authenc's setkey failure does not.
        said = (
            "Kernel was unable to initialize cryptographic operations: " if kind == "aead" else ""
        )
        raise KernelError(
            "EINVAL",
            f"{said}{info.name} setkey rejects a {len(algo.key)}-byte key",
            hint=f"valid: {valid}" + (" (key + salt)" if info.salt_bytes else ""),
        )
    return XfrmAlgo(info.name, algo.key, icv)
