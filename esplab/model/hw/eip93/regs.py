"""EIP-93 register offsets, fixed values and field decoders (eip93.md 6.1).

Only what a driver touches is modelled; :mod:`esplab.model.hw.eip93.device` gives the
registers their behaviour. Offsets are from the EIP-93 base (0x1FB70000 on the
EN7581, eip93.md 1.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

__all__ = [
    "BUF_THRESH",
    "CDR_BASE",
    "CD_COUNT",
    "CLOCK_CTRL",
    "CONFIG_EN_CDR_UPDATE",
    "CONFIG_MODE_ARM",
    "CONFIG_RESET_PE",
    "CONFIG_RESET_RING_BITS",
    "CONFIG_SWAP_BITS",
    "DMA_CONFIG",
    "ENDIAN_CONFIG",
    "ENDIAN_CONFIG_AIROHA",
    "INT_BITS",
    "INT_CFG",
    "INT_CLR",
    "INT_MASK",
    "INT_MASK_STAT",
    "INT_OPERATION_DONE",
    "INT_RDR_THRESH",
    "INT_UNMASK_STAT",
    "MASK_DISABLE",
    "MASK_ENABLE",
    "OPTION_0",
    "OPTION_0_VALUE",
    "OPTION_1",
    "OPTION_1_VALUE",
    "PE_CONFIG",
    "PE_STATUS",
    "RDR_BASE",
    "RD_COUNT",
    "READ_ONLY",
    "REGISTERS",
    "REVISION",
    "REVISION_VALUE",
    "RING_CONFIG",
    "RING_RW_PNTR",
    "RING_THRESH",
    "WRITE_ONLY",
    "decode",
    "reg_name",
]

# --- offsets (eip93.md 6.1) ----------------------------------------------------

CDR_BASE = 0x080
RDR_BASE = 0x084
RING_CONFIG = 0x088
RING_THRESH = 0x08C
CD_COUNT = 0x090
RD_COUNT = 0x094
RING_RW_PNTR = 0x098
PE_CONFIG = 0x100
PE_STATUS = 0x104
BUF_THRESH = 0x10C
INBUF_COUNT = 0x110
OUTBUF_COUNT = 0x114
BUF_RW_PNTR = 0x118
DMA_CONFIG = 0x120
ENDIAN_CONFIG = 0x1CC
ENDIAN_CONFIG_AIROHA = 0x1D0
CLOCK_CTRL = 0x1E8
OPTION_1 = 0x1F4
OPTION_0 = 0x1F8
REVISION = 0x1FC
INT_UNMASK_STAT = 0x200
INT_MASK_STAT = 0x204  # read: masked status
INT_CLR = 0x204  # write: acknowledge (1s clear)
INT_MASK = 0x208
INT_CFG = 0x20C
MASK_ENABLE = 0x210
MASK_DISABLE = 0x214

#: Offset -> name, in address order. 0x204 is INT_MASK_STAT to a read, INT_CLR to a write.
REGISTERS: Mapping[int, str] = MappingProxyType(
    {
        0x000: "PE_CTRL_STAT",
        0x004: "PE_SOURCE_ADDR",
        0x008: "PE_DEST_ADDR",
        0x00C: "PE_SA_ADDR",
        0x010: "PE_STATE_ADDR",
        0x018: "PE_USER_ID",
        0x01C: "PE_LENGTH",
        CDR_BASE: "PE_CDR_BASE",
        RDR_BASE: "PE_RDR_BASE",
        RING_CONFIG: "PE_RING_CONFIG",
        RING_THRESH: "PE_RING_THRESH",
        CD_COUNT: "PE_CD_COUNT",
        RD_COUNT: "PE_RD_COUNT",
        RING_RW_PNTR: "PE_RING_RW_PNTR",
        PE_CONFIG: "PE_CONFIG",
        PE_STATUS: "PE_STATUS",
        BUF_THRESH: "PE_BUF_THRESH",
        INBUF_COUNT: "PE_INBUF_COUNT",
        OUTBUF_COUNT: "PE_OUTBUF_COUNT",
        BUF_RW_PNTR: "PE_BUF_RW_PNTR",
        DMA_CONFIG: "PE_DMA_CONFIG",
        ENDIAN_CONFIG: "PE_ENDIAN_CONFIG",
        ENDIAN_CONFIG_AIROHA: "PE_ENDIAN_CONFIG_AIROHA",
        CLOCK_CTRL: "PE_CLOCK_CTRL",
        OPTION_1: "PE_OPTION_1",
        OPTION_0: "PE_OPTION_0",
        REVISION: "PE_REVISION",
        INT_UNMASK_STAT: "INT_UNMASK_STAT",
        INT_MASK_STAT: "INT_MASK_STAT",
        INT_MASK: "INT_MASK",
        INT_CFG: "INT_CFG",
        MASK_ENABLE: "MASK_ENABLE",
        MASK_DISABLE: "MASK_DISABLE",
    }
)

READ_ONLY = frozenset(
    {
        RING_RW_PNTR,
        PE_STATUS,
        INBUF_COUNT,
        OUTBUF_COUNT,
        BUF_RW_PNTR,
        OPTION_1,
        OPTION_0,
        REVISION,
        INT_UNMASK_STAT,
    }
)
WRITE_ONLY = frozenset({MASK_ENABLE, MASK_DISABLE})

# --- fixed values read on a real EN7581 (eip93.md 1.1, OWRT-20130) ---------------

OPTION_0_VALUE = 0x41710041  # ESP (16) set, ESN (15) clear, bit 30 unknown
OPTION_1_VALUE = 0x000FE007  # DES/ARC4/AES, AES-128/192/256, MD5/SHA-1/SHA-224/SHA-256
# 7:0 EIP number 0x5D, 15:8 its complement (VND), 19:16 patch 1, 23:20 minor 0, 27:24 major 3.
REVISION_VALUE = 0x5D | (0x5D ^ 0xFF) << 8 | 1 << 16 | 0 << 20 | 3 << 24

# --- PE_CONFIG bits (eip93.md 6.1) ------------------------------------------------

CONFIG_RESET_PE = 1 << 0
#: Reset ring: bit 1 per VND/vschagen, bit 2 per mainline; both accepted [U] reset-ring-bit.
CONFIG_RESET_RING_BITS = (1 << 1) | (1 << 2)
CONFIG_MODE_ARM = 3  # bits 9:8: autonomous ring mode
CONFIG_EN_CDR_UPDATE = 1 << 10
#: Swap CD/RD (16), SA (17), data (18), target data (20): drivers leave them 0.
CONFIG_SWAP_BITS = {16: "swap CD/RD", 17: "swap SA", 18: "swap data", 20: "swap target data"}

# --- interrupt bits (newer revisions, eip93.md 6.1) -------------------------------

INT_RDR_THRESH = 1 << 1
INT_OPERATION_DONE = 1 << 9
INT_BITS = {
    0: "CDR_THRESH",
    1: "RDR_THRESH",
    9: "OPERATION_DONE",
    10: "INBUF_THRESH",
    11: "OUTBUF_THRESH",
    15: "HALT",
    16: "PE_RING_ERR",
    17: "PROCESSING_ERR",
    18: "INTERFACE_ERR",
}

_OPTION_1_BITS = {
    0: "DES/3DES",
    1: "ARC4",
    2: "AES",
    13: "AES-128",
    14: "AES-192",
    15: "AES-256",
    16: "MD5",
    17: "SHA-1",
    18: "SHA-224",
    19: "SHA-256",
    23: "AES-XCBC",
    28: "AES-CBC-MAC",
    29: "MAC-128",
    30: "MAC-192",
    31: "MAC-256",
}
_OPTION_0_BITS = {
    6: "PRNG",
    15: "ESN",
    16: "ESP",
    17: "AH",
    20: "SSL",
    21: "TLS",
    22: "DTLS",
    24: "SRTP",
    25: "MACsec",
}
_CLOCK_BITS = {0: "PE", 1: "DES", 2: "AES", 3: "ARC4", 4: "HASH"}
_MODES = {
    0: "direct host",
    1: "target command with RDR",
    2: "target command without RDR",
    3: "autonomous ring",
}


def reg_name(offset: int, *, write: bool = False) -> str:
    """The register's name (``PE_CD_COUNT``), or ``reg 0x...`` for an unnamed offset."""
    if write and offset == INT_CLR:
        return "INT_CLR"
    return REGISTERS.get(offset, f"reg {offset:#05x}")


