"""Imports run down the stages (docs/architecture.md): import-linter's layers contract in pyproject.toml holds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT


def test_imports_run_down_the_stages():
    # The venv's own `lint-imports`, beside this Python, else the one on PATH.
    script = Path(sys.executable).with_name("lint-imports")
    command = str(script) if script.exists() else shutil.which("lint-imports")
    assert command, "lint-imports is missing: pip install -e '.[test]'"
    done = subprocess.run(
        [command, "--no-cache"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
