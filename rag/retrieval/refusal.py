"""Whether the best source is close enough to answer from, and if not, why."""

from __future__ import annotations

from rag.core.config import RetrievalConfig
from rag.core.types import Source


def evidence_score(source: Source) -> float:
    """How strongly a source answers the question: passage cosine + weighted word coverage (0..2).

    Cosine alone confuses near misses (a question on membership inference reaches a model
    inversion paper at 0.49); the coverage term notices the telling word the paper lacks.
    """
    return source.score + source.match.coverage


def refusal_reason(sources: list[Source], config: RetrievalConfig) -> str | None:
    """Why the index can't answer, or None when the best source is close enough to answer from."""
    if not sources:
        return "the index holds no matching papers"
    top = sources[0]
    if top.score < config.min_score:
        return f"best match {top.score:.2f}, below the {config.min_score:.2f} similarity threshold"
    if evidence_score(top) < config.min_evidence:
        coverage = top.match.coverage
        return (
            f"best match {top.score:.2f} similar and holding {coverage:.0%} of the question's weighted words: "
            f"evidence {evidence_score(top):.2f}, below the {config.min_evidence:.2f} threshold"
        )
    return None
