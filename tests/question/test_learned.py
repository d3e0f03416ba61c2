"""The learned question reader (rag/question/learned.py): the shipped models, what they read of wordings no
question set here uses, and the answers those readings give at the front door (the CLI as typed, `rag.answer()`
in a fresh process), with the rules alone one setting away."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clirun import rag
from conftest import SEED_FILE, fresh_python, settings_for

from rag.core.markup import plain_text
from rag.core.types import Kind
from rag.question.learned import READER_FILE, Reader, name_features
from rag.question.understand import understand
from rag.service import RagService

SORTED_AREAS = "Sort the research areas by how many orals they got"


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_shipped_reader_is_small_and_knows_every_kind():
    assert READER_FILE.stat().st_size < 1_000_000
    reader = Reader.load()
    assert set(reader.groups.labels) == {"", "primary_area", "status", "authors"}
    assert set(reader.tags.labels) == {"O", "T", "A", "B"}


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("papers on diffusion models for protein design", 0),
        ("what does RxnFlow use as building blocks?", 1),
        ("Is SWIFT faster than PEARL on Qwen2?", 3),
        ("how does 'Scaling LLM Test-Time Compute Optimally' differ from SANA", 2),
    ],
)
def test_the_names_a_question_gives_are_counted_by_their_shape(question, names):
    none, one, several, quoted, two_quoted, two = name_features(question)
    assert (none, one, several) == (names == 0, names == 1, names >= 2)
    assert quoted == ("'" in question) and not two_quoted
    assert two == (names >= 2)


def test_a_stored_paper_s_title_asked_alone_is_a_look_up_of_it(seeded):
    """The reader reads a title's words as a question's: several seed titles read as an overview, related papers,
    a compare or a list ("FakeShield: Explainable Image Forgery Detection and Localization via …" as related
    papers). Asked alone, a stored title is a look-up of its paper."""
    titles = [json.loads(line)["title"] for line in SEED_FILE.read_text(encoding="utf-8").splitlines()]
    assert any(seeded.understand(title).kind != Kind.LOOKUP for title in titles)  # the case is met
    for title in titles:
        answer = seeded.answer(title)
        assert answer.kind == "lookup" and answer.sources[0].title == title, title


def read(question: str, embeddings):
    return understand(question, embedding=np.asarray(embeddings.embed_query(question)))


@pytest.mark.parametrize(
    ("question", "kind", "slot", "value"),
    [
        ("what's the current state of research on graph transformers?", Kind.OVERVIEW, "topic", "graph transformers"),
        (
            "Tell me how people are tackling hallucination in vision-language models",
            Kind.OVERVIEW,
            "topic",
            "hallucination in vision-language models",
        ),
        (
            "I'm starting out in machine unlearning: what should I read first?",
            Kind.READING_LIST,
            "topic",
            "machine unlearning",
        ),
        ("if I enjoyed RxnFlow, what should I look at next?", Kind.RELATED, "subject", "RxnFlow"),
        (
            "rank the authors by accepted papers on diffusion models",
            Kind.TALLY,
            "tally",
            ("authors", "diffusion models"),
        ),
        ("how many reaction templates does RxnFlow use?", Kind.LOOKUP, "topic", None),
    ],
)
def test_wordings_the_rules_miss_are_read_for_their_kind_and_the_span_it_needs(embeddings, question, kind, slot, value):
    understood = read(question, embeddings)
    assert understood.kind == kind
    found = getattr(understood, slot)
    if slot == "topic" and found is not None:
        found = found.text
    if slot == "tally":
        found = (found.field, found.topic)
    assert found == value
    assert understand(question).kind == Kind.LOOKUP  # the rules alone read each as a look-up (or a tally's field not)


def test_the_filters_stay_read_by_rules_beside_the_learned_kind(embeddings):
    understood = read("Sort the research areas by how many spotlights they received", embeddings)
    assert understood.kind == Kind.TALLY and understood.tally.field == "primary_area"
    assert understood.filters.status == ("Spotlight",)


def test_a_decision_said_as_a_rate_asks_for_shares(embeddings):
    understood = read("order the areas by acceptance rate", embeddings)
    assert understood.kind == Kind.TALLY and understood.tally.field == "primary_area" and understood.tally.share
    assert understood.filters.status == ("Oral", "Spotlight", "Poster")


def test_an_imperative_ranking_is_counted_exactly_at_the_cli_and_the_rules_alone_miss_it(moe_index, moe_sample):
    from collections import Counter

    orals = Counter(p["primary_area"].replace("&amp;", "&") for p in records(moe_sample) if p["status"] == "Oral")
    data = json.loads(rag("ask", SORTED_AREAS, "--json", index=moe_index).stdout)
    assert data["kind"] == "tally" and data["count"] == sum(orals.values())
    assert {name: number for name, number in data["table"]["rows"]} == orals
    ruled = json.loads(rag("ask", SORTED_AREAS, "--json", index=moe_index, RAG_QUESTIONS__READER="rules").stdout)
    assert ruled["kind"] != "tally"


def test_rag_answer_in_a_fresh_process_gives_an_overview_asked_as_a_landscape(moe_index):
    script = (
        "import json, rag\n"
        "print(json.dumps(rag.answer('What is the landscape of mixture-of-experts research?').to_payload()))\n"
    )
    shown = fresh_python(script, moe_index)
    overview = json.loads(shown)
    assert overview["kind"] == "overview" and overview["themes"]
    assert overview["text"].startswith(f"{overview['count']} papers match “mixture-of-experts”")  # the topic alone


def test_a_reading_list_puts_the_papers_most_like_the_others_first(moe_index, embeddings):
    service = RagService(settings_for(moe_index), embeddings=embeddings)
    answer = service.answer("I'm new to mixture-of-experts: what should I read first?")
    assert answer.kind == "reading_list" and 3 <= len(answer.sources) <= 10
    assert answer.text.startswith("A reading list on “mixture-of-experts”")
    listed = service.answer("Which papers are about mixture-of-experts?").sources  # all the topic's papers
    drawn = [s for s in listed if s.paper_id in {r.paper_id for r in answer.sources}]
    assert len(drawn) == len(answer.sources)
    # each text embedded alone, as the service's sentence cache does (an int8 vector depends on its batch)
    every = np.asarray([embeddings.embed_documents([f"{plain_text(s.title)}. {s.text}"])[0] for s in listed])
    every /= np.linalg.norm(every, axis=1, keepdims=True)
    centrality = {s.paper_id: (every[i] @ every.T).sum() - 1 for i, s in enumerate(listed)}
    ranked = [centrality[s.paper_id] for s in answer.sources]
    assert ranked == sorted(ranked, reverse=True)
