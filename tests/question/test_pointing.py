"""A follow-up that points into the last answer by place (rag/question/pointing.py): read exactly, held to
those papers, and answered from them, through `rag.answer()` in a fresh process as a script asks it."""

from __future__ import annotations

import json

import pytest
from conftest import fresh_python

from rag.question.focus import narrowed
from rag.question.pointing import pointed, without_pointers


@pytest.mark.parametrize(
    ("question", "count", "places"),
    [
        ("How does the second one work?", 33, [1]),
        ("what's the main result of the 3rd paper?", 10, [2]),
        ("Tell me more about #4", 10, [3]),
        ("who are the authors of paper 2?", 5, [1]),
        ("and the last one?", 9, [8]),
        ("What datasets do the last two use?", 42, [40, 41]),
        ("what do the first three have in common?", 8, [0, 1, 2]),
        ("what training data did the first and third ones use?", 5, [0, 2]),
        ("how does the second one compare to the first?", 33, [1, 0]),
        # Worded as the writers of the phrasing set's later rounds worded them (tests/eval/phrasing_round5.jsonl)
        ("what tasks do papers 1 and 3 test length generalisation on?", 11, [0, 2]),
        ("2nd and 3rd: which LLMs do they analyse?", 38, [1, 2]),
        ("first one - what dataset they made?", 5, [0]),
        ("for 3rd and 4th, what models they study on", 36, [2, 3]),
        ("Why does the top one claim existing methods fail?", 28, [0]),
        ("top hit — which scientific domains do they test on?", 12, [0]),
        ("Top hit — which scientific domains do they test on?", 12, [0]),  # capitalised, as a sentence starts
        ("Final one - what task do they study?", 12, [11]),
        ("tell me the compression ratios used by the final two papers", 6, [4, 5]),
        ("the final paper, why it works better than the baselines?", 7, [6]),
        ("First, what is the loss?", 5, None),  # an adverb, not a place
        ("What is the first-order method here?", 5, None),  # a word of the question's own
        ("what about the tenth?", 4, None),  # past the last paper: not a place among these
        ("what do they report?", 4, None),
        ("How does the second one work?", 1, None),  # one paper in focus: nothing to choose
    ],
)
def test_a_place_is_read_exactly(question, count, places):
    assert pointed(question, count) == places


def test_the_words_that_point_are_no_topic_and_narrow_the_focus():
    assert without_pointers("How does the second one work?") == "How does work?"
    assert narrowed("Which of the first two got accepted?", ("a", "b", "c")) == ("a", "b")
    assert narrowed("And the latter?", ("a", "b", "c")) == ("b",)


def test_rag_answer_in_a_fresh_process_answers_the_third_paper_of_a_long_list(moe_index):
    script = (
        "import json, rag\n"
        "first = rag.answer('Which oral papers are about mixture-of-experts?')\n"
        "then = rag.answer('What does the third one propose?', history=[(first.question, first.text)])\n"
        "print(json.dumps([first.to_payload(), then.to_payload()]))\n"
    )
    shown = fresh_python(script, moe_index)
    listed, followed = json.loads(shown)
    assert len(listed["cited"]) > 3
    third = listed["cited"][2]
    assert followed["focus"] == [third] and followed["cited"] == [third]
    assert not followed["refused"]


def test_follow_ups_ask_the_papers_pointed_to_for_fields_a_compare_related_papers_a_reading_list_and_go_back(
    moe_index, moe_sample
):
    script = (
        "import json, rag\n"
        "history, shown = [], []\n"
        "for question in ['Which papers are about mixture-of-experts?', 'who wrote the second one?',\n"
        "                 'Which of the first three got accepted?', 'how does the second one compare to the first?',\n"
        "                 'Which oral papers study expert routing?',\n"
        "                 'Going back to the first list, papers similar to the fourth one?',\n"
        "                 'which of these should I read first?', 'who wrote the first one?']:\n"
        "    answer = rag.answer(question, history=history)\n"
        "    history.append((question, answer.text))\n"
        "    shown.append(answer.to_payload())\n"
        "print(json.dumps(shown))\n"
    )
    listed, wrote, accepted, compared, other_list, back, first_read, first_related = json.loads(
        fresh_python(script, moe_index)
    )
    stored = {record["id"]: record for record in map(json.loads, moe_sample.read_text().splitlines())}
    first, second, third, fourth = listed["cited"][:4]
    assert wrote["focus"] == [second] and wrote["cited"] == [second] and wrote["kind"] == "lookup"
    assert ", ".join(stored[second]["authors"]) in wrote["text"]  # as stored, not as a model would say them
    decided = sum(stored[paper]["status"] in ("Oral", "Spotlight", "Poster") for paper in (first, second, third))
    assert accepted["focus"] == [first, second, third] and accepted["cited"] == [first, second, third]
    assert accepted["text"].startswith(f"{decided} of these 3 papers have the status Oral or Spotlight or Poster")
    assert compared["kind"] == "compare" and compared["cited"] == [second, first]
    assert len(other_list["cited"]) > 1 and other_list["cited"][:4] != listed["cited"][:4]
    assert back["kind"] == "related" and back["focus"] == [fourth] and back["cited"][0] == fourth
    # Related papers are numbered from the first related one ([2]); the paper they are like ([1]) is no place.
    assert first_read["kind"] == "reading_list" and set(first_read["focus"]) == set(back["cited"][1:])
    assert first_related["focus"] == [first_read["cited"][0]]


def test_a_named_paper_s_stored_fields_are_answered_from_the_metadata_and_only_when_that_is_all_it_asks(
    moe_index, moe_sample
):
    script = (
        "import json, rag\n"
        "asked = ['Who wrote MoE++?', 'Was MoE++ accepted at ICLR 2025?', 'How does MoE++ route tokens to experts?']\n"
        "print(json.dumps([rag.answer(question).to_payload() for question in asked]))\n"
    )
    wrote, accepted, routed = json.loads(fresh_python(script, moe_index))
    moe = next(map(json.loads, filter(lambda line: '"MoE++:' in line, moe_sample.read_text().splitlines())))
    assert wrote["cited"] == [moe["id"]] and ", ".join(moe["authors"]) in wrote["text"]
    assert accepted["cited"] == [moe["id"]] and f"status {moe['status']}" in accepted["text"]
    assert routed["answered_by"] != "metadata" and "status" not in routed["text"]  # a question of its abstract
