"""A list of the papers a question's filters admit when it names no topic: "Percy Liang papers", "list the orals
in the RL area", "What has Aviral Kumar had accepted this year?". Exact: the stored metadata decides what is
listed, no ranking; orals first, then spotlights, posters and the rest, each by title, up to
`questions.list_cap`, and the answer says how many there are in all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answering.lists import listed_paper
from rag.core.types import Answer, Kind
from rag.core.wording import scope

if TYPE_CHECKING:
    from rag.answering.tools import Tools
    from rag.question.question import Question

DECIDED = ("Oral", "Spotlight", "Poster", "Reject", "Withdrawn", "Desk Rejected")  # the order a list shows


def filtered_list_answer(question: Question, tools: Tools) -> Answer:
    """Every paper the question's filters admit (the first `list_cap` of them, orals first), each with its
    title, decision and area, cited."""
    applied, cap = question.filters, tools.settings.questions.list_cap
    columns = tools.metadata(applied)
    order = sorted(
        zip(columns["paper_id"], columns["status"], columns["title"], strict=True),
        key=lambda row: (DECIDED.index(row[1]) if row[1] in DECIDED else len(DECIDED), str(row[2]).casefold()),
    )
    within = scope(applied.labels())
    line = f"listed: every paper of {within}, by decision (orals first) and title, up to {cap}"
    if not order:
        text = f"No stored paper is among {within}."
        return Answer(question.asked, text, [], refused=True, refusal_reason=text, kind=Kind.LIST, line=line)
    shown = tuple(paper_id for paper_id, _, _ in order[:cap])
    found = {s.paper_id: s for s in tools.search(question.text, len(shown), replace(applied, papers=shown))}
    sources = [found[paper_id] for paper_id in shown if paper_id in found]
    head = f"{len(order)} {'paper is' if len(order) == 1 else 'papers are'} among {within}"
    head += f"; the first {len(sources)}, orals first:" if len(sources) < len(order) else ":"
    lines = [head, *(listed_paper(number, source) for number, source in enumerate(sources, start=1))]
    return Answer(
        question.asked, "\n".join(lines), sources, answered_by="metadata", kind=Kind.LIST, count=len(order), line=line
    )
