"""Whether the sources can answer the question, and if not, why: the best source's evidence, unless
the question names one of the papers or its distinctive words stand in one (an exact look-up)."""

from __future__ import annotations

from rag.core.config import RetrievalConfig
from rag.core.types import Source
from rag.question.question import Question
from rag.text.facts import contains_fact
from rag.text.naming import named_by


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


def refusal(question: Question, sources: list[Source], config: RetrievalConfig) -> str | None:
    """Why the sources can't answer the question, or None: the passage-level rule, unless the question
    names one of the papers or its distinctive words stand in one (then its sentences decide). A follow-up that
    only leans on a refused turn ("What data do they use?") is refused: what it points to was not found."""
    if question.standalone.leans_on_refusal:
        return "it points back to the question before it, which was not answered"
    reason = refusal_reason(sources, config)
    if reason and (any(named_by(question.text, source) for source in sources) or stands_in(question, sources)):
        return None  # a paper named, or an exact look-up of a paper's words: its sentences decide
    return reason


# The share of the question's weighted words a paper holding its number must also hold.
NUMBER_COVERAGE = 0.4


def stands_in(question: Question, sources: list[Source]) -> Source | None:
    """The one source a question's distinctive words stand in, verbatim, or None: an exact look-up
    (a dataset's name, a coined term, the context of a reported number) of a paper retrieval found.

    Either the only source holding every word of the question, or the only one stating a number the
    question gives ("What is the 20.9% figure about?") while holding a good share of its words.
    """
    whole = [source for source in sources if source.match.coverage >= 0.999]
    if len(whole) == 1:
        return whole[0]
    for number in question.numbers:
        holding = [source for source in sources if contains_fact(f"{source.title} {source.text}", number)]
        if len(holding) == 1 and holding[0].match.coverage >= NUMBER_COVERAGE:
            return holding[0]
    return None
