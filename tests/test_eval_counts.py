"""tests/eval/count_questions.jsonl: what each question asks is what the product reads from it, and `rag eval`
on the set counts every figure exactly (against its own direct count over the stored metadata) on a real
index of the first 300 records of the list."""

from __future__ import annotations

import json

import pytest
from clirun import rag

from rag.core.config import PROJECT_ROOT
from rag.core.filters import Filters
from rag.evaluation.counts import check, is_count_set
from rag.question.tally import tally_of
from rag.question.understand import understand

COUNTS = PROJECT_ROOT / "tests" / "eval" / "count_questions.jsonl"


def items() -> list[dict]:
    return [json.loads(line) for line in COUNTS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_set_alternates_dev_and_test_and_states_what_each_question_asks():
    assert is_count_set(COUNTS)
    splits = [item["split"] for item in items()]
    assert splits == ["dev", "test"] * (len(splits) // 2) and len(splits) >= 20
    for item in items():
        spec, understood = item["count"], understand(item["question"])
        tally = tally_of(understood)
        assert tally is not None, item["question"]
        assert (tally.field, tally.top, tally.fewest) == (spec["by"], spec.get("top"), spec.get("fewest", False))
        assert tally.topic == spec.get("topic", ""), item["question"]
        assert understood.filters == Filters.of(**spec["filters"]), item["question"]


def test_rag_eval_on_the_counting_set_is_exact_on_a_real_index(sample_service):
    index = sample_service.config.vectorstore.path
    for split in ("dev", "test"):
        done = rag("eval", str(COUNTS), "--split", split, "--json", index=index)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["metrics"]["questions"] == len([i for i in items() if i["split"] == split])
        assert report["metrics"]["exact_match"] == 1.0, [row for row in report["rows"] if not row["exact"]]


def test_a_wrong_figure_is_caught(sample_service):
    """The check is not vacuous: the same answer with one row off by one, or wrongly grouped, is inexact."""
    from dataclasses import replace

    answer = sample_service.answer("How many papers per status?")
    papers = [metadata for _, _, metadata in sample_service.index.iter_papers()]
    spec = {"by": "status", "filters": {}}
    assert check(answer, spec, papers) == []
    (name, number), *rest = answer.table.rows
    off = replace(answer, table=replace(answer.table, rows=((name, number + 1), *rest)))
    assert check(off, spec, papers) == [f"rows differ from the direct count: {name}: {number + 1} (directly {number})"]
    assert check(answer, {"by": "primary_area", "filters": {}}, papers)[0] == "grouped by status, not primary_area"


def test_a_paper_whose_authors_share_a_name_counts_once_for_that_name(sample_service):
    """Two authors named alike on one paper (the full list has one such "Jun Wang" paper): one paper."""
    answer = sample_service.answer("Which authors have the most papers?")
    papers = [metadata for _, _, metadata in sample_service.index.iter_papers()]
    (name, number), *_ = answer.table.rows
    mine = next(paper for paper in papers if name in str(paper["authors"]).split("; "))
    twice = [{**paper, "authors": f"{paper['authors']}; {name}"} if paper is mine else paper for paper in papers]
    assert check(answer, {"by": "authors", "filters": {}}, twice) == []


@pytest.mark.parametrize("line", ["not json", '{"question": "How many orals are there?"}'])
def test_a_file_that_is_not_a_counting_set_goes_to_the_lookup_evaluation(tmp_path, line):
    path = tmp_path / "questions.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert not is_count_set(path)
