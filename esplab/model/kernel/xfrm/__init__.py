"""XFRM as the kernel keeps it: states (SAD) and policies (SPD), their lookups, the
checks of ``xfrm_user.c``, the offload contract with devices and the XFRM MIB.

``tables.XfrmNode`` is one node's tables; ``objects`` holds the states, policies and
selectors; ``algos`` the algorithm table of ``net/xfrm/xfrm_algo.c``. The ``ip xfrm``
grammar and printers that drive them are :mod:`esplab.model.tools.iproute2`.
"""
