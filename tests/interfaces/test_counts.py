"""A count over the metadata at every front door: the CLI as typed (its table, --json), `rag.answer()` in a
fresh process, and `/v1` of `rag serve` (the `rag` field). Each figure is checked against a direct count
over the records the index was built from (the slice of the real list in `moe_sample`)."""

from __future__ import annotations

import json
from collections import Counter

import httpx
import pytest
from clirun import rag
from conftest import fresh_python, user_environment

from benchmarks.harness.servers import ServeProcess

AREAS_OF_ORALS = "Which research areas have the most oral papers?"


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def areas_of(papers: list[dict], status: str) -> Counter:
    return Counter(paper["primary_area"].replace("&amp;", "&") for paper in papers if paper["status"] == status)


def test_the_cli_prints_the_counts_as_a_table_and_json_carries_them(moe_index, moe_sample):
    expected = areas_of(records(moe_sample), "Oral")
    shown = rag("ask", AREAS_OF_ORALS, index=moe_index)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    header = next(number for number, line in enumerate(lines) if line.split() == ["primary", "area", "papers"])
    rows = lines[header + 1 : header + 1 + len(expected)]
    printed = {line.rsplit(maxsplit=1)[0]: int(line.split()[-1]) for line in rows}
    assert printed == expected
    orals = sum(expected.values())
    assert f"The {orals} papers with status: Oral are in {len(expected)} primary areas." in shown.stdout
    assert "Sources, best match first" not in shown.stdout  # nothing was retrieved
    data = json.loads(rag("ask", AREAS_OF_ORALS, "--json", index=moe_index).stdout)
    assert data["kind"] == "tally" and data["count"] == sum(expected.values())
    assert {name: number for name, number in data["table"]["rows"]} == expected


def test_rag_answer_in_a_fresh_process_counts_the_withdrawn_and_per_status(moe_index, moe_sample):
    """The Python API as a new script calls it: `rag.answer()` with the config and index from the environment."""
    script = (
        "import json, rag\n"
        "for question in ('How many papers are there per status?', 'How many papers were rejected?'):\n"
        "    print(json.dumps(rag.answer(question).to_payload()))\n"
    )
    shown = fresh_python(script, moe_index)
    per_status, rejected = (json.loads(line) for line in shown.splitlines())
    statuses = Counter(paper["status"] for paper in records(moe_sample))
    assert dict(map(tuple, per_status["table"]["rows"])) == statuses
    assert per_status["table"]["columns"] == ["status", "papers"]
    assert rejected["count"] == statuses["Reject"] and rejected["text"].startswith(f"There are {statuses['Reject']} ")


@pytest.mark.slow
def test_v1_carries_the_table_in_its_rag_field(tmp_path, moe_index, moe_sample):
    env = {**user_environment(tmp_path), "RAG_VECTORSTORE__PATH": str(moe_index)}
    with ServeProcess(tmp_path / "serve.log", env, "--config", "extractive") as server:
        body = {"model": "extractive", "messages": [{"role": "user", "content": AREAS_OF_ORALS}]}
        reply = httpx.post(f"{server.url}v1/chat/completions", json=body, timeout=300).json()
    extra = reply["rag"]
    expected = areas_of(records(moe_sample), "Oral")
    assert extra["kind"] == "tally" and reply["choices"][0]["message"]["content"] == extra["text"]
    assert {name: number for name, number in extra["table"]["rows"]} == expected
    assert extra["table"]["counted"] == sum(expected.values()) and extra["table"]["field"] == "primary_area"


def test_a_share_is_counted_exactly_with_what_it_is_out_of_at_the_cli(moe_index, moe_sample):
    """Asked as a share, in words no pattern of ours reads: the numerator and the denominator from the records."""
    papers = records(moe_sample)
    orals = sum(paper["status"] == "Oral" for paper in papers)
    asked = rag("ask", "What fraction of the submissions ended up as orals?", "--json", index=moe_index)
    data = json.loads(asked.stdout)
    assert data["kind"] == "tally" and data["count"] == orals
    assert data["table"]["rows"] == [["picked", orals]] and data["table"]["of"] == [len(papers)]
    assert f"{orals:,} of the {len(papers):,} papers of the index ({100 * orals / len(papers):.1f}%)" in data["text"]


def test_a_rate_per_area_is_each_area_s_share_of_its_own_papers_highest_first(moe_index, moe_sample):
    papers = records(moe_sample)
    in_area = Counter(paper["primary_area"].replace("&amp;", "&") for paper in papers)
    orals = areas_of(papers, "Oral")
    data = json.loads(rag("ask", "What is the oral rate per primary area?", "--json", index=moe_index).stdout)
    assert data["kind"] == "tally"
    rows = [(name, n, of) for (name, n), of in zip(data["table"]["rows"], data["table"]["of"], strict=True)]
    assert {name: (n, of) for name, n, of in rows} == {area: (orals[area], in_area[area]) for area in in_area}
    shares = [n / of for _, n, of in rows]
    assert shares == sorted(shares, reverse=True)
    printed = rag("ask", "What is the oral rate per primary area?", index=moe_index).stdout.splitlines()
    assert any(line.split()[-3:] == ["papers", "of", "share"] for line in printed)  # the table as a terminal shows it


def test_the_page_s_table_shows_a_share_with_what_it_is_out_of():
    from rag.core.tables import Table
    from rag.core.types import Answer
    from ui.tally import tally_updates

    table = Table("primary area", "primary_area", (("theory", 3), ("vision", 1)), 12, 2, "papers", of=(4, 8))
    shown, chart = tally_updates([Answer("acceptance rate per area", "…", [], kind="tally", table=table)])
    frame = shown["value"]
    assert list(frame.columns) == ["primary area", "papers", "of", "share (%)"]
    assert frame.values.tolist() == [["theory", 3, 4, 75.0], ["vision", 1, 8, 12.5]]
    assert shown["visible"] and chart["visible"]
