"""A paper asked for by the name its title gives before a colon, when that name is words no search finds:
"Show-o" is a stop word and one letter: BM25 has no term of it, and no passage is near enough to it to pass refusal.
Over the seeds and the real records of Show-o, Transfusion and others, through `rag ask` as typed."""

from __future__ import annotations

import gzip
import json

import pytest
from clirun import rag
from conftest import FULL_LIST, SEED_FILE, settings_for, write_jsonl

from rag.service import RagService

NAMED = (
    "Show-o: One Single Transformer",
    "Transfusion: Predict the Next Token",
    "When is Task Vector Provably Effective for Model Editing?",
    "SynFlowNet: Design of Diverse and Novel Molecules",
)


@pytest.fixture(scope="module")
def named_index(tmp_path_factory, embeddings):
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as lines:
        records = [record for record in map(json.loads, lines) if record["title"].startswith(NAMED)]
    folder = tmp_path_factory.mktemp("named")
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([SEED_FILE, write_jsonl(folder / "named.jsonl", records)])
    show_o = next(record for record in records if record["title"].startswith("Show-o"))
    return folder / "index", show_o


def test_a_compare_finds_a_paper_by_the_name_before_its_titles_colon(named_index):
    index, show_o = named_index
    shown = rag("ask", "Transfusion vs Show-o", index=index)
    assert shown.returncode == 0, shown.stderr
    assert "no indexed abstract is about it" not in shown.stdout
    assert f"Show-o: One Single Transformer to Unify Multimodal Understanding and Generation ({show_o['id']})" in (
        shown.stdout
    )
    show_o_line = next(line for line in shown.stdout.splitlines() if line.startswith("Show-o ("))
    assert show_o_line.endswith("[2]")


def test_related_papers_and_stored_fields_of_a_paper_named_so(named_index):
    index, show_o = named_index
    related = json.loads(rag("ask", "papers similar to Show-o", "--json", index=index).stdout)
    assert related["sources"][0]["paper_id"] == show_o["id"] and not related["refused"]
    authors = rag("ask", "Who wrote Show-o?", index=index).stdout
    assert all(author in authors for author in show_o["authors"])


def test_a_paper_whose_title_asks_a_question_is_named_whole(named_index):
    """An answer names its paper by its title in quotes when the question doesn't: a "?" inside the title ended
    a sentence there, and the half before it, citing nothing, was dropped from the answer."""
    index, _ = named_index
    shown = rag("ask", "Task arithmetic on nonlinear Transformers was checked on which language model?", index=index)
    assert shown.returncode == 0, shown.stderr
    first = shown.stdout.splitlines()[0]
    assert first.startswith("“When is Task Vector Provably Effective for Model Editing? A Generalization")
    assert "[1]" in first


def test_a_paper_called_by_its_name_is_answered_from_its_own_abstract_only(named_index):
    """SynFlowNet's abstract gives no number of reaction templates; RxnFlow's, a seed, gives 71. Asked how many
    SynFlowNet uses, the answer quoted RxnFlow's sentence: a number, of another paper. It quotes SynFlowNet now."""
    index, _ = named_index
    shown = rag("ask", "How many reaction templates does SynFlowNet use?", "--json", index=index)
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout)
    synflownet = next(s for s in answer["sources"] if s["title"].startswith("SynFlowNet"))
    assert answer["cited"] == [synflownet["paper_id"]] and "71" not in answer["text"], answer["text"]
    assert "RxnFlow" in rag("ask", "How many reaction templates does RxnFlow use?", index=index).stdout
