"""Answers about many papers: a list, a count, or two papers side by side. No model needed.

`many_papers_answer` picks which by the question's kind and does the searches each needs.

A list or count ranks up to `questions.list_cap` papers of the (filtered) index for the topic and
keeps those on it: evidence (best passage cosine + weighted share of the topic's words, as refusal
measures it) at least `list_min_evidence` and at least `list_relative_evidence` of the best paper's,
and a BM25 score at least `list_relative_bm25` of the best one (a paper about the topic says its
words often, one that mentions it in passing does not). The line is relative because how closely
papers match depends on how a topic is worded; it was chosen on tests/eval/list_questions.jsonl
(docs/evaluation.md). A topic of more than six words is a description, not a name: papers on it hold
fewer of its words, and the looser `list_relative_evidence_long` applies. Each paper comes with the
sentence of its passages that holds most of the topic's words, quoted and cited. What the question
leaves out ("…, excluding LLMs") is left out of the list: the papers whose title names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rag.answering.background import is_background
from rag.answering.overview import overview_answer
from rag.core.config import RetrievalConfig, Settings
from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.markup import plain_text
from rag.core.types import Answer, Kind, Source
from rag.core.wording import scope
from rag.index.lexical import terms
from rag.retrieval.refusal import evidence_score, refusal_reason
from rag.retrieval.understand import Understood, alternatives, without_kind_words
from rag.retrieval.words import source_sentences

if TYPE_CHECKING:
    from rag.answering.kinds import Parts

LONG_TOPIC = 6  # words: a longer topic is a description ("generate DAGs by combining …"), not a name

# The caller's retrieval: (a question cleaned already, k, filters) -> the top-k papers, best first.
Search = Callable[[str, int, Filters], list[Source]]


def many_papers_answer(asked: Understood, applied: Filters, parts: Parts, **stamp) -> Answer | None:
    """The answer to a list, count, overview or compare question, searched with the service's search; None
    for a lookup (one paper's question, the answer pipeline's). An overview groups its papers with the
    service's sentence embeddings, and asks its model for a sentence per theme when `llm.theme_sentences`
    is on (rag/answering/overview.py). `stamp`: the fields every Answer gets."""
    settings, search = parts.config, parts.search
    if asked.kind in (Kind.LIST, Kind.COUNT, Kind.OVERVIEW):
        topic = without_kind_words(asked)
        listed = list_answer(topic, applied, topic_rankings(topic, applied, search, settings), settings, **stamp)
        if asked.kind != Kind.OVERVIEW:
            return listed
        writer = parts.pipeline if settings.llm.theme_sentences else None
        return overview_answer(listed, topic, parts.sentence_embeddings, writer)
    if asked.kind == Kind.COMPARE:
        return compare_answer(asked, compared(asked, applied, search, settings.retrieval), **stamp)
    return None


def topic_rankings(topic: Understood, applied: Filters, search: Search, settings: Settings) -> list[list[Source]]:
    """What a list or count answer draws its line in: one ranking per alternative of the topic
    ("flow matching or rectified flow" has two), each of up to `questions.list_cap` papers."""
    cap = settings.questions.list_cap
    return [search(text, cap, applied) for text in alternatives(topic.text)]


def compared(
    understood: Understood, filters: Filters, search: Search, config: RetrievalConfig
) -> list[tuple[str, Source | None]]:
    """Each named thing's paper: the best-ranked one that passes refusal, the two distinct."""
    found: list[tuple[str, Source | None]] = []
    for name in understood.compared:
        if not name:  # "compare “ and RxnFlow": quotes alone on one side (refused, as an empty search was)
            raise InputError("the question names nothing to compare on one side")
        taken = {source.paper_id for _, source in found if source}
        ranked = [s for s in search(name, 3, filters) if s.paper_id not in taken]
        passing = [s for s in ranked if refusal_reason([s], config) is None]
        found.append((name, passing[0] if passing else None))
    return found


def relative_evidence(topic: str, config: Settings) -> float:
    """The share of the best paper's evidence a paper needs, for this topic."""
    line = config.questions
    return line.list_relative_evidence_long if len(terms(topic)) > LONG_TOPIC else line.list_relative_evidence


def on_topic(sources: list[Source], topic: str, config: Settings) -> list[Source]:
    """The sources on the topic, in rank order (see the module's docstring for the line)."""
    line = config.questions
    relative = relative_evidence(topic, config)
    best_evidence = max(map(evidence_score, sources), default=0.0)
    best_bm25 = max(((source.match.bm25 or 0.0) for source in sources), default=0.0)
    return [
        source
        for source in sources
        if evidence_score(source) >= max(line.list_min_evidence, relative * best_evidence)
        and (source.match.bm25 or 0.0) >= line.list_relative_bm25 * best_bm25
    ]


