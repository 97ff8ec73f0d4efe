"""EIP-93 SA record (128 bytes) and state record (56 bytes).

Format: ``struct sa_record`` / ``struct sa_state`` of the Linux driver
(drivers/crypto/inside-secure/eip93/eip93-regs.h) and ``saRecord_s`` / ``saState_s``
of vschagen/mtk-eip93, as restated in eip93.md sections 3 and 5. Command words,
SPI, sequence numbers and byte counts are u32 little-endian; keys, nonce and IV are
raw bytes; digests are hash-state words stored as u32 LE (eip93.md 5.2).

:meth:`EIP93SARecord.for_esp` builds the record the vschagen ESP offload programs
for an xfrm state (eip93.md 4.1), using Scapy's algorithm names.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from scapy.config import conf
from scapy.fields import (
    BitEnumField,
    BitField,
    LEIntField,
    XLEIntField,
    XStrFixedLenField,
)
from scapy.packet import Packet

from esplab.layers.crypto_desc import EIP93Words
from esplab.layers.hashstate import digest_size, hmac_precompute, state_to_record_bytes
from esplab.layers.linktypes import DLT_EIP93_SA_RECORD, DLT_EIP93_STATE_RECORD

__all__ = [
    "AES_KEY_LENGTH_NAMES",
    "BYTE_OFFSET_NAMES",
    "CIPHER_MODE_NAMES",
    "CIPHER_NAMES",
    "DIGEST_LENGTH_NAMES",
    "DIRECTION_NAMES",
    "ESP_AUTH_ALGOS",
    "ESP_CRYPT_ALGOS",
    "HASH_ALGORITHMS",
    "HASH_NAMES",
    "HASH_SOURCE_NAMES",
    "IV_SOURCE_NAMES",
    "OPCODE_NAMES",
    "OPGROUP_NAMES",
    "PAD_TYPE_NAMES",
    "SA_RECORD_SIZE",
    "STATE_RECORD_SIZE",
    "EIP93SARecord",
    "EIP93StateRecord",
    "EspAuth",
    "EspCipher",
]

SA_RECORD_SIZE = 128  # 32 x u32 (eip93.md 1.3)
STATE_RECORD_SIZE = 56  # 14 x u32

# --- sa_cmd0 codes (eip93.md 1.2, 3.2; names after the L-regs macros) -------

OPGROUP_NAMES = {0: "BASIC", 1: "PROTOCOL", 2: "EXTENDED"}
DIRECTION_NAMES = {0: "OUTBOUND", 1: "INBOUND"}
# The opcode's meaning depends on (opgroup, direction).
OPCODE_NAMES: dict[tuple[int, int], dict[int, str]] = {
    (0, 0): {0: "ENCRYPT", 1: "ENCRYPT_HASH", 3: "HASH", 7: "PRNG"},
    (0, 1): {0: "DECRYPT", 1: "HASH_DECRYPT", 3: "HASH"},
    (1, 0): {0: "ESP", 4: "SSL", 5: "TLS", 7: "SRTP"},
    (1, 1): {0: "ESP", 2: "SSL", 3: "TLS", 7: "SRTP"},
    (2, 0): {1: "DTLS", 4: "SSL", 5: "TLS10", 6: "TLS11"},
    (2, 1): {1: "DTLS", 4: "SSL", 5: "TLS10", 6: "TLS11"},
}
# L-regs also lists 5 = TLS/DTLS and 6 = constant SSL, which do not fit 2 bits [U].
PAD_TYPE_NAMES = {0: "IPSEC", 1: "PKCS7", 2: "CONSTANT", 3: "ZERO"}
CIPHER_NAMES = {0: "DES", 1: "3DES", 2: "ARC4", 3: "AES", 15: "NULL"}
HASH_NAMES = {0: "MD5", 1: "SHA1", 2: "SHA224", 3: "SHA256", 15: "NULL"}
# hashstate/hashlib name of each hash code, for engine models.
HASH_ALGORITHMS = {0: "md5", 1: "sha1", 2: "sha224", 3: "sha256"}
# 0 and 3 both mean three words (eip93.md 3.2, 8.8); drivers write authsize / 4.
DIGEST_LENGTH_NAMES = {
    0: "3_WORDS",
    1: "1_WORD",
    2: "2_WORDS",
    3: "3_WORDS_IPSEC",
    4: "4_WORDS",
    5: "5_WORDS",
    6: "6_WORDS",
    7: "7_WORDS",
    8: "8_WORDS",
    10: "10_WORDS",
}
IV_SOURCE_NAMES = {0: "NO_LOAD", 1: "INPUT", 2: "STATE", 3: "PRNG"}
HASH_SOURCE_NAMES = {0: "SA", 2: "STATE", 3: "NO_LOAD"}

# --- sa_cmd1 codes (eip93.md 3.3) -------------------------------------------

CIPHER_MODE_NAMES = {0: "ECB", 1: "CBC", 2: "CTR", 3: "ICM"}
BYTE_OFFSET_NAMES = {0: "WORDS", 1: "BYTES"}
AES_KEY_LENGTH_NAMES = {0: "NONE", 2: "AES128", 3: "AES192", 4: "AES256"}


class _OpcodeField(BitField):
    """``opcode``: shown and parsed by name under the record's opgroup and direction."""

    @staticmethod
    def _table(pkt: Packet | None) -> dict[int, str]:
        if pkt is None:
            return {}
        key = (int(pkt.getfieldval("opgroup")), int(pkt.getfieldval("direction")))
        return OPCODE_NAMES.get(key, {})

    def i2repr(self, pkt: Packet | None, x: int) -> str:
        return self._table(pkt).get(x, str(x))

    def any2i(self, pkt: Packet | None, x: Any) -> int | None:
        if not isinstance(x, str):
            return super().any2i(pkt, x)
        for value, label in self._table(pkt).items():
            if label == x:
                return value
        # Outside the current context, accept a name that means one value everywhere.
        values = {v for table in OPCODE_NAMES.values() for v, label in table.items() if label == x}
        if len(values) == 1:
            return values.pop()
        known = sorted({label for table in OPCODE_NAMES.values() for label in table.values()})
        raise ValueError(f"unknown or ambiguous opcode {x!r}; valid: {', '.join(known)}")


