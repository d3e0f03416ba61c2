"""How answers word their figures, through `rag.answer()` and the CLI over the real seed index: a count
agrees with its number ("1 paper", never "1 papers"), a tie names how many share it (counted over every
group, not the rows a table holds), and a question that nothing matches names the filters that
narrowed it."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from clirun import rag as rag_command

import rag
from rag.core.filters import Filters

# A count and its noun out of agreement: "1 papers", "There are 1 …", "1 primary areas", "1 … are in".
DISAGREES = re.compile(
    r"\b1 (?:\w+ )?(?:papers|areas|authors|statuses|themes)\b|\bThere are 1\b|\b1 [^.;]*? (?:are in|have)\b"
)
RXNFLOW = "How does RxnFlow keep generated molecules synthesizable?"


def stored(service) -> list[dict]:
    return [metadata for _, _, metadata in service.index.iter_papers()]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many spotlight papers are there?", "There is 1 paper with status: Spotlight."),
        ("Which areas have the most spotlight papers?", "The 1 paper with status: Spotlight is in 1 primary area."),
        ("Which authors have the most spotlight papers?", "The 1 paper with status: Spotlight has "),
    ],
)
def test_a_count_of_one_paper_agrees_with_its_number(seeded, question, expected):
    """The seeds hold one Spotlight paper (Bright Ending Attention)."""
    answer = rag.answer(question, config=seeded.config)
    assert answer.kind == "tally" and answer.count == 1
    assert expected in answer.text, answer.text
    assert not DISAGREES.search(answer.text), answer.text


def test_a_list_of_one_and_a_plain_count_of_many_keep_their_agreement(seeded):
    one = rag.answer("Which spotlight papers are about attention?", config=seeded.config)
    assert one.text.startswith("1 paper matches") and not DISAGREES.search(one.text), one.text
    many = rag.answer("How many papers are there in total?", config=seeded.config)
    assert many.text.startswith(f"There are {len(stored(seeded))} papers of the index"), many.text


def test_a_tie_says_how_many_authors_share_it_not_how_many_rows_the_table_holds(seeded):
    """Nearly every seed author has one paper: the text names three, and the true number of the others."""
    counts = Counter(name for paper in stored(seeded) for name in paper["authors"].split("; ") if name)
    answer = rag.answer("Which authors have the most papers?", config=seeded.config)
    said = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
    last = said[-1][1]
    others = sum(1 for name, number in counts.items() if number == last and (name, number) not in said)
    assert others > len(answer.table.rows)  # more than the table holds: the case the issue found
    noun = "author" if others == 1 else "authors"
    assert f" {others:,} more {noun} also ha" in answer.text and "At least" not in answer.text, answer.text


def test_nothing_matching_under_a_filter_names_the_filter_in_python_and_the_cli(seeded):
    """The seeds have no Oral paper: the refusal says which filter left nothing, not just "no abstract"."""
    answer = rag.answer(RXNFLOW, config=seeded.config, filters=Filters(status=("Oral",)))
    assert answer.refused and not answer.sources
    assert "status: Oral" in answer.text, answer.text
    shown = rag_command("ask", RXNFLOW, "--status", "Oral", index=seeded.config.vectorstore.path)
    assert shown.returncode == 0, shown.stderr
    assert "status: Oral" in shown.stdout.split("(not answered")[0], shown.stdout
    both = rag.answer(RXNFLOW, config=seeded.config, filters=Filters(status=("Oral",), has_code=True))
    assert "status: Oral" in both.text and "has_code: yes" in both.text, both.text
    unfiltered = rag.answer("What is the capital of Australia?", config=seeded.config)
    assert "status" not in unfiltered.text  # no filter, none named
