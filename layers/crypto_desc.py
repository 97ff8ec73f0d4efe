"""EIP-93 command and result descriptors (8 little-endian u32 words, 32 bytes).

Format: ``struct eip93_descriptor`` of the Linux driver
(drivers/crypto/inside-secure/eip93/eip93-regs.h) and ``eip93_descriptor_s`` of the
vschagen/mtk-eip93 ESP offload, as restated in eip93.md sections 1.3, 1.5 and 2.
The host writes command descriptors into the CDR; the engine writes a result
descriptor with the same layout into the RDR slot of the same index. Every word is
a u32 stored little-endian; bit fields are numbered from the word's LSB.
"""

from __future__ import annotations

from typing import Any

from scapy.config import conf
from scapy.fields import (
    BitEnumField,
    BitField,
    Field,
    XBitField,
    XLEIntField,
)
from scapy.packet import Packet

from esplab.layers._fixed import TruncatablePacket
from esplab.layers.linktypes import DLT_EIP93_CMD_DESC, DLT_EIP93_RES_DESC

__all__ = [
    "DESCRIPTOR_SIZE",
    "EXT_ERR_NAMES",
    "HOST_READY",
    "PAD_CTRL_NAMES",
    "PE_READY",
    "PRNG_MODE_NAMES",
    "READY_EMPTY",
    "READY_NAMES",
    "STATUS_FLAG_NAMES",
    "EIP93CommandDescriptor",
    "EIP93ResultDescriptor",
    "EIP93Words",
]

DESCRIPTOR_SIZE = 32  # 8 x u32 (eip93.md 1.3)

# Ownership in word 0 bits 1:0 and word 7 bits 23:22 (eip93.md 1.5, 2.1, 2.3).
READY_EMPTY = 0
HOST_READY = 1
PE_READY = 2
READY_NAMES = {READY_EMPTY: "EMPTY", HOST_READY: "HOST_READY", PE_READY: "PE_READY"}

# Result word 0 bits 23:20 when EXT_ERR (bit 19) is set (eip93.md 2.2, L-regs names).
EXT_ERR_NAMES = {
    0: "BUS",
    1: "DESC_OWNER",
    2: "INVALID_CRYPTO_OP",
    3: "INVALID_CRYPTO_ALGO",
    4: "SPI",
    5: "ZERO_LENGTH",
    6: "INVALID_PK_LENGTH",
    7: "BLOCK_SIZE_ERR",
    8: "PROCESSING",
}

# Result word 0 bits 16..19, LSB first (eip93.md 2.2), with their field names.
STATUS_FLAG_NAMES = {
    "auth_err": "AUTH_ERR",
    "pad_err": "PAD_ERR",
    "seqnum_err": "SEQNUM_ERR",
    "ext_err": "EXT_ERR",
}

# Command word 0 bits 31:24, a one-hot tail-alignment boundary. Mapping from the
# MediaTek SDK (eip93.md 2.1); that 0x01 means 1 byte rather than 2 is [U] (8.3).
PAD_CTRL_NAMES = {
    0x00: "NONE",
    0x01: "ALIGN_1",
    0x02: "ALIGN_4",
    0x04: "ALIGN_8",
    0x08: "ALIGN_16",
    0x10: "ALIGN_32",
    0x20: "ALIGN_64",
    0x40: "ALIGN_128",
    0x80: "ALIGN_256",
}

# Command word 0 bits 7:6. 1 and 2 are what the vschagen PRNG job writes; their
# semantics are [U] (eip93.md 2.1, 8.10).
PRNG_MODE_NAMES = {0: "NORMAL", 1: "INIT", 2: "GENERATE"}


class EIP93Words(TruncatablePacket):
    """Base for the EIP-93's in-memory structures, which are arrays of u32 words.

    A truncated record dissects cleanly (see :class:`TruncatablePacket`): the words
    it fully contains are set, the rest keep their defaults, and the leftover bytes
    become the payload (``Raw``); ``raw()`` of such a packet is still the input.
    """