# --- ESP parameters (eip93.md 4, 4.1; Scapy's CRYPT_ALGOS / AUTH_ALGOS names) --


@dataclass(frozen=True)
class EspCipher:
    """How one Scapy cipher name maps onto the engine."""

    cipher: int  # sa_cmd0.cipher
    cipher_mode: int  # sa_cmd1.cipher_mode
    key_sizes: tuple[int, ...]  # as Scapy takes the key (RFC 3686: key + 4-byte nonce)
    nonce_size: int  # trailing key bytes that go to sa_nonce
    iv_size: int  # bytes of IV on the wire (eip93.md 4.2)
    block_size: int  # cipher block size for padding


@dataclass(frozen=True)
class EspAuth:
    """How one Scapy integrity name maps onto the engine."""

    hash: int  # sa_cmd0.hash
    algorithm: str  # hashstate name
    icv_size: int  # default truncation in bytes


ESP_CRYPT_ALGOS = {
    "AES-CBC": EspCipher(3, 1, (16, 24, 32), 0, 16, 16),
    "AES-CTR": EspCipher(3, 2, (20, 28, 36), 4, 8, 1),
    "DES": EspCipher(0, 1, (8,), 0, 8, 8),
    "3DES": EspCipher(1, 1, (24,), 0, 8, 8),
    # V-esp flags NULL with no cipher and no mode: cipher 15, mode 0, save_iv left 1.
    "NULL": EspCipher(15, 0, (0,), 0, 0, 1),
}

# The vschagen offload accepts HMAC-MD5, HMAC-SHA1 and HMAC-SHA256 only; the ICV
# length is the xfrm state's truncation (``alg_trunc_len``), so ``auth-trunc`` may
# override the default. Linux xfrm has no HMAC-SHA-224 transform, so the engine's
# SHA-224 is not reachable from ESP.
ESP_AUTH_ALGOS = {
    "HMAC-MD5-96": EspAuth(0, "md5", 12),
    "HMAC-SHA1-96": EspAuth(1, "sha1", 12),
    "SHA2-256-128": EspAuth(3, "sha256", 16),
}

