"""A real Chroma server on loopback for tests: `chroma run` (from the chromadb package) in its own
process group, on a free port, over a data folder that outlives a restart. Always stopped by its
context manager, whatever happens in between.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"


def free_port() -> int:
    """A port nothing listens on right now (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def chroma_command() -> str:
    """The `chroma` CLI beside this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise RuntimeError("the `chroma` command (package chromadb) is not installed")
    return found


class ChromaServer:
    """`chroma run --path DATA --host 127.0.0.1 --port PORT`; `kill` and `start` again keep the data."""

    def __init__(self, data: Path, log: Path, port: int | None = None):
        self.data, self.log = data, log
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, ready_within: float = 60) -> ChromaServer:
        command = [chroma_command(), "run", "--path", str(self.data), "--host", HOST, "--port", str(self.port)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        deadline = time.monotonic() + ready_within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}: {self.log_tail()}")
            if self.alive():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma run not ready after {ready_within} s: {self.log_tail()}")

    def wait_until_alive(self, within: float = 60) -> None:
        """For a server someone else started: wait for its heartbeat."""
        deadline = time.monotonic() + within
        while not self.alive():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no Chroma server answers at {self.url} after {within} s")
            time.sleep(0.2)

    def alive(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    def kill(self) -> None:
        """Stop it the hard way, as a crash or a pulled cable would."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
