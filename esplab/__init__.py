"""esplab: an interactive Scapy lab for IPsec ESP hardware offload.

Kept deliberately light: ``from esplab.layers import *`` in a plain Scapy session
must not pull in the REPL, the device model or rich.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
