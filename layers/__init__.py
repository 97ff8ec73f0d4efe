"""Bit-exact Scapy layers for IPsec ESP offload on Airoha EN7581 / EIP-93.

Usable on their own in a plain Scapy session::

    >>> from esplab.layers import *
    >>> EIP93SARecord(bytes.fromhex(...)).show()

This package imports only the Scapy modules it needs (never ``scapy.all``) and
nothing else from esplab.
"""

from __future__ import annotations

from esplab.layers.crypto_desc import (
    EIP93CommandDescriptor,
    EIP93ResultDescriptor,
)
from esplab.layers.dsa import MTKEther, MTKEtherRx
from esplab.layers.esp_offload import ESPTrailer, XfrmOffload
from esplab.layers.qdma import QDMADescriptor, QDMARxDescriptor
from esplab.layers.sa_record import EIP93SARecord, EIP93StateRecord
from esplab.layers.xdp import XDPDesc

__all__ = [
    "LAYERS",
    "EIP93CommandDescriptor",
    "EIP93ResultDescriptor",
    "EIP93SARecord",
    "EIP93StateRecord",
    "ESPTrailer",
    "MTKEther",
    "MTKEtherRx",
    "QDMADescriptor",
    "QDMARxDescriptor",
    "XDPDesc",
    "XfrmOffload",
]

# Every esplab layer by class name: what `decode LAYER HEX` accepts.
LAYERS = {
    cls.__name__: cls
    for cls in (
        EIP93CommandDescriptor,
        EIP93ResultDescriptor,
        EIP93SARecord,
        EIP93StateRecord,
        MTKEther,
        MTKEtherRx,
        QDMADescriptor,
        QDMARxDescriptor,
        ESPTrailer,
        XfrmOffload,
        XDPDesc,
    )
}
