"""A follow-up about the papers in focus that asks for more than a look-up of their abstracts: their stored
fields ("who wrote the first one?", "which of the first five got accepted?"), two of them side by side ("how
does the second one compare to the first?"), the papers like one of them ("more like the third one", "…
but for web navigation"), or which of them to read first.

The papers are the ones the conversation points to (rag/question/focus.py), taken by id: never searched for
again by a name. Any other follow-up is a look-up held to them (the answer pipeline's).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answering.lists import best_for, compare_answer, paper_line
from rag.answering.reading import READ, most_central_first
from rag.answering.related import related_among
from rag.core.filters import Filters
from rag.core.markup import plain_text
from rag.core.types import Answer, Kind, Source
from rag.question.filter_words import ACCEPTED, statuses_in
from rag.question.focus import points_back
from rag.text.naming import names_in, paper_name

if TYPE_CHECKING:
    from rag.answering.tools import Tools
    from rag.question.question import Question

WHY = "The abstracts and the stored fields don't say why a decision was made."


def focus_answer(question: Question, tools: Tools) -> Answer | None:
    """The answer of a follow-up that asks the papers in focus for a stored field, or for a kind other than a
    look-up; None when it is a look-up of their abstracts."""
    answerer = fields_answer if question.fields else ON_FOCUS.get(question.kind)
    if not question.focus or answerer is None:
        return None
    answer = answerer(question, tools)
    return None if answer is None else question.stamped(answer, tools.settings.name)


def named_answer(question: Question, tools: Tools) -> Answer | None:
    """The stored fields a look-up asks of a paper it names, and nothing else ("Who wrote RxnFlow?", "Is SANA
    an oral?"): the first name in it that names a stored paper exactly; None when none does."""
    named = (stored_as(name, tools) for name in names_in(question.text)) if question.fields else ()
    paper = next(filter(None, named), None)
    if paper is None:
        return None
    held = replace(question, standalone=replace(question.standalone, focus=(paper,)))
    return question.stamped(fields_answer(held, tools), tools.settings.name)


def stored_as(name: str, tools: Tools) -> str | None:
    """The stored paper a name names: its id or title, the name its title gives before a colon, or the name it
    proposes ("We propose RxnFlow") among the papers a search for the name finds first; else the one paper of
    those whose title says the name ("the Hanabi paper": "A Generalist Hanabi Agent"), when only one does."""
    found = tools.search(name, 3, Filters()) if not (paper := tools.stored_paper(name)) else []
    proposed = next((s.paper_id for s in found if paper_name(s).strip("“”").lower() == name.lower()), None)
    titled = [s.paper_id for s in found if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", s.title, re.IGNORECASE)]
    return paper or proposed or (titled[0] if len(titled) == 1 else None)


def in_focus(question: Question, tools: Tools) -> list[Source]:
    """The papers in focus, in the order the conversation gave them (the order they were numbered)."""
    found = tools.search(question.text, len(question.focus), Filters(papers=question.focus))
    order = {paper_id: place for place, paper_id in enumerate(question.focus)}
    return sorted(found, key=lambda source: order.get(source.paper_id, len(order)))


def fields_answer(question: Question, tools: Tools) -> Answer:
    """Each paper's stored fields the question asks for: its status, area or authors (in the metadata's
    order, not the byline's). A status it names is counted among them ("which of them got
    accepted?"), and a "why" of a decision is said to be beyond the abstracts."""
    papers = in_focus(question, tools)
    lines = [f"{number}. {plain_text(source.title)} [{number}]: {_fields(source, question.fields)}"
             for number, source in enumerate(papers, start=1)]  # fmt: skip
    if len(papers) == 1:
        lines = [f"“{plain_text(papers[0].title)}” [1]: {_fields(papers[0], question.fields)}"]
    named = question.understood.filters.status or statuses_in(question.text)
    if named and len(papers) > 1 and "status" in question.fields:
        having = sum(source.status in named for source in papers)
        lines.insert(0, f"{having} of these {len(papers)} papers have the status {' or '.join(named)}:")
    if "code" in question.fields and len(papers) > 1:
        having = sum(bool(source.github) for source in papers)
        lines.insert(0, f"{having} of these {len(papers)} papers link their code in the abstract:")
    if "status" in question.fields and question.text.lower().lstrip().startswith("why"):
        lines.append(WHY)
    return Answer(question.asked, "\n".join(lines), papers, answered_by="metadata", count=len(papers))


def _fields(source: Source, fields: tuple[str, ...]) -> str:
    said = {
        "status": f"status {source.status or 'not stored'}" + (" (accepted)" if source.status in ACCEPTED else ""),
        "primary_area": f"primary area “{html.unescape(source.primary_area) or 'not stored'}”",
        "authors": "authors (in the metadata's order, not the byline's) " + (", ".join(source.authors) or "not stored"),
        "code": f"code at {', '.join(source.github)}" if source.github else "no code link in its abstract",
    }
    return "; ".join(said[field] for field in fields) + "."


def compare_focus(question: Question, tools: Tools) -> Answer | None:
    """The papers pointed to side by side; one pointed to beside the other thing the question names ("how does
    the last one differ from standard flow matching?"), the best paper for it that passes refusal, as a
    compare of two named things takes it (`best_for`)."""
    papers = in_focus(question, tools)
    pairs: list[tuple[str, Source | None]] = [
        (paper_name(source) or f"“{plain_text(source.title)}”", source) for source in papers
    ]
    others = [
        name
        for name in question.understood.compared
        if name and name.lower() != pairs[0][0].lower() and not points_back(name)  # "it", "this one": the focus
    ]
    if len(pairs) == 1 and others:
        taken = set(question.focus)
        pairs.append((others[-1], best_for(others[-1], question.filters, tools, taken)))
    return compare_answer(question, pairs) if len(pairs) > 1 else None


def related_focus(question: Question, tools: Tools) -> Answer:
    """The papers like the one pointed to (the first, when several are), among the topic it restricts to."""
    papers = in_focus(question, tools)
    return related_among(papers[0].paper_id, question, tools)


def reading_focus(question: Question, tools: Tools) -> Answer:
    """The papers in focus, the most central first (up to `READ` of them): which of them to read first."""
    focused = in_focus(question, tools)
    papers = most_central_first(focused, tools.sentence_embeddings)[:READ]
    many = f"the {len(papers)} most central" if len(focused) > READ else "the most central"
    head = f"Of these {len(focused)} papers, {many} first (the one most like the others):"
    lines = [head, *(paper_line(number, source, question.text) for number, source in enumerate(papers, start=1))]
    return Answer(
        question.asked, "\n".join(lines), papers, answered_by="reading list", kind=Kind.READING_LIST, count=len(papers)
    )


ON_FOCUS: dict[Kind, Callable[[Question, Tools], Answer | None]] = {  # None: a look-up after all
    Kind.COMPARE: compare_focus,
    Kind.RELATED: related_focus,
    Kind.READING_LIST: reading_focus,
}
