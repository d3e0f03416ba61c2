"""Papers like this one, from every front door: the service (`find_related`), `rag related` as typed, the chat
("Which papers are most similar to RxnFlow?"), `rag.related()` in a fresh process, `POST /v1/related` through
the real app and MCP's `related_papers`; over the real seed index and the bundled embedding model."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from clirun import rag
from conftest import SEED_FILE, user_environment

from rag.answering.related import find_related
from rag.core.config import PROJECT_ROOT
from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.markers import split_sentences

SEEDS = {record["title"]: record for record in map(json.loads, SEED_FILE.read_text(encoding="utf-8").splitlines())}
RXNFLOW = next(record for title, record in SEEDS.items() if "Synthetic Pathway for Drug Design" in title)
# The seeds' other paper on generating molecules: the one most like RxnFlow.
NEXTMOL = next(record for title, record in SEEDS.items() if title.startswith("NExT-Mol"))


def sentences_of(text: str) -> set[str]:
    return {" ".join(sentence.split()) for sentence in split_sentences(text)}


def test_the_related_papers_of_a_stored_paper_never_include_it_and_each_is_tied_by_a_sentence_of_both(seeded):
    found = find_related(seeded, RXNFLOW["id"], k=4)
    ids = [paper.source.paper_id for paper in found.papers]
    assert len(ids) == len(set(ids)) == 4 and RXNFLOW["id"] not in ids
    assert ids[0] == NEXTMOL["id"]
    assert found.subject.paper_id == RXNFLOW["id"] and found.sources[0] is found.subject
    for paper in found.papers:
        stored = seeded.paper(paper.source.paper_id)
        assert " ".join(paper.tie.sentence.split()) in sentences_of(stored["abstract"])
        assert " ".join(paper.tie.subject_sentence.split()) in sentences_of(RXNFLOW["abstract"])
        assert -1.0 <= paper.tie.similarity <= 1.0
    # Its similarity is the two sentences' cosine under the bundled model (int8: a batch shifts vectors a little).
    tie = found.papers[0].tie
    first, second = (np.asarray(v) for v in seeded.embeddings.embed_documents([tie.subject_sentence, tie.sentence]))
    assert tie.similarity == pytest.approx(first @ second / np.linalg.norm(first) / np.linalg.norm(second), abs=0.05)
    lines = found.text.splitlines()  # a line per paper, citing it and the given one
    assert len(lines) == 5 and all(f"[{n}] ~" in line and line.endswith("[1]") for n, line in enumerate(lines[1:], 2))


def test_a_title_as_stored_in_any_case_or_spacing_is_the_paper_its_id_is(seeded):
    by_id = find_related(seeded, RXNFLOW["id"], k=3)
    by_title = find_related(seeded, "  " + RXNFLOW["title"].upper().replace(" ", "  ") + " ", k=3)
    assert by_title.subject.paper_id == RXNFLOW["id"]
    assert [p.source.paper_id for p in by_title.papers] == [p.source.paper_id for p in by_id.papers]


JUMP = next(record for title, record in SEEDS.items() if title.startswith("Jump Your Steps:"))


def test_a_titles_name_before_its_colon_is_the_paper_in_the_command_and_in_a_question(seeded):
    assert find_related(seeded, "jump your  steps", k=3).subject.paper_id == JUMP["id"]
    answer = seeded.answer("Which papers are most similar to Jump Your Steps?")
    assert answer.kind == "related" and answer.sources[0].paper_id == JUMP["id"], answer.text


def test_a_users_own_abstract_finds_the_stored_paper_with_that_abstract_first(seeded):
    found = find_related(seeded, abstract=f"{RXNFLOW['title']}\n{RXNFLOW['abstract']}", k=3)
    assert found.subject.paper_id == "your-abstract" and found.subject.title == RXNFLOW["title"]
    assert found.papers[0].source.paper_id == RXNFLOW["id"]
    assert found.papers[0].tie.similarity > 0.99  # the same sentence in both


@pytest.mark.parametrize("method", ["dense", "bm25"])
def test_the_baselines_leave_the_paper_out_too_and_filters_restrict_them(seeded, method):
    found = find_related(seeded, RXNFLOW["id"], k=5, method=method)
    assert found.papers and RXNFLOW["id"] not in [p.source.paper_id for p in found.papers]
    spotlit = find_related(seeded, RXNFLOW["id"], k=5, filters=Filters.of(status=["Spotlight"]), method=method)
    spotlights = {record["id"] for record in SEEDS.values() if record["status"] == "Spotlight"}
    assert {p.source.paper_id for p in spotlit.papers} <= spotlights


@pytest.mark.parametrize(
    ("paper", "abstract", "message"),
    [
        ("no-such-paper", None, "no paper with the id or title 'no-such-paper' in the index"),
        ("", " \n ", "the abstract is empty"),
        ("", "word " * 5000, "the abstract is 25,000 characters long; the limit is 20,000"),
        ("", "\ud800 molecules", "the abstract is not valid text: character 1 is a lone surrogate"),
        ("", "- ; ? !", "the abstract has no words to compare"),
        ("\x00 ", None, "the paper is empty"),
    ],
)
def test_an_unknown_paper_or_an_empty_abstract_is_an_input_error_naming_it(seeded, paper, abstract, message):
    with pytest.raises(InputError, match=message):
        find_related(seeded, paper, abstract=abstract)


@pytest.mark.parametrize(
    "question",
    [
        "Which papers are most similar to RxnFlow?",
        f"papers related to {RXNFLOW['title']}",
        "Show me other works like RxnFlow",
    ],
)
def test_a_question_for_papers_like_one_is_answered_with_them(seeded, question):
    answer = seeded.answer(question)
    assert (answer.kind, answer.answered_by, answer.refused) == ("related", "related", False)
    assert answer.sources[0].paper_id == RXNFLOW["id"]
    assert answer.sources[1].paper_id == NEXTMOL["id"] and answer.cited == [s.paper_id for s in answer.sources]
    assert answer.count == len(answer.sources) - 1 == seeded.config.retrieval.k
    assert answer.provenance() == "Each line quotes the abstract it cites."


def test_an_abstract_pasted_into_a_question_is_the_paper_others_are_related_to(seeded):
    pasted = " ".join(split_sentences(NEXTMOL["abstract"])[:4])
    answer = seeded.answer(f"Which papers are most similar to my abstract: {pasted}")
    assert (answer.kind, answer.refused) == ("related", False)
    assert answer.sources[0].paper_id == "your-abstract" and answer.sources[1].paper_id == NEXTMOL["id"]


def test_no_question_of_the_other_sets_is_taken_for_one_asking_for_papers_like_a_paper():
    from rag.question.related import related_question

    asked = [
        question
        for path in (PROJECT_ROOT / "tests" / "eval").glob("*_questions.jsonl")
        if path.name != "related_questions.jsonl" and not path.name.startswith("phrasing_")  # those label their kinds
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        for question in [*row.get("history", []), row["question"]]
    ]
    assert len(asked) > 400 and [q for q in asked if related_question(q) is not None] == []


def test_a_question_for_papers_like_one_no_paper_is_refused_in_a_line(seeded):
    answer = seeded.answer("Which papers are most similar to Zorblax-9000?")
    assert (answer.kind, answer.refused) == ("related", True)
    assert answer.text == "No indexed paper is “Zorblax-9000”, so none can be related to it."


def test_rag_related_as_typed(seeded, tmp_path):
    index = seeded.config.vectorstore.path
    done = rag("related", RXNFLOW["id"], "-k", "2", "--json", index=index)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["subject"]["paper_id"] == RXNFLOW["id"] and len(payload["papers"]) == 2
    assert payload["papers"][0]["paper_id"] == NEXTMOL["id"] and payload["papers"][0]["tie"]["sentence"]

    abstract = tmp_path / "abstract.txt"
    abstract.write_text(NEXTMOL["abstract"], encoding="utf-8")
    done = rag("related", "--file", str(abstract), "-k", "1", index=index)
    assert done.returncode == 0, done.stderr
    assert f"[2] {NEXTMOL['title']} ({NEXTMOL['id']})" in done.stdout  # the stored copy of the same abstract

    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    for args, message in [
        (["no-such-paper"], "error: no paper with the id or title 'no-such-paper' in the index"),
        (
            ["RxnFlow"],  # a name, not a title: the error names the closest stored title
            f"error: no paper with the id or title 'RxnFlow' in the index; the closest title: “{RXNFLOW['title']}”",
        ),
        (["--file", str(empty)], f"error: {empty} is empty: it should hold your abstract"),
        (["--file", str(tmp_path / "missing.txt")], f"error: cannot read the abstract from {tmp_path / 'missing.txt'}"),
        ([], "error: give a paper's id or title, or --file with your abstract"),
    ]:
        done = rag("related", *args, index=index)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


def test_rag_eval_reports_precision_at_5_of_related_sets(seeded, tmp_path):
    """Against a direct count: the labels here are the seed papers' own, so the figure is known exactly."""
    labelled = find_related(seeded, RXNFLOW["id"], k=5).papers
    truth = [labelled[0].source.paper_id, labelled[2].source.paper_id, "not-in-the-index"]
    sets = tmp_path / "related.jsonl"
    sets.write_text(json.dumps({"paper": RXNFLOW["id"], "related": truth, "split": "dev"}) + "\n", encoding="utf-8")
    done = rag("eval", str(sets), "--json", index=seeded.config.vectorstore.path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["precision@5"], report["recall@5"], report["mrr"]) == (2 / 5, round(2 / 3, 4), 1.0)
    labels = PROJECT_ROOT / "tests" / "eval" / "related_questions.jsonl"
    shipped = rag("eval", str(labels), index=seeded.config.vectorstore.path)
    assert shipped.returncode == 1 and shipped.stderr.startswith("error: none of the papers of") and not shipped.stdout


