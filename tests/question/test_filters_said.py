"""Filters said the many ways the phrasing set's writers said them (issue 41): a decision anywhere in a question
about many papers, an author by a stored name in any case, an area by its name or as where papers are; and a
question that names only filters lists the papers they admit, from the stored metadata. Through the service
and `rag.answer()` over the real seed index, as a user asks them."""

from __future__ import annotations

import pytest
from clirun import rag as cli

import rag
from rag.core.filters import Filters

ACCEPTED = ("Oral", "Spotlight", "Poster")
THEORY = "learning theory"
SAFETY = "alignment, fairness, safety, privacy, and societal considerations"


@pytest.mark.parametrize(
    ("question", "filters"),
    [
        ("single-cell papers, accepted only", Filters(status=ACCEPTED)),
        ("withdrawn gaussian splatting papers", Filters(status=("Withdrawn",))),
        ("how many flow matching papers made it in", Filters(status=ACCEPTED)),
        ("list diffusion policies for robot manipulation that were accepted as posters", Filters(status=("Poster",))),
        ("Chelsea Finn's robot learning submissions that were rejected or withdrawn", None),
        ("list bayesian optimization works, rejected ones too", Filters()),  # kept, not filtered to
        ("every submission on KV cache eviction, whether it got in or not", Filters()),
        ("orals in learning theory that analyze transformers", Filters(status=("Oral",), primary_area=(THEORY,))),
        (
            "How many spotlight papers are in optimization?",
            Filters(status=("Spotlight",), primary_area=("optimization",)),
        ),
        ("LLM watermarking papers in the alignment, fairness, safety, privacy area", Filters(primary_area=(SAFETY,))),
        ("bilevel optimization papers that got accepted", Filters(status=ACCEPTED)),  # a topic's word, no area
        ("count the offline RL submissions", Filters()),
    ],
)
def test_a_filter_is_read_wherever_it_is_said_and_a_topic_s_words_stay_the_topic_s(seeded, question, filters):
    read = seeded.understand(question).filters
    if filters is None:  # an author too: the statuses alone
        assert read.status == ("Reject", "Withdrawn")
    else:
        assert read == filters


def test_an_author_is_read_by_a_stored_name_in_any_case_and_only_a_stored_one(seeded):
    assert seeded.understand("andras a benczur papers on uncertainty").filters.author == "Andras A Benczur"
    assert seeded.understand("Papers from Lun Wang on clipping").filters.author == "Lun Wang"
    assert seeded.understand("Papers from Graph Neural Networks on clipping").filters.author == ""


def test_a_question_of_filters_alone_lists_the_papers_they_admit_through_rag_answer(seeded):
    """ "Percy Liang papers" was a look-up of its words and refused; "list the orals by X" a list of papers about
    "list the papers", also refused. Now each lists what the stored metadata holds, spotlights before posters."""
    answer = rag.answer("daochang liu papers", config=seeded.config)
    assert answer.kind == "list" and not answer.refused and answer.count == 1
    assert answer.sources[0].title.startswith("Exploring Local Memorization in Diffusion Models")
    shown = cli("ask", "daochang liu papers", index=seeded.config.vectorstore.path)  # says it quotes nothing
    assert "1. Exploring Local Memorization" in shown.stdout and "quotes the abstract" not in shown.stdout
    assert "Listed from the papers' stored metadata" in shown.stdout
    listed = rag.answer("list the accepted papers in the reinforcement learning area", config=seeded.config)
    assert listed.kind == "list" and listed.count == 3 and len(listed.sources) == 3
    assert {source.primary_area for source in listed.sources} == {"reinforcement learning"}
    assert listed.text.startswith("3 papers are among the papers with status: Oral or Spotlight or Poster")
    ordered = rag.answer("spotlights and posters in the alignment, fairness, safety area", config=seeded.config)
    assert [source.status for source in ordered.sources][:2] == ["Spotlight", "Poster"]
    none = rag.answer("orals in the learning theory area", config=seeded.config)
    assert (
        none.refused
        and none.text == "No stored paper is among the papers with status: Oral; primary_area: learning theory."
    )


def test_a_follow_up_of_filter_words_alone_is_asked_of_the_papers_in_focus(seeded):
    """ "and the ones by Chen Chen?" after a list named no paper pointed back to (main refused a list of papers
    about "and the ones"); it is asked of the listed papers, held to the author's among them."""
    listed = rag.answer("papers on diffusion models", config=seeded.config)
    assert listed.kind == "list" and len(listed.numbered) == 3
    ones = rag.answer("and the ones by Chen Chen?", history=[(listed.question, listed.text)], config=seeded.config)
    assert set(ones.focus) == set(listed.numbered) and not ones.refused
    assert [source.title[:33] for source in ones.sources] == ["Exploring Local Memorization in D"]
    which = rag.answer("which of them were spotlights?", history=[(listed.question, listed.text)], config=seeded.config)
    assert set(which.focus) == set(listed.numbered)
    assert which.text.startswith("1 of these 3 papers have the status Spotlight")
