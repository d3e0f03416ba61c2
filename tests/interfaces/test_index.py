"""The index knows how it was built (issue 26): ingested with one embedding setup, it is read with that
setup whatever the asking command's config says; the seeds never go into a store that holds another
index; `--index PATH` on every command that opens the index. All through the `rag` command as typed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import user_environment, write_jsonl

from rag.core.config import PROJECT_ROOT

pytestmark = pytest.mark.slow

PAPERS = [
    {
        "id": "glacier-1",
        "title": "GlacierNet: Estimating Glacier Flow from Satellite Images with Graph Networks",
        "abstract": "We propose GlacierNet, a graph network that estimates glacier flow velocity from "
        "satellite images. GlacierNet reads 17 spectral bands and predicts daily ice velocity fields.",
    },
    {
        "id": "glacier-2",
        "title": "Sea Ice Thickness from Radar Altimetry with Diffusion Models",
        "abstract": "We estimate Arctic sea ice thickness from radar altimetry with a conditional diffusion "
        "model trained on twelve winters of buoy measurements.",
    },
    {
        "id": "glacier-3",
        "title": "Avalanche Risk Forecasting with Transformers",
        "abstract": "We forecast avalanche risk from weather station series with a transformer that "
        "attends over five days of snowfall, wind and temperature readings.",
    },
]
QUESTION = "How many spectral bands does GlacierNet read?"


def rag_as_typed(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rag.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


def collections(folder) -> dict[str, int]:
    """name -> entries, of every collection in an on-disk index (read in this process; nothing written)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=str(folder), settings=ChromaSettings(anonymized_telemetry=False))
    try:
        return {collection.name: collection.count() for collection in client.list_collections()}
    finally:
        client.close()


@pytest.fixture(scope="module")
def int8_home(tmp_path_factory):
    """A new user who ingested their papers with RAG_EMBEDDING__BACKEND=onnx-int8 into the per-user index."""
    home = tmp_path_factory.mktemp("int8-user")
    papers = write_jsonl(home / "papers.jsonl", PAPERS)
    int8 = {**user_environment(home), "RAG_EMBEDDING__BACKEND": "onnx-int8"}
    ingested = rag_as_typed("--config", "extractive", "ingest", "--quiet", str(papers), env=int8)
    assert ingested.returncode == 0, ingested.stderr
    return home


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_asked_with_another_backend_an_int8_index_answers_from_its_own_papers(int8_home, backend):
    env = {**user_environment(int8_home), "RAG_EMBEDDING__BACKEND": backend}
    asked = rag_as_typed("--config", "extractive", "ask", QUESTION, "--json", env=env)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["cited"][:1] == ["glacier-1"] and "17" in answer["text"]
    assert {source["paper_id"] for source in answer["sources"]} <= {paper["id"] for paper in PAPERS}
    assert asked.stderr.splitlines() == [
        f"the index at {int8_home / 'data' / 'abstract-rag' / 'index'} was built with all-MiniLM-L6-v2 "
        f"(onnx-int8; chunks of 200 tokens, 64 shared); using that, not all-MiniLM-L6-v2 ({backend}; "
        "chunks of 200 tokens, 64 shared)"
    ]
    stats = rag_as_typed("--config", "extractive", "stats", env=env)
    assert "papers: 3\n" in stats.stdout and "built with: all-MiniLM-L6-v2 (onnx-int8;" in stats.stdout
    stored = collections(int8_home / "data" / "abstract-rag" / "index")
    assert len(stored) == 3 and sorted(stored.values()) == [3, 3, 3]  # one index: its chunks, papers and map


def test_without_any_variable_the_int8_index_is_read_as_it_is(int8_home):
    asked = rag_as_typed("--config", "extractive", "ask", QUESTION, "--json", env=user_environment(int8_home))
    assert asked.returncode == 0 and asked.stderr == ""  # the default setup is the index's: nothing to say
    assert json.loads(asked.stdout)["cited"][:1] == ["glacier-1"]


def test_an_index_built_with_the_earlier_default_is_read_with_it_without_a_word(tmp_path):
    """A user who ingested when `onnx` was the default: asked with today's default, their own papers answer,
    and no line about the setup comes with every command (they asked for none)."""
    env = user_environment(tmp_path)
    papers = write_jsonl(tmp_path / "papers.jsonl", PAPERS)
    fp32 = {**env, "RAG_EMBEDDING__BACKEND": "onnx"}
    ingested = rag_as_typed("--config", "extractive", "ingest", "--quiet", str(papers), env=fp32)
    assert ingested.returncode == 0, ingested.stderr
    asked = rag_as_typed("--config", "extractive", "ask", QUESTION, "--json", env=env)
    assert asked.returncode == 0 and asked.stderr == ""
    assert json.loads(asked.stdout)["cited"][:1] == ["glacier-1"]
    stats = rag_as_typed("--config", "extractive", "stats", env=env)
    assert "embedding: all-MiniLM-L6-v2 (onnx)\n" in stats.stdout and "papers: 3\n" in stats.stdout


