"""Run a command with its stdout on a pseudo-terminal, as a person at a shell would see it."""

from __future__ import annotations

import os
import pty
import signal


def as_from_a_shell() -> None:
    """In a command's process before it starts (a `preexec_fn`): Ctrl-C (SIGINT) reaches it as a shell's command
    gets it, whatever this test process does with SIGINT. A library used by an earlier test may leave it ignored,
    and an ignored signal stays ignored in the command, which then never sees it: a chat test hung so in the
    suite, and an interrupted ingest ran to its end and exited 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def started_on_terminal(argv: list[str], environment: dict[str, str]) -> tuple[int, int]:
    """The command started with a pseudo-terminal as its stdin, stdout and stderr: its process id, and
    the terminal's other end (what it writes is read there; what is written there, it reads)."""
    process_id, terminal = pty.fork()
    if process_id == 0:  # the child: the command, on the terminal
        as_from_a_shell()
        os.execve(argv[0], argv, environment)
    return process_id, terminal


def run_on_terminal(argv: list[str], environment: dict[str, str]) -> tuple[list[str], int]:
    """The chunks the terminal received, in order, and the command's exit status."""
    process_id, terminal = started_on_terminal(argv, environment)
    chunks = []
    while (chunk := received(terminal)) is not None:
        chunks.append(chunk)
    _, status = os.waitpid(process_id, 0)
    return chunks, os.waitstatus_to_exitcode(status)


def received(terminal: int) -> str | None:
    """What the terminal received next (newlines as "\n"), or None once the command has exited."""
    try:
        chunk = os.read(terminal, 4096)
    except OSError:  # the child exited and closed the terminal
        return None
    return chunk.decode(errors="replace").replace("\r\n", "\n") if chunk else None


def readable(stream, seconds: float) -> bool:
    """Whether `stream` (a file descriptor or file) has something to read within `seconds`. By `selectors`
    (epoll), not `select.select`, which refuses descriptors past 1,023: a long suite opens that many."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        return bool(selector.select(seconds))


def converse_on_terminal(
    argv: list[str], environment: dict[str, str], lines: list[str], prompt: str = "> ", timeout: float = 300
) -> tuple[str, int]:
    """Type each line at the command's prompt, as a person would (waiting for the prompt before typing),
    then Ctrl-D; what the terminal showed (the typed lines echoed, as on a screen) and the exit status."""
    import time

    process_id, terminal = started_on_terminal(argv, environment)
    shown, to_type, deadline = "", [*lines, "\x04"], time.monotonic() + timeout
    while time.monotonic() < deadline:
        if readable(terminal, 1.0):
            if (chunk := received(terminal)) is None:
                break
            shown += chunk
        if to_type and shown.endswith(prompt):
            # A person types a beat after the prompt shows. Typed at once, a Ctrl-C can land between the prompt's
            # write and the read that waits for the line, and Python then notices it only once a line comes.
            time.sleep(0.5)
            typed = to_type.pop(0)
            os.write(terminal, (typed if typed in ("\x03", "\x04") else typed + "\n").encode())  # Ctrl-C, Ctrl-D
    else:
        os.kill(process_id, 9)
    _, status = os.waitpid(process_id, 0)
    return shown, os.waitstatus_to_exitcode(status)
