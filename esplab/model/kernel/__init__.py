"""The Linux side of a node, as the kernel keeps it.

* ``stack/``: network devices, their features and counters, IPv4 identification,
  path MTU learned from ICMP;
* ``xfrm/``: the SAD, the SPD, the XFRM MIB, the offload contract and its checks;
* ``esp/``: the software ESP core (RFC 4303), its SAs, algorithms, IV generators, TFC
  padding and the anti-replay window;
* ``drivers/``: the EIP-93 driver (``eip93/``) and the Airoha Ethernet xfrmdev_ops
  (``airoha_eth``);
* ``xdp/``: XDP and AF_XDP (UMEM, rings, buffer pools, sockets, built-in programs);
* ``node``: one node: its devices, addresses, routes, neighbours and XFRM tables.

Layers, top first:

    node       one node: its devices, addresses, routes, neighbours, XFRM tables
    drivers    the EIP-93 driver and the Airoha Ethernet xfrmdev_ops
    esp        the software ESP core, its SAs and their join to the XFRM tables
    xfrm       the SAD, the SPD, the MIB, the offload contract
    stack      network devices, features, routes, IPv4 identification, learned MTU
    xdp        XDP and AF_XDP on a device

An import points down this list, never up.
"""
