"""XDP and AF_XDP on emulated ports: UMEM, the four rings, buffer pools, sockets and
built-in XDP programs.

Facts come from ``reference/af_xdp.md``; comments cite its sections with the
project's tags ([C] confirmed, [D] derived, [U] uncertain) and name the design
choices of :data:`~esplab.model.kernel.xdp.consts.DESIGN_CHOICES` where the reference is
silent.

Modules: ``consts`` (enums, flags, design choices), ``rings``, ``umem``, ``pool``
(the kernel's buffer pool), ``socket`` (setup, bind, syscalls), ``datapath`` (RX
delivery, copy-mode TX), ``program`` (built-in XDP programs, XSKMAP), ``driver``
and ``port`` (the emulated NIC). xdpsock and its cost model are userspace:
:mod:`esplab.model.tools.xdpsock`, :mod:`esplab.model.tools.xdp_costmodel`.
"""
