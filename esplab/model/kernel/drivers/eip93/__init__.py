"""The EIP-93 packet engine of the EN7581 and its Linux driver, emulated from the bytes up.

``new_eip93(seed)`` gives a probed :class:`EIP93Driver` whose ``device`` is the
engine with its registers, rings and DMA memory. Layout:

* ``memory``: sparse DMA memory with 32-bit bus addresses (bus faults);
* ``regs``: register offsets, fixed values and field decoders (eip93.md 6.1);
* ``device``: register semantics and the CDR/RDR ring protocol (eip93.md 1.5, 7);
* ``core``: one descriptor from memory to memory, as journey stages;
* ``params``, ``algos``: SA record decoding, ciphers and the hash unit;
* ``basic``, ``espmode``: basic mode (opgroup 0) and ESP protocol mode (opgroup 1);
* ``rings``: the driver's probe and ring protocol (submit, poll, pause, resume);
* ``driver``, ``xmit``, ``aead``: SAs and flushes, the crypto/packet offload datapaths
  and basic-mode ``authenc`` for ``sw+aead``; ``iphead``: the IP headers around ESP;
* ``choices``: every behaviour the sources leave open, labelled for ``explain``.
"""

from __future__ import annotations

from esplab.model.hw.eip93.choices import CHOICES, Choice, DriverSettings, explain
from esplab.model.hw.eip93.device import EIP93Device
from esplab.model.hw.eip93.memory import BusFault, DmaMemory
from esplab.model.kernel.drivers.eip93.driver import EIP93Driver
from esplab.model.kernel.drivers.eip93.outcome import AeadTfm, OffloadedSA, Outcome, StateAdd

__all__ = [
    "CHOICES",
    "AeadTfm",
    "BusFault",
    "Choice",
    "DmaMemory",
    "DriverSettings",
    "EIP93Device",
    "EIP93Driver",
    "OffloadedSA",
    "Outcome",
    "StateAdd",
    "explain",
    "new_eip93",
]


def new_eip93(
    seed: int, *, settings: DriverSettings | None = None, node: str = "ap"
) -> EIP93Driver:
    """A probed EIP-93 driver with its device; IVs come from ``seed`` (deterministic)."""
    device = EIP93Device(seed=seed, node=node)
    driver = EIP93Driver(device, settings, seed=seed)
    driver.probe()
    return driver
