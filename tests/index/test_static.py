"""The static first stage (`embedding.backend: static`): a model distilled from the bundled one makes the index's
vectors, BM25 and they find the candidates, and the full model scores the papers kept (rag/index/static.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clirun import rag
from conftest import SEED_FILE, seed_abstracts, settings_for, write_jsonl

from rag.core.config import PROJECT_ROOT
from rag.index.embeddings import make_index_embeddings
from rag.index.static import DIMS, StaticEmbeddings
from rag.service import RagService


@pytest.fixture(scope="module")
def static_service(tmp_path_factory) -> RagService:
    """The seeds in an index of static vectors, built as a user builds one (the config's backend, no model passed)."""
    service = RagService(settings_for(tmp_path_factory.mktemp("static"), embedding={"backend": "static"}))
    service.ingest([SEED_FILE])
    return service


def test_the_static_model_is_distilled_once_beside_the_export_and_gives_unit_vectors(static_service, embeddings):
    static = static_service.index_embeddings
    assert isinstance(static, StaticEmbeddings)
    built = next(static_service.config.embedding.onnx_cache.expanduser().glob(f"*/static-{DIMS}-r*"))
    stamp = (built / "config.json").stat().st_mtime_ns
    again = make_index_embeddings(static_service.config.embedding, embeddings)
    assert isinstance(again, StaticEmbeddings) and (built / "config.json").stat().st_mtime_ns == stamp
    texts = ["Graph neural networks for molecules.", "", "diffusion " * 600, "Über naïve Bayes — 量子 ✓"]
    vectors = np.asarray(again.embed_documents(texts))
    assert vectors.shape == (4, DIMS)
    assert np.allclose(np.linalg.norm(vectors[[0, 2, 3]], axis=1), 1.0, atol=1e-5)
    alone = np.asarray(again.embed_query(texts[0]))
    assert np.allclose(alone, vectors[0])  # a text's vector is its own, whatever is embedded beside it


def test_static_vectors_are_model2vec_s_own_for_the_folder_it_saved(static_service):
    """The question path computes a text's static vector with numpy; model2vec, loading the folder its own way,
    is the reference: the same vectors for abstracts, a long text cut short, an empty one and unknown pieces."""
    from model2vec import StaticModel

    static = static_service.index_embeddings
    assert isinstance(static, StaticEmbeddings)
    built = next(static_service.config.embedding.onnx_cache.expanduser().glob(f"*/static-{DIMS}-r*"))
    texts = [*seed_abstracts(), "", "??? ✓ 量子", " ".join(seed_abstracts()), "Über naïve Bayes"]
    reference = StaticModel.from_pretrained(built).encode(texts, max_length=static.tokenizer.truncation["max_length"])
    assert np.allclose(np.asarray(static.embed_documents(texts)), reference, atol=1e-6)


def test_a_paper_s_title_finds_its_abstract_by_static_vectors_alone(static_service):
    """The distilled vectors carry meaning: each seed title's nearest abstract, among all 19, is mostly its own."""
    papers = [json.loads(line) for line in SEED_FILE.read_text().splitlines()]
    static = static_service.index_embeddings
    titles = np.asarray(static.embed_documents([paper["title"] for paper in papers]))
    abstracts = np.asarray(static.embed_documents([paper["abstract"] for paper in papers]))
    own = (titles @ abstracts.T).argmax(axis=1) == np.arange(len(papers))
    assert own.mean() >= 0.8, own


def test_a_static_index_finds_the_seed_papers_as_the_int8_one_does(static_service, make_service):
    """With the full model scoring the candidates, the static index ranks the seed questions' papers as well as
    the int8 index, and a source's score is the full model's cosine (refusal is judged by it)."""
    from rag.evaluation.questions import ServiceSystem, evaluate, load_questions

    questions = [q for q in load_questions(PROJECT_ROOT / "tests" / "eval" / "seed_questions.jsonl") if q.gold]
    int8 = make_service(index="int8")
    int8.ingest([SEED_FILE])
    assert static_service.index.paper_count() == int8.index.paper_count() == len(seed_abstracts())
    static_report = evaluate(ServiceSystem(static_service), questions, k=5).metrics()
    int8_report = evaluate(ServiceSystem(int8), questions, k=5).metrics()
    assert static_report["mrr"] >= int8_report["mrr"] - 0.02
    assert static_report["recall@5"] >= int8_report["recall@5"] - 0.02
    question = "How many reaction templates does RxnFlow use?"
    (static_top, *_), (int8_top, *_) = static_service.retrieve(question), int8.retrieve(question)
    assert static_top.paper_id == int8_top.paper_id
    assert static_top.score == pytest.approx(int8_top.score, abs=0.03)  # int8 quantises a batch at ingest


def test_an_index_built_static_is_read_static_and_answers_from_the_command_line(tmp_path):
    """`rag ingest` with the backend set, then `rag ask` and `rag stats` without it, as a user types them."""
    index = tmp_path / "index"
    built = rag("ingest", str(SEED_FILE), index=index, RAG_EMBEDDING__BACKEND="static")
    assert built.returncode == 0, built.stderr
    asked = rag("ask", "How many reaction templates does RxnFlow use?", "--json", index=index)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert "71 reaction templates" in answer["text"], answer["text"]
    assert answer["sources"][0]["title"] == "Generative Flows on Synthetic Pathway for Drug Design"
    stats = rag("stats", index=index)
    assert "embedding: all-MiniLM-L6-v2 (static)" in stats.stdout.splitlines(), stats.stdout
    again = rag("ingest", str(SEED_FILE), index=index)  # adds no paper: nothing new for the map to place
    assert again.returncode == 0, again.stderr
    assert "0 added" in again.stdout and "19 unchanged" in again.stdout, again.stdout


def test_related_papers_of_a_static_index_are_ranked_by_bm25_not_by_the_static_neighbours(static_service):
    """Static vectors' nearest neighbours are seldom a paper's related ones (docs/benchmarks.md), so the fused
    ranking of a static index is BM25's; the model scores the papers' sentences as in any index."""
    from rag.answering.related import find_related

    paper = "Generative Flows on Synthetic Pathway for Drug Design"
    fused = find_related(static_service, paper, k=5)
    bm25 = find_related(static_service, paper, k=5, method="bm25")
    dense = find_related(static_service, paper, k=5, method="dense")
    assert [p.source.paper_id for p in fused.papers] == [p.source.paper_id for p in bm25.papers]
    assert [p.source.paper_id for p in fused.papers] != [p.source.paper_id for p in dense.papers]


def test_complete_gives_a_static_index_the_model_s_vectors_and_a_service_that_had_it_open_moves_over(tmp_path):
    """`rag ingest --complete`, typed as a user types it, while a service in this process has the static index open:
    the store then reads as the int8 index of the same papers, and the open service answers from it at its next
    question. A second --complete is a one-line error."""
    index = tmp_path / "index"
    assert rag("ingest", str(SEED_FILE), index=index, RAG_EMBEDDING__BACKEND="static").returncode == 0
    service = RagService(settings_for(index))
    question = "How many reaction templates does RxnFlow use?"
    assert service.stats()["embedding"].endswith("(static)")
    before = service.answer(question)
    done = rag("ingest", "--complete", "--quiet", index=index)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"37 chunks embedded for {len(seed_abstracts())} papers"), done.stdout
    after = service.answer(question)
    assert service.stats()["embedding"].endswith("(onnx-int8)") and service.index.chunk_count() == 37
    assert after.text == before.text and after.sources[0].paper_id == before.sources[0].paper_id
    stats = rag("stats", index=index)
    assert "embedding: all-MiniLM-L6-v2 (onnx-int8)" in stats.stdout.splitlines(), stats.stdout
    again = rag("ingest", "--complete", index=index)
    assert again.returncode != 0 and "holds the model's own vectors" in again.stderr, again.stderr


