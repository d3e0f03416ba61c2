"""Counts over the stored metadata (rag/answering/tally.py): every figure an answer gives is checked
against a direct count over the metadata the real index stores (read from Chroma, not from the BM25
copy the answer counts), on the first 300 records of the real list."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import SEED_TEXT

from rag.question.filter_words import ACCEPTED


def stored(service) -> list[dict]:
    """Every stored paper's metadata, read from the Chroma papers collection."""
    return [metadata for _, _, metadata in service.index.iter_papers()]


def direct(papers: list[dict], field: str, keep=lambda paper: True) -> Counter:
    """A plain count per group of `field`: each author of a paper counts it once."""
    counts: Counter = Counter()
    for paper in filter(keep, papers):
        values = paper[field].split("; ") if field == "authors" else [paper[field].replace("&amp;", "&")]
        counts.update(value for value in values if value)
    return counts


def rows_hold(table, counts: Counter) -> None:
    """The table's rows are the direct counts, most first, and no group left out has more than the last."""
    assert table.rows and all(number == counts[name] for name, number in table.rows)
    assert [number for _, number in table.rows] == sorted((number for _, number in table.rows), reverse=True)
    shown = {name for name, _ in table.rows}
    assert all(number <= table.rows[-1][1] for name, number in counts.items() if name not in shown)
    assert table.groups == len(counts)


@pytest.mark.parametrize(
    ("question", "status"),
    [
        ("Which research areas have the most oral papers?", ("Oral",)),
        ("How many spotlight papers per area?", ("Spotlight",)),
        ("How many withdrawn papers are there per area?", ("Withdrawn",)),
        ("Which areas have the most accepted papers?", ACCEPTED),
    ],
)
def test_papers_per_area_are_the_direct_count(sample_service, question, status):
    papers = stored(sample_service)
    counts = direct(papers, "primary_area", lambda paper: paper["status"] in status)
    answer = sample_service.answer(question)
    assert answer.kind == "tally" and not answer.refused and answer.answered_by == "tally"
    assert answer.table.field == "primary_area" and answer.count == sum(p["status"] in status for p in papers)
    rows_hold(answer.table, counts)
    assert len(answer.table.rows) == len(counts)  # about 20 areas: the table holds them all
    top, number = answer.table.rows[0]
    assert f"{top} ({number:,})" in answer.text


@pytest.mark.parametrize(
    ("question", "status"),
    [
        ("How many papers were withdrawn?", ("Withdrawn",)),
        ("How many orals are there?", ("Oral",)),
        ("How many accepted papers are there?", ACCEPTED),
        ("How many papers are there in total?", None),
    ],
)
def test_a_plain_count_is_the_direct_count_with_its_statuses(sample_service, question, status):
    papers = [p for p in stored(sample_service) if status is None or p["status"] in status]
    answer = sample_service.answer(question)
    assert answer.kind == "tally" and answer.count == len(papers) > 0
    assert answer.text.startswith(f"There are {len(papers):,} ")
    assert dict(answer.table.rows) == direct(papers, "status")
    if status == ACCEPTED:
        assert "accepted papers (status: Oral, Spotlight or Poster)" in answer.text


def test_the_authors_with_most_papers_are_counted_by_each_author(sample_service):
    papers = stored(sample_service)
    answer = sample_service.answer("What are the top 5 authors by number of papers?")
    counts = direct(papers, "authors")
    assert len(answer.table.rows) == 5
    rows_hold(answer.table, counts)


def test_a_topic_restricts_the_papers_first_and_the_answer_says_how(sample_service):
    answer = sample_service.answer("Which authors have the most accepted papers on diffusion?")
    listed = {source.paper_id for source in answer.sources}
    papers = [p for p in stored(sample_service) if p["paper_id"] in listed]
    assert answer.kind == "tally" and len(papers) == answer.count == len(answer.sources) > 1
    assert all(paper["status"] in ACCEPTED for paper in papers)
    assert all("diffusion" in f"{s.title} {s.text}".lower() for s in answer.sources)
    rows_hold(answer.table, direct(papers, "authors"))
    accepted = "accepted papers (status: Oral, Spotlight or Poster)"
    assert f"The {len(papers)} {accepted} found on “diffusion”" in answer.text
    assert answer.line.startswith("the topic's papers listed: evidence")


def test_the_same_question_without_understanding_is_not_a_count(sample_service):
    answer = sample_service.answer("Which research areas have the most oral papers?", understand=False)
    assert answer.kind != "tally" and answer.table is None


def test_a_field_the_stored_papers_lack_is_said_in_one_line(make_service):
    """The seed text format stores no status or area: the count says so rather than counting zero."""
    service = make_service()
    service.ingest([SEED_TEXT])
    for question in ("Which research areas have the most oral papers?", "How many spotlight papers per area?"):
        answer = service.answer(question)
        assert answer.refused and answer.table is None and "\n" not in answer.text
        assert answer.text.startswith("The stored papers have no status")
    by_area = service.answer("Which areas have the most papers?")
    assert by_area.refused and by_area.text == "The stored papers have no primary area, so they can't be counted by it."
