"""A real Linux kernel as a node of the lab: a QEMU guest or a network namespace.

:mod:`~esplab.peer.agent` runs on the peer (standard library only); the
:mod:`~esplab.peer.backends` start it; :mod:`~esplab.peer.client` talks to it;
:mod:`~esplab.peer.bridge` puts it on the emulated wire in place of a node.
"""