# Scapy names the engine or the driver cannot offload, with the reason.
_UNSUPPORTED_CIPHERS = {
    "AES-GCM": "the EIP-93 has no GCM",
    "AES-NULL-GMAC": "the EIP-93 has no GMAC",
    "AES-CCM": "the driver offloads no AEAD transform",
    "CHACHA20-POLY1305": "the EIP-93 has no ChaCha20",
    "CAST": "the EIP-93 has no CAST",
    "Blowfish": "the EIP-93 has no Blowfish",
}
_UNSUPPORTED_AUTHS = {
    "NULL": "ESP offload requires integrity",
    "SHA2-384-192": "the EIP-93 has no SHA-384",
    "SHA2-512-256": "the EIP-93 has no SHA-512",
    "AES-CMAC-96": "the EIP-93 has no AES-CMAC",
}


def _pick(kind: str, value: str, table: dict[str, Any], unsupported: dict[str, str]) -> Any:
    if value in table:
        return table[value]
    valid = ", ".join(table)
    why = unsupported.get(value)
    if why is not None:
        raise ValueError(f"unsupported {kind} {value!r} ({why}); valid: {valid}")
    upper = {name.upper(): name for name in table}
    close = difflib.get_close_matches(str(value).upper(), list(upper), n=1)
    hint = f"; did you mean {upper[close[0]]}?" if close else ""
    raise ValueError(f"unknown {kind} {value!r}; valid: {valid}{hint}")


def _sa_cmd_fields() -> list[Any]:
    return [
        # sa_cmd0, 0x00 (eip93.md 3.2), MSB first
        BitField("reserved_cmd0_31_30", 0, 2, tot_size=-4),
        BitField("save_hash", 0, 1),
        BitField("save_iv", 0, 1),
        BitEnumField("hash_source", 0, 2, HASH_SOURCE_NAMES),
        BitEnumField("iv_source", 0, 2, IV_SOURCE_NAMES),
        BitEnumField("digest_length", 0, 4, DIGEST_LENGTH_NAMES),
        BitField("hdr_proc", 0, 1),
        BitField("ext_pad", 0, 1),
        BitField("scpad", 0, 1),
        BitField("reserved_cmd0_16", 0, 1),
        BitEnumField("hash", 0, 4, HASH_NAMES),
        BitEnumField("cipher", 0, 4, CIPHER_NAMES),
        BitEnumField("pad_type", 0, 2, PAD_TYPE_NAMES),
        BitEnumField("opgroup", 0, 2, OPGROUP_NAMES),
        BitEnumField("direction", 0, 1, DIRECTION_NAMES),
        _OpcodeField("opcode", 0, 3, end_tot_size=-4),
        # sa_cmd1, 0x04 (eip93.md 3.3), MSB first
        BitField("reserved_cmd1_31_30", 0, 2, tot_size=-4),
        BitField("en_seqnum_chk", 0, 1),
        BitField("aes_dec_key", 0, 1),
        BitField("reserved_cmd1_27", 0, 1),
        BitEnumField("aes_key_length", 0, 3, AES_KEY_LENGTH_NAMES),
        BitField("hash_crypt_offset", 0, 8),
        BitField("reserved_cmd1_15_14", 0, 2),
        BitEnumField("byte_offset", 0, 1, BYTE_OFFSET_NAMES),
        BitField("hmac", 0, 1),
        BitField("ssl_mac", 0, 1),  # bit 11 per V-ipsec/MTK-SDK; L-regs says 12 [U]
        BitField("reserved_cmd1_10", 0, 1),
        BitEnumField("cipher_mode", 0, 2, CIPHER_MODE_NAMES),
        BitField("reserved_cmd1_7_4", 0, 4),
        BitField("copy_pad", 0, 1),
        BitField("copy_payload", 0, 1),
        BitField("copy_header", 0, 1),
        BitField("copy_digest", 0, 1, end_tot_size=-4),
    ]


