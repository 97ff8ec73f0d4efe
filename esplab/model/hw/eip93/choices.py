"""Every behaviour of the EIP-93 model that no source settles, in one place.

The reference (``eip93.md``) tags facts [C] confirmed, [D] derived and [U] uncertain.
Where the model had to decide something the sources leave open ([U]) or had to
design something no hardware source describes ([M], e.g. packet offload on the
EN7581), the decision is written down here once, with a one-line explanation that
``explain`` shows. Engine and driver code name the key of the choice they follow
(in comments and in each journey stage's ``meta["choices"]``), so a stage can always
say which of its behaviours are choices.

Two choices are settings, because reasonable people could pick differently:
:class:`DriverSettings` holds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from esplab.citations import cite
from esplab.errors import NotFound

__all__ = ["CHOICES", "Choice", "DriverSettings", "choice", "explain"]


@dataclass(frozen=True)
class Choice:
    """One labelled decision: its key, tag, explanation and the question's source."""

    key: str
    tag: Literal["U", "M"]
    text: str
    ref: str

    def line(self) -> str:
        """The one line ``explain`` prints."""
        return f"{self.text} [{self.tag}] ({cite(self.ref)})"


_ALL = (
    # --- ESP outbound --------------------------------------------------------
    Choice(
        "iv-prng",
        "U",
        "the IV generator cannot be reproduced bit-exactly: IVs come from the session's "
        "seeded source, or from an IV the caller pins",
        "eip93.md 8.10",
    ),
    Choice(
        "esp-iv-source",
        "U",
        "outbound ESP with iv_source 2 loads state_iv; iv_source 0 or 1 gives an all-zero IV",
        "eip93.md 3.2, 4.1",
    ),
    Choice(
        "esp-seq-pre-increment",
        "U",
        "outbound ESP sends sa_seqnum + 1 and writes it back, so the first packet carries 1",
        "eip93.md 4.6, 8.4",
    ),
    Choice(
        "esp-seq-overflow",
        "U",
        "outbound ESP with sa_seqnum 0xffffffff sets SEQNUM_ERR, writes nothing and keeps "
        "the counter (no wrap without ESN)",
        "eip93.md 4.6, 8.4",
    ),
    Choice(
        "esn-ignored",
        "U",
        "sa_seqnum_1 (the ESN high word) is neither used nor updated: OPTION_0 has no ESN",
        "eip93.md 1.1, 3.1",
    ),
    Choice(
        "pad-boundary",
        "U",
        "ESP pads to max(cipher block, pad_ctrl_stat boundary); 0x01 means 1 byte, 0 means "
        "none, several bits set use the highest",
        "eip93.md 2.1, 8.3",
    ),
    Choice(
        "pad-types",
        "U",
        "pad_type 0 pads 1, 2, 3...; 1 (PKCS#7) and 2 (constant) repeat the pad length; "
        "3 pads with zeros; inbound checks the same rule",
        "eip93.md 3.2, 8.8",
    ),
    Choice(
        "result-pad-count",
        "U",
        "result bits 31:24 hold the pad bytes inserted or found; on outbound bits 15:8 echo "
        "the next header",
        "eip93.md 2.2, 8.6",
    ),
    Choice(
        "ctr-counter-block",
        "U",
        "ESP AES-CTR uses the RFC 3686 counter block sa_nonce || IV || 00000001",
        "eip93.md 4.3, 8.11",
    ),
    # --- ESP inbound ---------------------------------------------------------
    Choice(
        "spi-check",
        "U",
        "inbound ESP compares the packet's SPI with sa_spi; a mismatch is ext error SPI",
        "eip93.md 2.2, 8.7",
    ),
    Choice(
        "short-esp",
        "U",
        "an inbound ESP packet shorter than header, IV, trailer and ICV gets INVALID_PK_LENGTH",
        "eip93.md 2.2",
    ),
    Choice(
        "replay-window",
        "U",
        "sa_seqnum_0 is the highest authenticated number; bit i of sa_seqnum_mask_1:_0 "
        "marks highest - i, so the V-esp start 0xffffffff/0 marks 0 as seen",
        "eip93.md 4.6, 8.4",
    ),
    Choice(
        "replay-before-icv",
        "U",
        "the window is checked before the ICV; a replay sets SEQNUM_ERR but is still "
        "authenticated, decrypted and written like any packet (AUTH_ERR or PAD_ERR join "
        "SEQNUM_ERR), as drivers that ignore SEQNUM_ERR need; the window moves only for a "
        "packet that is no replay and whose ICV verifies",
        "eip93.md 2.2, 4.4, 4.6",
    ),
    Choice(
        "auth-error-alone",
        "U",
        "an ICV mismatch sets AUTH_ERR alone (with SEQNUM_ERR on a replay): nothing is "
        "decrypted or written and the pad is not checked",
        "eip93.md 7.9, 8",
    ),
    Choice(
        "pad-error-output",
        "U",
        "a bad pad sets PAD_ERR but the payload is still written, as the vschagen driver "
        "delivers such packets",
        "eip93.md 2.2, 4.4",
    ),
    Choice(
        "inbound-no-copy-header",
        "U",
        "inbound ESP with copy_header 0 writes the plaintext alone and reports its length",
        "eip93.md 8.1",
    ),
    # --- basic mode ----------------------------------------------------------
    Choice(
        "basic-tag-format",
        "U",
        "basic-mode output tags and hash results are hash-state words (SHA words "
        "byte-reversed); input tags are compared in wire order",
        "eip93.md 5.3, 8.9",
    ),
    Choice(
        "basic-iv-from-input",
        "U",
        "basic mode with iv_source 1 takes the IV from the first cipher block of the input "
        "and does not copy it to the output",
        "eip93.md 3.2",
    ),
    Choice(
        "hash-partial-blocks",
        "U",
        "a hash without hash_final must cover whole 64-byte blocks, else BLOCK_SIZE_ERR",
        "eip93.md 3.5",
    ),
    Choice("zero-length", "U", "a zero-length job gets ext error ZERO_LENGTH", "eip93.md 7.18"),
    Choice(
        "state-addr-zero",
        "U",
        "state_addr 0 means no state record: loads read zeros and saves are skipped",
        "eip93.md 8.5",
    ),
    Choice(
        "bypass",
        "U",
        "bypass words are copied from src to dst unchanged and count in both lengths",
        "eip93.md 2.3",
    ),
    # --- what the engine refuses ---------------------------------------------
    Choice(
        "reserved-codes",
        "U",
        "reserved cipher/hash codes and key lengths get INVALID_CRYPTO_ALGO; reserved "
        "opgroup, opcode and hash_source values get INVALID_CRYPTO_OP",
        "eip93.md 2.2, 3.2",
    ),
    Choice(
        "digest-length",
        "U",
        "digest_length 0 means 3 words; more words than the hash has gets INVALID_CRYPTO_ALGO",
        "eip93.md 3.2, 8.8",
    ),
    Choice(
        "reserved-bits",
        "U",
        "reserved bits of descriptors and SA records are ignored, like the don't-care bits "
        "of the vschagen descriptors",
        "eip93.md 2.4",
    ),
    Choice(
        "not-modelled",
        "M",
        "ARC4, ICM, aes_dec_key, the PRNG job, SSL/TLS/DTLS/SRTP and ESP without hdr_proc "
        "are not modelled: INVALID_CRYPTO_ALGO or INVALID_CRYPTO_OP",
        "eip93.md 1.2, 3.5",
    ),
    Choice(
        "desc-owner",
        "U",
        "a command without HOST_READY in both word 0 and word 7 gets DESC_OWNER and is consumed",
        "eip93.md 1.5, 2.2",
    ),
    # --- registers and rings -------------------------------------------------
    Choice(
        "reset-ring-bit",
        "U",
        "PE_CONFIG bit 1 (VND, vschagen) and bit 2 (mainline) both reset the rings",
        "eip93.md 6.1, 8.8",
    ),
    Choice(
        "rdr-interrupt",
        "U",
        "the RDR-threshold interrupt latches while more than RDR_THRESH results are ready "
        "(any, with the timeout on: the model has no clock); INT_CLR re-checks",
        "eip93.md 1.5, 7.15",
    ),
    Choice(
        "rdr-full-stall",
        "U",
        "the engine fetches no command while every RDR slot holds an unconsumed result",
        "eip93.md 1.5",
    ),
    Choice(
        "unmodelled-regs",
        "U",
        "PE_STATUS, the buffer counters and the PRNG registers read 0",
        "eip93.md 6.1, 8.14",
    ),
    # --- driver (the Linux side) ---------------------------------------------
    Choice(
        "crypto-tx-seq",
        "M",
        "crypto offload TX writes the kernel's sequence number - 1 into sa_seqnum before "
        "each packet, so the engine's pre-increment sends the kernel's number "
        "(setting crypto_tx_seq)",
        "airoha-dsa-xfrm.md 3.10; eip93.md 4.6",
    ),
    Choice(
        "esp-state-record",
        "M",
        "ESP descriptors carry state_addr 0 as in the vschagen driver "
        "(setting esp_state_record gives each SA a zeroed state record as MTK-SDK does)",
        "eip93.md 4.2, 4.7",
    ),
    Choice(
        "packet-offload",
        "M",
        "packet offload on the EN7581 is a modelled design: the engine keeps the sequence "
        "numbers and the replay window, the driver counts errors per SA",
        "DESIGN.md; airoha-dsa-xfrm.md 3.2",
    ),
    Choice(
        "rx-status-map",
        "M",
        "which engine errors count as malformed (PAD_ERR, INVALID_PK_LENGTH, "
        "BLOCK_SIZE_ERR, SPI -> CRYPTO_INVALID_PACKET_SYNTAX); others are generic failures, "
        "except SEQNUM_ERR on crypto offload, which the driver ignores as vschagen and "
        "mainline do: xfrm_input's own replay check decides",
        "airoha-dsa-xfrm.md 3.2, 3.9, 3.10; eip93.md 2.2, 4.6",
    ),
    Choice(
        "sw-aead-iv",
        "M",
        "sw+aead requests carry the IV in the associated data as seqiv passes it; the "
        "kernel's IV generator is replaced by the session's seeded source",
        "DESIGN.md; eip93.md 3.5",
    ),
    Choice(
        "dma-buffer",
        "M",
        "each ring slot owns one 16 KiB DMA buffer; a longer packet is refused with EMSGSIZE",
        "eip93.md 1.5",
    ),
)

