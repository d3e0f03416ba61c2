"""Answers about many papers: a list, a count, or two papers side by side. No model needed.

`list_kind_answer` and `compare_kind_answer` answer them (rag/answering/kinds.py gives each its kinds).

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

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answering.asks import NUMBER, RESULT_WORDS
from rag.answering.background import is_background
from rag.answering.membership import JUDGED_IN, candidates, judged_members
from rag.answering.overview import overview_answer, too_few_for_themes
from rag.answering.refusal import evidence_score, refusal_reason
from rag.core.config import Settings
from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.markup import plain_text
from rag.core.types import Answer, Kind, Source
from rag.core.wording import scope
from rag.question.filter_words import ACCEPTED
from rag.question.spans import LONG_TOPIC
from rag.question.understand import Topic, Understood
from rag.text.naming import PROPOSAL, RELEASE
from rag.text.terms import terms
from rag.text.words import source_sentences

if TYPE_CHECKING:
    from rag.answering.tools import Search, Tools
    from rag.question.question import Question


def list_kind_answer(question: Question, tools: Tools) -> Answer | None:
    """The answer to a list, count or overview question: the topic's papers searched, those on it kept. An
    overview groups them with the sentence embeddings, and asks the model for a sentence per theme when
    `llm.theme_sentences` is on (rag/answering/overview.py). An overview asks one thing of a field: a question of
    two asks whose topic holds too few papers for themes is a look-up (None), a sentence of its paper per ask."""
    settings, asked = tools.settings, question.understood
    assert asked.topic is not None, "a list, count or overview question has a topic (rag/question/understand.py)"
    if settings.questions.membership == "judged":  # every paper the filters admit, judged
        found = candidates(asked.topic.alternatives, tools.candidates, question.filters)
        listed = judged_answer(asked.topic, asked.kind, question.filters, found, settings, question.asked)
    else:
        rankings = topic_rankings(asked.topic, question.filters, tools.search, settings)
        listed = list_answer(asked.topic, asked.kind, question.filters, rankings, settings, question.asked)
    if asked.kind != Kind.OVERVIEW:
        return listed
    if len(question.asks) > 1 and too_few_for_themes(listed):  # a non-refused list holds a paper at least
        return None
    writer = tools.pipeline if settings.llm.theme_sentences else None
    return overview_answer(listed, asked.topic, tools.sentence_embeddings, writer)


def compare_kind_answer(question: Question, tools: Tools) -> Answer:
    """The two papers a compare question names, side by side."""
    return compare_answer(question, compared(question.understood, question.filters, tools))


def topic_rankings(topic: Topic, applied: Filters, search: Search, settings: Settings) -> list[list[Source]]:
    """What a list or count answer draws its line in: one ranking per alternative of the topic
    ("flow matching or rectified flow" has two), each of up to `questions.list_cap` papers."""
    cap = settings.questions.list_cap
    return [search(text, cap, applied) for text in topic.alternatives]


def compared(understood: Understood, filters: Filters, tools: Tools) -> list[tuple[str, Source | None]]:
    """Each named thing's paper (`best_for`), the two distinct."""
    found: list[tuple[str, Source | None]] = []
    for name in understood.compared:
        if not name:  # "compare “ and RxnFlow": quotes alone on one side (refused, as an empty search was)
            raise InputError("the question names nothing to compare on one side")
        taken = {source.paper_id for _, source in found if source}
        found.append((name, best_for(name, filters, tools, taken)))
    return found


