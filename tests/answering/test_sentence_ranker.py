"""Which of the answering paper's sentences an answer quotes: the learned ranker (rag/answering/sentence_ranker.py)
against the hand order, on a real record of the whole list beside the seeds, through `rag ask` as typed."""

from __future__ import annotations

import gzip
import json

import pytest
from clirun import rag
from conftest import FULL_LIST, SEED_FILE, settings_for, write_jsonl

from rag.answering.evidence import SentenceCandidate
from rag.answering.sentence_ranker import FEATURES, NO_NEIGHBOUR, RANKER_FILE, SentenceRanker, sentence_features
from rag.core.config import AnswerConfig
from rag.service import RagService

FORA = "HGxGCjqnDd"  # LoRA Unleashed: Effortlessly Advancing from Low to Arbitrary Rank (FoRA)
PFDIFF = "wmmDvZGFK7"  # PFDiff: Training-Free Acceleration of Diffusion Models Combining Past and Future Scores


@pytest.fixture(scope="module")
def fora_index(tmp_path_factory, embeddings):
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as lines:
        records = [record for record in map(json.loads, lines) if record["id"] in {FORA, PFDIFF}]
    folder = tmp_path_factory.mktemp("fora")
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([SEED_FILE, write_jsonl(folder / "fora.jsonl", records)])
    return folder / "index"


def test_a_how_question_quotes_the_sentence_that_says_how_not_the_one_that_restates_the_problem(fora_index):
    """The hand order quoted FoRA's result and LoRA's background; the learned one quotes what FoRA does instead."""
    question = "How does FoRA get around the rank limit of LoRA's low-rank update matrices?"
    learned = rag("ask", question, "--json", index=fora_index)
    hand = rag("ask", question, "--json", index=fora_index, RAG_ANSWER__SENTENCE_CHOICE="weights")
    assert learned.returncode == 0 and hand.returncode == 0, learned.stderr + hand.stderr
    learned_answer, hand_answer = json.loads(learned.stdout), json.loads(hand.stdout)
    assert learned_answer["sources"][0]["paper_id"] == FORA == hand_answer["sources"][0]["paper_id"]
    assert "Fourier basis" in learned_answer["text"] and "sparse spectral subspace" in learned_answer["text"]
    assert "Fourier basis" not in hand_answer["text"]


def test_a_sentence_the_ranker_is_sure_of_joins_and_the_paper_s_sentences_read_in_its_order(fora_index):
    """PFDiff's "how" is its fifth sentence, below the three the hand margin lets join (a blind dev question): the
    ranker chooses it; with the gate open, a further sentence it is sure of joins, and none leaves."""
    question = "How does PFDiff let fast ODE solvers run with fewer function evaluations without any training?"
    gated = rag("ask", question, "--json", index=fora_index)
    shut = rag("ask", question, "--json", index=fora_index, RAG_ANSWER__SENTENCE_GATE="1.0")
    assert gated.returncode == 0 and shut.returncode == 0, gated.stderr + shut.stderr
    text, without = json.loads(gated.stdout)["text"], json.loads(shut.stdout)["text"]
    assert "score replacement from past time steps" in text
    quoted, quoted_without = set(text.split(" [1]. ")), set(without.split(" [1]. "))
    assert quoted_without < quoted, "the gate adds a sentence; it takes none away"
    assert text.index("predict a springboard") < text.index("Subsequently, it employs this")  # the abstract's order


def test_a_third_turn_does_not_quote_again_what_the_first_answer_said(fora_index, embeddings):
    """Only the last answer was held as said: the third turn quoted the first answer's PFDiff sentences again."""
    service = RagService(settings_for(fora_index), embeddings=embeddings)
    history: list[tuple[str, str]] = []
    for question in (
        "How does PFDiff let fast ODE solvers run with fewer function evaluations without any training?",
        "What does it use from future steps?",
        "Which models was it tested on?",
    ):
        history.append((question, service.answer(question, history=list(history)).text))
    first, third = (set(text.split(" [1]. ")[1:]) for text in (history[0][1], history[2][1]))
    assert len(first) >= 2 and "PFDiff" in history[2][1]
    assert not first & third, "the third answer repeats the first"


