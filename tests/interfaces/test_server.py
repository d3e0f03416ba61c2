"""Chroma in client/server mode: a real `chroma run` server on loopback, for ingest and questions alike."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from itertools import islice

import pytest
from conftest import FULL_LIST, SEED_FILE, settings_for, write_jsonl

from benchmarks.harness.servers import HOST, ChromaServer, free_port
from rag.core.errors import StoreError
from rag.core.filters import Filters
from rag.ingest.papers import load_papers
from rag.service import RagService

pytestmark = pytest.mark.slow


def server_settings(tmp_path, host: str, port: int, database: str = "default_database", **sections):
    """The extractive config pointed at a Chroma server; the BM25 cache goes to tmp_path."""
    retrieval = {"lexical_cache": str(tmp_path / "lexical"), **sections.pop("retrieval", {})}
    vectorstore = {"mode": "http", "host": host, "port": port, "database": database, "retries": 1}
    vectorstore.update(sections.pop("vectorstore", {}))
    return settings_for(tmp_path / "unused", vectorstore=vectorstore, retrieval=retrieval, **sections)


@pytest.fixture
def database(chroma_server) -> str:
    """A database of its own on the shared server, so tests never see each other's collections."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    name = f"test-{uuid.uuid4().hex[:12]}"
    host, port = chroma_server
    admin = chromadb.AdminClient(
        ChromaSettings(
            chroma_server_host=host,
            chroma_server_http_port=port,
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            anonymized_telemetry=False,
        )
    )
    admin.create_database(name)
    return name


def test_every_feature_works_the_same_through_a_server(chroma_server, database, tmp_path, embeddings, seeded):
    host, port = chroma_server
    service = RagService(server_settings(tmp_path, host, port, database), embeddings=embeddings)
    first = service.ingest([SEED_FILE])
    assert (first.added, first.papers, first.chunks) == (19, seeded.index.paper_count(), seeded.index.chunk_count())
    again = service.ingest([SEED_FILE])
    assert (again.added, again.unchanged, again.chunks_added) == (0, 19, 0)

    stats = service.stats()
    assert stats["index"] == f"on {host}:{port}" and stats["papers"] == 19
    for question in ("How many reaction templates does RxnFlow use?", "Hanabi partners it has never met"):
        over_server = service.retrieve(question, k=3)
        on_disk = seeded.retrieve(question, k=3)
        assert [s.paper_id for s in over_server] == [s.paper_id for s in on_disk]
        assert [round(s.score, 4) for s in over_server] == [round(s.score, 4) for s in on_disk]

    answer = service.answer("How many reaction templates does RxnFlow use?")
    assert not answer.refused and answer.cited and answer.cited[0] == answer.sources[0].paper_id
    assert "RxnFlow" in answer.sources[0].text

    assert service.retrieve("reaction templates", k=3, filters=Filters(status=("Oral",))) == []
    assert sorted(p for p, *_ in service.index.iter_papers()) == sorted(seeded.index.all_paper_ids())

    kept = write_jsonl(
        tmp_path / "kept.jsonl",
        [
            {"id": "oral", "title": "Folding", "status": "Oral", "abstract": "We fold proteins with diffusion."},
            {"id": "poster", "title": "Design", "status": "Poster", "abstract": "We design proteins with diffusion."},
        ],
    )
    pruned = service.ingest([kept], prune=True)
    assert (pruned.added, pruned.removed, pruned.papers, pruned.chunks) == (2, 19, 2, 2)
    assert [s.paper_id for s in service.retrieve("protein design", k=3)] == ["poster", "oral"]
    assert [s.paper_id for s in service.retrieve("protein design", k=3, filters=Filters(status=("Oral",)))] == ["oral"]


def test_a_server_nobody_runs_is_one_clear_error_naming_it(tmp_path, embeddings):
    port = free_port()
    service = RagService(server_settings(tmp_path, HOST, port), embeddings=embeddings)
    with pytest.raises(StoreError, match=f"Chroma server at {HOST}:{port}"):
        service.stats()
    environment = {
        **os.environ,
        "RAG_CONFIG": "extractive",
        "RAG_VECTORSTORE__MODE": "http",
        "RAG_VECTORSTORE__HOST": HOST,
        "RAG_VECTORSTORE__PORT": str(port),
    }
    for command in (["stats"], ["ask", "What is RxnFlow?"], ["ingest"]):
        result = subprocess.run(
            [sys.executable, "-m", "rag.cli", *command], capture_output=True, text=True, env=environment, timeout=300
        )
        assert result.returncode == 1
        assert result.stderr.startswith(f"error: cannot reach the Chroma server at {HOST}:{port}")
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_short_outage_is_ridden_out_by_retries(tmp_path, embeddings):
    with ChromaServer(tmp_path / "data", tmp_path / "server.log") as server:
        settings = server_settings(tmp_path, HOST, server.port)
        settings = settings.model_copy(update={"vectorstore": settings.vectorstore.model_copy(update={"retries": 5})})
        service = RagService(settings, embeddings=embeddings)
        service.ingest([SEED_FILE])
        server.kill()
        restart = threading.Thread(target=lambda: (time.sleep(0.5), server.start()))
        restart.start()
        try:
            assert service.index.paper_count() == 19  # retried until the server was back
        finally:
            restart.join()


