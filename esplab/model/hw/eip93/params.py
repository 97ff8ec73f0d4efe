"""An SA record as the engine reads it: decoded, checked and keyed once per record.

The engine decodes ``sa_cmd0``/``sa_cmd1`` (eip93.md 3.2, 3.3) into :class:`SAParams`
with plain bit operations, checks that it can run what they ask for, and keys the
cipher and the hash unit. The result is cached by the record's static bytes
(everything but the sequence number and replay window, which change per packet),
so a record that changes in memory is decoded again.

Also here: the result-status bits and extended error codes (eip93.md 2.2) and
:class:`Job`, what a processing function hands back to the descriptor loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from esplab.layers.crypto_desc import EXT_ERR_NAMES
from esplab.layers.hashstate import initial_state, state_from_record_bytes
from esplab.layers.sa_record import CIPHER_NAMES, HASH_ALGORITHMS, HASH_NAMES, OPCODE_NAMES
from esplab.model.hw.eip93.algos import DIGEST_WORDS, BlockCipher, HashResume

__all__ = [
    "AUTH_ERR",
    "BLOCK_SIZE_ERR",
    "BUS",
    "DESC_OWNER",
    "EXT_CODES",
    "EXT_ERR",
    "INVALID_CRYPTO_ALGO",
    "INVALID_CRYPTO_OP",
    "INVALID_PK_LENGTH",
    "PAD_ERR",
    "PROCESSING",
    "SEQNUM_ERR",
    "SPI",
    "ZERO_LENGTH",
    "Job",
    "SAParams",
    "decode_sa",
    "ext_status",
    "fail",
    "status_names",
]

# Result word 0 bits 23:16 (eip93.md 2.2): four flags, then the ext code in 23:20.
AUTH_ERR = 1 << 0
PAD_ERR = 1 << 1
SEQNUM_ERR = 1 << 2
EXT_ERR = 1 << 3
EXT_CODES = {name: code for code, name in EXT_ERR_NAMES.items()}
BUS = EXT_CODES["BUS"]
DESC_OWNER = EXT_CODES["DESC_OWNER"]
INVALID_CRYPTO_OP = EXT_CODES["INVALID_CRYPTO_OP"]
INVALID_CRYPTO_ALGO = EXT_CODES["INVALID_CRYPTO_ALGO"]
SPI = EXT_CODES["SPI"]
ZERO_LENGTH = EXT_CODES["ZERO_LENGTH"]
INVALID_PK_LENGTH = EXT_CODES["INVALID_PK_LENGTH"]
BLOCK_SIZE_ERR = EXT_CODES["BLOCK_SIZE_ERR"]
PROCESSING = EXT_CODES["PROCESSING"]

_FLAG_NAMES = ((AUTH_ERR, "AUTH_ERR"), (PAD_ERR, "PAD_ERR"), (SEQNUM_ERR, "SEQNUM_ERR"))


def ext_status(code: int) -> int:
    """The status byte for an extended error: EXT_ERR plus the code in bits 7:4."""
    return EXT_ERR | code << 4


def status_names(status: int) -> list[str]:
    """Names of a status byte's errors, as ``EIP93ResultDescriptor.errors()`` gives them."""
    if not status:
        return []
    names = [name for bit, name in _FLAG_NAMES if status & bit]
    if status & EXT_ERR:
        names += ["EXT_ERR", EXT_ERR_NAMES.get(status >> 4, f"EXT_CODE_{status >> 4}")]
    return names


@dataclass(slots=True)
class Job:
    """What processing one descriptor produced, before the loop writes it to memory.

    ``status`` is result bits 23:16; ``out`` the bytes for ``dst_addr`` (their
    length is the result length); ``pad_value``/``pad_count`` are result bits 15:8
    and 31:24. ``sa_write`` is (offset in the SA record, bytes) to store back,
    ``state`` the new 56-byte state record. ``detail`` says what happened in words,
    naming the field at fault on an error (a ``str.format`` template when ``args`` is
    set, formatted only if someone reads it); ``choices`` are the [U]/[M] keys followed.
    """

    status: int = 0
    out: bytes = b""
    pad_value: int = 0
    pad_count: int = 0
    sa_write: tuple[int, bytes] | None = None
    state: bytes | None = None
    detail: str = ""
    choices: tuple[str, ...] = ()
    fidelity: str = "D"
    meta: dict[str, Any] = field(default_factory=dict)
    args: tuple[Any, ...] = ()

    @property
    def text(self) -> str:
        """``detail`` with its arguments filled in."""
        return self.detail.format(*self.args) if self.args else self.detail

    def __format__(self, spec: str) -> str:
        return self.text


