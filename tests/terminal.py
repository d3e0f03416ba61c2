"""Run a command with its stdout on a pseudo-terminal, as a person at a shell would see it."""

from __future__ import annotations

import os
import pty


def run_on_terminal(argv: list[str], environment: dict[str, str]) -> tuple[list[str], int]:
    """The chunks the terminal received, in order, and the command's exit status."""
    process_id, terminal = pty.fork()
    if process_id == 0:  # the child: the command, its stdout the terminal
        os.execve(argv[0], argv, environment)
    chunks = []
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the child exited and closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk.decode(errors="replace").replace("\r\n", "\n"))
    _, status = os.waitpid(process_id, 0)
    return chunks, os.waitstatus_to_exitcode(status)