def test_a_server_that_stops_answering_is_a_clear_error_not_a_hang_and_recovers(tmp_path, embeddings):
    """A Chroma server that accepts connections and never answers (stopped, hung, cut off): each
    question ends with one StoreError naming it, and answers come back once the server does."""
    with ChromaServer(tmp_path / "data", tmp_path / "server.log") as server:
        settings = server_settings(tmp_path, HOST, server.port, vectorstore={"timeout": 2, "retries": 1})
        service = RagService(settings, embeddings=embeddings)
        service.ingest([SEED_FILE])
        os.killpg(server.process.pid, signal.SIGSTOP)
        try:
            outcome: list[BaseException | list] = []
            asking = threading.Thread(target=lambda: outcome.append(capture(service.retrieve, "RxnFlow templates")))
            asking.start()
            asking.join(120)  # without a timeout on the client's calls, it would wait for ever
            assert not asking.is_alive(), "the question hangs on a server that does not answer"
            assert isinstance(outcome[0], StoreError) and f"lost the Chroma server at {HOST}:{server.port}" in str(
                outcome[0]
            )
        finally:
            os.killpg(server.process.pid, signal.SIGCONT)
        assert "RxnFlow" in service.retrieve("RxnFlow templates", k=1)[0].text  # the same service, no restart


def capture(call, *args):
    """What `call(*args)` returns, or the exception it raises."""
    try:
        return call(*args)
    except Exception as err:
        return err


def test_an_ingest_that_loses_the_server_resumes_exactly_when_it_is_back(tmp_path, embeddings):
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    sample = tmp_path / "sample.jsonl"
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as source:
        sample.write_text("".join(islice(source, 120)), encoding="utf-8")
    chunker = RagService(settings_for(tmp_path / "unused"), embeddings=embeddings).chunker
    papers = list(load_papers([sample]))
    expected_chunks = sum(len(chunker.chunk(paper)) for paper in papers)

    server = ChromaServer(tmp_path / "data", tmp_path / "server.log").start()
    process = None
    try:
        environment = {
            **os.environ,
            "RAG_CONFIG": "extractive",
            "RAG_VECTORSTORE__MODE": "http",
            "RAG_VECTORSTORE__HOST": HOST,
            "RAG_VECTORSTORE__PORT": str(server.port),
            "RAG_VECTORSTORE__RETRIES": "1",
            "RAG_INGEST__BATCH_SIZE": "10",
            "RAG_RETRIEVAL__LEXICAL_CACHE": str(tmp_path / "lexical"),
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "rag.cli", "ingest", str(sample)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
        )
        seen = _progress_until(process, 30, of=len(papers))
        server.kill()
        process.wait(timeout=120)
        stderr = (seen + process.stderr.read()).decode()
        assert process.returncode == 1
        last = stderr.replace("\r", "\n").strip().splitlines()[-1]
        assert last.startswith(f"error: lost the Chroma server at {HOST}:{server.port}")
        assert "Traceback" not in stderr

        server.start()
        rag = [sys.executable, "-m", "rag.cli"]
        midway = subprocess.run([*rag, "stats"], capture_output=True, text=True, env=environment, timeout=300)
        stored = int(midway.stdout.split("papers: ")[1].split()[0])
        assert 30 <= stored < len(papers)
        done = subprocess.run(
            [*rag, "ingest", str(sample), "--quiet"], capture_output=True, text=True, env=environment, timeout=600
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{len(papers) - stored} added")
        assert f"index: {len(papers)} papers, {expected_chunks} chunks" in done.stdout
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
        server.stop()


def _progress_until(process: subprocess.Popen, papers: int, of: int) -> bytes:
    """Read the progress bar until it shows at least `papers` done; returns what was read."""
    seen = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        seen += os.read(process.stderr.fileno(), 4096)
        counts = [int(part.split(b"/")[0].split()[-1]) for part in seen.split(b"\r") if f"/{of}".encode() in part]
        if counts and counts[-1] >= papers:
            return seen
    raise AssertionError(f"no progress seen: {seen[-300:]!r}")
