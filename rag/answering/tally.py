"""Answers that count the stored metadata: papers per group of a field (status, primary area, author), or
in all. Exact: no ranking decides what is counted, unless the question names a topic.

"Which research areas have the most oral papers?" counts the Oral papers of the index per primary area;
"how many papers were withdrawn?" counts the Withdrawn ones. A topic ("… accepted papers on diffusion")
restricts the papers first, drawn as a list answer draws a topic's papers (rag/answering/lists.py), and
the answer says so, with the list's line. The answer's `table` holds the counts (all groups, or the top
of them when there are many), its text the first few; a field the stored papers lack is said in one line,
not counted as zero. What the question asks is read in rag/question/tally.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answering.lists import list_answer, topic_rankings
from rag.core.filters import Filters
from rag.core.tables import Table
from rag.core.types import Answer, Kind, Source
from rag.core.wording import counted, papers_of, verb
from rag.question.filter_words import ACCEPTED
from rag.question.tally import Tally

if TYPE_CHECKING:
    from rag.answering.tools import Tools
    from rag.question.question import Question

# The caller's stored metadata: filters -> {stored key: one value per paper the filters admit}.
Stored = Callable[[Filters], dict[str, list]]
TABLE_ROWS = 25  # groups a table holds when the question asks for no top N (an author table has thousands)
SAID = 3  # groups the text names when the question asks for no top N


def tally_answer(question: Question, tools: Tools) -> Answer:
    """The counts a counting question asks for, over the papers its filters admit (and its topic's, if it
    names one, drawn with the search as a list draws them). A share is answered by shares.py."""
    asked, applied = question.understood, question.filters
    tally = asked.tally
    assert tally is not None, "a tally question says what it counts (rag/question/tally.py)"
    columns, sources, drawn, line = tools.metadata(applied), list[Source](), "", ""
    if asked.topic is not None:  # the papers on a topic ("… accepted papers on diffusion")
        topic = drawn_topic(question, applied, tools)
        if isinstance(topic, Answer):
            return topic
        sources, drawn, line = topic
        columns = only(columns, {source.paper_id for source in sources})
    missing = _missing(tally, applied, columns, tools.metadata)
    if missing:
        return Answer(question.asked, missing, sources, refused=True, refusal_reason=missing, kind=Kind.TALLY)
    order = ranked_groups(tally, columns)
    table = count(tally, order, len(columns["paper_id"]), what_counted(applied, drawn))
    return Answer(
        question=question.asked,
        text=_text(tally, table, order),
        sources=sources,
        answered_by="tally",
        kind=Kind.TALLY,
        count=table.counted,
        line=line or None,
        table=table,
    )


def drawn_topic(question: Question, applied: Filters, tools: Tools) -> tuple[list[Source], str, str] | Answer:
    """The papers of the question's topic under `applied`, drawn as a list draws them: their sources, how they
    were drawn and the list's line, in words; or the list's refusal when no paper is about it."""
    topic = question.understood.topic
    assert topic is not None
    settings = tools.settings
    rankings = topic_rankings(topic, applied, tools.search, settings)
    listed = list_answer(topic, Kind.TALLY, applied, rankings, settings, question.asked)
    if listed.refused:
        return replace(listed, kind=Kind.TALLY)
    ranked = max(map(len, rankings))
    full = ranked >= settings.questions.list_cap and len(listed.sources) == ranked  # as a list says "at least"
    capped = ", as many as a list shows: there may be more" if full else ""
    drawn = f"found on “{topic.text}” (those a list keeps of the {ranked} best-ranked{capped})"
    return listed.sources, drawn, f"the topic's papers {listed.line}"


def ranked_groups(tally: Tally, columns: dict[str, list]) -> list[tuple[str, int]]:
    """Every group of the field the tally names (status for a plain count) with its papers among `columns`,
    most first (fewest first when asked), ties by name."""
    field = tally.field or "status"
    counts: Counter[str] = Counter()
    for value in columns[field]:
        counts.update(set(groups_of(field, value)))
    return sorted(counts.items(), key=lambda item: (item[1] if tally.fewest else -item[1], item[0]))


def count(tally: Tally, order: list[tuple[str, int]], counted: int, what: str) -> Table:
    """The table of `counted` papers ranked into groups (`order`, from `ranked_groups`): the top N asked
    for, else up to TABLE_ROWS groups."""
    field, group = (tally.field, tally.group) if tally.field else ("status", "status")
    return Table(group, field, tuple(order[: tally.top or TABLE_ROWS]), counted, len(order), what)


def groups_of(field: str, value: object) -> list[str]:
    """The groups one paper's stored value puts it in: each author of "A; B", the area as people read it."""
    text = str(value or "")
    if field == "authors":
        return [name for name in text.split("; ") if name]
    return [text.replace("&amp;", "&")] if text else []