class EIP93SARecord(EIP93Words):
    """EIP-93 SA record: static per-flow parameters, pointed to by ``sa_addr``.

    ``sa_cmd0`` at 0x00, u32 LE (eip93.md 3.2)::

        31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 16
        +-----+--+--+-----+-----+-----------+--+--+--+--+
        |  r  |sh|si| hsrc|ivsrc| digest_len|hp|ep|sc|r |
        +-----+--+--+-----+-----+-----------+--+--+--+--+

        15 14 13 12 11 10  9  8  7  6  5  4  3  2  1  0
        +-----------+-----------+-----+-----+--+--------+
        |    hash   |   cipher  | pad | opg |d | opcode |
        +-----------+-----------+-----+-----+--+--------+

        r = reserved_cmd0_31_30 / reserved_cmd0_16, sh = save_hash, si = save_iv,
        hsrc = hash_source, ivsrc = iv_source, digest_len = digest_length (words),
        hp = hdr_proc, ep = ext_pad, sc = scpad, pad = pad_type, opg = opgroup,
        d = direction.

    ``sa_cmd1`` at 0x04, u32 LE (eip93.md 3.3)::

        31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 16
        +-----+--+--+--+--------+-----------------------+
        |  r  |sq|dk|r | aes_kl |   hash_crypt_offset   |
        +-----+--+--+--+--------+-----------------------+

        15 14 13 12 11 10  9  8  7  6  5  4  3  2  1  0
        +-----+--+--+--+--+-----+-----------+--+--+--+--+
        |  r  |bo|hm|sm|r | mode|     r     |cp|cy|ch|cd|
        +-----+--+--+--+--+-----+-----------+--+--+--+--+

        sq = en_seqnum_chk, dk = aes_dec_key, aes_kl = aes_key_length (bits 28:24
        are arc4_key_length for ARC4), bo = byte_offset, hm = hmac, sm = ssl_mac
        [U], mode = cipher_mode, cp = copy_pad, cy = copy_payload, ch = copy_header,
        cd = copy_digest; r = the reserved_cmd1_* fields.

    Then (eip93.md 3.1)::

        0x08 sa_key[32]        raw key bytes      0x68 sa_spi           u32 LE
        0x28 sa_i_digest[32]   HMAC inner state   0x6C sa_seqnum_0/_1   u32 LE x 2
        0x48 sa_o_digest[32]   HMAC outer state   0x74 sa_seqnum_mask_0/_1 u32 LE x 2
                                                  0x7C sa_nonce[4]      raw

    Every field defaults to 0, like a freshly zeroed record; :meth:`for_esp` fills
    one in the way the ESP offload driver does.
    """

    name = "EIP-93 SA record"
    fields_desc = [
        *_sa_cmd_fields(),
        XStrFixedLenField("sa_key", b"\x00" * 32, 32),
        XStrFixedLenField("sa_i_digest", b"\x00" * 32, 32),
        XStrFixedLenField("sa_o_digest", b"\x00" * 32, 32),
        XLEIntField("sa_spi", 0),
        LEIntField("sa_seqnum_0", 0),
        LEIntField("sa_seqnum_1", 0),
        XLEIntField("sa_seqnum_mask_0", 0),
        XLEIntField("sa_seqnum_mask_1", 0),
        XStrFixedLenField("sa_nonce", b"\x00" * 4, 4),
    ]

    @classmethod
    def for_esp(
        cls,
        direction: str,
        *,
        spi: int,
        crypt_algo: str,
        crypt_key: bytes | None = None,
        auth_algo: str,
        auth_key: bytes,
        icv_size: int | None = None,
        mode: str = "tunnel",
        seqnum_mask: tuple[int, int] = (0xFFFFFFFF, 0),
    ) -> EIP93SARecord:
        """The SA record the vschagen ESP offload programs (eip93.md 4.1).

        ``direction`` is ``"out"`` or ``"in"``; algorithm names are Scapy's
        (``AES-CBC``, ``AES-CTR`` with its 4-byte nonce appended to the key,
        ``DES``, ``3DES``, ``NULL`` whose key may be omitted; ``HMAC-MD5-96``,
        ``HMAC-SHA1-96``, ``SHA2-256-128``). ``icv_size`` overrides the algorithm's truncation like
        ``ip xfrm ... auth-trunc``; it must be a whole number of words no longer
        than the digest. ``mode`` is checked but does not change the record: the
        engine takes the next header from the descriptor. ``seqnum_mask`` is the
        V-esp initial window (V-ipsec wrote 0, 0). Raises ``ValueError`` for
        anything the engine or the driver cannot do.
        """
        if direction not in ("out", "in"):
            raise ValueError(f"unknown direction {direction!r}; valid: out, in")
        if mode not in ("transport", "tunnel"):
            raise ValueError(f"unknown mode {mode!r}; valid: transport, tunnel")
        if not 0 <= spi <= 0xFFFFFFFF:
            raise ValueError(f"SPI {spi:#x} out of range; valid: 0..0xffffffff")
        if len(seqnum_mask) != 2 or not all(0 <= w <= 0xFFFFFFFF for w in seqnum_mask):
            raise ValueError(f"sequence mask {seqnum_mask!r}; valid: two words 0..0xffffffff")
        cipher: EspCipher = _pick("cipher", crypt_algo, ESP_CRYPT_ALGOS, _UNSUPPORTED_CIPHERS)
        auth: EspAuth = _pick("integrity algorithm", auth_algo, ESP_AUTH_ALGOS, _UNSUPPORTED_AUTHS)
        crypt_key = bytes(crypt_key or b"")
        if len(crypt_key) not in cipher.key_sizes:
            sizes = ", ".join(str(n) for n in cipher.key_sizes)
            raise ValueError(f"{crypt_algo} key of {len(crypt_key)} bytes; valid: {sizes} bytes")
        digest = digest_size(auth.algorithm)
        icv = auth.icv_size if icv_size is None else icv_size
        if icv % 4 or not 4 <= icv <= digest:
            raise ValueError(
                f"{auth_algo} ICV of {icv} bytes; valid: a multiple of 4 from 4 to {digest}"
            )
        key_len = len(crypt_key) - cipher.nonce_size
        key, nonce = crypt_key[:key_len], crypt_key[key_len:]
        inner, outer = hmac_precompute(auth.algorithm, bytes(auth_key))
        outbound = direction == "out"
        return cls(
            # sa_cmd0 (eip93.md 4.1)
            save_iv=1,  # left over from the basic-mode defaults (not ECB)
            hash_source=0,
            iv_source=3 if outbound else 1,  # PRNG / from the packet
            digest_length=icv // 4,
            hdr_proc=1,
            ext_pad=0,
            scpad=1,
            hash=auth.hash,
            cipher=cipher.cipher,
            pad_type=0,
            opgroup=1,
            direction=0 if outbound else 1,
            opcode=0,
            # sa_cmd1
            en_seqnum_chk=1,
            aes_key_length=key_len >> 3 if cipher.cipher == 3 else 0,
            hmac=1,
            cipher_mode=cipher.cipher_mode,
            copy_header=0 if outbound else 1,
            copy_digest=1 if outbound else 0,
            # the rest of the record
            sa_key=key.ljust(32, b"\x00"),
            sa_i_digest=state_to_record_bytes(auth.algorithm, inner),
            sa_o_digest=state_to_record_bytes(auth.algorithm, outer),
            sa_spi=spi,
            sa_seqnum_0=0,
            sa_seqnum_1=0,
            sa_seqnum_mask_0=seqnum_mask[0],
            sa_seqnum_mask_1=seqnum_mask[1],
            sa_nonce=nonce.ljust(4, b"\x00"),
        )

    @property
    def sa_cmd0(self) -> int:
        """``sa_cmd0`` as a number."""
        return int.from_bytes(bytes(self)[0:4], "little")

    @property
    def sa_cmd1(self) -> int:
        """``sa_cmd1`` as a number."""
        return int.from_bytes(bytes(self)[4:8], "little")


class EIP93StateRecord(EIP93Words):
    """EIP-93 state record: dynamic IV and hash state, pointed to by ``state_addr``.

    Layout (eip93.md 3.4)::

        0x00 +-------------------------------------------------+
             | state_iv[16]        raw IV / counter block      |
        0x10 +------------------------+------------------------+
             | state_byte_cnt_0 u32 LE| state_byte_cnt_1 u32 LE|  bytes hashed, lo/hi
        0x18 +------------------------+------------------------+
             | state_i_digest[32]  hash-state words, u32 LE    |
        0x38 +-------------------------------------------------+
    """

    name = "EIP-93 state record"
    fields_desc = [
        XStrFixedLenField("state_iv", b"\x00" * 16, 16),
        LEIntField("state_byte_cnt_0", 0),
        LEIntField("state_byte_cnt_1", 0),
        XStrFixedLenField("state_i_digest", b"\x00" * 32, 32),
    ]


conf.l2types.register(DLT_EIP93_SA_RECORD, EIP93SARecord)
conf.l2types.register(DLT_EIP93_STATE_RECORD, EIP93StateRecord)