def best_for(name: str, filters: Filters, tools: Tools, taken: set[str]) -> Source | None:
    """The paper a named thing is, among those not `taken`: the stored paper it names exactly (its title, or
    the name before its title's colon: "Show-o", which a search for its words misses), else the best-ranked
    one that passes refusal; None when none does."""
    stored = tools.stored_paper(name)
    if stored and stored not in taken and (exact := tools.search(name, 1, replace(filters, papers=(stored,)))):
        return exact[0]
    ranked = [s for s in tools.search(name, 3, filters) if s.paper_id not in taken]
    return next((s for s in ranked if refusal_reason([s], tools.settings.retrieval) is None), None)


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
    topic: Topic, kind: Kind, applied: Filters, rankings: list[list[Source]], settings: Settings, question: str
) -> Answer:
    """Every ranked paper on the topic, each with why it matches; a count says how many first.

    `rankings`: one per alternative of the topic ("flow matching or rectified flow" has two); a paper
    on any of them is listed, once."""
    listed = list({s.paper_id: s for ranked in rankings for s in on_topic(ranked, topic.text, settings)}.values())
    listed = [source for source in listed if not names(source.title, topic.left_out)]
    ranked = max(rankings, key=len)
    cap = settings.questions.list_cap
    scope = _scope(applied)
    line = (
        f"listed: evidence (best passage similarity + share of the topic's words) ≥ "
        f"{settings.questions.list_min_evidence:.2f} and ≥ {relative_evidence(topic.text, settings):.0%} of the "
        f"best paper's, BM25 ≥ {settings.questions.list_relative_bm25:.0%} of the best, among the {len(ranked)} "
        f"best-ranked of {scope}{_left_out(topic)}"
    )
    answer = Answer(question, "", [], kind=kind, line=line, count=len(listed))
    many = f"at least {len(listed)}" if len(ranked) >= cap and len(listed) == len(ranked) else str(len(listed))
    return _listing(answer, topic, applied, listed, listed, many, ranked[:5])


def judged_answer(
    topic: Topic, kind: Kind, applied: Filters, found: dict[str, list[Source]], settings: Settings, question: str
) -> Answer:
    """Every paper the judge says is on the topic (rag/answering/membership.py), the most probable first and, at
    equal probability to a tenth, accepted papers before the others; the first `questions.list_cap` shown, each
    with why it matches, and every one in the answer's sources (the exports, /v1's `rag`). A count says how many."""
    judged = [  # a paper that could not answer a look-up on the topic is not about it (refusal's line)
        j
        for j in judged_members(found)
        if not names(j.source.title, topic.left_out) and refusal_reason([j.source], settings.retrieval) is None
    ]
    judged.sort(key=lambda j: (-round(j.probability, 1), j.source.status not in ACCEPTED, -j.probability))
    listed = [j.source for j in judged]
    examined = len({source.paper_id for ranked in found.values() for source in ranked})
    line = (
        f"judged: the relevance judge (learned from blind writers' topics) gives each paper listed a probability "
        f"≥ {JUDGED_IN:.1f} of being on the topic; {examined:,} candidates of {_scope(applied)} were judged"
        f"{_left_out(topic)}"
    )
    answer = Answer(question, "", [], kind=kind, line=line, count=len(listed))
    closest = next(iter(found.values()), [])[:5]
    return _listing(answer, topic, applied, listed, listed[: settings.questions.list_cap], str(len(listed)), closest)


def _listing(
    answer: Answer,
    topic: Topic,
    applied: Filters,
    listed: list[Source],
    shown: list[Source],
    many: str,
    closest: list[Source],
) -> Answer:
    """A list's or count's answer (its line set): refused, naming the `closest` papers, when none is `listed`; else
    how `many` match, a line for each paper `shown` and, when some are not, how many more the sources hold."""
    if not listed:
        text = f"No paper is about “{topic.text}”{_within(applied)}{_leaving(topic)}."
        return replace(answer, text=text, sources=closest, refused=True, refusal_reason=answer.line)
    noun = "paper" if len(listed) == 1 else "papers"
    head = (
        f"{many} {noun} {'match' if len(listed) > 1 else 'matches'} “{topic.text}”{_within(applied)}{_leaving(topic)}:"
    )
    lines = [head, *(paper_line(number, source, topic.text) for number, source in enumerate(shown, start=1))]
    if len(shown) < len(listed):
        lines.append(f"… and {len(listed) - len(shown)} more: the first {len(shown)} shown, every one in the answer's "
                     "sources and its exports.")  # fmt: skip
    return replace(answer, text="\n".join(lines), sources=listed, answered_by="list")


def compare_answer(question: Question, pairs: list[tuple[str, Source | None]]) -> Answer:
    """The two named papers side by side: each one's sentence that best matches the question, then what it was
    evaluated on and what it found (`aspects`), each cited."""
    sources = [source for _, source in pairs if source is not None]
    lines = []
    for name, source in pairs:
        if source is None:
            lines.append(f"{name}: no indexed abstract is about it.")
        else:
            number = sources.index(source) + 1
            sentence = best_sentence(source, f"{question.text} {name}")
            title = f"“{plain_text(source.title)}”"  # after the name, unless the name is the title
            lines.append(
                f"{name} ({title}): {sentence} [{number}]" if name != title else f"{title}: {sentence} [{number}]"
            )
            lines += [f"  {aspect}: {said} [{number}]" for aspect, said in aspects(source, sentence)]
    refused = not sources
    return Answer(
        question=question.asked,
        text="\n".join(lines),
        sources=sources,
        refused=refused,
        answered_by="" if refused else "compare",
        kind=Kind.COMPARE,
        count=len(sources),
    )