def fail(code: int, detail: str, *choices: str) -> Job:
    """A job that ends with extended error ``code``."""
    return Job(status=ext_status(code), detail=detail, choices=choices, fidelity="U")


@dataclass(slots=True)
class SAParams:
    """``sa_cmd0``/``sa_cmd1`` and the static fields of one SA record, decoded."""

    # sa_cmd0 (eip93.md 3.2)
    opcode: int
    direction: int
    opgroup: int
    pad_type: int
    cipher: int
    hash: int
    scpad: int
    hdr_proc: int
    digest_length: int
    iv_source: int
    hash_source: int
    save_iv: int
    save_hash: int
    # sa_cmd1 (eip93.md 3.3)
    copy_digest: int
    copy_header: int
    copy_pad: int
    cipher_mode: int
    hmac: int
    byte_offset: int
    hash_crypt_offset: int
    aes_key_length: int
    aes_dec_key: int
    en_seqnum_chk: int
    # static fields (eip93.md 3.1)
    key: bytes
    i_digest: bytes
    o_digest: bytes
    spi: int
    nonce: bytes
    # derived
    error: tuple[int, str] | None = None
    alg: str | None = None  # hashstate name, None for hash NULL
    icv_len: int = 0  # digest_length in bytes (0 means 3 words)
    block: int = 1  # cipher block size for lengths and padding (1: NULL and CTR)
    engine: BlockCipher | None = None
    i_state: tuple[int, ...] = ()
    o_state: tuple[int, ...] = ()
    inner: Any = None  # hashlib object in i_state after 64 bytes, if known
    outer: Any = None
    #: (inner, outer) when the HMAC runs from the SA's digests (hash_source 0, the hmac
    #: bit) and hashlib has both states; else None (``mac`` takes the general way).
    hmac_states: tuple[Any, Any] | None = None
    name: str = ""
    spi_bytes: bytes = b""  # sa_spi in wire order
    esp_iv: int = 0  # ESP IV bytes on the wire: the block for CBC, 8 for CTR, 0 for NULL (4.2)
    #: What the engine runs: 0 basic mode, 1 ESP outbound, 2 ESP inbound; -1 nothing (error).
    kind: int = -1
    #: ICV bytes read after the input: basic-mode hash-then-decrypt checks a tag (3.5).
    tag_len: int = 0

    @property
    def label(self) -> str:
        """e.g. ``ESP out AES-128-CBC HMAC-SHA1 ICV 12`` (decoded once per record)."""
        if not self.name:
            self.name = self._label()
        return self.name

    def __format__(self, spec: str) -> str:
        return self.label

    @property
    def fidelity(self) -> str:
        """Basic mode is confirmed by mainline; ESP mode is derived (eip93.md 3.5, 4)."""
        return "C" if self.opgroup == 0 else "D"

    def _label(self) -> str:
        group = {0: "basic", 1: "protocol", 2: "extended"}.get(self.opgroup, "reserved")
        op = OPCODE_NAMES.get((self.opgroup, self.direction), {}).get(self.opcode)
        text = f"{op or f'{group} opcode {self.opcode}'} {'in' if self.direction else 'out'}"
        cipher = CIPHER_NAMES.get(self.cipher, f"cipher {self.cipher}")
        if self.cipher == 3:
            cipher = f"AES-{self.aes_key_length * 64}"
        if self.cipher != 15:
            cipher += "-" + ("ECB", "CBC", "CTR", "ICM")[self.cipher_mode]
        digest = HASH_NAMES.get(self.hash, f"hash {self.hash}")
        if self.hash != 15:
            digest = ("HMAC-" if self.hmac else "") + digest + f" ICV {self.icv_len}"
        return f"{text} {cipher} {digest}"

    def hash_start(self, state: bytes | None) -> tuple[tuple[int, ...], int]:
        """Where the inner hash starts: (chaining words, bytes already hashed).

        ``hash_source`` 0: ``sa_i_digest`` after one 64-byte block (eip93.md 5.1);
        2: ``state_i_digest`` with ``state_byte_cnt``; 3: the standard initial value.
        """
        alg = self.alg
        assert alg is not None
        if self.hash_source == 0:
            return self.i_state, 64
        if self.hash_source == 3:
            return initial_state(alg), 0
        record = state if state is not None else bytes(56)  # [U] state-addr-zero
        count = int.from_bytes(record[0x10:0x18], "little")
        return state_from_record_bytes(alg, record[0x18:0x38]), count

    def mac(self, resume: HashResume, data: bytes, state: bytes | None = None) -> bytes:
        """The full digest of ``data``: HMAC from the SA's inner/outer states, or a hash
        from the inner start alone without the hmac bit (eip93.md 3.3, 5.1 step 5)."""
        alg = self.alg
        assert alg is not None
        if self.hash_source == 0 and self.inner is not None:
            h = self.inner.copy()
            h.update(data)
            inner = bytes(h.digest())
        else:
            words, count = self.hash_start(state)
            inner = resume.digest(alg, words, count, data)
        if not self.hmac:
            return inner
        if self.outer is not None:
            h = self.outer.copy()
            h.update(inner)
            return bytes(h.digest())
        return resume.digest(alg, self.o_state, 64, inner)


