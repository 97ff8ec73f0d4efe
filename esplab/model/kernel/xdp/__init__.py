"""XDP and AF_XDP on emulated ports: UMEM, the four rings, buffer pools, sockets and
built-in XDP programs.

Facts come from ``reference/af_xdp.md``; comments cite its sections with the
project's tags ([C] confirmed, [D] derived, [U] uncertain) and name the design
choices of :data:`~esplab.model.kernel.xdp.consts.DESIGN_CHOICES` where the reference is
silent.

Modules, each importing only those before it: ``consts`` (enums, flags, design
choices), ``rings``, ``umem``, ``driver`` (driver profiles), ``pool`` (the kernel's
buffer pool), ``datapath`` (RX delivery, copy-mode TX; it sees sockets and devices
through protocols), ``socket`` (setup, bind, syscalls), ``program`` (built-in XDP
programs, XSKMAP) and ``port`` (a device's XDP side, :class:`~.port.NetdevXdp`: the
driver's queues and NAPI). A network device
(:class:`~esplab.model.kernel.stack.netdev.NetDev`) holds its XDP side as ``xdp``.
xdpsock and its cost model are userspace: :mod:`esplab.model.tools.xdpsock`,
:mod:`esplab.model.tools.xdp_costmodel`.
"""
