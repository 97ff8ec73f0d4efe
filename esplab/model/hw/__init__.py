"""The hardware: the EIP-93 packet engine as the SoC exposes it (registers, DMA memory,
descriptor rings and the work of its processing core). Imports only the stage types
(:mod:`esplab.model.stage`) and the Scapy layers."""
