"""`RagService` wires config -> embeddings -> store -> retriever -> provider, once.

The CLI, the `answer()` functions and the UI all go through it. Each part is built on first use,
so a command that needs no model loads none; tests pass their own parts to the constructor.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from rag.answering.citations import CitationChecker, kept_text
from rag.answering.evidence import (
    EvidencePicker,
    evidence_sources,
    extractive_answer,
    key_tokens,
    renumbered,
    set_aside,
)
from rag.answering.providers import Provider, make_provider
from rag.core.config import BUNDLED_SEEDS, Settings, checked_k, load_config
from rag.core.errors import InputError, ModelError, RagError
from rag.core.filters import PICKERS, Filters
from rag.core.types import Answer, Source
from rag.index.lexical import LexicalState
from rag.index.locks import SharedExclusiveLock
from rag.index.store import PaperIndex, collection_name, open_client
from rag.ingest.papers import load_papers
from rag.ingest.pipeline import IngestReport, ingest_papers
from rag.retrieval.refusal import refusal_reason
from rag.retrieval.search import Retriever

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.runnables import Runnable

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
log = logging.getLogger(__name__)
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
        # Another process may write to an on-disk index this service reads (see `reading`).
        self._reopenable = client is None and self.config.vectorstore.mode == "persistent"
        self._access = SharedExclusiveLock()
        self._seen_state = None  # the index's LexicalState when opened or last written here
        self._writing = 0  # ingests in progress in this process
        self._has_papers = False  # seen a non-empty index (see ensure_index)
        if embeddings is not None:
            self.embeddings = embeddings
        if client is not None:
            self.client = client
        if provider is not None:
            self.provider = provider

    # -- parts, built on first use ----------------------------------------------------------

    @cached_property
    def embeddings(self) -> Embeddings:
        from rag.index.embeddings import make_embeddings

        return make_embeddings(self.config.embedding)

    @cached_property
    def client(self):
        return open_client(self.config.vectorstore)

    @cached_property
    def index(self) -> PaperIndex:
        store = self.config.vectorstore
        where = f"at {store.path}" if store.mode == "persistent" else f"on {store.host}:{store.port}"
        # Chroma's file, whose stat tells of writes (PaperIndex.lexical_state); unknown for a client passed in.
        database = store.path / "chroma.sqlite3" if self._reopenable else None
        index = PaperIndex(self.client, collection_name(self.config), self.embeddings, where, database)
        if self._reopenable:
            self._seen_state = index.lexical_state()
        return index

    @cached_property
    def lexical(self):
        """The BM25 index, beside the vector index (persistent) or in a local cache (Chroma server)."""
        from rag.index.lexical import LexicalStore

        store, name = self.config.vectorstore, collection_name(self.config)
        if store.mode == "persistent":
            return LexicalStore(self.index, store.path / f"{name}-bm25")
        server = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{store.host}-{store.port}-{store.tenant}-{store.database}")
        return LexicalStore(self.index, self.config.retrieval.lexical_cache / server / f"{name}-bm25")

    @cached_property
    def retriever(self) -> Retriever:
        return Retriever(self.index, self.lexical, self.embeddings, self.config.retrieval)

    @cached_property
    def chunker(self):
        from rag.index.embeddings import load_tokenizer
        from rag.ingest.chunking import Chunker

        return Chunker(load_tokenizer(self.config.embedding), self.config.chunking)

    @cached_property
    def sentence_embeddings(self) -> Embeddings:
        """The embeddings, remembering sentences: an answer and its citation check embed the same ones."""
        from rag.index.embeddings import CachedEmbeddings

        return CachedEmbeddings(self.embeddings)

    @cached_property
    def provider(self) -> Provider:
        return make_provider(self.config, self.sentence_embeddings)

    @cached_property
    def picker(self) -> EvidencePicker:
        return EvidencePicker(self.sentence_embeddings, self.config.answer, self.config.retrieval)

    @cached_property
    def checker(self) -> CitationChecker:
        return CitationChecker(self.sentence_embeddings, self.config.answer.support_threshold)

    @cached_property
    def retrieval_chain(self) -> Runnable:
        """`find_sources` as a LangChain Runnable, for LCEL chains built around the service."""
        # Not used to answer: LCEL's machinery (callbacks, tracers, a thread per step) costs a cold
        # `rag ask` half a second of imports and each question a thread.
        from langchain_core.runnables import RunnableLambda

        return RunnableLambda(self.find_sources)

    # -- ingest -----------------------------------------------------------------------------

    def ingest(
        self, paths: Iterable[str | Path] = (), prune: bool = False, strict: bool = False, progress: bool = False
    ) -> IngestReport:
        """Ingest paper files (default: the bundled seeds). Bad lines are reported, not fatal, unless strict."""
        with self._writes_here():
            return self._ingest(list(paths), prune, strict, progress)

    def _ingest(self, paths: list[str | Path], prune: bool, strict: bool, progress: bool) -> IngestReport:
        paths = paths or [BUNDLED_SEEDS]
        self.index.paper_count()  # reach the store first: if it is down, fail before any progress bar
        report = IngestReport()
        batch = self.config.ingest.batch_size
        limits = self.config.ingest
        records = load_papers(paths, strict=strict, on_problem=report.problems.append, limits=limits)
        if not progress:
            return ingest_papers(
                records, self.index, self.chunker, prune=prune, strict=strict, batch_size=batch, report=report
            )
        from tqdm import tqdm

        total = sum(1 for _ in load_papers(paths, limits=limits))
        with tqdm(total=total, unit="paper", desc="ingest", file=sys.stderr, dynamic_ncols=True) as bar:
            return ingest_papers(
                records, self.index, self.chunker, prune, strict, batch, on_progress=bar.update, report=report
            )

    def ensure_index(self) -> None:
        """A fresh checkout answers at once: an empty index gets the bundled seeds first."""
        if self._has_papers:
            return
        with self._access.shared():
            empty = self.index.paper_count() == 0
        if empty:
            self.ingest(progress=True)
        self._has_papers = True  # an index is not emptied under a running service: check once

    def stats(self) -> dict:
        with self.reading():
            papers, chunks = self.index.paper_count(), self.index.chunk_count()
        return {
            "papers": papers,
            "chunks": chunks,
            "collection": self.index.name,
            "index": self.index.where,
            "embedding": self.config.embedding.model,
            "provider": self.config.llm.provider,
            "config": self.config.name,
        }

    def model_label(self) -> str:
        """Which model answers, e.g. 'llamacpp:SmolLM2-135M-Instruct.Q4_1'; loads it if not loaded yet.

        A model that fails to load is named with the reason, and what answers instead.
        """
        try:
            return self.provider.label
        except RagError as err:
            instead = "extractive answers instead" if self.config.llm.fallback == "extractive" else "no answers"
            return f"{self.config.llm.provider} (unavailable: {err}; {instead})"

    def paper(self, paper_id: str) -> dict | None:
        """One stored paper, {paper_id, title, abstract, authors, status, primary_area, url, github}, or None."""
        self.ensure_index()
        with self.reading():
            found = self.index.paper(paper_id)
        if found is None:
            return None
        abstract, meta = found
        described = Source(paper_id, meta.get("title", ""), abstract, 0.0, meta).to_payload()
        return {"paper_id": paper_id, "title": described["title"], "abstract": abstract} | {
            key: described[key] for key in ("authors", "status", "primary_area", "url", "github")
        }

    def filter_choices(self) -> dict[str, list[str]]:
        """For each filter with a picker (status, primary area), the values stored papers have."""
        with self.reading():
            stored = self.index.distinct_values(spec.stored for spec in PICKERS)
        return {spec.name: stored[spec.stored] for spec in PICKERS}

    # -- an index other processes write to ------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[LexicalState | None]:
        """Hold the index open for one read; first re-open it if another process wrote to it.

        Chroma's on-disk client loads the vector index (HNSW) once and never re-reads it, so chunks
        that `rag ingest` writes from another process stay invisible to vector search while counts
        and `get`s (SQLite) already see them (chroma-core/chroma#3792). Every completed ingest batch
        stamps the papers collection with a new revision, so one cheap look-up tells whether
        someone else wrote since this client was opened; if so, it is closed and opened again.
        Yields the state it read (None when it read none), so the BM25 check need not read it again.
        """
        state = None
        if self._reopenable and not self._writing and "index" in self.__dict__:
            with self._access.shared():
                state = self.index.lexical_state()
            if state != self._seen_state:
                self._reopen()
                state = None  # moved on: whoever needs it reads it again
        with self._access.shared():
            yield state

    def _reopen(self) -> None:
        with self._access.exclusive():  # waits for the questions in flight on the old client
            if self._writing or self.index.lexical_state() == self._seen_state:
                return  # written here after all, or another question re-opened it meanwhile
            old = self.client
            for part in ("retriever", "lexical", "index", "client"):
                self.__dict__.pop(part, None)
            old.close()  # the last user of its on-disk index in this process: frees what it loaded
            log.info("the index at %s changed on disk; re-opened it", self.config.vectorstore.path)
            self.index  # noqa: B018 - opens the new client and records the state it sees

    @contextmanager
    def _writes_here(self) -> Iterator[None]:
        """An ingest by this service: its own writes need no re-open, and nothing closes the client under it."""
        with self._access.shared():
            self._writing += 1
            try:
                yield
            finally:
                self._writing -= 1
                if self._reopenable:
                    self._seen_state = self.index.lexical_state()

    # -- questions --------------------------------------------------------------------------

    def retrieve(self, question: str, k: int | None = None, filters: Filters | None = None) -> list[Source]:
        """The top-k papers for a question, one Source each, best first."""
        question = self.clean_question(question)
        k = self.config.retrieval.k if k is None else checked_k(k)
        self.ensure_index()
        with self.reading() as state:
            return self.retriever.retrieve(question, k, filters or Filters(), state)

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
        model_failures: list[str] = []  # filled by _standalone when the model fails to rewrite
        found = self.find_sources(
            {"question": question, "history": history or [], "k": k, "filters": filters, "failures": model_failures}
        )
        sources, standalone = found["sources"], found["standalone"]
        stamp = {"question": question, "standalone_question": standalone, "config": self.config.name}
        reason = refusal_reason(sources, self.config.retrieval)
        evidence = [] if reason else self.picker.pick(standalone, sources)
        if not reason and not evidence:
            reason = "no sentence of the closest abstracts answers it"
        if reason:
            yield Answer(text=refusal_text(sources), sources=sources, refused=True, refusal_reason=reason, **stamp)
            return
        extractive = extractive_answer(standalone, evidence, sources)
        if self.config.llm.provider == "extractive":  # no model to wait for (or to fail loading)
            answer = self._checked(extractive, sources, answered_by="extractive", **stamp)
            yield answer.text  # streamed in one piece, as every consumer of the stream expects some text
            yield answer
            return
        try:
            if model_failures:  # it just failed on the rewrite: don't wait for it a second time
                raise ModelError(model_failures[0])
            pieces = []
            for piece in self.provider.stream(standalone, evidence_sources(evidence, sources)):
                pieces.append(piece)
                yield piece
        except ModelError as err:
            if self.config.llm.fallback == "none":
                raise
            yield self._checked(extractive, sources, answered_by="extractive", fallback=str(err), **stamp)
            return
        text, checks = self.checker.check(renumbered("".join(pieces), evidence), sources)
        replaced = set_aside(checks, key_tokens(standalone, evidence, sources))
        if replaced:
            yield self._checked(extractive, sources, answered_by="extractive", replaced=replaced, **stamp)
            return
        kept = [check for check in checks if check.supported]  # what its sources don't back is removed
        yield Answer(text=kept_text(kept), sources=sources, checks=kept, answered_by="model", **stamp)

    def _checked(self, text: str, sources: list[Source], **fields) -> Answer:
        text, checks = self.checker.check(text, sources)
        return Answer(text=text, sources=sources, checks=checks, **fields)

    def find_sources(self, inputs: dict) -> dict:
        """{question, history, k, filters} -> the same plus `standalone` (the question made
        self-contained) and `sources` (what retrieval found for it)."""
        standalone = self._standalone(inputs)
        return inputs | {
            "standalone": standalone,
            "sources": self.retrieve(standalone, inputs.get("k"), inputs.get("filters")),
        }

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
        except ModelError as err:
            inputs.get("failures", []).append(str(err))
            rewritten = None
        # Without a model, or when its rewrite is unusable: the rule, last question + this one.
        return rewritten or f"{history[-1][0]} {question}"


def refusal_text(sources: list[Source]) -> str:
    """A refusal in a researcher's words, naming the closest papers once; the figures that decided it
    go to `Answer.refusal_reason`."""
    from rag.core.markup import plain_text

    if not sources:
        return "No indexed abstract matches this question, so it is not answered."
    titles = [f"“{plain_text(source.title)}”" for source in sources[:3]]
    closest = titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} and {titles[-1]}"
    return f"The indexed abstracts don't answer this question. The closest papers are {closest}."