def _control_low(ready: int) -> list[Field[Any, Any]]:
    """Word 0 bits 15:0, alike in a command and its result: pad value, PRNG mode, the
    control bits and the ownership field (eip93.md 2.1, 2.2)."""
    return [
        BitField("pad_value", 0, 8),
        BitEnumField("prng_mode", 0, 2, PRNG_MODE_NAMES),
        BitField("halt_mode", 0, 1),
        BitField("hash_final", 0, 1),
        BitField("init_arc4", 0, 1),
        BitField("reserved_ctrl_2", 0, 1),
        BitEnumField("ready", ready, 2, READY_NAMES, end_tot_size=-4),
    ]


def _echoed_words() -> list[Field[Any, Any]]:
    """Words 1-6: bus addresses and the opaque cookie (eip93.md 2)."""
    return [
        XLEIntField("src_addr", 0),
        XLEIntField("dst_addr", 0),
        XLEIntField("sa_addr", 0),
        XLEIntField("state_addr", 0),
        XLEIntField("arc4_addr", 0),
        XLEIntField("user_id", 0),
    ]


def _length_word(ready: int) -> list[Field[Any, Any]]:
    """Word 7, ``pe_length`` (eip93.md 2.3)."""
    return [
        BitField("bypass", 0, 8, tot_size=-4),
        BitEnumField("length_ready", ready, 2, READY_NAMES),
        BitField("reserved_len_21_20", 0, 2),
        BitField("length", 0, 20, end_tot_size=-4),
    ]


class EIP93CommandDescriptor(EIP93Words):
    """EIP-93 command descriptor: what the host writes into a CDR slot.

    Word 0, ``pe_ctrl_stat`` as a control word (eip93.md 2.1)::

        31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 16
        +-----------------------+-----------------------+
        |     pad_ctrl_stat     |         status        |
        +-----------------------+-----------------------+

        15 14 13 12 11 10  9  8  7  6  5  4  3  2  1  0
        +-----------------------+-----+--+--+--+--+-----+
        |       pad_value       | prng|hm|hf|ia|r |ready|
        +-----------------------+-----+--+--+--+--+-----+

        prng = prng_mode, hm = halt_mode, hf = hash_final, ia = init_arc4,
        r = reserved_ctrl_2, ready = 1 (HOST_READY).
        pad_value carries the ESP next header on outbound.

    Words 1-6 (u32 LE each)::

        0x04 src_addr   0x08 dst_addr   0x0C sa_addr
        0x10 state_addr 0x14 arc4_addr  0x18 user_id

    Word 7, ``pe_length`` (eip93.md 2.3)::

        31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 16
        +-----------------------+-----+-----+-----------+
        |         bypass        | lrdy|  r  |   length  |
        +-----------------------+-----+-----+-----------+

        15 14 13 12 11 10  9  8  7  6  5  4  3  2  1  0
        +-----------------------------------------------+
        |                     length                    |
        +-----------------------------------------------+

        lrdy = length_ready (1 HOST_READY), r = reserved_len_21_20.
        bypass counts 32-bit words copied through unprocessed.

    Example, ESP outbound in tunnel mode (eip93.md 2.4): word 0 0x02000411 is
    ``pad_ctrl_stat=2, pad_value=4, hash_final=1, ready=1``.
    """

    name = "EIP-93 command descriptor"
    fields_desc = [
        BitEnumField("pad_ctrl_stat", 0, 8, PAD_CTRL_NAMES, tot_size=-4),
        XBitField("status", 0, 8),
        *_control_low(HOST_READY),
        *_echoed_words(),
        *_length_word(HOST_READY),
    ]


class _ExtCodeField(BitEnumField):
    """``ext_err_code``: a code only while ``ext_err`` is set (eip93.md 2.2); otherwise it
    shows as a number, so that a successful result never reads as a bus error."""

    def i2repr(self, pkt: Packet | None, x: Any) -> Any:
        if pkt is not None and not pkt.getfieldval("ext_err"):
            return f"{x} (ext_err clear)"
        return super().i2repr(pkt, x)


