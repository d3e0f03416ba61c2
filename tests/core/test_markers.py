"""Splitting prose into sentences: where an answer's or an abstract's sentence ends, and where it doesn't."""

from __future__ import annotations

import pytest

from rag.core.markers import split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "It works [1]. Then it stops. a lower-case start [2]. B",
            ["It works [1].", "Then it stops. a lower-case start [2].", "B"],
        ),
        # a title in curly quotes, as an answer names its paper: its "?" ends no sentence
        (
            "“When is Task Vector Provably Effective for Model Editing? A Generalization”: We prove X [1]. Y.",
            [
                "“When is Task Vector Provably Effective for Model Editing? A Generalization”: We prove X [1].",
                "Y.",
            ],
        ),
        # nor do brackets or a LaTeX group
        (
            "We train with SGD (e.g. Adam works too). It converges.",
            ["We train with SGD (e.g. Adam works too).", "It converges."],
        ),
        (
            "Our library (We attach the code. It will be public.) simplifies benchmarking. Next.",
            ["Our library (We attach the code. It will be public.) simplifies benchmarking.", "Next."],
        ),
        (
            r"Our library~\footnote{We attach the code. Soon.} helps. Next.",
            [r"Our library~\footnote{We attach the code. Soon.} helps.", "Next."],
        ),
        # an unclosed bracket or quote holds nothing together
        ("A bracket ( is never closed. Next one.", ["A bracket ( is never closed.", "Next one."]),
        ("Line one\nLine two", ["Line one", "Line two"]),
    ],
)
def test_a_sentence_ends_at_its_punctuation_but_not_inside_quotes_or_brackets(text, sentences):
    assert split_sentences(text) == sentences
