"""Every code block of README.md runs, so an example people copy can't break unnoticed.

`python` blocks run in order, in one fresh process, as a new user's would; shell blocks run each
`rag ...` command as typed (a leading `NAME=value` is the environment it sets). Both use a new
user's per-user data folder that the first command fills with the bundled seeds. A block that can't
run here says why in the README source, on the line before it: `<!-- readme: skip (reason) -->`;
any other shell command is an error, so a new example is either run or marked.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

import pytest
from conftest import user_environment
from markdown_it import MarkdownIt

from rag.core.config import PROJECT_ROOT

pytestmark = pytest.mark.slow

README = PROJECT_ROOT / "README.md"
SKIP = re.compile(r"<!--\s*readme:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
SHELLS = ("bash", "sh", "shell", "console")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
APP_URL = "http://127.0.0.1:7860/"  # where the README's API examples expect `rag ui` or `rag serve`
SERVERS = ("ui", "serve")  # commands that serve until stopped


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    line: int
    skip: str | None


def readme_blocks() -> list[Block]:
    blocks, skip = [], None
    for token in MarkdownIt().parse(README.read_text(encoding="utf-8")):
        if token.type == "html_block":
            match = SKIP.search(token.content)
            skip = match["reason"] if match else skip
            continue
        if token.type == "fence":
            blocks.append(Block(token.info.split()[0] if token.info else "", token.content, token.map[0] + 1, skip))
        if token.type in ("fence", "paragraph_open", "heading_open", "bullet_list_open", "table_open"):
            skip = None
    return blocks


def shell_commands(block: Block) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    joined = block.code.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(shlex.join(words))
    return commands


def is_rag(command: str) -> bool:
    words = shlex.split(command)
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    return bool(words) and words[0] == "rag"


BLOCKS = readme_blocks()
RUN = [block for block in BLOCKS if not block.skip]


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> dict[str, str]:
    """A new user's environment; the seeds go in by the first command, as the quick start says."""
    return user_environment(tmp_path_factory.mktemp("readme-user"))


def test_the_readme_has_runnable_examples_of_each_kind():
    assert {block.language for block in RUN} >= {"python", "bash"}
    skipped = [block for block in BLOCKS if block.skip]
    assert all(len(block.skip) > 5 for block in skipped)  # each says why


@pytest.mark.parametrize("block", [b for b in RUN if b.language in SHELLS], ids=lambda b: f"line {b.line}")
def test_shell_examples_run_as_typed(block, user):
    others = [command for command in shell_commands(block) if not is_rag(command)]
    assert not others, f"README line {block.line}: run these in the test or mark the block skipped: {others}"
    for command in shell_commands(block):
        if set(SERVERS) & set(shlex.split(command)):  # `rag ui`, `rag --config NAME serve ...`
            check_app_starts(command, user)
            continue
        result = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, env=user, cwd=PROJECT_ROOT, timeout=600
        )
        assert result.returncode == 0, f"README line {block.line}: {command}\n{result.stderr}"
        assert "Traceback" not in result.stderr, result.stderr


def test_python_examples_run_in_order_in_one_fresh_process(user):
    """All python blocks as one script; the app they talk to is started on a free port first (`rag serve`:
    the chat with its `/ask`, and the /v1 API)."""
    port = free_port()
    blocks = [block for block in RUN if block.language == "python"]
    script = "\n".join(f"# README.md line {block.line}\n{block.code}" for block in blocks)
    script = script.replace(APP_URL, f"http://127.0.0.1:{port}/")
    needs_app = f"127.0.0.1:{port}" in script
    app = start_app(f"rag --config extractive serve --port {port}", user, port) if needs_app else None
    try:
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=user, cwd=PROJECT_ROOT, timeout=900
        )
    finally:
        if app:
            app.terminate()
            app.wait(30)
    assert result.returncode == 0, f"{result.stderr}\n--- the script ---\n{script}"


def check_app_starts(command: str, env: dict[str, str]) -> None:
    """`rag ui ...` or `rag serve ...` serves until stopped: start it (on a free port), see the page, stop it."""
    port = free_port()
    words = shlex.split(command)
    if "--port" in words:
        words[words.index("--port") + 1] = str(port)
    else:
        words += ["--port", str(port)]
    app = start_app(shlex.join(words), env, port)
    app.terminate()
    assert app.wait(30) is not None


def start_app(command: str, env: dict[str, str], port: int) -> subprocess.Popen:
    import tempfile

    log = tempfile.TemporaryFile()  # not a pipe: a chatty app must never block on a full one
    app = subprocess.Popen(["bash", "-c", f"exec {command}"], env=env, cwd=PROJECT_ROOT, stdout=log, stderr=log)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                assert page.status == 200
                return app
        except OSError:
            if app.poll() is not None:
                log.seek(0)
                raise AssertionError(f"{command} exited: {log.read().decode()[-2000:]}") from None
            time.sleep(1)
    app.kill()
    raise AssertionError(f"{command} did not serve its page within 300 s")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
