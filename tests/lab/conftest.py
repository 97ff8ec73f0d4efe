"""Fixtures of the lab tests: a real browser for the journey pages."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path to headless Chromium (Debian's ``chromium``). Skipped on a developer machine
    without it; CI installs it and sets ESPLAB_REQUIRE_BROWSER=1, so there a missing
    browser fails instead (as the tshark fixture does)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path is not None:
            return path
    if os.environ.get("ESPLAB_REQUIRE_BROWSER"):
        pytest.fail("chromium is required (ESPLAB_REQUIRE_BROWSER is set) but not installed")
    pytest.skip("chromium is not installed (apt-get install chromium)")


@pytest.fixture(autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step mode saves progress in the XDG state directory: a fresh one per test."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
