"""From a question to ranked papers: dense chunks and/or BM25, fused per paper, cut to k.

Dense search returns chunks; they are grouped by paper (a paper ranks by its best chunk) before
anything is cut, so k sources are k papers. BM25 ranks papers directly. In hybrid mode the two
paper rankings are merged by reciprocal rank fusion, which needs no score calibration between
cosine similarities and BM25 scores. Every returned paper gets its best passages by cosine
similarity, also when BM25 alone found it, so `Source.score` always means the same thing.

Filters restrict both searches: Chroma `where` clauses for dense search, a mask for BM25; the
author substring, which Chroma cannot match inside a string, is checked with the same mask.

Dense search asks Chroma for chunk ids and distances only; the BM25 index knows each chunk's paper
(and each paper's chunks). Text, metadata and vectors are then read by id for the few papers kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field

from rag.core.config import RetrievalConfig
from rag.core.types import Source, safe_links
from rag.ingest.chunking import passage

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.index.lexical import Bm25Index, LexicalState, LexicalStore
    from rag.index.store import PaperIndex

CHUNK_FIELDS = ("chunk", "start", "end", "prefix_chars", "content_hash")
PASSAGE_GAP = " … "


@dataclass(frozen=True)
class Filters:
    """What a question may be restricted to; empty fields restrict nothing."""

    status: tuple[str, ...] = ()
    primary_area: tuple[str, ...] = ()
    author: str = ""
    has_code: bool | None = None

    @property
    def empty(self) -> bool:
        return not (self.status or self.primary_area or self.author or self.has_code is not None)

    def where(self) -> dict | None:
        """The Chroma metadata filter for the fields Chroma can match itself."""
        clauses = []
        if self.status:
            clauses.append({"status": {"$in": list(self.status)}})
        if self.primary_area:
            clauses.append({"primary_area": {"$in": list(self.primary_area)}})
        if self.has_code is not None:
            clauses.append({"has_code": self.has_code})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class FilterSpec(BaseModel):
    """Only papers matching every field given."""

    # `Filters` as the APIs take them in JSON (/v1, MCP tools, the LangChain retriever); this docstring
    # is what their schemas show. Unknown keys are refused, so a misspelt filter never silently matches all.

    model_config = ConfigDict(extra="forbid")

    status: list[str] = Field(default_factory=list, description="Only papers with one of these statuses, e.g. Oral.")
    primary_area: list[str] = Field(default_factory=list, description="Only papers of one of these primary areas.")
    author: str = Field("", description="Only papers with an author whose name contains this.")
    has_code: bool | None = Field(None, description="true: only papers linking to GitHub; false: only those without.")

    def to_filters(self) -> Filters:
        return Filters(tuple(self.status), tuple(self.primary_area), self.author, self.has_code)


def as_filters(filters: Filters | FilterSpec | dict | None) -> Filters:
    """Filters from any of the forms callers hold; a dict is checked as a `FilterSpec`."""
    if filters is None or isinstance(filters, Filters):
        return filters or Filters()
    return (filters if isinstance(filters, FilterSpec) else FilterSpec.model_validate(filters)).to_filters()


@dataclass
class Candidate:
    """A paper on its way to becoming a Source: its scored chunks and its place in each ranking."""

    paper_id: str
    chunks: list[tuple[Document, float, np.ndarray]] = field(default_factory=list)
    dense: dict[str, float] = field(default_factory=dict)  # chunk id -> cosine, for chunks dense search found
    ranks: dict[str, int] = field(default_factory=dict)
    bm25: float = 0.0
    fused: float = 0.0

    @property
    def score(self) -> float:
        return self.chunks[0][1] if self.chunks else 0.0


class Retriever:
    """Ranks papers for a question in the configured mode (dense, bm25 or hybrid)."""

    def __init__(self, index: PaperIndex, lexical: LexicalStore, embeddings: Embeddings, config: RetrievalConfig):
        self.index = index
        self.lexical = lexical
        self.embeddings = embeddings
        self.config = config

    def retrieve(self, question: str, k: int, filters: Filters, state: LexicalState | None = None) -> list[Source]:
        """The top k papers, one Source each, best first; `metadata["match"]` says why each ranked.

        `state` is the index's state if the caller has just read it.
        """
        config = self.config
        vector = np.asarray(self.embeddings.embed_query(question), dtype=np.float32)
        vector /= np.linalg.norm(vector) or 1.0
        lexical = self.lexical.current(state)
        candidates: dict[str, Candidate] = {}
        rankings: dict[str, list[str]] = {}
        if config.mode in ("dense", "hybrid"):
            fetch = max(config.fetch_k, 4 * k) * (4 if filters.author else 1)
            for chunk_id, score in self.index.nearest(vector.tolist(), fetch, filters.where()):
                paper_id = lexical.paper_of(chunk_id)
                if paper_id is not None and lexical.admits(paper_id, filters):
                    candidates.setdefault(paper_id, Candidate(paper_id)).dense[chunk_id] = score
            rankings["dense"] = list(candidates)  # Chroma returns chunks nearest first
        if config.mode in ("bm25", "hybrid"):
            found = lexical.search(question, max(config.fetch_k, 4 * k), filters)
            for paper_id, score in found:
                candidates.setdefault(paper_id, Candidate(paper_id)).bm25 = score
            rankings["bm25"] = [paper_id for paper_id, _ in found]
        weights = {"dense": 1.0, "bm25": config.bm25_weight}
        for name, ranking in rankings.items():
            for rank, paper_id in enumerate(ranking, start=1):
                candidates[paper_id].ranks[name] = rank
                candidates[paper_id].fused += weights[name] / (config.rrf_k + rank)
        ranked = sorted(candidates.values(), key=lambda c: -c.fused)
        pool = ranked[: max(k, config.mmr_pool) if config.mmr else k]
        self._fetch_chunks(pool, vector, lexical)
        chosen = mmr(pool, k, config.mmr_lambda) if config.mmr else pool
        coverage = lexical.coverage(question, [c.paper_id for c in chosen])
        first_everywhere = sum(weights[name] / (config.rrf_k + 1) for name in rankings)
        return [self._source(c, coverage.get(c.paper_id, 0.0), first_everywhere) for c in chosen]

    def _fetch_chunks(self, pool: list[Candidate], vector: np.ndarray, lexical: Bm25Index) -> None:
        """The pool's chunks, in one read by id: for a paper dense search found, the chunks it found,
        with their scores; for a paper found by BM25 alone, all its chunks (in the version `lexical`
        holds), scored against the question like dense hits."""
        by_paper = {c.paper_id: c for c in pool}
        wanted = [chunk_id for c in pool for chunk_id in (c.dense or lexical.chunk_ids(c.paper_id))]
        for doc, chunk_vector in self.index.chunks_by_id(wanted):
            candidate = by_paper[lexical.paper_of(doc.id)]
            chunk_vector = np.asarray(chunk_vector, dtype=np.float32)
            if candidate.dense:
                score = candidate.dense[doc.id]
            else:
                score = float(chunk_vector @ vector / (np.linalg.norm(chunk_vector) or 1.0))
            candidate.chunks.append((doc, score, chunk_vector))
        for candidate in pool:
            candidate.chunks.sort(key=lambda hit: -hit[1])

    def _source(self, candidate: Candidate, coverage: float, first_everywhere: float) -> Source:
        kept = candidate.chunks[: self.config.passages_per_paper]
        if not kept:  # a paper whose chunks vanished since BM25 was built: show what the ranking knows
            return Source(candidate.paper_id, candidate.paper_id, "", 0.0, {"match": {"coverage": coverage}})
        # Stored text is untrusted (any file, any writer to a shared server): links leave here http(s) only.
        metadata = safe_links({key: value for key, value in kept[0][0].metadata.items() if key not in CHUNK_FIELDS})
        text, metadata["passages"] = joined(kept)
        metadata["match"] = {
            **{f"{name}_rank": rank for name, rank in candidate.ranks.items()},
            "bm25": round(candidate.bm25, 3),
            "fused": round(candidate.fused, 5),
            # The fused score as a share of the best possible (first in every ranking): 0..1, and
            # in the order papers are ranked, unlike the cosine in `score` (see Source.relevance).
            "relevance": round(candidate.fused / first_everywhere, 3) if first_everywhere else 0.0,
            "coverage": round(coverage, 3),
        }
        return Source(
            paper_id=candidate.paper_id,
            title=metadata.get("title", candidate.paper_id),
            text=text,
            score=round(candidate.score, 4),
            metadata=metadata,
        )


def joined(hits: list[tuple[Document, float, Any]]) -> tuple[str, list[dict]]:
    """The passages of (chunk, score, vector) hits in abstract order, with their spans; overlapping
    passages are merged (neighbouring chunks share a sentence by design), so no sentence repeats."""
    pieces: list[str] = []
    spans: list[dict] = []
    for chunk, score, _ in sorted(hits, key=lambda hit: hit[0].metadata.get("start", 0)):
        start, text = chunk.metadata.get("start", 0), passage(chunk)
        end, score = start + len(text), round(score, 4)
        if spans and start <= spans[-1]["end"]:
            last = spans[-1]
            pieces[-1] += text[last["end"] - start :]
            last["end"], last["score"] = max(last["end"], end), max(last["score"], score)
        else:
            pieces.append(text)
            spans.append({"start": start, "end": end, "score": score})
    return PASSAGE_GAP.join(pieces), spans


def mmr(pool: list[Candidate], k: int, weight: float) -> list[Candidate]:
    """Maximal marginal relevance: trade rank for novelty, so k sources are not k near-copies.

    Relevance is the fused score scaled to [0, 1]; similarity between papers is the cosine of
    their best chunks. `weight` 1 keeps the ranking as it is.
    """
    pool = [c for c in pool if c.chunks]  # papers removed since BM25 was built have no vector to compare
    top = max((c.fused for c in pool), default=0.0) or 1.0
    if len(pool) <= 1:
        return pool[:k]
    vectors = np.stack([np.asarray(c.chunks[0][2], dtype=np.float32) for c in pool])
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    similarity = vectors @ vectors.T
    chosen = [0]
    rest = list(range(1, len(pool)))
    while rest and len(chosen) < k:
        best = max(rest, key=lambda i: weight * pool[i].fused / top - (1 - weight) * float(similarity[i, chosen].max()))
        chosen.append(best)
        rest.remove(best)
    return [pool[i] for i in chosen]


def evidence(source: Source) -> float:
    """How strongly a source answers the question: passage cosine + weighted word coverage (0..2).

    Cosine alone confuses near misses (a question on membership inference reaches a model
    inversion paper at 0.49); the coverage term notices the telling word the paper lacks.
    """
    return source.score + source.metadata.get("match", {}).get("coverage", 0.0)


def refusal_reason(sources: list[Source], config: RetrievalConfig) -> str | None:
    """Why the index can't answer, or None when the best source is close enough to answer from."""
    if not sources:
        return "the index holds no matching papers"
    top = sources[0]
    if top.score < config.min_score:
        return f"best match {top.score:.2f}, below the {config.min_score:.2f} similarity threshold"
    if evidence(top) < config.min_evidence:
        coverage = top.metadata.get("match", {}).get("coverage", 0.0)
        return (
            f"best match {top.score:.2f} similar and holding {coverage:.0%} of the question's weighted words: "
            f"evidence {evidence(top):.2f}, below the {config.min_evidence:.2f} threshold"
        )
    return None
