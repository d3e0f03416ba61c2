"""Whether the sources can answer the question, and if not, why: the best source's evidence, unless
the question names one of the papers."""

from __future__ import annotations

from rag.core.config import RetrievalConfig
from rag.core.types import Source
from rag.retrieval.naming import named_by


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


def refusal(question: str, sources: list[Source], config: RetrievalConfig) -> str | None:
    """Why the sources can't answer the question, or None: the passage-level rule, unless the question
    names one of the papers (then its sentences decide)."""
    reason = refusal_reason(sources, config)
    return None if reason and any(named_by(question, source) for source in sources) else reason