def test_a_stopped_completion_leaves_the_static_index_answering_and_the_next_run_embeds_only_the_rest(
    tmp_path, monkeypatch
):
    """Half the chunks written, then the run stops: the store still reads as the static index (the half-built one
    is never read as whole); the next run embeds only what is missing, then the store reads as int8."""
    from rag.commands import complete_static
    from rag.ingest import complete as completing

    index = tmp_path / "index"
    RagService(settings_for(index, embedding={"backend": "static"})).ingest([SEED_FILE])
    monkeypatch.setattr(completing, "PAGE", 10)
    service = RagService(settings_for(index))
    assert service.choice.exists  # the index's setup taken (static) before the model is swapped
    model, calls = service.embeddings, []

    class Stopping:
        def embed_documents(self, texts):
            calls.append(len(texts))
            if len(calls) == 2:
                raise KeyboardInterrupt
            return model.embed_documents(texts)

    service.embeddings = Stopping()
    with pytest.raises(KeyboardInterrupt):
        complete_static(service, progress=False)
    reopened = RagService(settings_for(index))
    assert reopened.stats()["embedding"].endswith("(static)") and reopened.stats()["papers"] == 19
    summary = complete_static(reopened, progress=False)
    assert summary.startswith("27 chunks embedded (10 written by an earlier run) for 19 papers"), summary
    assert RagService(settings_for(index)).stats()["embedding"].endswith("(onnx-int8)")


def test_a_static_index_s_map_places_papers_by_their_titles_too_and_an_older_map_is_laid_out_again(tmp_path):
    """A static index's map holds, for each paper, its static vectors' mean and the model's vector of its title
    (the static vectors alone made a poor map: docs/benchmarks.md). A map stored with static vectors alone, as
    before, is laid out again at the next ingest, and a paper added after it is placed among the others."""
    from rag.answering.paper_map import read_map, update_map
    from rag.index.paper_map import CHUNKS, TITLED, MapStore

    index = tmp_path / "index"
    seeds = [json.loads(line) for line in SEED_FILE.read_text().splitlines()]
    write_jsonl(tmp_path / "first.jsonl", seeds[:-1])
    service = RagService(settings_for(index, embedding={"backend": "static"}))
    service.ingest([tmp_path / "first.jsonl"])
    update_map(service.index, rebuild=True)  # a map as stored before: the static vectors alone
    assert MapStore(service.index).vectors() == CHUNKS
    report = service.ingest([tmp_path / "first.jsonl"])
    assert report.map.startswith(f"map: {len(seeds) - 1} papers laid out"), report.map
    store = MapStore(service.index)
    (stored,) = store.collection.get(limit=1, include=["embeddings"])["embeddings"]
    assert store.vectors() == TITLED and len(stored) == DIMS + len(service.embeddings.embed_query("a title"))
    added = rag("ingest", str(write_jsonl(tmp_path / "last.jsonl", seeds[-1:])), "--quiet", index=index)
    assert added.returncode == 0 and "map: 1 placed" in added.stdout + added.stderr, added.stdout + added.stderr
    assert {point.paper_id for point in read_map(RagService(settings_for(index))).points} == {s["id"] for s in seeds}
