"""The conversation's focus: which follow-ups refer back, which paper "the first one" means, when a
follow-up turns to a new topic, and the history's forms."""

from __future__ import annotations

import pytest

from rag.core.errors import InputError
from rag.core.types import Match, Source
from rag.question.focus import (
    FocusMemory,
    Turn,
    as_turns,
    asks_anew,
    gone_back,
    held_to_focus,
    narrowed,
    refers_back,
)


def paper(paper_id: str, text: str) -> Source:
    return Source.from_text(paper_id, paper_id, text)


HANABI = paper("r3d2", "We introduce R3D2, a generalist agent for Hanabi. This is visible in the Hanabi benchmark.")
FORGERY = paper("fakeshield", "We design FakeShield, a framework for explainable image forgery detection.")


@pytest.mark.parametrize(
    "question, refers",
    [
        ("What benchmark did they use?", True),
        ("How many GPU hours did it take?", True),
        ("What does the paper propose?", True),
        ("How does that method work?", True),
        ("Which of them came first, the first one?", True),
        ("What benchmark?", True),  # no topic of its own
        ("Which datasets and metrics?", True),
        ("Which papers study image forgery detection?", False),
        ("How are molecules generated from reaction templates?", False),
    ],
)
def test_a_follow_up_refers_back_by_a_pronoun_or_by_having_no_topic_of_its_own(question, refers):
    assert refers_back(question) is refers


def test_the_first_one_or_the_latter_picks_one_paper_of_several_in_focus():
    focus = ("a", "b", "c")
    assert narrowed("What does the first one use?", focus) == ("a",)
    assert narrowed("And the latter?", focus) == ("b",)
    assert narrowed("What does the last paper report?", focus) == ("c",)
    assert narrowed("What do they report?", focus) == focus
    assert narrowed("What does the first one use?", ("a",)) == ("a",)


def test_a_follow_up_naming_another_paper_or_without_pointing_back_searches_anew():
    found_other = [FORGERY]
    assert asks_anew("Which paper detects image forgeries?", [HANABI], found_other)  # no word pointing back
    assert asks_anew("And what does FakeShield detect, is it explainable?", [HANABI], found_other)
    assert not asks_anew("What benchmark did they use?", [HANABI], found_other)
    assert not asks_anew("Is it evaluated on the Hanabi benchmark?", [HANABI], found_other)
    assert not asks_anew("Does it detect image forgery too?", [HANABI], [HANABI])  # the search finds it too
    assert asks_anew("Which paper shows that agents play Hanabi?", [HANABI], [HANABI])  # looking for papers
    assert not asks_anew("Which paper was that?", [HANABI], found_other)  # no topic of its own
    # A filter's words are no topic: another paper holding "spotlight" or the author's name took them for one.
    spotlit = paper("spot", "We detect the spotlight of a stage play. By Quanquan Gu, the ones who detect ones.")
    assert not asks_anew("which of them were spotlights?", [HANABI], [spotlit])
    assert not asks_anew("and the ones by Quanquan Gu?", [HANABI], [spotlit])


def test_a_follow_up_whose_words_the_papers_in_focus_lack_and_another_holds_searches_anew():
    other = Source("fakeshield", "FakeShield", FORGERY.passages, 0.5, match=Match(coverage=0.9))
    assert asks_anew("Does that detect image forgery explainably?", [HANABI], [other])
    assert not asks_anew("Does that agent cooperate in the Hanabi benchmark?", [HANABI], [other])


def test_the_history_may_be_turns_pairs_or_lists_and_anything_else_is_named():
    turns = as_turns([("Q1", "A1 [1]."), ["Q2", "A2"], Turn("Q3", "A3", ("p",)), ("Q4", "A4", ["x", "y"])])
    assert turns == [Turn("Q1", "A1 [1]."), Turn("Q2", "A2"), Turn("Q3", "A3", ("p",)), Turn("Q4", "A4", ("x", "y"))]
    with pytest.raises(InputError, match="turn 2 of the history is not a"):
        as_turns([("Q1", "A1"), "just text"])