@pytest.mark.slow
def test_the_package_function_works_twice_in_a_fresh_process(tmp_path):
    env = user_environment(tmp_path)
    code = f"""
        import json, rag
        first = rag.related({RXNFLOW["id"]!r}, k=2, config="extractive")
        second = rag.related(abstract={NEXTMOL["abstract"]!r}, k=1, config="extractive")
        print(json.dumps([[p.source.paper_id for p in found.papers] for found in (first, second)]))
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT
    )
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)
    assert len(first) == 2 and first[0] == NEXTMOL["id"] and second == [NEXTMOL["id"]]


@pytest.mark.slow
def test_v1_related_through_the_real_app(seeded):
    from fastapi.testclient import TestClient

    from ui.serve import build_server

    app = TestClient(build_server(seeded, api_key="s3cret"))
    key = {"Authorization": "Bearer s3cret"}
    reply = app.post("/v1/related", json={"paper": RXNFLOW["title"], "k": 3}, headers=key)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    expected = find_related(seeded, RXNFLOW["id"], k=3).to_payload()
    assert (body["object"], body["subject"], body["papers"]) == ("related", expected["subject"], expected["papers"])
    assert app.post("/v1/related", json={"paper": RXNFLOW["id"]}).status_code == 401
    for sent, status, message in [
        ({"paper": "no-such-paper"}, 400, "no paper with the id or title 'no-such-paper' in the index"),
        ({}, 400, "give `paper` (a stored paper's id or title) or `abstract` (your own), one of the two"),
        ({"abstract": ""}, 400, "the abstract is empty"),
        ({"paper": "\ud800"}, 400, "the paper is not valid text: character 1 is a lone surrogate (U+D800), a byte"),
        ({"paper": RXNFLOW["id"], "k": 0}, 400, "k: Input should be greater than or equal to 1"),
        ({"paper": RXNFLOW["id"], "method": "magic"}, 400, "method: Input should be 'fused', 'dense' or 'bm25'"),
    ]:
        body = json.dumps(sent)  # as JSON escapes a lone surrogate: "\ud800"
        reply = app.post("/v1/related", content=body, headers={**key, "Content-Type": "application/json"})
        assert reply.status_code == status and reply.json()["error"]["message"].startswith(message), reply.text


@pytest.mark.slow
def test_mcp_related_papers(tmp_path, seeded):
    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rag.cli", "--config", "extractive", "mcp"],
        env=user_environment(tmp_path),
        cwd=PROJECT_ROOT,
    )

    async def session() -> tuple:
        async with Client(stdio_client(params), read_timeout_seconds=600) as client:
            found = await client.call_tool("related_papers", {"paper": RXNFLOW["id"], "k": 2})
            missing = await client.call_tool("related_papers", {"paper": "no-such-paper"})
            neither = await client.call_tool("related_papers", {})
            return found, missing, neither

    found, missing, neither = asyncio.run(session())
    assert not found.is_error
    assert found.structured_content == find_related(seeded, RXNFLOW["id"], k=2).to_payload()
    assert missing.is_error and "no paper with the id or title 'no-such-paper'" in missing.content[0].text
    assert neither.is_error and "give `paper`" in neither.content[0].text