def only(columns: dict[str, list], paper_ids: set[str]) -> dict[str, list]:
    """The stored columns of the papers `paper_ids` names."""
    rows = [row for row, paper_id in enumerate(columns["paper_id"]) if paper_id in paper_ids]
    return {key: [values[row] for row in rows] for key, values in columns.items()}


def _missing(tally: Tally, applied: Filters, columns: dict[str, list], stored: Stored) -> str:
    """One line when the stored papers lack a field the question needs (then nothing is counted), else ""."""
    if tally.field and columns["paper_id"] and not any(columns[tally.field]):
        return f"The stored papers have no {tally.group}, so they can't be counted by it."
    if columns["paper_id"] or applied.empty:
        return ""
    everything = stored(Filters())
    lacking = [spec for spec, _ in applied.active() if spec.stored in everything and not any(everything[spec.stored])]
    if lacking:
        names = " or ".join(spec.name.replace("_", " ") for spec in lacking)
        return f"The stored papers have no {names}, so the papers with {'; '.join(applied.labels())} can't be counted."
    return ""


def what_counted(applied: Filters, drawn: str) -> str:
    """Which papers were counted, in words, after their number: 'papers with status: Oral'."""
    labels = applied.labels()
    accepted = set(applied.status) == set(ACCEPTED)  # "accepted" is three statuses: say which
    if accepted:
        labels = [label for label in labels if not label.startswith("status:")]
    noun = "accepted papers (status: Oral, Spotlight or Poster)" if accepted else "papers"
    if not labels and not drawn and not accepted:
        return "papers of the index"
    return " ".join(part for part in (noun, drawn, f"with {'; '.join(labels)}" if labels else "") if part)


def _text(tally: Tally, table: Table, order: list[tuple[str, int]]) -> str:
    """The counts in a few words: the plain count with its statuses, or the first groups with theirs, and how
    many other groups (of all of them, `order`, not only the table's rows) share the last one's count."""
    papers = papers_of(table.counted, table.what)
    if not tally.field:
        split = "; ".join(f"{name} ({number:,})" for name, number in table.rows)
        return f"There {verb(table.counted, 'is', 'are')} {papers}" + (f": {split}." if len(table.rows) > 1 else ".")
    if not table.rows:
        return f"There are no {table.what} to count."
    said = table.rows[: tally.top or SAID]
    listing = "; ".join(f"{name} ({number:,})" for name, number in said)
    fall = verb(table.counted, *(("is in", "are in") if table.field == "primary_area" else ("has", "have")))
    most = "Fewest papers" if tally.fewest else "Most papers"
    text = f"The {papers} {fall} {counted(table.groups, table.group)}. {most}: {listing}."
    last = said[-1][1]
    tied = sum(1 for _, number in order[len(said) :] if number == last)
    if tied:
        text += f" {counted(tied, table.group, 'more ')} also {verb(tied, 'has', 'have')} {last:,}."
    return text