def _word(record: bytes, offset: int) -> int:
    return int.from_bytes(record[offset : offset + 4], "little")


def decode_sa(record: bytes, resume: HashResume) -> SAParams:
    """Decode and check one 128-byte SA record; key its cipher and hash unit.

    A record the engine cannot run comes back with ``error`` = (ext code, what is
    wrong, naming the field) [U] reserved-codes, not-modelled, digest-length. Reserved
    bits are not decoded at all [U] reserved-bits.
    """
    c0, c1 = _word(record, 0), _word(record, 4)
    p = SAParams(
        opcode=c0 & 7,
        direction=c0 >> 3 & 1,
        opgroup=c0 >> 4 & 3,
        pad_type=c0 >> 6 & 3,
        cipher=c0 >> 8 & 0xF,
        hash=c0 >> 12 & 0xF,
        scpad=c0 >> 17 & 1,
        hdr_proc=c0 >> 19 & 1,
        digest_length=c0 >> 20 & 0xF,
        iv_source=c0 >> 24 & 3,
        hash_source=c0 >> 26 & 3,
        save_iv=c0 >> 28 & 1,
        save_hash=c0 >> 29 & 1,
        copy_digest=c1 & 1,
        copy_header=c1 >> 1 & 1,
        copy_pad=c1 >> 3 & 1,
        cipher_mode=c1 >> 8 & 3,
        hmac=c1 >> 12 & 1,
        byte_offset=c1 >> 13 & 1,
        hash_crypt_offset=c1 >> 16 & 0xFF,
        aes_key_length=c1 >> 24 & 7,
        aes_dec_key=c1 >> 28 & 1,
        en_seqnum_chk=c1 >> 29 & 1,
        key=record[0x08:0x28],
        i_digest=record[0x28:0x48],
        o_digest=record[0x48:0x68],
        spi=_word(record, 0x68),
        nonce=record[0x7C:0x80],
    )
    p.spi_bytes = p.spi.to_bytes(4, "big")
    p.error = _check(p)
    if p.error is not None:
        return p
    p.kind = 1 + p.direction if p.opgroup == 1 else 0
    if p.cipher != 15:
        size = {0: 8, 1: 24, 3: p.aes_key_length * 8}[p.cipher]
        p.engine = BlockCipher(p.cipher, p.key[:size])
        p.block = 1 if p.cipher_mode == 2 else p.engine.block  # CTR is a stream: no blocks
        p.esp_iv = 8 if p.cipher_mode == 2 else p.engine.block
    if p.hash != 15:
        alg = p.alg = HASH_ALGORITHMS[p.hash]
        p.icv_len = 4 * (p.digest_length or 3)
        p.i_state = state_from_record_bytes(alg, p.i_digest)
        p.o_state = state_from_record_bytes(alg, p.o_digest)
        p.inner = resume.resume(alg, p.i_state, 64)
        p.outer = resume.resume(alg, p.o_state, 64)
        if p.hash_source == 0 and p.hmac and p.inner is not None and p.outer is not None:
            p.hmac_states = (p.inner, p.outer)
        if p.opgroup == 0 and p.opcode == 1 and p.direction:
            p.tag_len = p.icv_len
    return p


