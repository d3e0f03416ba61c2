"""The `rag` command as a user runs it: real subprocesses, a real index in a temporary folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow


def rag(*args, index, config="extractive", timeout=300, **env):
    environment = {**os.environ, "RAG_CONFIG": config, "RAG_VECTORSTORE__PATH": str(index), **env}
    return subprocess.run(
        [sys.executable, "-m", "rag.cli", *args], capture_output=True, text=True, timeout=timeout, env=environment
    )


def test_ask_on_a_fresh_index_ingests_the_seeds_and_cites_rxnflow(tmp_path):
    result = rag("ask", "How many reaction templates does RxnFlow use?", index=tmp_path / "i")
    assert result.returncode == 0, result.stderr
    assert "[1]" in result.stdout
    first_source = result.stdout.split("Sources:")[1].strip().splitlines()[0]
    assert first_source.startswith("*[1] We propose RxnFlow")
    again = rag("ingest", index=tmp_path / "i")
    assert again.returncode == 0
    assert again.stdout.startswith("0 added, 0 updated, 19 unchanged")


def test_ask_json_has_the_answer_fields(tmp_path):
    import json

    result = rag("ask", "Which paper plays Hanabi with unfamiliar partners?", "--json", "-k", "3", index=tmp_path / "i")
    data = json.loads(result.stdout)
    assert len(data["sources"]) == 3
    assert data["cited"] and data["cited"][0] == data["sources"][0]["paper_id"]
    assert data["refused"] is False and data["fallback"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (("ask", ""), "error: the question is empty"),
        (("ask", "x" * 5000), "error: the question is 5,000 characters long"),
        (("ingest", "/no/such/file.jsonl"), "error: /no/such/file.jsonl: no such file or directory"),
        (("--config", "nope", "stats"), "error: unknown config 'nope'"),
    ],
)
def test_bad_input_is_one_line_without_traceback(tmp_path, args, message):
    result = rag(*args, index=tmp_path / "i")
    assert result.returncode == 1
    assert result.stderr.strip().startswith(message)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_lines_are_warned_about_and_the_rest_ingested(tmp_path):
    path = tmp_path / "list.jsonl"
    path.write_text('{"id": "a", "abstract": "Fine."}\n{oops\n')
    result = rag("ingest", str(path), "--quiet", index=tmp_path / "i")
    assert result.returncode == 1  # something was skipped
    assert f"warning: {path}:2:" in result.stderr
    assert result.stdout.startswith("1 added")
    strict = rag("ingest", str(path), "--strict", index=tmp_path / "j")
    assert strict.returncode == 1 and f"{path}:2" in strict.stderr


def test_help_loads_no_heavy_library():
    result = subprocess.run([sys.executable, "-m", "rag.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "ingest" in result.stdout
    probe = "import sys, rag.cli; rag.cli.build_parser(); print(sorted(m for m in {} if m in sys.modules))"
    heavy = ("torch", "chromadb", "langchain_core")
    found = subprocess.run([sys.executable, "-c", probe.format(heavy)], capture_output=True, text=True)
    assert found.stdout.strip() == "[]"


def _ingest_process(path, index, batch):
    environment = {
        **os.environ,
        "RAG_CONFIG": "extractive",
        "RAG_VECTORSTORE__PATH": str(index),
        "RAG_INGEST__BATCH_SIZE": str(batch),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "rag.cli", "ingest", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )


def _wait_for_progress(process, papers: int) -> None:
    """Read the progress bar until it shows at least `papers` done."""
    seen = b""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        seen += os.read(process.stderr.fileno(), 4096)
        counts = [int(part.split(b"/")[0].split()[-1]) for part in seen.split(b"\r") if b"/300" in part]
        if counts and counts[-1] >= papers:
            return
    raise AssertionError(f"no progress seen: {seen[-300:]!r}")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_an_interrupted_ingest_answers_and_the_next_run_completes_it_exactly(
    tmp_path, full_list_sample, how, sample_service
):
    expected = sample_service.stats()
    process = _ingest_process(full_list_sample, tmp_path / "i", batch=25)
    _wait_for_progress(process, 50)
    process.send_signal(how)
    process.wait(timeout=60)
    if how == signal.SIGINT:
        assert process.returncode == 130
        assert b"run the same command again" in process.stderr.read()
    midway = rag("stats", index=tmp_path / "i")
    papers_midway = int(midway.stdout.split("papers: ")[1].split()[0])
    assert 50 <= papers_midway < 300
    asked = rag("ask", "transformers", "--json", index=tmp_path / "i")
    assert asked.returncode == 0, asked.stderr
    done = rag("ingest", str(full_list_sample), "--quiet", index=tmp_path / "i")
    assert done.returncode == 0, done.stderr
    assert f"index: {expected['papers']} papers, {expected['chunks']} chunks" in done.stdout
    assert done.stdout.startswith(f"{300 - papers_midway} added")
