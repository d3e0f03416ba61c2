"""The BM25 cache built by several processes at once: replicas opening one fresh index together."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import settings_for

from rag.service import RagService

pytestmark = pytest.mark.slow

PROCESSES = 6
ROUNDS = 3
QUESTION = "reaction templates for synthesizable molecules"

# Each process opens its own service on the index, says it is ready, waits for the start line, then
# asks for the BM25 index (which builds it: none is on disk) and prints what it finds. BM25 needs no
# embedding model, so a stand-in that is never called keeps six processes light on two cores.
WORKER = """
import json, sys, time
from pathlib import Path
from langchain_core.embeddings import FakeEmbeddings
from rag.core.config import with_overrides
from rag.service import RagService

index, start = sys.argv[1], Path(sys.argv[2])
service = RagService(with_overrides("extractive", vectorstore={"path": index}), embeddings=FakeEmbeddings(size=384))
service.index
print("ready", flush=True)
while not start.exists():
    time.sleep(0.001)
print(json.dumps(service.lexical.current().search(sys.argv[3], 5)))
"""


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory, embeddings):
    folder = tmp_path_factory.mktemp("lexical") / "index"
    RagService(settings_for(folder), embeddings=embeddings).ingest()
    return folder


def build_at_once(index, start) -> list[subprocess.CompletedProcess]:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(index), str(start), QUESTION],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        assert worker.stdout.readline().strip() == "ready", worker.stderr.read()
    start.touch()
    for worker in workers:
        worker.wait(timeout=120)
    return [
        subprocess.CompletedProcess(worker.args, worker.returncode, worker.stdout.read(), worker.stderr.read())
        for worker in workers
    ]


def test_processes_building_one_fresh_bm25_index_at_once_all_succeed_and_agree(seed_index, tmp_path, embeddings):
    for round_number in range(ROUNDS):
        for cache in seed_index.glob("*-bm25"):
            shutil.rmtree(cache)  # a fresh index: no BM25 cache yet
        finished = build_at_once(seed_index, tmp_path / f"start-{round_number}")
        assert all(done.returncode == 0 for done in finished), [done.stderr[-500:] for done in finished]
        results = {done.stdout for done in finished}
        assert len(results) == 1, results
        assert json.loads(results.pop())[0][0] == "pB1XSj2y4X"  # found the RxnFlow abstract
        reader = RagService(settings_for(seed_index), embeddings=embeddings)
        assert json.dumps(reader.lexical.current().search(QUESTION, 5)) == finished[0].stdout.strip()
        assert reader.lexical.rebuilds == 0  # loaded the build they left, not built again


def test_a_build_that_read_fewer_papers_than_the_index_counts_is_not_kept_for_that_state(seed_index, embeddings):
    """A Chroma server that counted a write its read of the papers missed must not leave a build that
    lacks those papers until the next write: the next question builds again and finds them."""
    for cache in seed_index.glob("*-bm25"):
        shutil.rmtree(cache)  # no build on disk: the first question builds one
    service = RagService(settings_for(seed_index), embeddings=embeddings)
    every = service.index.iter_papers
    service.index.iter_papers = lambda: iter(list(every())[:-1])  # type: ignore[method-assign]
    short = service.lexical.current()
    assert len(short.ids) == service.index.revision().count - 1
    service.index.iter_papers = every  # type: ignore[method-assign]
    again = service.lexical.current()
    assert len(again.ids) == service.index.revision().count and service.lexical.rebuilds == 2
    assert service.lexical.current() is again  # a whole build is kept for its state


def test_a_build_that_read_fewer_chunks_than_ingest_wrote_is_built_again_until_that_is_what_the_index_holds(
    seed_index, embeddings, monkeypatch
):
    """A read of the chunks that missed part of a write (the papers seen, one paper's chunks not) leaves
    vector search unable to name that paper: it is built again, so the paper is found by the next question.
    A shortfall that lasts (an ingest killed between its writes) is then kept, not rebuilt for every question."""
    for cache in seed_index.glob("*-bm25"):
        shutil.rmtree(cache)
    service = RagService(settings_for(seed_index), embeddings=embeddings)
    every = service.index.iter_chunk_papers
    first_paper = next(every())[1]
    lacking = lambda: (chunk for chunk in every() if chunk[1] != first_paper)  # noqa: E731
    service.index.iter_chunk_papers = lacking  # type: ignore[method-assign]
    short = service.lexical.current()
    assert short.lacking == 1 and short.chunk_ids(first_paper) == []
    service.index.iter_chunk_papers = every  # type: ignore[method-assign]
    again = service.lexical.current()
    assert again.lacking == 0 and again.chunk_ids(first_paper) and service.lexical.rebuilds == 2
    assert service.lexical.current() is again

    for cache in seed_index.glob("*-bm25"):
        shutil.rmtree(cache)
    monkeypatch.setattr("rag.index.lexical.SHORT_FOR", 0.0)  # short for that long already
    lasting = RagService(settings_for(seed_index), embeddings=embeddings)
    lasting.index.iter_chunk_papers = lacking  # type: ignore[method-assign]
    held = lasting.lexical.current()
    assert held.lacking == 1 and lasting.lexical.current() is held and lasting.lexical.rebuilds == 1