def _check(p: SAParams) -> tuple[int, str] | None:
    """What the engine refuses in this record, first problem first."""
    if p.opgroup == 3:
        return INVALID_CRYPTO_OP, "sa_cmd0.opgroup = 3 is reserved; valid: 0 basic, 1 protocol"
    if p.opgroup == 2:
        return INVALID_CRYPTO_OP, "sa_cmd0.opgroup = 2 (extended: DTLS/SSL/TLS) is not modelled"
    names = OPCODE_NAMES[(p.opgroup, p.direction)]
    if p.opcode not in names:
        return INVALID_CRYPTO_OP, (
            f"sa_cmd0.opcode = {p.opcode} is reserved for opgroup {p.opgroup} "
            f"{'inbound' if p.direction else 'outbound'}; valid: "
            + ", ".join(f"{k} {v}" for k, v in names.items())
        )
    if (p.opgroup == 1 and p.opcode != 0) or (p.opgroup == 0 and p.opcode == 7):
        return INVALID_CRYPTO_OP, f"sa_cmd0.opcode = {p.opcode} ({names[p.opcode]}) is not modelled"
    if p.opgroup == 1 and not p.hdr_proc:
        return INVALID_CRYPTO_OP, "sa_cmd0.hdr_proc = 0 with ESP is not modelled; ESP sets 1"
    if p.cipher not in CIPHER_NAMES:
        return INVALID_CRYPTO_ALGO, (
            f"sa_cmd0.cipher = {p.cipher} is reserved; valid: 0 DES, 1 3DES, 3 AES, 15 NULL"
        )
    if p.cipher == 2:
        return INVALID_CRYPTO_ALGO, "sa_cmd0.cipher = 2 (ARC4) is not modelled"
    if p.hash not in HASH_NAMES:
        return INVALID_CRYPTO_ALGO, (
            f"sa_cmd0.hash = {p.hash} is reserved; valid: 0 MD5, 1 SHA1, 2 SHA224, 3 SHA256, "
            "15 NULL"
        )
    if p.hash_source == 1 and p.hash != 15:
        return INVALID_CRYPTO_OP, (
            "sa_cmd0.hash_source = 1 is undefined; valid: 0 SA, 2 state, 3 none"
        )
    if p.cipher == 3 and p.aes_key_length not in (2, 3, 4):
        return INVALID_CRYPTO_ALGO, (
            f"sa_cmd1.aes_key_length = {p.aes_key_length} is reserved; valid: 2 (128), 3 (192), "
            "4 (256)"
        )
    if p.cipher != 15:
        if p.cipher_mode == 3:
            return INVALID_CRYPTO_ALGO, "sa_cmd1.cipher_mode = 3 (ICM) is not modelled"
        if p.cipher_mode == 2 and p.cipher != 3:
            return INVALID_CRYPTO_ALGO, "sa_cmd1.cipher_mode = 2 (CTR) needs AES"
        if p.opgroup == 1 and p.cipher_mode == 0:
            return INVALID_CRYPTO_ALGO, "sa_cmd1.cipher_mode = 0 (ECB) cannot carry ESP"
        if p.aes_dec_key and p.cipher == 3:
            return INVALID_CRYPTO_ALGO, "sa_cmd1.aes_dec_key = 1 (key schedule) is not modelled"
    if p.hash != 15:
        words = DIGEST_WORDS[HASH_ALGORITHMS[p.hash]]
        if (p.digest_length or 3) > words:
            return INVALID_CRYPTO_ALGO, (
                f"sa_cmd0.digest_length = {p.digest_length} words exceeds "
                f"{HASH_NAMES[p.hash]}'s {words}"
            )
    return None
