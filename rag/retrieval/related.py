"""Papers related to a paper: its chunks' nearest neighbours and BM25 on its words, fused.

A paper's related papers are ranked in one of three ways (`Method`):

- "dense": the embedding's nearest neighbours. Each chunk of the paper (as stored, or as the user's
  abstract is chunked at ingest) asks Chroma for its nearest chunks; a paper ranks by the highest cosine
  any of its chunks reaches with any chunk of the given paper.
- "bm25": BM25 over titles and abstracts, the given paper's title and abstract as the query.
- "fused" (the default): the two rankings merged by reciprocal rank fusion, as a question's are
  (rag/retrieval/search.py), with the constants below, chosen on the dev split of
  tests/eval/related_questions.jsonl (docs/evaluation.md, "Related papers").

The given paper itself is never among its related papers. Each related paper comes back as a `Source`
holding its whole abstract, so the sentences that tie the two can be read from it (rag/answering/related.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from langchain_core.documents import Document

from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.papers import PaperRecord
from rag.core.text import clean_question
from rag.core.types import Match, Source
from rag.retrieval.search import Candidate, fuse
from rag.text.terms import terms

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.index.lexical import Bm25Index
    from rag.index.store import PaperIndex
    from rag.retrieval.search import Retriever

# How a text is chunked at ingest (rag.ingest.chunking.Chunker.chunk, which retrieval does not import).
Chunk = Callable[[PaperRecord], list[Document]]

Method = Literal["fused", "dense", "bm25"]
METHODS: tuple[Method, ...] = ("fused", "dense", "bm25")
RRF_K = 10  # fusion constant: a paper scores weight / (RRF_K + rank) in each ranking
BM25_WEIGHT = 0.5  # the BM25 ranking's weight in fusion; the dense one has 1
POOL = 60  # papers each ranking contributes before fusion
NEIGHBOURS = 80  # chunks each of the given paper's chunks asks Chroma for
OWN_ABSTRACT_ID = "your-abstract"

MAX_ABSTRACT_CHARS = 20_000  # an abstract is a few thousand characters; longer is not one


@dataclass(frozen=True)
class Subject:
    """The paper others are related to: a stored one, or a user's own abstract (`paper_id` OWN_ABSTRACT_ID)."""

    paper_id: str
    title: str
    abstract: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def stored(self) -> bool:
        return self.paper_id != OWN_ABSTRACT_ID

    @classmethod
    def own(cls, text: str, what: str = "the abstract") -> Subject:
        """A user's abstract (its first line a title when more lines follow); empty is an InputError."""
        text = checked_text(text, what)
        if not terms(text):
            raise InputError(f"{what} has no words to compare: give the abstract's text")
        title, _, rest = text.partition("\n")
        title, abstract = (title.strip(), rest.strip()) if rest.strip() and len(title) < 300 else ("", text)
        return cls(OWN_ABSTRACT_ID, title or "your abstract", abstract)

    def source(self) -> Source:
        """The paper as a source holding its whole abstract, to cite its sentences; listed first among sources
        (relevance 1: it is what the question asks about)."""
        whole = Source.from_text(self.paper_id, self.title, self.abstract, 1.0, self.metadata)
        return replace(whole, match=Match(relevance=1.0))


def checked_text(text: str, what: str) -> str:
    """A paper's id or title, or an abstract, as given: not text, empty, garbled or over-long is an InputError."""
    if not isinstance(text, str):
        raise InputError(f"{what} is not text: got {type(text).__name__}")
    if len(text) > MAX_ABSTRACT_CHARS:
        raise InputError(f"{what} is {len(text):,} characters long; the limit is {MAX_ABSTRACT_CHARS:,}")
    return clean_question(text, MAX_ABSTRACT_CHARS, what)


class RelatedRanker:
    """Ranks the papers related to a `Subject` by one of the `METHODS`, over the parts a service holds."""

    def __init__(self, index: PaperIndex, retriever: Retriever, embeddings: Embeddings, chunk: Chunk):
        self.index = index
        self.retriever = retriever
        self.embeddings = embeddings
        self.chunk = chunk

    def stored(self, text: str, lexical: Bm25Index) -> Subject | None:
        """The stored paper whose OpenReview id is `text`, else whose title is, else whose title's name
        before a colon is ("Jump Your Steps" for "Jump Your Steps: Optimizing …"); case and spacing aside."""
        text = " ".join(text.split())
        found = self.index.paper(text) if text else None
        if found is not None:
            return Subject(text, str(found[1].get("title", "")), found[0], found[1])
        named = lexical.named(text)
        if named:
            return self.stored(named[0], lexical)
        return None

    def rank(
        self, subject: Subject, k: int, filters: Filters, lexical: Bm25Index, method: Method = "fused"
    ) -> list[Source]:
        """The k papers most related to `subject` (never itself), best first, each holding its whole abstract."""
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
        if method == "fused" and self.retriever.scorer is not None:
            # An index of static vectors (rag/index/static.py): their nearest neighbours are seldom a paper's
            # related ones (precision@5 0.200 on the related dev split, against 0.764 for BM25 alone and 0.855
            # fused with the model's vectors: docs/benchmarks.md), so BM25 ranks alone.
            method = "bm25"
        vectors = self.vectors(subject, lexical)
        rankings: dict[str, list[str]] = {}
        if method in ("fused", "dense"):
            rankings["dense"] = self.dense(vectors, filters, lexical, subject.paper_id)
        if method in ("fused", "bm25"):
            found = lexical.search(f"{subject.title}\n{subject.abstract}", POOL + 1, filters)
            rankings["bm25"] = [paper_id for paper_id, _ in found if paper_id != subject.paper_id][:POOL]
        candidates: dict[str, Candidate] = {}
        best = fuse(candidates, rankings, {"dense": 1.0, "bm25": BM25_WEIGHT}, RRF_K)
        chosen = sorted(candidates.values(), key=lambda c: -c.fused)[:k]
        centre = vectors.mean(axis=0)
        return self.retriever.sources(chosen, centre / (np.linalg.norm(centre) or 1.0), lexical, best)

    def vectors(self, subject: Subject, lexical: Bm25Index) -> np.ndarray:
        """The subject's chunk vectors, unit length: as stored, or its text chunked and embedded as at ingest."""
        stored = self.index.chunks_by_id(lexical.chunk_ids(subject.paper_id)) if subject.stored else []
        if stored:
            vectors = np.asarray([vector for _, vector in stored], dtype=np.float32)
        else:
            record = PaperRecord(OWN_ABSTRACT_ID, subject.title, subject.abstract)
            chunks = [chunk.page_content for chunk in self.chunk(record)]
            vectors = np.asarray(self.embeddings.embed_documents(chunks), dtype=np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)

    def dense(self, vectors: np.ndarray, filters: Filters, lexical: Bm25Index, own: str) -> list[str]:
        """Papers by the highest cosine any of their chunks reaches with any of `vectors`, best first."""
        best: dict[str, float] = {}
        fetch = NEIGHBOURS * (4 if filters.author else 1)
        for vector in vectors:
            for chunk_id, score in self.index.nearest(vector.tolist(), fetch, filters.where()):
                paper_id = lexical.paper_of(chunk_id)
                if paper_id is None or paper_id == own or not lexical.admits(paper_id, filters):
                    continue
                best[paper_id] = max(score, best.get(paper_id, -1.0))
        return sorted(best, key=lambda paper_id: -best[paper_id])[:POOL]
