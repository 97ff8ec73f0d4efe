"""The emulated board, laid out as a driver developer finds it on a real one.

Layers, top first:

    lab        the whole lab from one seed: nodes, wires, journeys, captures
    topology   the default device of DESIGN.md (the ap, its peers, their addresses)
    journey    the walk of one packet: send, routing, XFRM output, the offload paths,
               the wires and the DSA switch, receive, XFRM input, path MTU, XDP hooks
    tools      what userspace types and reads: iproute2's ip xfrm, xdpsock
    kernel     the Linux side of a node: stack, xfrm, esp, drivers, xdp, node
    hw         the hardware: the EIP-93 packet engine, the switch's facts
    stage      what every layer emits: stages, fidelity tags, journeys, captures

An import points down this list, never up (lazy and type-only imports included); the
kernel orders its own folders the same way (:mod:`esplab.model.kernel`).
tests/test_layers.py and the import-linter contracts in pyproject.toml check both.

Where a new thing goes: a register field or a piece of the engine's own work in
``hw/eip93/``; a counter of the stack, XFRM or ESP in ``kernel/`` beside what it
counts; the driver's side of the engine in ``kernel/drivers/eip93/``; an ``ip``
keyword in ``tools/iproute2/``; a new stage of the walk in ``journey/``, emitting
:mod:`esplab.model.stage`'s types.
"""
