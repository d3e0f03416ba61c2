"""Debian's chromium for the browser tests (Playwright's own browser download does not work here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium() -> None:
    """Skip when chromium is missing, except in CI (CI=true), where that is a failure."""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is not installed (apt-get install -y chromium)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)
