"""`RagService` wires config -> embeddings -> store -> retriever -> provider, once.

The CLI, the `answer()` functions and the UI all go through it. Each part is built on first use,
so a command that needs no model loads none; tests pass their own parts to the constructor.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

from rag.citations import CitationChecker
from rag.config import BUNDLED_SEEDS, Settings, load_config
from rag.errors import InputError, ModelError
from rag.ingest import IngestReport, ingest_papers
from rag.papers import load_papers
from rag.providers import ExtractiveProvider, Provider, make_provider
from rag.results import Answer, Source
from rag.retrieval import Filters, group_by_paper
from rag.store import PaperIndex, collection_name, open_client

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
FOLLOW_UP = re.compile(r"\b(it|its|they|their|them|this|that|these|those|the paper|the method)\b", re.IGNORECASE)


class RagService:
    """The product's one entry point: ingest papers, retrieve them, answer questions."""

    def __init__(
        self,
        config: str | Path | Settings | None = None,
        *,
        embeddings: Embeddings | None = None,
        client=None,
        provider: Provider | None = None,
    ):
        self.config = load_config(config)
        if embeddings is not None:
            self.embeddings = embeddings
        if client is not None:
            self.client = client
        if provider is not None:
            self.provider = provider

    # -- parts, built on first use ----------------------------------------------------------

    @cached_property
    def embeddings(self) -> Embeddings:
        from rag.embeddings import make_embeddings

        return make_embeddings(self.config.embedding)

    @cached_property
    def client(self):
        return open_client(self.config.vectorstore)

    @cached_property
    def index(self) -> PaperIndex:
        store = self.config.vectorstore
        where = f"at {store.path}" if store.mode == "persistent" else f"on {store.host}:{store.port}"
        return PaperIndex(self.client, collection_name(self.config), self.embeddings, where)

    @cached_property
    def chunker(self):
        from rag.chunking import Chunker
        from rag.embeddings import load_tokenizer

        tokenizer, max_length = load_tokenizer(self.config.embedding)
        return Chunker(tokenizer, max_length, self.config.chunking)

    @cached_property
    def provider(self) -> Provider:
        return make_provider(self.config, self.embeddings)

    @cached_property
    def extractive(self) -> ExtractiveProvider:
        return ExtractiveProvider(self.embeddings, self.config.answer.extractive_sentences)

    @cached_property
    def checker(self) -> CitationChecker:
        return CitationChecker(self.embeddings, self.config.answer.support_threshold)

    @cached_property
    def retrieval_chain(self) -> Runnable:
        """LCEL: {question, history, k, filters} -> the same plus `standalone` and `sources`."""
        return RunnablePassthrough.assign(standalone=RunnableLambda(self._standalone)) | RunnablePassthrough.assign(
            sources=RunnableLambda(lambda x: self.retrieve(x["standalone"], x.get("k"), x.get("filters")))
        )

    # -- ingest -----------------------------------------------------------------------------

    def ingest(
        self, paths: Iterable[str | Path] = (), prune: bool = False, strict: bool = False, progress: bool = False
    ) -> IngestReport:
        """Ingest paper files (default: the bundled seeds). Bad lines are reported, not fatal, unless strict."""
        paths = list(paths) or [BUNDLED_SEEDS]
        report = IngestReport()
        batch = self.config.ingest.batch_size
        records = load_papers(paths, strict=strict, on_problem=report.problems.append)
        if not progress:
            return ingest_papers(
                records, self.index, self.chunker, prune=prune, strict=strict, batch_size=batch, report=report
            )
        from tqdm import tqdm

        total = sum(1 for _ in load_papers(paths))
        with tqdm(total=total, unit="paper", desc="ingest", file=sys.stderr, dynamic_ncols=True) as bar:
            return ingest_papers(
                records, self.index, self.chunker, prune, strict, batch, on_progress=bar.update, report=report
            )

    def ensure_index(self) -> None:
        """A fresh checkout answers at once: an empty index gets the bundled seeds first."""
        if self.index.paper_count() == 0:
            self.ingest(progress=True)

    def stats(self) -> dict:
        return {
            "papers": self.index.paper_count(),
            "chunks": self.index.chunk_count(),
            "collection": self.index.name,
            "index": self.index.where,
            "embedding": self.config.embedding.model,
            "provider": self.config.llm.provider,
            "config": self.config.name,
        }

    # -- questions --------------------------------------------------------------------------

    def retrieve(self, question: str, k: int | None = None, filters: Filters | None = None) -> list[Source]:
        """The top-k papers for a question, one Source each, best first."""
        question = self.clean_question(question)
        self.ensure_index()
        k = k or self.config.retrieval.k
        filters = filters or Filters()
        fetch_k = max(self.config.retrieval.fetch_k, 4 * k) * (4 if filters.author else 1)
        hits = [hit for hit in self.index.search(question, fetch_k, filters.where()) if filters.admits(hit[0].metadata)]
        return group_by_paper(hits, k, self.config.retrieval.passages_per_paper)

    def answer(self, question: str, **options) -> Answer:
        """A cited answer; see `stream_answer` for the options."""
        *_, final = self.stream_answer(question, **options)
        return final

    def stream_answer(
        self,
        question: str,
        history: list[tuple[str, str]] | None = None,
        k: int | None = None,
        filters: Filters | None = None,
    ) -> Iterator[str | Answer]:
        """Yield answer text in pieces as the model writes it, then the final, checked `Answer`."""
        question = self.clean_question(question)
        found = self.retrieval_chain.invoke(
            {"question": question, "history": history or [], "k": k, "filters": filters}
        )
        sources, standalone = found["sources"], found["standalone"]
        stamp = {"question": question, "standalone_question": standalone, "config": self.config.name}
        if not sources or sources[0].score < self.config.retrieval.min_score:
            yield Answer(
                text=refusal_text(sources, self.config.retrieval.min_score), sources=sources, refused=True, **stamp
            )
            return
        pieces, fallback = [], None
        try:
            for piece in self.provider.stream(standalone, sources):
                pieces.append(piece)
                yield piece
        except ModelError as err:
            if self.config.llm.fallback == "none":
                raise
            fallback = str(err)
            pieces = [self.extractive.answer_text(standalone, sources)]
        text, checks = self.checker.check("".join(pieces), sources)
        yield Answer(text=text, sources=sources, fallback=fallback, checks=checks, **stamp)

    def clean_question(self, question: str) -> str:
        """The question without control characters; empty or over-long questions are an InputError."""
        question = CONTROL_CHARS.sub(" ", question or "").strip()
        if not question:
            raise InputError("the question is empty")
        limit = self.config.answer.max_question_chars
        if len(question) > limit:
            raise InputError(f"the question is {len(question):,} characters long; the limit is {limit:,}")
        return question

    def _standalone(self, inputs: dict) -> str:
        """Rewrite a follow-up into a question that retrieval can answer alone."""
        question, history = inputs["question"], inputs["history"]
        if not history or not FOLLOW_UP.search(question):
            return question
        try:
            rewritten = self.provider.rewrite(question, history)
        except ModelError:
            rewritten = None
        return rewritten or f"{history[-1][0]} {question}"


def refusal_text(sources: list[Source], threshold: float) -> str:
    if not sources:
        return "The indexed abstracts don't cover this question: the index holds no matching papers."
    closest = "; ".join(f"“{source.title}” ({source.paper_id})" for source in sources[:3])
    return (
        f"The indexed abstracts don't cover this question (best match {sources[0].score:.2f}, "
        f"below the {threshold:.2f} threshold). Closest papers: {closest}."
    )
