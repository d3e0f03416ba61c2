"""Maximal marginal relevance: trade rank for novelty, so k sources are not k near-copies."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from rag.retrieval.search import Candidate


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: float = Field(0.7, ge=0, le=1, description="1 keeps the ranking, 0 only seeks novelty.")
    pool: int = Field(20, ge=1, description="Best-ranked papers it chooses the k from.")


class Stage:
    def __init__(self, options: Options):
        self.options = options

    def pool(self, k: int) -> int:
        return max(k, self.options.pool)

    def __call__(self, question: str, candidates: list[Candidate], k: int) -> list[Candidate]:
        return mmr(candidates, k, self.options.weight)


def mmr(pool: list[Candidate], k: int, weight: float) -> list[Candidate]:
    """The k candidates MMR chooses, in the order chosen.

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
