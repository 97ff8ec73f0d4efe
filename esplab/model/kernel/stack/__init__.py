"""The network stack of a node: devices, features, IPv4 identification, learned path MTU."""
