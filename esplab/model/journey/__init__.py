"""The walk of one packet, stage by stage: send and output (routing, XFRM output, the
offload datapaths), the wires and the DSA switch, receive and input, path MTU and the
XDP hooks on the way. Every step emits :mod:`esplab.model.stage`."""
