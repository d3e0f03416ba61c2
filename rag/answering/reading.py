"""A reading list on a topic ("a reading list on mechanistic interpretability", "I'm new to neural ODEs: what
should I read first?"): the topic's papers, drawn as a list draws them (lists.py), the most central first,
up to `READ` of them.

A paper's centrality is how like the topic's other papers it is: the mean cosine of its passage's embedding
to theirs. The paper that opens the list is the one the others are most about, a way in; the last ones take
the topic somewhere of their own. Each comes with the sentence that shows why it is on the list, cited.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from rag.answering.lists import list_answer, paper_line, topic_rankings
from rag.core.markup import plain_text
from rag.core.types import Answer, Kind, Source

READ = 10  # papers a reading list shows: where to start, not all the topic has (a list has those)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.answering.tools import Tools
    from rag.question.question import Question


def reading_list_answer(question: Question, tools: Tools) -> Answer:
    """The topic's papers, most central first, each with why it is on the list."""
    topic = question.understood.topic
    assert topic is not None, "a reading list has a topic (rag/question/understand.py)"
    rankings = topic_rankings(topic, question.filters, tools.search, tools.settings)
    listed = list_answer(topic, Kind.READING_LIST, question.filters, rankings, tools.settings, question.asked)
    if listed.refused:
        return listed
    papers = most_central_first(listed.sources, tools.sentence_embeddings)[:READ]
    many = f"{len(papers)} of the {len(listed.sources)} papers on it" if len(listed.sources) > READ else "its papers"
    head = f"A reading list on “{topic.text}”: {many}, the most central first (the one most like the others):"
    lines = [head, *(paper_line(number, source, topic.text) for number, source in enumerate(papers, start=1))]
    return replace(listed, text="\n".join(lines), sources=papers, answered_by="reading list")


def most_central_first(sources: list[Source], embeddings: Embeddings) -> list[Source]:
    """`sources` by the mean cosine of each one's title and passage to the others', highest first (ties: as ranked)."""
    if len(sources) < 3:
        return sources
    vectors = np.asarray(embeddings.embed_documents([f"{plain_text(s.title)}. {s.text}" for s in sources]))
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = vectors @ vectors.T
    centrality = (similarity.sum(axis=1) - 1) / (len(sources) - 1)
    order = sorted(range(len(sources)), key=lambda i: (-centrality[i], i))
    return [sources[i] for i in order]
