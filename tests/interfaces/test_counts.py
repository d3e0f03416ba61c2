"""A count over the metadata at every front door: the CLI as typed (its table, --json), `rag.answer()` in a
fresh process, and `/v1` of `rag serve` (the `rag` field). Each figure is checked against a direct count
over the records the index was built from (the slice of the real list in `moe_sample`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import httpx
import pytest
from clirun import rag
from conftest import user_environment

from benchmarks.harness.servers import ServeProcess
from rag.core.config import PROJECT_ROOT

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
    env = {**user_environment(PROJECT_ROOT), "RAG_CONFIG": "extractive", "RAG_VECTORSTORE__PATH": str(moe_index)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    per_status, rejected = (json.loads(line) for line in done.stdout.splitlines())
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