def _bits(value: int, names: Mapping[int, str]) -> str:
    return ", ".join(name for bit, name in names.items() if value >> bit & 1) or "none"


def _pe_config(v: int) -> str:
    parts = [f"mode {v >> 8 & 3} ({_MODES[v >> 8 & 3]})"]
    if v & CONFIG_EN_CDR_UPDATE:
        parts.append("CDR update")
    if v & CONFIG_RESET_PE:
        parts.append("reset PE")
    if v & CONFIG_RESET_RING_BITS:
        parts.append("reset ring")
    parts += [name for bit, name in CONFIG_SWAP_BITS.items() if v >> bit & 1]
    return ", ".join(parts)


def _ring_thresh(v: int) -> str:
    text = f"CDR thresh {v & 0x3FF}, RDR thresh {v >> 16 & 0x3FF}, RD timeout {v >> 26 & 0xF}"
    return text + (", timeout on" if v >> 31 else "")


def _revision(v: int) -> str:
    return (
        f"EIP {v & 0xFF} (complement {v >> 8 & 0xFF:#04x}), "
        f"v{v >> 24 & 0xF}.{v >> 20 & 0xF}.{v >> 16 & 0xF}"
    )


_DECODERS: dict[int, Callable[[int], str]] = {
    CDR_BASE: lambda v: f"CDR at {v:#010x}",
    RDR_BASE: lambda v: f"RDR at {v:#010x}",
    RING_CONFIG: lambda v: (
        f"{(v & 0x3FF) + 1} entries, spacing {v >> 16 & 0xFF} words"
        + (", external trigger" if v >> 31 else "")
    ),
    RING_THRESH: _ring_thresh,
    CD_COUNT: lambda v: f"{v & 0x7FF} commands pending",
    RD_COUNT: lambda v: f"{v & 0x7FF} results ready",
    RING_RW_PNTR: lambda v: f"next CDR {v & 0x3FF}, next RDR {v >> 16 & 0x3FF}",
    PE_CONFIG: _pe_config,
    BUF_THRESH: lambda v: f"in {v & 0xFF}, out {v >> 16 & 0xFF}",
    CLOCK_CTRL: lambda v: _bits(v, _CLOCK_BITS),
    OPTION_1: lambda v: _bits(v, _OPTION_1_BITS),
    OPTION_0: lambda v: f"{_bits(v, _OPTION_0_BITS)}; interface type {v & 7}",
    REVISION: _revision,
    INT_UNMASK_STAT: lambda v: _bits(v, INT_BITS),
    INT_MASK_STAT: lambda v: _bits(v, INT_BITS),
    INT_MASK: lambda v: "enabled: " + _bits(v, INT_BITS),
    INT_CFG: lambda v: ("pulse" if v & 1 else "level") + (", auto-clear" if v & 2 else ""),
}


def decode(offset: int, value: int) -> str:
    """The register's fields in words (empty for plain values)."""
    decoder = _DECODERS.get(offset)
    return decoder(value) if decoder else ""
