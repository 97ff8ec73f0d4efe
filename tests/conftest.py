from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _scapy_never_asks_the_network() -> Iterator[None]:
    """Scapy fills a missing Ether destination by asking this machine's routes and ARP
    (a timeout per miss on a machine without that network). esplab never asks (see
    tests/commands/test_packetexpr.py); this keeps the tests' own Scapy packets from
    asking too, so the suite neither waits nor depends on the machine's network."""
    import scapy.layers.l2  # noqa: F401  (it sets conf.neighbor up)
    from scapy.config import conf

    saved = conf.neighbor.resolve
    conf.neighbor.resolve = lambda l2, l3: None  # type: ignore[method-assign, assignment]
    yield
    conf.neighbor.resolve = saved  # type: ignore[method-assign]


@pytest.fixture(autouse=True, scope="session")
def _the_checkout_stays_clean() -> Iterator[None]:
    """No test writes into the repository's top folder (a test that runs commands
    which write files works in a temporary directory)."""
    root = Path(__file__).resolve().parent.parent
    before = {p.name for p in root.iterdir()}
    yield
    added = sorted({p.name for p in root.iterdir()} - before - {".pytest_cache", ".hypothesis"})
    assert not added, f"tests wrote into {root}: {added}"


@pytest.fixture
def tshark() -> str:
    """Path to tshark. Skipped on a developer machine without it; CI installs it and
    sets ESPLAB_REQUIRE_TSHARK=1, so there a missing tshark fails instead."""
    path = shutil.which("tshark")
    if path is None:
        if os.environ.get("ESPLAB_REQUIRE_TSHARK"):
            pytest.fail("tshark is required (ESPLAB_REQUIRE_TSHARK is set) but not installed")
        pytest.skip("tshark is not installed (apt-get install tshark)")
    return path
