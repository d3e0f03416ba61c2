"""The embedding backends: ONNX exports built from the bundled weights, checked against torch vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SEED_FILE, seed_abstracts, settings_for

from rag.core.config import PROJECT_ROOT, EmbeddingConfig
from rag.core.errors import ModelError
from rag.index.embeddings import make_embeddings, model_directory
from rag.index.store import collection_name
from rag.ingest.papers import load_papers
from rag.service import RagService


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def onnx_fp32(onnx_cache):
    return make_embeddings(EmbeddingConfig(backend="onnx", onnx_cache=onnx_cache, batch_size=4))


@pytest.fixture(scope="session")
def onnx_int8(onnx_cache):
    return make_embeddings(EmbeddingConfig(backend="onnx-int8", onnx_cache=onnx_cache, batch_size=4))


@pytest.fixture(scope="session")
def torch_model():
    """The reference: sentence-transformers on PyTorch (the default backend is onnx-int8)."""
    return make_embeddings(EmbeddingConfig(backend="torch"))


@pytest.fixture(scope="session")
def texts(embeddings) -> list[str]:
    """Seed chunks as they are embedded (title + passage), plus edge cases: tiny, empty, far too long."""
    service = RagService(settings_for(PROJECT_ROOT / "unused"), embeddings=embeddings)
    chunks = [chunk.page_content for paper in load_papers([SEED_FILE]) for chunk in service.chunker.chunk(paper)]
    return chunks + ["GNN", "", "diffusion " * 600, "Über naïve Bayes — 量子 ✓"]


def cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_quantising_leaves_no_log_handler_behind(onnx_fp32, onnx_cache, tmp_path):
    """A new user's first answer builds the int8 export: no library's debug lines may follow it to stderr
    (ONNX Runtime's quantiser gave the root logger a handler, and bm25s's debug lines then printed).
    In a fresh process: pytest's own log handlers would hide it here."""
    import subprocess
    import sys

    script = (
        "import logging, sys; from pathlib import Path; from rag.index.onnx import quantize_onnx; "
        "quantize_onnx(Path(sys.argv[1]), Path(sys.argv[2])); "
        "library = logging.getLogger('some.library'); library.setLevel(logging.DEBUG); library.debug('chatter')"
    )
    source, target = next(onnx_cache.rglob("model.onnx")), tmp_path / "int8.onnx"
    run = subprocess.run([sys.executable, "-c", script, str(source), str(target)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert target.stat().st_size > 0
    assert "chatter" not in run.stderr


def test_fp32_onnx_gives_the_torch_vectors(torch_model, onnx_fp32, texts):
    reference = torch_model.embed_documents(texts)
    assert cosines(onnx_fp32.embed_documents(texts), reference).min() > 0.9999
    question = "How many reaction templates does RxnFlow use?"
    assert cosines([onnx_fp32.embed_query(question)], [torch_model.embed_query(question)])[0] > 0.9999


def test_int8_vectors_stay_close_to_the_torch_ones(torch_model, onnx_int8, texts):
    similarity = cosines(onnx_int8.embed_documents(texts), torch_model.embed_documents(texts))
    assert similarity.mean() >= 0.99
    assert similarity.min() >= 0.95  # the empty text ([CLS][SEP] only) is the worst case


@pytest.mark.parametrize("backend, agreement", [("onnx_fp32", 0.9999), ("onnx_int8", 0.95)])
def test_length_sorting_inside_a_batch_keeps_the_callers_order(request, backend, agreement, texts):
    # int8 vectors move a little with the other texts of their batch: dynamic quantisation scales
    # activations per batch. Each text still lands far nearer its own vector than any other text's.
    model = request.getfixturevalue(backend)
    vectors = np.asarray(model.embed_documents(texts))  # batch_size=4: many batches, each sorted by length
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    picked = list(range(6)) + list(range(len(texts) - 4, len(texts)))
    alone = np.asarray([model.embed_query(texts[i]) for i in picked])
    similarity = alone @ vectors.T
    assert similarity.argmax(axis=1).tolist() == picked
    assert similarity[np.arange(len(picked)), picked].min() > agreement
    reversed_order = np.asarray(model.embed_documents(texts[::-1]))[::-1]
    assert (reversed_order * vectors).sum(1).min() > agreement


def test_the_export_is_built_once_and_reused(onnx_cache, onnx_int8):
    [folder] = [path for path in onnx_cache.iterdir() if path.name.startswith("model-")]
    files = sorted(path.name for path in folder.iterdir())
    assert files == ["model-int8.onnx", "model.onnx"]  # no temporary files left behind
    stamps = {path: path.stat().st_mtime_ns for path in folder.iterdir()}
    again = make_embeddings(EmbeddingConfig(backend="onnx-int8", onnx_cache=onnx_cache))
    assert again.model_file == onnx_int8.model_file
    assert {path: path.stat().st_mtime_ns for path in folder.iterdir()} == stamps


@pytest.mark.slow
def test_a_first_export_says_one_line_and_draws_no_progress_bar(tmp_path):
    """What a new user's first command prints while the model is exported: one line, not transformers' bars."""
    import subprocess
    import sys

    script = (
        "from pathlib import Path; from rag.core.config import EmbeddingConfig; "
        "from rag.index.embeddings import make_embeddings; "
        f"make_embeddings(EmbeddingConfig(backend='onnx', onnx_cache=Path({str(tmp_path)!r})))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    exported = next(tmp_path.rglob("model.onnx"))
    assert done.stderr.splitlines() == [f"exporting the embedding model to ONNX once: {exported}"]


def test_a_failed_export_leaves_nothing_half_written(tmp_path, monkeypatch):
    import rag.index.onnx as onnx_embeddings

    def broken_export(model_dir, path):
        path.write_bytes(b"half a model")
        raise RuntimeError("exporter crashed")

    monkeypatch.setattr(onnx_embeddings, "export_onnx", broken_export)
    with pytest.raises(ModelError, match="cannot build the ONNX model .*exporter crashed"):
        make_embeddings(EmbeddingConfig(backend="onnx", onnx_cache=tmp_path))
    # only the weights' remembered digest (rag/core/built.py) is left
    assert [path.name for path in tmp_path.rglob("*") if path.is_file()] == ["digests.json"]


def test_another_model_or_changed_weights_get_their_own_export(tmp_path):
    import shutil

    from rag.index.onnx import model_fingerprint

    bundled = model_directory(EmbeddingConfig())
    copy = shutil.copytree(bundled, tmp_path / "model")
    cache = tmp_path / "cache"
    assert model_fingerprint(copy, cache) == model_fingerprint(bundled, cache)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    assert model_fingerprint(copy, cache) != model_fingerprint(bundled, cache)


def test_a_long_build_holds_up_only_builds_of_the_same_target(tmp_path):
    """The language model's conversion (a minute) in one thread, the embedding model's export in another: the
    export is not held up by it, while a second build of the same target waits and then finds it built."""
    import threading
    from pathlib import Path

    from rag.core.built import build_once

    release, calls = threading.Event(), []

    def slow(path):
        release.wait(timeout=30)
        path.write_text("slow")
        calls.append("slow")

    def quick(path):
        path.write_text("quick")
        calls.append("quick")

    slow_target, quick_target = tmp_path / "slow.onnx", tmp_path / "quick.onnx"
    threads = [threading.Thread(target=build_once, args=(slow_target, slow, Path.is_file)) for _ in range(2)]
    threads[0].start()
    while not list(tmp_path.glob(".slow.onnx.*")):  # the first slow build has begun
        threading.Event().wait(0.01)
    threads[1].start()
    build_once(quick_target, quick, Path.is_file)
    assert calls == ["quick"] and quick_target.read_text() == "quick"  # while the slow one still runs
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    assert calls == ["quick", "slow"] and slow_target.read_text() == "slow"  # built once


def test_a_file_rewritten_in_place_is_hashed_again_not_taken_from_the_remembered_digests(tmp_path):
    from rag.core.built import content_key

    weights, cache = tmp_path / "weights.bin", tmp_path / "cache"
    weights.write_bytes(b"a" * 1000)
    first = content_key("recipe=1", [weights], cache)
    assert len(json.loads((cache / "digests.json").read_text())) == 1  # remembered
    assert content_key("recipe=1", [weights], cache) == first
    assert content_key("recipe=2", [weights], cache) != first
    weights.write_bytes(b"b" * 1000)  # the same size, written later
    second = content_key("recipe=1", [weights], cache)
    assert second != first and len(json.loads((cache / "digests.json").read_text())) == 2
    (cache / "digests.json").write_text("{not json")  # a damaged memo: hashed again
    assert content_key("recipe=1", [weights], cache) == second


def test_int8_has_its_own_collection_and_fp32_shares_the_torch_one(tmp_path):
    def name(backend: str) -> str:
        return collection_name(settings_for(tmp_path, embedding={"backend": backend}))

    assert name("onnx") == name("torch") != name("onnx-int8")


def test_int8_retrieval_finds_the_same_seed_papers_as_fp32(make_service, onnx_int8, onnx_fp32):
    from rag.evaluation.questions import ServiceSystem, evaluate, load_questions

    questions = [q for q in load_questions(PROJECT_ROOT / "tests" / "eval" / "seed_questions.jsonl") if q.gold]
    int8 = make_service(index="int8", embedding={"backend": "onnx-int8"})
    int8.embeddings = onnx_int8
    int8.ingest([SEED_FILE])
    assert int8.index.paper_count() == len(seed_abstracts())
    fp32 = make_service(index="fp32", embedding={"backend": "onnx"})
    fp32.embeddings = onnx_fp32
    fp32.ingest([SEED_FILE])
    fp32_report = evaluate(ServiceSystem(fp32), questions, k=5).metrics()
    int8_report = evaluate(ServiceSystem(int8), questions, k=5).metrics()
    # A question or so may swap places; the int8 model must not do worse overall.
    assert int8_report["hit@1"] >= fp32_report["hit@1"] - 1 / len(questions)
    assert int8_report["mrr"] >= fp32_report["mrr"] - 0.02
    assert int8_report["recall@5"] >= fp32_report["recall@5"] - 0.02


def test_a_sentence_s_vector_does_not_depend_on_what_was_embedded_before_it(embeddings):
    """The int8 model quantizes activations over a batch: embedded beside others, a sentence got another vector,
    and an answer depended on what the cache already held. The cache embeds each text alone."""
    from rag.index.embeddings import CachedEmbeddings

    sentence = "We propose a mixture of experts whose router picks experts for each token of an image."
    others = [
        "Short.",
        "Graph neural networks pass messages between the nodes of a molecule and read out its energy and forces.",
    ]
    beside = np.asarray(embeddings.embed_documents([*others, sentence])[-1])
    alone = np.asarray(embeddings.embed_documents([sentence])[0])
    assert np.abs(beside - alone).max() > 1e-3  # the model itself: batch-dependent
    first, second = CachedEmbeddings(embeddings), CachedEmbeddings(embeddings)
    second.embed_documents(others)  # another history
    assert first.embed_documents([*others, sentence])[-1] == second.embed_documents([sentence, *others])[0]
    assert first.embed_documents([sentence])[0] == alone.astype(np.float32).tolist()


def test_the_sentence_cache_gives_the_models_vectors_and_embeds_each_text_once(onnx_fp32):
    """An answer and its citation check embed the same source sentences: the second asks the model nothing."""
    from rag.index.embeddings import CachedEmbeddings

    asked: list[str] = []

    class Counting:  # the real model, noting what it is asked
        def embed_documents(self, texts):
            asked.extend(texts)
            return onnx_fp32.embed_documents(texts)

    cache = CachedEmbeddings(Counting(), size=3)
    sentences = ["Flows over reaction templates.", "A second sentence.", "Flows over reaction templates."]
    first = cache.embed_documents(sentences)
    assert first == [onnx_fp32.embed_documents([s])[0] for s in sentences]  # the model's float32 vectors, exactly
    assert asked == sentences[:2]  # a repeat within one call is embedded once
    assert cache.embed_documents(sentences[1:]) == first[1:] and asked == sentences[:2]
    cache.embed_documents(["three", "four"])  # past `size`: the least recently used goes ("A second...")
    cache.embed_documents(sentences)
    assert asked[-1] == sentences[1] and asked.count(sentences[0]) == 1 and len(cache._vectors) == 3
