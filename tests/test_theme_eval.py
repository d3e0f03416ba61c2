"""`rag eval` on overview questions: the themes compared with the papers' areas and with a grouping by hand."""

from __future__ import annotations

import json
from itertools import combinations

import pytest

from rag.evaluation.themes import adjusted_rand_index, is_overview_set, purity


def rand_by_pairs(first: list[str], second: list[str]) -> float:
    """The ARI from its definition over pairs of items: agreement counted pair by pair, against chance."""
    pairs = list(combinations(range(len(first)), 2))
    both = sum(first[i] == first[j] and second[i] == second[j] for i, j in pairs)
    in_first = sum(first[i] == first[j] for i, j in pairs)
    in_second = sum(second[i] == second[j] for i, j in pairs)
    expected = in_first * in_second / len(pairs)
    return (both - expected) / ((in_first + in_second) / 2 - expected)


@pytest.mark.parametrize(
    "first, second",
    [
        ("aabbcc", "xxyyzz"),
        ("aabbcc", "xyzxyz"),
        ("aaabbbbcc", "xxyyyyzzz"),
        ("abababab", "aabbaabb"),
    ],
)
def test_the_adjusted_rand_index_is_the_pairwise_one(first, second):
    assert adjusted_rand_index(list(first), list(second)) == pytest.approx(rand_by_pairs(list(first), list(second)))


def test_the_same_grouping_under_other_names_scores_one():
    assert adjusted_rand_index(list("aabbc"), list("yyzzx")) == pytest.approx(1.0)
    assert purity(list("aabbc"), list("yyzzx")) == 1.0
    assert purity(list("aaaa"), list("xxyz")) == 0.5


def test_rag_eval_reports_how_the_themes_separate_the_papers(moe_index, moe_sample, tmp_path):
    from clirun import rag

    records = [json.loads(line) for line in moe_sample.read_text(encoding="utf-8").splitlines()]
    by_status: dict[str, list[str]] = {}
    for record in records:
        by_status.setdefault(record["status"], []).append(record["id"])
    question = {"question": "What are the main approaches to mixture-of-experts?", "kind": "overview", "split": "dev"}
    path = tmp_path / "overview.jsonl"
    path.write_text(json.dumps(question | {"groups": by_status}) + "\n", encoding="utf-8")
    assert is_overview_set(path)
    shown = rag("eval", str(path), index=moe_index)
    assert shown.returncode == 0, shown.stderr
    assert "overview themes" in shown.stdout and "hand_ari" in shown.stdout
    report = json.loads(rag("eval", str(path), "--json", index=moe_index).stdout)
    row = report["rows"][0]
    assert row["themes"] >= 2 and row["labelled"] == row["papers"] > 0  # every paper of the slice has a status
    assert -1 <= row["area_ari"] <= 1 and 0 < row["hand_purity"] <= 1
    missing = rag("eval", str(tmp_path / "none.jsonl"), index=moe_index)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    (tmp_path / "bad.jsonl").write_text('{"kind": "overview", "split": "dev"}\n', encoding="utf-8")
    bad = rag("eval", str(tmp_path / "bad.jsonl"), index=moe_index)
    assert bad.returncode != 0 and "bad.jsonl:1: not an overview question" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_hand_made_groups_name_real_papers_each_once():
    import gzip

    from conftest import FULL_LIST

    from rag.core.config import PROJECT_ROOT
    from rag.evaluation.themes import load_overview_questions

    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as lines:
        ids = {json.loads(line)["id"] for line in lines}
    questions = load_overview_questions(PROJECT_ROOT / "tests" / "eval" / "overview_questions.jsonl")
    assert {question.split for question in questions} == {"dev", "test"}
    labelled = [question for question in questions if question.groups]
    assert len(labelled) == 3
    for question in labelled:
        grouped = [paper_id for papers in question.groups.values() for paper_id in papers]
        assert len(grouped) == len(set(grouped)) and set(grouped) <= ids, question.question
