"""An exact look-up is not refused: the one source its distinctive words (or its number) stand in."""

from __future__ import annotations

from rag.answering.refusal import stands_in
from rag.core.types import Match, Source
from rag.question.question import lookup


def source(paper_id: str, text: str, coverage: float) -> Source:
    passages = Source.from_text(paper_id, paper_id, text).passages
    return Source(paper_id, paper_id, passages, 0.1, match=Match(coverage=coverage))


RXNFLOW = source("rxnflow", "combinations of 1.2 million building blocks and 71 reaction templates", 0.5)
MOLECULES = source("nextmol", "a 26\\% relative improvement in 3D FCD", 0.7)
OTHER = source("other", "a 1.2 percent gain over 30 baselines", 0.5)


def test_the_only_source_holding_every_word_of_the_question_stands():
    whole = source("cis", "clustered importance sampling", 1.0)
    assert stands_in(lookup("What is clustered importance sampling?"), [OTHER, whole]) is whole
    assert stands_in(lookup("What is a model?"), [whole, source("b", "model", 1.0)]) is None  # in more than one


def test_the_only_source_stating_the_question_s_number_stands_when_it_holds_its_words_too():
    assert stands_in(lookup("What does 1.2 million refer to?"), [OTHER, RXNFLOW]) is RXNFLOW
    assert stands_in(lookup("What does 26% relative improvement refer to?"), [OTHER, MOLECULES]) is MOLECULES
    assert stands_in(lookup("What does 1.2 million refer to?"), [source("x", "1.2 million", 0.1)]) is None  # few words
    assert stands_in(lookup("What do 71 templates do?"), [RXNFLOW]) is None  # a two-digit number alone: too common
