"""From a question to ranked papers: candidates, fusion, the configured stages, the cut to k, sources.

candidates (dense chunks and/or BM25) -> fuse (reciprocal rank) -> stages (rag.retrieval.stages,
e.g. MMR) -> the first k -> a Source per paper with its best passages.

Dense search returns chunks; they are grouped by paper (a paper ranks by its best chunk) before
anything is cut, so k sources are k papers. BM25 ranks papers directly. In hybrid mode the two
paper rankings are merged by reciprocal rank fusion, which needs no score calibration between
cosine similarities and BM25 scores. Every returned paper gets its best passages by cosine
similarity, also when BM25 alone found it, so `Source.score` always means the same thing.

Filters (rag.core.filters) restrict both searches: Chroma `where` clauses for dense search, a mask
for BM25; a substring (the author), which Chroma cannot match inside a string, is checked with the
same mask.

Dense search asks Chroma for chunk ids and distances only; the BM25 index knows each chunk's paper
(and each paper's chunks). Text, metadata and vectors are then read by id for the few papers kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.documents import Document

from rag.core.config import RetrievalConfig
from rag.core.filters import Filters
from rag.core.types import Match, Passage, Source, Span
from rag.index.store import PaperIndex, passage
from rag.retrieval import stages

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.index.lexical import Bm25Index, LexicalStore, Revision

CHUNK_FIELDS = ("chunk", "start", "end", "prefix_chars", "content_hash")
RESCUE = 5  # BM25's first papers checked for a hit vector search lost (see `Retriever._rescue`)


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


def fuse(
    candidates: dict[str, Candidate], rankings: dict[str, list[str]], weights: dict[str, float], rrf_k: float
) -> float:
    """Reciprocal rank fusion, for a question's papers and a paper's related ones: each paper of a ranking
    (best first) gains weight / (rrf_k + rank), a candidate made for one not met yet. Returns the fused score
    of a paper first in every ranking, which a Source's `relevance` is measured against."""
    for name, ranking in rankings.items():
        for rank, paper_id in enumerate(ranking, start=1):
            candidate = candidates.setdefault(paper_id, Candidate(paper_id))
            candidate.ranks[name] = rank
            candidate.fused += weights[name] / (rrf_k + rank)
    return sum(weights[name] / (rrf_k + 1) for name in rankings)


