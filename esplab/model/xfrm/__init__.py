"""The XFRM SAD/SPD model and ``ip xfrm`` in iproute2's grammar.

Entry points: :func:`run_ip_xfrm` (one ``ip xfrm`` command on an
:class:`XfrmNode`), :func:`load_xfrm` (command lines and pasted ``ip xfrm``
output), and the :class:`OffloadDevice` protocol the device model implements.

The names below are imported when first used (PEP 562), so that importing one
module of the package (``esplab.model.xfrm.objects``, as ``esplab decode`` does)
does not load the ``ip xfrm`` grammar and tables.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

#: Public name -> the module of the package that defines it.
_HOMES = {
    "ALGORITHMS": "algos",
    "AlgoInfo": "algos",
    "XfrmAlgo": "algos",
    "IpResult": "ipxfrm",
    "run_ip_xfrm": "ipxfrm",
    "LoadReport": "loader",
    "load_xfrm": "loader",
    "Flow": "objects",
    "Selector": "objects",
    "XfrmOffload": "objects",
    "XfrmPolicy": "objects",
    "XfrmState": "objects",
    "XfrmTemplate": "objects",
    "DeviceResolver": "offload",
    "OffloadDevice": "offload",
    "OutputDecision": "tables",
    "XfrmNode": "tables",
    "XfrmSettings": "tables",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next lookup finds it directly
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