class EIP93ResultDescriptor(EIP93Words):
    """EIP-93 result descriptor: what the engine writes into an RDR slot.

    Word 0, ``pe_ctrl_stat`` as a status word (eip93.md 2.2)::

        31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 16
        +-----------------------+-----------+--+--+--+--+
        |     pad_ctrl_stat     |  ext_code |EX|SQ|PD|AU|
        +-----------------------+-----------+--+--+--+--+

        15 14 13 12 11 10  9  8  7  6  5  4  3  2  1  0
        +-----------------------+-----+--+--+--+--+-----+
        |       pad_value       | prng|hm|hf|ia|r |ready|
        +-----------------------+-----+--+--+--+--+-----+

        ext_code = ext_err_code (EXT_ERR_NAMES), EX = ext_err, SQ = seqnum_err,
        PD = pad_err, AU = auth_err; ready = 2 (PE_READY); the low byte is as in
        the command. pad_value is the next header recovered on ESP inbound;
        pad_ctrl_stat is the pad byte count per the vendor API, read by no
        driver [U].

    Words 1-6 are echoed from the command [D]; word 7 has the command's layout,
    with ``length`` the number of bytes written to ``dst_addr`` and
    ``length_ready`` = 2 (PE_READY).
    """

    name = "EIP-93 result descriptor"
    fields_desc = [
        BitField("pad_ctrl_stat", 0, 8, tot_size=-4),
        _ExtCodeField("ext_err_code", 0, 4, EXT_ERR_NAMES),
        BitField("ext_err", 0, 1),
        BitField("seqnum_err", 0, 1),
        BitField("pad_err", 0, 1),
        BitField("auth_err", 0, 1),
        *_control_low(PE_READY),
        *_echoed_words(),
        *_length_word(PE_READY),
    ]

    @property
    def status_byte(self) -> int:
        """Word 0 bits 23:16 as one number, as the vschagen driver compares it."""
        value = int(self.ext_err_code) << 4
        for bit, field in enumerate(STATUS_FLAG_NAMES):
            value |= (int(self.getfieldval(field)) & 1) << bit
        return value

    def errors(self) -> list[str]:
        """Names of the error flags set, then the extended code's name if EXT_ERR.

        For example ``["AUTH_ERR"]`` or ``["EXT_ERR", "ZERO_LENGTH"]``; an empty list
        means success. A code without a name appears as ``EXT_CODE_<n>``.
        """
        names = [flag for field, flag in STATUS_FLAG_NAMES.items() if self.getfieldval(field)]
        if self.ext_err:
            code = int(self.ext_err_code)
            names.append(EXT_ERR_NAMES.get(code, f"EXT_CODE_{code}"))
        return names

    @classmethod
    def from_command(cls, command: EIP93CommandDescriptor, **fields: Any) -> EIP93ResultDescriptor:
        """The result the engine writes for ``command`` before status and length.

        Words 1-6 and the control bits the engine preserves (``hash_final`` and the
        other low bits, ``bypass``) are copied (eip93.md 1.5 step 3, 7.10); both
        ready fields become PE_READY. ``fields`` then override anything, e.g.
        ``length=132`` or ``auth_err=1``.
        """
        copied = (
            "prng_mode",
            "halt_mode",
            "hash_final",
            "init_arc4",
            "reserved_ctrl_2",
            "src_addr",
            "dst_addr",
            "sa_addr",
            "state_addr",
            "arc4_addr",
            "user_id",
            "bypass",
        )
        values: dict[str, Any] = {key: command.getfieldval(key) for key in copied}
        values.update(ready=PE_READY, length_ready=PE_READY)
        values.update(fields)
        return cls(**values)


conf.l2types.register(DLT_EIP93_CMD_DESC, EIP93CommandDescriptor)
conf.l2types.register(DLT_EIP93_RES_DESC, EIP93ResultDescriptor)