class Retriever:
    """Ranks papers for a question in the configured mode (dense, bm25 or hybrid).

    `embeddings` make the vectors the index stores. When those are a static model's (rag/index/static.py),
    `scorer` is the model it was distilled from: it embeds the question and the chunks of the papers kept, so
    their scores (which refusal and the passages are judged by) are the model's, as in any other index.
    """

    def __init__(
        self,
        index: PaperIndex,
        lexical: LexicalStore,
        embeddings: Embeddings,
        config: RetrievalConfig,
        scorer: Embeddings | None = None,
    ):
        self.index = index
        self.lexical = lexical
        self.embeddings = embeddings
        self.config = config
        self.scorer = scorer
        self.stages = stages.build(config.stages)

    def retrieve(self, question: str, k: int, filters: Filters, state: Revision | None = None) -> list[Source]:
        """The top k papers, one Source each, best first; `match` says why each ranked.

        `state` is the index's state if the caller has just read it.
        """
        config = self.config
        vector = unit(self.embeddings.embed_query(question))
        lexical = self.lexical.current(state)
        candidates: dict[str, Candidate] = {}
        rankings: dict[str, list[str]] = {}
        if config.mode in ("dense", "hybrid"):
            fetch = max(config.fetch_k, 4 * k) * (4 if filters.author else 1)
            hits = self.index.nearest(vector.tolist(), fetch, filters.where())
            for chunk_id, score in hits:
                paper_id = lexical.paper_of(chunk_id)
                if paper_id is not None and lexical.admits(paper_id, filters):
                    candidates.setdefault(paper_id, Candidate(paper_id)).dense[chunk_id] = score
            rankings["dense"] = list(candidates)  # Chroma returns chunks nearest first
        if config.mode in ("bm25", "hybrid"):
            found = lexical.search(question, max(config.fetch_k, 4 * k), filters)
            for paper_id, score in found:
                candidates.setdefault(paper_id, Candidate(paper_id)).bm25 = score
            rankings["bm25"] = [paper_id for paper_id, _ in found]
        if config.mode == "hybrid":
            floor = hits[-1][1] if len(hits) == fetch else -1.0  # fewer than asked: every chunk was returned
            self._rescue(candidates, rankings, vector, lexical, floor)
        first_everywhere = fuse(candidates, rankings, {"dense": 1.0, "bm25": config.bm25_weight}, config.rrf_k)
        ranked = sorted(candidates.values(), key=lambda c: -c.fused)
        pool = ranked[: max([k, *(stage.pool(k) for stage in self.stages)])]
        if self.scorer is None:
            self._fetch_chunks(pool, vector, lexical)
        else:
            pool = self._rescored(ranked[: max(len(pool), config.rescore)], question, lexical, self.scorer)[: len(pool)]
        for stage in self.stages:
            pool = stage(question, pool, k)
        chosen = pool[:k]
        coverage = lexical.coverage(question, [c.paper_id for c in chosen])
        # Papers asked about by id (a conversation's focus) show all they hold, so any of their sentences
        # can answer the follow-up; others, their best passages.
        passages = None if filters.papers else self.config.passages_per_paper
        return [self._source(c, coverage.get(c.paper_id, 0.0), first_everywhere, passages) for c in chosen]

    def sources(self, chosen: list[Candidate], vector: np.ndarray, lexical: Bm25Index, best: float) -> list[Source]:
        """Sources for candidates ranked elsewhere (related papers), each holding all its chunks, scored against
        the unit `vector`; `best`, the fused score of a paper first in every ranking (for `relevance`)."""
        self._fetch_chunks(chosen, vector, lexical)
        return [self._source(candidate, 0.0, best, None) for candidate in chosen]

    def _rescored(
        self, pool: list[Candidate], question: str, lexical: Bm25Index, scorer: Embeddings
    ) -> list[Candidate]:
        """The pool ranked again with the scorer in dense search's place: its chunks embedded by the scorer,
        each paper ranked by its best chunk's cosine with the question, fused with its BM25 rank as before."""
        self._fetch_chunks(pool, unit(scorer.embed_query(question)), lexical, scorer)
        by_score = sorted(pool, key=lambda c: -c.score)
        for rank, candidate in enumerate(by_score, start=1):
            candidate.ranks["dense"] = rank
            bm25 = candidate.ranks.get("bm25")
            candidate.fused = 1.0 / (self.config.rrf_k + rank)
            candidate.fused += self.config.bm25_weight / (self.config.rrf_k + bm25) if bm25 else 0.0
        return sorted(pool, key=lambda c: -c.fused)

    def _rescue(
        self,
        candidates: dict[str, Candidate],
        rankings: dict[str, list[str]],
        vector: np.ndarray,
        lexical: Bm25Index,
        floor: float,
    ) -> None:
        """Vector search as it should have been for the papers BM25 ranks first but it did not return.

        Chroma's vector index is approximate and can lose a record that `get` still returns
        (chroma-core/chroma#7758): a paper asked for by its own title then ranks on its words alone.
        The chunks of BM25's first RESCUE papers without a hit are scored exactly; those nearer the
        question than the weakest hit (`floor`) join the dense ranking where their score puts them.
        """
        missed = [paper_id for paper_id in rankings["bm25"][:RESCUE] if not candidates[paper_id].dense]
        paper_of = {chunk_id: paper_id for paper_id in missed for chunk_id in lexical.chunk_ids(paper_id)}
        rescued = False
        for doc, stored in self.index.chunks_by_id(list(paper_of)):
            assert doc.id is not None  # chunks_by_id gives every chunk its id
            chunk_vector = np.asarray(stored, dtype=np.float32)
            score = float(chunk_vector @ vector / (np.linalg.norm(chunk_vector) or 1.0))
            if score > floor:
                candidates[paper_of[doc.id]].dense[doc.id] = score
                rescued = True
        if rescued:
            dense = [c for c in candidates.values() if c.dense]
            rankings["dense"] = [c.paper_id for c in sorted(dense, key=lambda c: -max(c.dense.values()))]

    def _fetch_chunks(
        self, pool: list[Candidate], vector: np.ndarray, lexical: Bm25Index, scorer: Embeddings | None = None
    ) -> None:
        """Every chunk of the pool's papers (in the version `lexical` holds), in one read by id, each scored
        against the question: a chunk dense search found, by its score there; the others by their stored vectors
        (a long abstract's asked detail is often in a chunk the search did not return: blind dev fact recall
        0.749 -> 0.755, test 0.787 -> 0.794, docs/answers.md). With a `scorer`, every chunk is embedded by it and
        scored against `vector`, its embedding of the question."""
        by_chunk = {chunk_id: c for c in pool for chunk_id in lexical.chunk_ids(c.paper_id)}
        found = self.index.chunks_by_id(list(by_chunk))
        if scorer is not None:
            found = list(zip([doc for doc, _ in found], scorer.embed_documents([doc.page_content for doc, _ in found])))
        for doc, stored in found:
            assert doc.id is not None  # chunks_by_id gives every chunk its id
            candidate = by_chunk[doc.id]
            chunk_vector = np.asarray(stored, dtype=np.float32)
            if doc.id in candidate.dense and scorer is None:
                score = candidate.dense[doc.id]
            else:
                score = float(chunk_vector @ vector / (np.linalg.norm(chunk_vector) or 1.0))
            candidate.chunks.append((doc, score, chunk_vector))
        for candidate in pool:
            candidate.chunks.sort(key=lambda hit: -hit[1])

    def _source(self, candidate: Candidate, coverage: float, first_everywhere: float, passages: int | None) -> Source:
        kept = candidate.chunks[:passages]
        if not kept:  # a paper whose chunks vanished since BM25 was built: show what the ranking knows
            return Source(candidate.paper_id, candidate.paper_id, (Passage(""),), 0.0, match=Match(coverage=coverage))
        # Links are http(s) only already: the index reads every stored chunk through `safe_links`.
        metadata = {key: value for key, value in kept[0][0].metadata.items() if key not in CHUNK_FIELDS}
        match = Match(
            ranks=dict(candidate.ranks),
            bm25=round(candidate.bm25, 3),
            fused=round(candidate.fused, 5),
            # The fused score as a share of the best possible (first in every ranking): 0..1, and
            # in the order papers are ranked, unlike the cosine in `score` (see Source.relevance).
            relevance=round(candidate.fused / first_everywhere, 3) if first_everywhere else 0.0,
            coverage=round(coverage, 3),
        )
        return Source(
            paper_id=candidate.paper_id,
            title=metadata.get("title", candidate.paper_id),
            passages=merged_passages(kept),
            score=round(candidate.score, 4),
            metadata=metadata,
            match=match,
        )


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / (np.linalg.norm(array) or 1.0)


def merged_passages(hits: list[tuple[Document, float, Any]]) -> tuple[Passage, ...]:
    """The passages of (chunk, score, vector) hits in abstract order, each with its span; overlapping
    passages are merged (neighbouring chunks share a sentence by design), so no sentence repeats."""
    passages: list[Passage] = []
    for chunk, score, _ in sorted(hits, key=lambda hit: hit[0].metadata.get("start", 0)):
        start, text = chunk.metadata.get("start", 0), passage(chunk)
        end, score = start + len(text), round(score, 4)
        last = passages[-1].span if passages else None
        if last and start <= last.end:
            merged = Span(last.start, max(last.end, end), max(last.score, score))
            passages[-1] = Passage(passages[-1].text + text[last.end - start :], merged)
        else:
            passages.append(Passage(text, Span(start, end, score)))
    return tuple(passages)