def add_old_seed_index(folder) -> None:
    """What versions before the setup was recorded did when asked with another backend: a second
    collection pair in the same folder, holding the seeds (one paper is enough to count)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    from rag.core.config import with_overrides
    from rag.index.setup import IndexSetup

    name = IndexSetup.of(with_overrides("extractive", embedding={"backend": "onnx"})).collection_name()
    client = chromadb.PersistentClient(path=str(folder), settings=ChromaSettings(anonymized_telemetry=False))
    client.create_collection(name, embedding_function=None, metadata={"hnsw:space": "cosine"})
    papers = client.create_collection(f"{name}-papers", embedding_function=None)
    papers.add(ids=["seed-1"], documents=["A seed abstract."], embeddings=[[1.0]], metadatas=[{"title": "Seed"}])
    client.close()


def test_a_folder_holding_two_setups_indexes_is_one_line_naming_them_until_one_is_chosen(tmp_path):
    env, index = user_environment(tmp_path), tmp_path / "index"
    papers = write_jsonl(tmp_path / "papers.jsonl", PAPERS)
    assert (
        rag_as_typed(
            "--config", "extractive", "ingest", "--quiet", "--index", str(index), str(papers), env=env
        ).returncode
        == 0
    )
    add_old_seed_index(index)
    before = collections(index)
    for command in (["ask", QUESTION], ["stats"], ["ingest", "--quiet"]):
        refused = rag_as_typed("--config", "extractive", *command, "--index", str(index), env=env)
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.startswith(f"error: the index at {index} holds 2 indexes built with different setups: ")
        assert "RAG_EMBEDDING__BACKEND=onnx or RAG_EMBEDDING__BACKEND=onnx-int8" in refused.stderr
        assert len(refused.stderr.splitlines()) == 1
    assert collections(index) == before  # nothing written, the seeds not added
    chosen = {**env, "RAG_EMBEDDING__BACKEND": "onnx-int8"}
    asked = rag_as_typed("--config", "extractive", "ask", QUESTION, "--json", "--index", str(index), env=chosen)
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["cited"][:1] == ["glacier-1"]


def test_an_index_whose_setup_cannot_be_loaded_here_is_one_line_and_nothing_is_written(tmp_path):
    env, index = user_environment(tmp_path), tmp_path / "index"
    papers = write_jsonl(tmp_path / "papers.jsonl", PAPERS)
    assert (
        rag_as_typed(
            "--config", "extractive", "ingest", "--quiet", "--index", str(index), str(papers), env=env
        ).returncode
        == 0
    )
    import chromadb

    client = chromadb.PersistentClient(path=str(index))
    (papers_collection,) = [c for c in client.list_collections() if c.name.endswith("-papers")]
    moved = {**papers_collection.metadata, "setup_model": "/models/our-own-minilm"}  # built on another machine
    papers_collection.modify(metadata=moved)
    client.close()
    before = collections(index)
    for command in (["ask", QUESTION], ["ingest", "--quiet"]):
        refused = rag_as_typed("--config", "extractive", *command, "--index", str(index), env=env)
        assert refused.returncode == 1 and refused.stdout == "" and len(refused.stderr.splitlines()) == 1
        assert refused.stderr.startswith(
            f"error: the index at {index} was built with our-own-minilm (onnx-int8; chunks of 200 tokens, 64 shared), "
            "which can't be read here (embedding.model: '/models/our-own-minilm' is neither"
        )
        assert refused.stderr.rstrip().endswith(
            "use another folder for all-MiniLM-L6-v2 (onnx-int8; chunks of 200 tokens, 64 shared) (--index PATH)"
        )
    assert collections(index) == before


def test_every_command_that_opens_the_index_takes_index(tmp_path):
    env = user_environment(tmp_path)
    index = tmp_path / "chosen"
    papers = write_jsonl(tmp_path / "papers.jsonl", PAPERS)
    ingested = rag_as_typed("ingest", "--quiet", "--index", str(index), str(papers), env=env)
    assert ingested.returncode == 0, ingested.stderr
    asked = rag_as_typed("--config", "extractive", "--index", str(index), "ask", QUESTION, "--json", env=env)
    assert json.loads(asked.stdout)["cited"][:1] == ["glacier-1"]
    stats = rag_as_typed("stats", "--index", str(index), env=env)
    assert f"index: at {index}\n" in stats.stdout and "papers: 3\n" in stats.stdout
    questions = write_jsonl(tmp_path / "q.jsonl", [{"question": QUESTION, "gold": ["glacier-1"], "split": "dev"}])
    evaluated = rag_as_typed("eval", str(questions), "--json", "--config", "extractive", "--index", str(index), env=env)
    assert json.loads(evaluated.stdout)["metrics"]["hit@1"] == 1.0
    fetched = rag_as_typed("fetch", "iclr2025", "--index", str(index), "--help", env=env)
    assert "--index PATH" in fetched.stdout
    # The servers open the index before they listen: a file given as the index stops each at once.
    not_a_folder = write_jsonl(tmp_path / "not-an-index.jsonl", [])
    for command in (["ui"], ["serve"], ["mcp"]):
        refused = rag_as_typed(*command, "--config", "extractive", "--index", str(not_a_folder), env=env)
        assert refused.returncode == 1
        assert refused.stderr.splitlines() == [
            f"error: the index path {not_a_folder} is not a folder; give a new or empty folder (--index PATH)"
        ]
    assert not (tmp_path / "data" / "abstract-rag" / "index").exists()  # the per-user index was never made
