from __future__ import annotations

import os
import shutil

import pytest


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
