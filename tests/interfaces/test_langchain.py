"""The LangChain parts: the paper retriever passes LangChain's own standard retriever tests and gives what
the service retrieves; the answer chain works as a Runnable inside someone else's LCEL chain."""

from __future__ import annotations

import asyncio

import pytest
from conftest import write_jsonl
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.types import Answer
from rag.langchain import AnswerChain, PaperRetriever

RXNFLOW = "How many reaction templates does RxnFlow use?"
HANABI = "Which agent learns to play Hanabi with unfamiliar partners?"


class TestPaperRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' suite: k in the constructor and in invoke, Documents from invoke and ainvoke."""

    @pytest.fixture(autouse=True)
    def _over_the_seeds(self, seeded):
        self.service = seeded

    @property
    def retriever_constructor(self) -> type[PaperRetriever]:
        return PaperRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"service": self.service}

    @property
    def retriever_query_example(self) -> str:
        return RXNFLOW


def test_documents_are_the_papers_the_service_retrieves(seeded):
    documents = PaperRetriever(service=seeded, k=4).invoke(HANABI)
    sources = seeded.retrieve(HANABI, k=4)
    assert [d.id for d in documents] == [s.paper_id for s in sources]
    assert [d.page_content for d in documents] == [s.text for s in sources]
    first = documents[0].metadata
    assert first["paper_id"] == sources[0].paper_id and first["score"] == sources[0].score
    assert {"title", "status", "primary_area", "url", "authors", "github"} <= set(first)
    assert first["title"] == sources[0].title and "passage" not in first


def test_filters_from_the_constructor_or_the_call(seeded, make_service, tmp_path):
    service = make_service()
    papers = [
        {"id": f"{status}-{n}", "title": f"Diffusion study {n}", "status": status,
         "abstract": f"We study diffusion models for protein folding, {status} variant {n}, and report results."}
        for status in ("Oral", "Spotlight", "Poster") for n in range(3)
    ]  # fmt: skip
    service.ingest([write_jsonl(tmp_path / "papers.jsonl", papers)])
    oral = PaperRetriever(service=service, k=5, filters={"status": ["Oral"]}).invoke("diffusion protein folding")
    assert sorted(d.id for d in oral) == ["Oral-0", "Oral-1", "Oral-2"]
    any_status = PaperRetriever(service=service, k=9)
    assert len(any_status.invoke("diffusion protein folding")) == 9
    spotlight = any_status.invoke("diffusion protein folding", filters=Filters(status=("Spotlight",)))
    assert sorted(d.metadata["status"] for d in spotlight) == ["Spotlight"] * 3
    assert PaperRetriever(service=seeded, filters={"status": ["Oral"]}).invoke(RXNFLOW) == []  # no seed is an oral


def test_bad_input_raises_the_usual_exceptions(seeded):
    with pytest.raises(InputError, match="empty"):
        PaperRetriever(service=seeded).invoke("  ")
    with pytest.raises(InputError, match="stats"):  # one InputError naming the field (issue 65)
        PaperRetriever(service=seeded).invoke(RXNFLOW, filters={"stats": ["Oral"]})
    with pytest.raises(ValidationError):
        PaperRetriever(service=seeded, k=0)


def test_the_answer_chain_is_a_runnable_inside_another_chain(seeded):
    chain = AnswerChain(service=seeded)
    expected = seeded.answer(RXNFLOW)
    assert chain.invoke(RXNFLOW) == expected
    assert chain.batch([RXNFLOW, HANABI]) == [expected, seeded.answer(HANABI)]
    assert asyncio.run(chain.ainvoke({"question": RXNFLOW, "k": 2})) == seeded.answer(RXNFLOW, k=2)
    *pieces, final = chain.stream(RXNFLOW)
    assert all(isinstance(p, str) for p in pieces) and pieces and final == expected

    theirs = {"question": RunnablePassthrough()} | chain | RunnableLambda(lambda a: (a.text, a.cited))
    assert theirs.invoke(RXNFLOW) == (expected.text, expected.cited)
    assert list(theirs.stream(RXNFLOW)) == [(expected.text, expected.cited)]  # the next step gets the Answer
    assert isinstance(chain.invoke({"question": HANABI, "history": [(RXNFLOW, expected.text)]}), Answer)
    with pytest.raises(InputError):
        chain.invoke({"text": RXNFLOW})


def test_documents_feed_a_prompt_like_any_retriever(seeded):
    retriever = PaperRetriever(service=seeded, k=2)
    as_context = RunnableLambda(lambda docs: "\n\n".join(f"{d.metadata['title']}: {d.page_content}" for d in docs))
    context = retriever | as_context
    text = context.invoke(RXNFLOW)
    assert "RxnFlow" in text and isinstance(retriever.invoke(RXNFLOW)[0], Document)
