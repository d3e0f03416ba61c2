"""Two `rag ingest` runs into one on-disk index folder at once: the second waits for the first, a question asked
meanwhile is answered from what is stored, and the index they leave answers with every chunk's vector readable."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time

import pytest
from clirun import rag
from conftest import FULL_LIST

pytestmark = pytest.mark.slow

ROUNDS = 3
RECORDS = 300  # per file, as the probe had them (with 150, the old code's writers lost no vector in a run)


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    """Two files of RECORDS records of the real list each, one after the other."""
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    folder = tmp_path_factory.mktemp("two-files")
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as source:
        lines = [line for _, line in zip(range(2 * RECORDS), source)]
    first, second = folder / "a.jsonl", folder / "b.jsonl"
    first.write_text("".join(lines[:RECORDS]), encoding="utf-8")
    second.write_text("".join(lines[RECORDS:]), encoding="utf-8")
    return first, second


def start_ingest(index, *files) -> subprocess.Popen:
    environment = {**os.environ, "RAG_CONFIG": "extractive"}
    command = [sys.executable, "-m", "rag.cli", "ingest", "--quiet", "--index", str(index), *map(str, files)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)


def chunks_without_vectors(index) -> tuple[int, int]:
    """(chunks, how many of them have no readable vector), read with Chroma's own client."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(index), settings=Settings(anonymized_telemetry=False))
    [chunks] = [c for c in client.list_collections() if not c.name.endswith(("-papers", "-map"))]
    ids = chunks.get(include=[])["ids"]
    unreadable = 0
    for start in range(0, len(ids), 100):
        part = ids[start : start + 100]
        try:
            chunks.get(ids=part, include=["embeddings"])
        except chromadb.errors.ChromaError:
            unreadable += sum(1 for chunk_id in part if not _readable(chunks, chunk_id))
    return len(ids), unreadable


def _readable(chunks, chunk_id: str) -> bool:
    import chromadb

    try:
        return len(chunks.get(ids=[chunk_id], include=["embeddings"])["embeddings"]) == 1
    except chromadb.errors.ChromaError:
        return False


def papers_in(index) -> int:
    stats = rag("stats", index=index)
    assert stats.returncode == 0, stats.stderr
    return int(stats.stdout.split("papers: ")[1].split()[0])


def ask_while_writing(index, writers, question: str) -> subprocess.CompletedProcess | None:
    """`rag ask` once the first papers are stored and a writer still runs; None if the writers were too quick."""
    while all(writer.poll() is None for writer in writers):
        if (index / "chroma.sqlite3").exists() and papers_in(index) > 0:
            return rag("ask", question, index=index)
        time.sleep(5)  # each look is a `rag stats`: a process of its own
    return None


@pytest.mark.timeout(1800)  # about 2 minutes a round on 2 idle cores; more on a busy machine
def test_two_ingests_into_one_folder_at_once_wait_for_each_other_and_leave_an_index_that_answers(tmp_path, two_files):
    first, second = two_files
    title = json.loads(first.read_text(encoding="utf-8").splitlines()[0])["title"]  # a paper both files bring
    asked_meanwhile = 0
    for round in range(ROUNDS):
        index = tmp_path / f"round-{round}"
        writers = [start_ingest(index, first, second), start_ingest(index, second, first)]
        meanwhile = ask_while_writing(index, writers, title)
        outputs = [writer.communicate(timeout=900) for writer in writers]
        for writer, (_out, err) in zip(writers, outputs):
            assert writer.returncode == 0, err[-3000:]
            assert "Traceback" not in err, err[-3000:]
        total, unreadable = chunks_without_vectors(index)
        assert unreadable == 0 and total > 2 * RECORDS, (round, total, unreadable)
        assert papers_in(index) == 2 * RECORDS
        asked = rag("ask", title, index=index)
        assert asked.returncode == 0 and "[1]" in asked.stdout, asked.stderr[-3000:]
        if meanwhile is not None:  # answered from what was stored then, or said it isn't there: no error
            assert meanwhile.returncode == 0 and "Traceback" not in meanwhile.stderr, meanwhile.stderr[-3000:]
            asked_meanwhile += 1
        summaries = sorted(out.strip().splitlines()[-1] for out, _ in outputs)
        assert summaries[0].startswith(f"0 added, 0 updated, {2 * RECORDS} unchanged"), summaries  # found all done
        assert summaries[1].startswith(f"{2 * RECORDS} added"), summaries
        [waited] = [err.strip() for _, err in outputs if err.strip()]
        assert waited == f"waiting for another ingest into {index} to finish", waited
    assert asked_meanwhile, "no question was asked while a writer ran"
