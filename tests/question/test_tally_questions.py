"""Which questions count the stored metadata (rag/question/tally.py): the field grouped by, the top N,
the topic; and that no other question is taken for one."""

from __future__ import annotations

import json

import pytest

from rag.core.config import PROJECT_ROOT
from rag.core.filters import Filters
from rag.question.filter_words import ACCEPTED
from rag.question.tally import Tally, tally_of
from rag.question.understand import understand

EVAL = PROJECT_ROOT / "tests" / "eval"


@pytest.mark.parametrize(
    ("question", "field", "top", "topic", "filters"),
    [
        ("Which research areas have the most oral papers?", "primary_area", None, "", Filters(status=("Oral",))),
        ("How many spotlight papers per area?", "primary_area", None, "", Filters(status=("Spotlight",))),
        (
            "Which authors have the most accepted papers on diffusion?",
            "authors",
            None,
            "diffusion",
            Filters(status=ACCEPTED),
        ),
        ("How many papers were withdrawn?", None, None, "", Filters(status=("Withdrawn",))),
        ("How many orals are there?", None, None, "", Filters(status=("Oral",))),
        ("How many papers were desk rejected?", None, None, "", Filters(status=("Desk Rejected",))),
        ("What are the top 5 authors by number of accepted papers?", "authors", 5, "", Filters(status=ACCEPTED)),
        ("Show me the 10 most prolific authors", "authors", 10, "", Filters()),
        ("Which 3 areas have the most withdrawn papers?", "primary_area", 3, "", Filters(status=("Withdrawn",))),
        ("How many diffusion papers per area?", "primary_area", None, "diffusion", Filters()),
        ("Who has the most papers on theory of mind?", "authors", None, "theory of mind", Filters()),
        ("What is the breakdown of papers by status?", "status", None, "", Filters()),
        ("Number of RL papers per decision", "status", None, "", Filters(primary_area=("reinforcement learning",))),
    ],
)
def test_a_counting_question_names_its_group_top_and_topic(question, field, top, topic, filters):
    understood = understand(question)
    tally = tally_of(understood)
    assert tally is not None
    assert (tally.field, tally.top, tally.topic) == (field, top, topic)
    assert understood.filters == filters


def test_the_fewest_come_first_when_asked():
    assert tally_of(understand("Which areas have the fewest orals?")) == Tally(
        "primary_area", "primary area", None, True, ""
    )


@pytest.mark.parametrize(
    "question",
    [
        "How many papers on mixture-of-experts?",  # a topic and no group: the list's count
        "How many oral papers are about diffusion?",
        "How many reaction templates does RxnFlow use?",
        "How does performance vary across tracks?",  # no papers asked about
        "Which oral papers are about mixture-of-experts?",
        "Which researchers proposed the most efficient attention?",
    ],
)
def test_other_questions_are_not_counts_of_the_metadata(question):
    assert tally_of(understand(question)) is None


@pytest.mark.parametrize(
    "name", ["full_questions.jsonl", "researcher_questions.jsonl", "seed_questions.jsonl", "list_questions.jsonl"]
)
def test_no_question_of_the_other_eval_sets_is_taken_for_a_count_of_the_metadata(name):
    """Lookups, lists, counts of a topic and comparisons stay what they were: none reads as a tally."""
    lines = (EVAL / name).read_text(encoding="utf-8").splitlines()
    taken = [q for q in (json.loads(line)["question"] for line in lines if line.strip()) if tally_of(understand(q))]
    assert taken == []