CHOICES: Mapping[str, Choice] = MappingProxyType({c.key: c for c in _ALL})


def choice(key: str) -> Choice:
    """The choice named ``key``; NotFound lists the keys."""
    try:
        return CHOICES[key]
    except KeyError:
        raise NotFound(f"no EIP-93 model choice '{key}'", valid=list(CHOICES), value=key) from None


def explain(key: str) -> str:
    """The line ``explain`` shows for one choice."""
    return choice(key).line()


@dataclass
class DriverSettings:
    """Choices a lab may turn (see ``crypto-tx-seq`` and ``esp-state-record``).

    ``crypto_tx_seq``: ``"sync"`` puts the kernel's sequence number on the wire;
    ``"engine"`` leaves the engine's own counter in charge, as the vschagen driver does,
    so a dropped or re-ordered packet shows as a stale number. ``esp_state_record``
    gives every ESP SA a state record the engine writes its IV back to.
    ``ring_entries`` is the CDR/RDR size (mainline: 512). ``hmac_long_key``:
    ``"mainline"`` keys an HMAC key longer than 64 bytes as mainline's
    ``eip93_hmac_setkey`` does (the key's digest cut to ``ctx->authsize``), ``"fixed"``
    as RFC 2104 does (the whole digest): a labelled fix, not shipped code.
    """

    crypto_tx_seq: Literal["sync", "engine"] = "sync"
    esp_state_record: bool = False
    ring_entries: int = 512
    hmac_long_key: Literal["mainline", "fixed"] = "mainline"
