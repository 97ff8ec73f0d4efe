"""The XFRM SAD/SPD model and ``ip xfrm`` in iproute2's grammar.

Entry points: :func:`run_ip_xfrm` (one ``ip xfrm`` command on an
:class:`XfrmNode`), :func:`load_xfrm` (command lines and pasted ``ip xfrm``
output), and the :class:`OffloadDevice` protocol the device model implements.
"""

from __future__ import annotations

from esplab.model.xfrm.algos import ALGORITHMS, AlgoInfo, XfrmAlgo
from esplab.model.xfrm.ipxfrm import IpResult, run_ip_xfrm
from esplab.model.xfrm.loader import LoadReport, load_xfrm
from esplab.model.xfrm.objects import (
    Flow,
    Selector,
    XfrmOffload,
    XfrmPolicy,
    XfrmState,
    XfrmTemplate,
)
from esplab.model.xfrm.offload import DeviceResolver, OffloadDevice
from esplab.model.xfrm.tables import OutputDecision, XfrmNode, XfrmSettings

__all__ = [
    "ALGORITHMS",
    "AlgoInfo",
    "DeviceResolver",
    "Flow",
    "IpResult",
    "LoadReport",
    "OffloadDevice",
    "OutputDecision",
    "Selector",
    "XfrmAlgo",
    "XfrmNode",
    "XfrmOffload",
    "XfrmPolicy",
    "XfrmSettings",
    "XfrmState",
    "XfrmTemplate",
    "load_xfrm",
    "run_ip_xfrm",
]
