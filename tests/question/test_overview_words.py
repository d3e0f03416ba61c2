"""Which questions ask about a field (an overview), and the topic each leaves to rank on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.question.overview_words import asks_about_evaluation
from rag.question.understand import understand

EVAL = Path(__file__).parents[1] / "eval"


@pytest.mark.parametrize(
    "question, topic",
    [
        ("What are the main approaches to machine unlearning for LLMs?", "machine unlearning for LLMs"),
        ("What are the trends in diffusion distillation?", "diffusion distillation"),
        ("Summarize the work on mixture-of-experts", "mixture-of-experts"),
        ("How do papers evaluate LLM agents?", "LLM agents"),
        ("What's new in graph neural networks?", "graph neural networks"),
        ("Give me an overview of the research on test-time scaling", "test-time scaling"),
        ("What methods do papers propose for KV cache compression?", "KV cache compression"),
        ("What are the recent advances in protein design?", "protein design"),
    ],
)
def test_a_question_about_a_field_is_an_overview_of_its_topic(question, topic):
    understood = understand(question)
    assert understood.kind == "overview"
    assert understood.topic.text == topic


def test_filter_words_still_apply_to_an_overview():
    understood = understand("Summarize the oral papers on mixture-of-experts")
    assert understood.kind == "overview" and understood.labels() == ["status: Oral"]
    assert understood.topic.text == "mixture-of-experts"


@pytest.mark.parametrize(
    "question",
    [
        "What approach does RxnFlow use?",
        "Which papers are about mixture-of-experts?",
        "How many oral papers use mixture-of-experts?",
        "How does RxnFlow keep molecules synthesizable?",
        "What is the bright ending anomaly?",
    ],
)
def test_a_question_about_one_paper_or_for_a_list_is_not_an_overview(question):
    assert understand(question).kind != "overview"


def test_no_question_of_the_other_evaluation_sets_reads_as_an_overview():
    """The rules were added after these sets were written: none of their questions changes kind."""
    for path in sorted(EVAL.glob("*_questions.jsonl")):
        if path.name == "overview_questions.jsonl" or path.name.startswith("phrasing_"):  # those label their kinds
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            asked = [record["question"]] if "question" in record else []  # related_questions holds papers
            for question in [*asked, *record.get("history", [])]:
                assert understand(question).kind != "overview", (path.name, question)


def test_how_papers_evaluate_asks_about_evaluation():
    assert asks_about_evaluation("How do papers evaluate watermark robustness?")
    assert not asks_about_evaluation("What are the main approaches to watermarking?")
