"""The Inside Secure EIP-93 of the EN7581, from the bytes up.

* ``memory``: sparse DMA memory with 32-bit bus addresses (bus faults);
* ``regs``: register offsets, fixed values and field decoders;
* ``device``: register semantics and the CDR/RDR ring protocol, the interrupt;
* ``core``: one command descriptor from memory to memory; ``jobstages``: its journey
  stages, built when read;
* ``params``, ``algos``: SA record decoding, the ciphers and the hash unit;
* ``basic``, ``espmode``: basic mode (opgroup 0) and ESP protocol mode (opgroup 1);
* ``choices``: every behaviour the sources leave open, labelled for ``explain``.

The Linux driver that programs it is :mod:`esplab.model.kernel.drivers.eip93`.
"""