def test_the_second_one_of_prose_is_held_to_all_papers_when_it_asks_another_s_but_of_a_numbered_list_to_it():
    molecules = paper("nextmol", "NExT-Mol predicts 3D conformers with a diffusion model.")
    templates = paper("rxnflow", "RxnFlow assembles molecules from reaction templates.")
    papers = {"nextmol": molecules, "rxnflow": templates}

    def search(question, k, filters):
        return [papers[pid] for pid in filters.papers] if filters.papers else [molecules, templates]

    class NoModel:
        def rewrite(self, question, history):
            return None

    turns = [Turn("Which papers generate molecules?", "NExT-Mol [1]. RxnFlow [2].", ("nextmol", "rxnflow"))]
    second = held_to_focus("Which templates does the second one use?", turns, turns[0].papers, search, NoModel)
    assert second is not None and second.focus == ("rxnflow",)
    asked = "How does the second one predict conformers?"
    counted_otherwise = held_to_focus(asked, turns, turns[0].papers, search, NoModel)
    assert counted_otherwise is not None and counted_otherwise.focus == ("nextmol", "rxnflow")
    # A numbered list is counted as the reader sees it: the second one, whatever it asks.
    listed = [Turn("Which papers generate molecules?", "1. NExT-Mol [1]\n2. RxnFlow [2]", ("nextmol", "rxnflow"))]
    held = held_to_focus(asked, listed, listed[0].papers, search, NoModel)
    assert held is not None and held.focus == ("rxnflow",)


def test_the_focus_is_what_the_last_answer_cited_carried_remembered_or_recovered():
    recovered: list[str] = []

    def cited_again(turns):
        recovered.append(turns[-1].answer)
        return ("again",)

    memory = FocusMemory(cited_again)
    hanabi = Turn("Which agent plays Hanabi?", "R3D2 plays Hanabi [1].")
    memory.remember([hanabi], ["r3d2"])
    assert memory.focus_of([Turn("Q", "A [1].", ("carried",))]) == ("carried",)
    assert memory.focus_of([Turn("Which agent plays  Hanabi?", "R3D2 plays Hanabi [1].")]) == ("r3d2",)
    assert memory.focus_of([Turn("Q", "Given elsewhere [1].")]) == ("again",) and recovered == ["Given elsewhere [1]."]
    for question in ("How many GPU hours did they need?", "Which paper folds proteins?"):
        memory.remember([hanabi, Turn(question, "Not answered.")], [])
    # a refused follow-up that referred back leaves the focus before it; a refused new topic leaves none
    assert memory.focus_of([hanabi, Turn("How many GPU hours did they need?", "Not answered.")]) == ("r3d2",)
    assert memory.focus_of([hanabi, Turn("Which paper folds proteins?", "Not answered.")]) == ()
    assert memory.focus_of([]) == ()


def test_a_conversation_s_focus_is_its_own_when_another_s_answer_reads_the_same():
    memory = FocusMemory(lambda turns: ("recovered",))
    same = "Code is available at the project page [1]."
    memory.remember([Turn("What does RxnFlow release?", same)], ["rxnflow"])
    memory.remember([Turn("What does NExT-Mol release?", same)], ["nextmol"])
    assert memory.focus_of([Turn("What does RxnFlow release?", same)]) == ("rxnflow",)
    assert memory.focus_of([Turn("What does NExT-Mol release?", same)]) == ("nextmol",)


def test_a_follow_up_goes_back_to_the_answer_it_names_by_its_place_among_the_lists_or_by_its_words():
    turns = [
        Turn("Which papers study grokking?", "1. A [1]\n2. B [2]", ("a", "b")),
        Turn("Give me a reading list on mechanistic interpretability", "1. C [1]\n2. D [2]", ("c", "d")),
        Turn("Who wrote the first one?", "C [1]: authors …", ("c",)),
    ]
    listed = lambda end: len(turns[end - 1].papers) > 1  # noqa: E731
    assert gone_back("Going back to the first list - what does the fourth paper find?", turns, listed) == (
        1,
        "What does the fourth paper find?",
    )
    assert gone_back("In the grokking list, who are the authors of paper 2?", turns, listed) == (
        1,
        "Who are the authors of paper 2?",
    )
    assert gone_back("Back to the previous list: how do the first two differ?", turns, listed)[0] == 2
    assert gone_back("From your very first answer, how many does the top paper use?", turns, listed)[0] == 1
    assert gone_back("back to grokking: what does the second paper say?", turns, listed) == (
        1,
        "What does the second paper say?",
    )
    assert gone_back("In the paper, what is the loss?", turns, listed) is None  # names no earlier answer
    assert gone_back("Going back to the grokking list, which one?", turns[:1], listed) is None  # nothing before
