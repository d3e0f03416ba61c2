"""Counts asked as shares: "what fraction of submissions were withdrawn?", "the acceptance rate per area", "what
share of the papers on machine unlearning were accepted?". Exact, from the stored metadata, each share with
its numerator and denominator.

A share is the papers a question picks out of the papers it is about. What it picks is the filter it names
first of status, primary area and author ("accepted", "orals", "withdrawals"; "in the RL area"); what they
are out of is the same papers without that filter (the RL papers, for "the oral rate in the RL area"). With
no such filter, a topic picks its papers out of all ("what share of submissions are about diffusion?"), and a
group by itself is shares of the papers counted ("the status of quantization papers in percentages").
Per group (area, status, author), each group's share of its own papers, the highest first.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rag.answering.tally import SAID, TABLE_ROWS, drawn_topic, groups_of, only, what_counted
from rag.core.filters import Filters
from rag.core.tables import Table
from rag.core.types import Answer, Kind, Source
from rag.core.wording import papers_of

if TYPE_CHECKING:
    from rag.answering.tools import Tools
    from rag.question.question import Question
    from rag.question.tally import Tally

PICKING = ("status", "primary_area", "author")  # the filter a share picks by, the first of these given


def share_answer(question: Question, tools: Tools) -> Answer:
    """The share a question asks for: of the papers its filters admit without the one that picks, those it picks."""
    tally, applied, asked = question.understood.tally, question.filters, question.understood
    assert tally is not None
    picking = next((name for name in PICKING if getattr(applied, name)), None)
    out_of = Filters(**{spec.name: value for spec, value in applied.active() if spec.name != picking})
    base, sources, drawn, line = tools.metadata(out_of), list[Source](), "", ""
    picked: set[str] | None = set(tools.metadata(applied)["paper_id"]) if picking else None
    said = f"have {'; '.join(Filters(**{picking: getattr(applied, picking)}).labels())}" if picking else ""
    if asked.topic is not None:
        topic = drawn_topic(question, out_of, tools)
        if isinstance(topic, Answer):
            return topic
        sources, drawn, line = topic
        on_topic = {source.paper_id for source in sources}
        if picking or tally.field:  # of the topic's papers, those the filter picks, or those of each group
            base = only(base, on_topic)
        else:  # the topic's papers, of all
            picked, said, drawn = on_topic, f"are {drawn}", ""
    table = shares(tally, base, picked, what_counted(out_of, drawn))
    return Answer(
        question=question.asked,
        text=_text(tally, table, said),
        sources=sources,
        answered_by="tally",
        kind=Kind.TALLY,
        count=table.rows[0][1] if tally.field is None and table.rows else table.counted,
        line=line or None,
        table=table,
    )


def shares(tally: Tally, base: dict[str, list], picked: set[str] | None, what: str) -> Table:
    """Of the papers in `base`, those in `picked`, in all (no field) or per group, each with the papers it is
    out of; or, with nothing picked, each group's papers out of all in `base`. Highest share first (lowest
    when the fewest were asked)."""
    ids = base["paper_id"]
    if tally.field is None:
        chosen = len(ids) if picked is None else sum(paper_id in picked for paper_id in ids)
        return Table("papers", "", (("picked", chosen),), len(ids), 1, what, of=(len(ids),))
    in_all: Counter[str] = Counter()
    in_picked: Counter[str] = Counter()
    for paper_id, value in zip(ids, base[tally.field], strict=True):
        for group in set(groups_of(tally.field, value)):
            in_all[group] += 1
            in_picked[group] += picked is None or paper_id in picked
    out_of = {group: (len(ids) if picked is None else in_all[group]) for group in in_all}
    share = {group: in_picked[group] / out_of[group] for group in in_all}
    order = sorted(in_all, key=lambda g: (share[g] if tally.fewest else -share[g], -in_all[g], g))
    rows = order[: tally.top or TABLE_ROWS]
    counts = tuple((group, in_picked[group]) for group in rows)
    return Table(tally.group, tally.field, counts, len(ids), len(order), what, of=tuple(out_of[g] for g in rows))


def _text(tally: Tally, table: Table, said: str) -> str:
    """The share in a sentence ("2,935 of the 11,669 papers of the index (25.2%) have status: Withdrawn."), or
    the highest (lowest) groups' shares, each as papers out of papers."""
    if not table.rows:
        return f"There are no {table.what} to count."
    over = papers_of(table.counted, table.what)
    if tally.field is None:
        return f"{table.rows[0][1]:,} of the {over} ({table.share(0):.1f}%) {said}."
    shown = table.rows[: tally.top or SAID]
    listing = "; ".join(f"{name} {table.share(i):.1f}% ({n:,} of {table.of[i]:,})" for i, (name, n) in enumerate(shown))
    most = "Lowest" if tally.fewest else "Highest"
    if said:  # a rate per group
        return f"Of each {table.group}'s papers, the share that {said}, over the {over}. {most}: {listing}."
    return f"The {over} by {table.group}, each as a share of them all. {most}: {listing}."
