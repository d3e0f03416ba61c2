"""The answers a question gets without a look-up, by its kind (`ANSWERERS`): the related papers of a paper it
names, counts over the stored metadata, or a list, count, overview or compare of many papers.

Each kind's answerer is called the same way, `answerer(question, tools)` (rag/answering/tools.py): the
question as read once (rag/question/question.py) and what answering may use. Adding a kind is a `Kind`, a
rule in the reader (rag/question/understand.py) and its answerer here. A look-up has none: it is the answer
pipeline's (rag/answering/pipeline.py).
"""

from __future__ import annotations

from collections.abc import Callable

from rag.answering.filtered import filtered_list_answer
from rag.answering.focused import focus_answer, named_answer
from rag.answering.lists import compare_kind_answer, list_kind_answer
from rag.answering.reading import reading_list_answer
from rag.answering.related import related_answer
from rag.answering.shares import share_answer
from rag.answering.tally import tally_answer
from rag.answering.tools import Tools
from rag.core.types import Answer, Kind
from rag.question.question import Question
from rag.question.understand import TOPICAL

Answerer = Callable[[Question, Tools], Answer | None]  # None: a look-up after all


def counts_answer(question: Question, tools: Tools) -> Answer:
    """A count over the metadata: counts (tally.py), or shares when asked as shares (shares.py)."""
    tally = question.understood.tally
    return (share_answer if tally is not None and tally.share else tally_answer)(question, tools)


ANSWERERS: dict[Kind, Answerer] = {
    Kind.RELATED: related_answer,
    Kind.TALLY: counts_answer,
    Kind.LIST: list_kind_answer,
    Kind.COUNT: list_kind_answer,
    Kind.OVERVIEW: list_kind_answer,
    Kind.READING_LIST: reading_list_answer,
    Kind.COMPARE: compare_kind_answer,
}


def kind_answer(question: Question, tools: Tools) -> Answer | None:
    """The answer of the question's kind, saying what every answer says of its question; None for a look-up.
    A follow-up held to the papers in focus is a look-up of them unless it asks their stored fields or for
    another kind over them (focused.py). A list that names no topic, only filters, lists the papers they admit
    (filtered.py). A paper's title asked alone is a look-up: the reader reads a title's
    words as a question's ("MedFuzz: Exploring the Robustness of …" read as related papers)."""
    if question.focus:
        return focus_answer(question, tools)
    if question.kind == Kind.LOOKUP and question.fields:  # "Who wrote RxnFlow?": its stored fields, if stored
        return named_answer(question, tools)
    if question.kind == Kind.LIST and question.understood.topic is None and not question.understood.filters.empty:
        return question.stamped(filtered_list_answer(question, tools), tools.settings.name)  # "Percy Liang papers"
    if question.kind in TOPICAL and question.understood.topic is None:
        return None  # "which should I read first?" with no papers in focus and no topic: a look-up
    if question.kind != Kind.LOOKUP and tools.stored_paper(question.text):
        return None  # a stored paper's title, id or name and nothing else: a look-up of it, whatever its words
    answer = answerer(question, tools) if (answerer := ANSWERERS.get(question.kind)) else None
    return None if answer is None else question.stamped(answer, tools.settings.name)