def list_answer(
    asked: Understood, applied: Filters, rankings: list[list[Source]], settings: Settings, **stamp
) -> Answer:
    """Every ranked paper on the topic, each with why it matches; a count says how many first.

    `rankings`: one per alternative of the topic ("flow matching or rectified flow" has two); a paper
    on any of them is listed, once."""
    listed = list({s.paper_id: s for ranked in rankings for s in on_topic(ranked, asked.text, settings)}.values())
    listed = [source for source in listed if not names(source.title, asked.left_out)]
    ranked = max(rankings, key=len)
    cap = settings.questions.list_cap
    scope = _scope(applied)
    line = (
        f"listed: evidence (best passage similarity + share of the topic's words) ≥ "
        f"{settings.questions.list_min_evidence:.2f} and ≥ {relative_evidence(asked.text, settings):.0%} of the "
        f"best paper's, BM25 ≥ {settings.questions.list_relative_bm25:.0%} of the best, among the {len(ranked)} "
        f"best-ranked of {scope}"
        + (f"; left out: papers whose title names “{asked.left_out}”" if asked.left_out else "")
    )
    fields = {"kind": asked.kind, "line": line, "count": len(listed), **stamp}
    if not listed:
        text = f"No paper is about “{asked.text}”{_within(applied)}{_leaving(asked)}."
        return Answer(text=text, sources=ranked[:5], refused=True, refusal_reason=line, **fields)
    many = f"at least {len(listed)}" if len(ranked) >= cap and len(listed) == len(ranked) else str(len(listed))
    noun = "paper" if len(listed) == 1 else "papers"
    head = (
        f"{many} {noun} {'match' if len(listed) > 1 else 'matches'} “{asked.text}”{_within(applied)}{_leaving(asked)}:"
    )
    lines = [head, *(_line(number, source, asked.text) for number, source in enumerate(listed, start=1))]
    return Answer(text="\n".join(lines), sources=listed, answered_by="list", **fields)


def compare_answer(asked: Understood, pairs: list[tuple[str, Source | None]], **stamp) -> Answer:
    """The two named papers side by side: each one's sentence that best matches the question, cited."""
    sources = [source for _, source in pairs if source is not None]
    lines = []
    for name, source in pairs:
        if source is None:
            lines.append(f"{name}: no indexed abstract is about it.")
        else:
            number = sources.index(source) + 1
            sentence = best_sentence(source, f"{asked.text} {name}")
            lines.append(f"{name} (“{plain_text(source.title)}”): {sentence} [{number}]")
    refused = not sources
    return Answer(
        text="\n".join(lines),
        sources=sources,
        refused=refused,
        answered_by="" if refused else "compare",
        kind=Kind.COMPARE,
        count=len(sources),
        **stamp,
    )


def best_sentence(source: Source, topic: str) -> str:
    """The sentence of the source's passages that holds most of the topic's words; on a tie, one that
    says what the paper does rather than the background (an abstract's opening, "Recent … have
    achieved …"), then the first."""
    wanted = set(terms(topic))

    def merit(item: tuple[int, str]) -> tuple[int, bool]:
        position, sentence = item
        return len(wanted & set(terms(sentence))), not is_background(position, sentence)

    sentences = list(enumerate(source_sentences(source)))
    return plain_text(max(sentences, key=merit)[1]) if sentences else ""


def _line(number: int, source: Source, topic: str) -> str:
    facts = "; ".join(fact for fact in (source.status, source.primary_area.replace("&amp;", "&")) if fact)
    return (
        f"{number}. {plain_text(source.title)} [{number}]"
        + (f" ({facts})" if facts else "")
        + (f": “{best_sentence(source, topic)}”")
    )


def _scope(applied: Filters) -> str:
    """The papers searched, in words: 'the papers with status: Oral', 'the index'."""
    return scope(applied.labels())


def names(title: str, left_out: str) -> bool:
    """True when a title names every word of what the question leaves out, as stems, a plural's "s"
    aside ("LLMs" names "LLM"; "RL" does not name "RLHF")."""
    held = {term.rstrip("s") for term in terms(title)}
    wanted = {term.rstrip("s") for term in terms(left_out)}
    return bool(wanted) and wanted <= held


def _leaving(asked: Understood) -> str:
    return f", leaving out papers whose title names “{asked.left_out}”" if asked.left_out else ""


def _within(applied: Filters) -> str:
    return "" if applied.empty else f" among {_scope(applied)}"
