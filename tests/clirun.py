"""The `rag` command run as a user runs it, in a subprocess; shared by the CLI and hostile-input tests."""

from __future__ import annotations

import os
import subprocess
import sys


def rag(*args, index, config="extractive", timeout=300, **env):
    environment = {**os.environ, "RAG_CONFIG": config, "RAG_VECTORSTORE__PATH": str(index), **env}
    return subprocess.run(
        [sys.executable, "-m", "rag.cli", *args], capture_output=True, text=True, timeout=timeout, env=environment
    )