# What a compare sets side by side beyond what each paper does: the sentence of its abstract that says what it was
# evaluated on, and the one that says what it found (a result's words: rag/answering/asks.py), one holding a number
# first, else the first in the abstract's order.
EVALUATED = re.compile(
    r"\b(?:datasets?|benchmarks?|experiments?\s+(?:on|across|with)|evaluat\w*|tested\s+on|tasks)\b", re.IGNORECASE
)
ASPECTS = (("evaluated on", EVALUATED), ("result", RESULT_WORDS))


def aspects(source: Source, said: str) -> list[tuple[str, str]]:
    """Each of `ASPECTS` the paper's abstract has a sentence for: not the one `said` already, not background, nor
    where its code is."""
    found: list[tuple[str, str]] = []
    taken = {said}
    sentences = [
        plain_text(sentence)
        for position, sentence in enumerate(source_sentences(source))
        if not is_background(position, sentence)  # "While prior efforts focus on …": the field's, not the paper's
    ]
    for aspect, kind in ASPECTS:
        fitting = [s for s in sentences if s not in taken and kind.search(s) and not RELEASE.search(s)]
        if fitting:
            sentence = next((s for s in fitting if NUMBER.search(s)), fitting[0])
            found.append((aspect, sentence))
            taken.add(sentence)
    return found


def best_sentence(source: Source, topic: str) -> str:
    """The sentence of the source's passages that shows the paper is on the topic and what it does: of those
    holding at least half as many of the topic's words as the one holding most (one at least), the one that
    says what the paper does ("We propose …"); else the one holding most; never where the code is or that it will
    be released (`RELEASE`) while another sentence is there. On a tie, one that is not background
    (an abstract's opening, "Recent … have achieved …"), then the first. An abstract's opening restates its
    field, so it often holds the topic's words best while saying nothing of the paper."""
    wanted = set(terms(topic))
    sentences = list(enumerate(source_sentences(source)))
    held = {position: len(wanted & set(terms(sentence))) for position, sentence in sentences}
    enough = max(1, max(held.values(), default=0) / 2)

    def merit(item: tuple[int, str]) -> tuple[bool, bool, int, bool]:
        position, sentence = item
        doing = held[position] >= enough and bool(PROPOSAL.search(sentence))
        return not RELEASE.search(sentence), doing, held[position], not is_background(position, sentence)

    return plain_text(max(sentences, key=merit)[1]) if sentences else ""


def paper_line(number: int, source: Source, topic: str) -> str:
    """One paper of a list: its number, title, status and area, and the sentence that shows why it is on it."""
    return f"{listed_paper(number, source)}: “{best_sentence(source, topic)}”"


def listed_paper(number: int, source: Source) -> str:
    """One paper of a list without a quote: its number, title, status and area."""
    facts = "; ".join(fact for fact in (source.status, source.primary_area.replace("&amp;", "&")) if fact)
    return f"{number}. {plain_text(source.title)} [{number}]" + (f" ({facts})" if facts else "")


def _scope(applied: Filters) -> str:
    """The papers searched, in words: 'the papers with status: Oral', 'the index'."""
    return scope(applied.labels())


def names(title: str, left_out: str) -> bool:
    """True when a title names every word of what the question leaves out, as stems, a plural's "s"
    aside ("LLMs" names "LLM"; "RL" does not name "RLHF")."""
    held = {term.rstrip("s") for term in terms(title)}
    wanted = {term.rstrip("s") for term in terms(left_out)}
    return bool(wanted) and wanted <= held


def _left_out(topic: Topic) -> str:
    """What a list's line adds for what the question leaves out, if anything."""
    return f"; left out: papers whose title names “{topic.left_out}”" if topic.left_out else ""


def _leaving(topic: Topic) -> str:
    return f", leaving out papers whose title names “{topic.left_out}”" if topic.left_out else ""


def _within(applied: Filters) -> str:
    return "" if applied.empty else f" among {_scope(applied)}"
