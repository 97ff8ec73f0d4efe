"""One real Linux kernel for the whole differential suite.

The guest boots once (QEMU under TCG through virtme-ng, about 20 s) and every scenario
runs against it, the kernel's XFRM tables flushed in between. On a developer machine
without QEMU, virtme-ng or a kernel image the suite is skipped with the reason; CI
installs them and sets ESPLAB_REQUIRE_KERNEL=1, so there a kernel that cannot boot
fails the suite instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from esplab.commands.session import Session
from esplab.errors import PeerError
from esplab.peer.backends import netns, qemu
from esplab.peer.bridge import attach
from esplab.peer.client import KernelPeer


@pytest.fixture(scope="session")
def kernel() -> Iterator[KernelPeer]:
    """A booted kernel configured as the lab's host (seed 0x5eed)."""
    try:
        backend = netns() if os.environ.get("ESPLAB_KERNEL_NETNS") else qemu(kvm="off")
        client = KernelPeer(backend).start()
        attach(Session().lab, "host", client)
    except PeerError as exc:
        if os.environ.get("ESPLAB_REQUIRE_KERNEL"):
            pytest.fail(f"a real kernel is required (ESPLAB_REQUIRE_KERNEL is set): {exc}")
        pytest.skip(f"no real kernel to check against: {exc}")
    yield client
    client.close()