def test_a_sentence_s_features_read_its_neighbours_in_the_abstract_s_order():
    config = AnswerConfig()
    own = [
        SentenceCandidate(1, 0, "Background.", 0.2, 0.0, 1.0, 0, False, True),
        SentenceCandidate(1, 0, "We propose X.", 0.6, 0.5, 0.5, 0, True, False, True, True),
        SentenceCandidate(1, 0, "Specifically, X uses Y.", 0.4, 0.2, 0.8, 0, False, False),
    ]
    rows = [dict(zip(FEATURES, row)) for row in sentence_features(own, config)]
    best = own[1].score(config)
    assert [row["is_best"] for row in rows] == [0.0, 1.0, 0.0]
    assert rows[0]["before_below_best"] == NO_NEIGHBOUR and rows[2]["after_below_best"] == NO_NEIGHBOUR
    assert rows[2]["before_below_best"] == 0.0 and rows[0]["after_below_best"] == 0.0
    assert rows[1]["before_below_best"] == pytest.approx(own[0].score(config) - best)
    assert [row["after_proposal"] for row in rows] == [0.0, 0.0, 1.0]
    assert [row["place"] for row in rows] == [0.0, 0.5, 1.0]
    assert [row["why_background"] for row in rows] == [0.0, 0.0, 0.0] and not any(row["why_place"] for row in rows)
    why = [dict(zip(FEATURES, row)) for row in sentence_features(own, config, why=True)]
    assert [row["why_background"] for row in why] == [1.0, 0.0, 0.0]  # for a "why", the problem stated first
    assert [row["why_place"] for row in why] == [0.0, 0.5, 1.0]


def test_the_shipped_sentence_ranker_is_small_and_a_file_for_other_features_is_refused(tmp_path):
    assert RANKER_FILE.stat().st_size < 10_000
    assert len(SentenceRanker.load().weights) == len(FEATURES)
    stale = tmp_path / "ranker.json"
    stale.write_text(json.dumps({"features": ["cosine"], "weights": [1.0], "bias": 0.0}))
    with pytest.raises(ValueError, match="retrain"):
        SentenceRanker.load(stale)


def test_a_further_sentence_joins_only_when_the_ranker_is_as_sure_as_the_gate():
    """The ranker's `count` best always; past them, only a sentence it scores at the gate or above, `room` at most."""
    own = [
        SentenceCandidate(1, 0, "Background.", 0.1, 0.0, 1.0, 0, False, True),
        SentenceCandidate(1, 0, "We propose X.", 0.9, 0.0, 0.5, 0, True, False),
        SentenceCandidate(1, 0, "X uses Y.", 0.6, 0.0, 0.8, 0, False, False),
        SentenceCandidate(1, 0, "X uses Z.", 0.5, 0.0, 0.8, 0, False, False),
    ]
    by_cosine = SentenceRanker(tuple(8.0 if name == "cosine" else 0.0 for name in FEATURES), -4.0)  # p > 0.5 above 0.5
    chose = lambda gate, room=1: by_cosine.choose(own, 1, room, AnswerConfig(sentence_gate=gate), lambda _: True)  # noqa: E731
    assert chose(1.0) == [1], "with the gate shut, the ranker's best alone"
    assert chose(0.6) == [1, 2] and chose(0.75) == [1]  # "X uses Y.": p = 0.69
    assert chose(0.6, room=2) == [1, 2] and chose(0.45, room=2) == [1, 2, 3]  # "X uses Z.": p = 0.5
    assert chose(0.45) == [1, 2], "no more than the room"
    assert chose(0.45, room=-1) == [1], "an answer longer than `gated_sentences` already: none joins"
    assert by_cosine.choose(own, 2, 1, AnswerConfig(), lambda sentence: sentence == "X uses Y.") is None
