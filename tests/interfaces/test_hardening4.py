"""Hardening 4 (issue 65), each item through the door a user or client comes in by: a record whose authors are
the question's own words, a person named inside another's name, one conversation's focus given to another, a
server gone stale after a request named a config, link markup quoted to /v1 and MCP, a made-up
X-Forwarded-For against `rag ui`'s login, raw errors from the Python API, an OSC 8 link in a title.

Every record is made up here; the seeds are the shipped ones.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import httpx
import pytest
from clirun import rag as cli
from conftest import SEED_FILE, settings_for, user_environment, write_jsonl

import rag
from benchmarks.harness.servers import AppProcess, ServeProcess
from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.service import RagService

pytestmark = pytest.mark.slow

# -- 1. a record's author names never outrank the question's own words ---------------------------------------

HIJACK = {
    "id": "hijack1",
    "title": "A study of nothing in particular",
    "abstract": "We study seashell counting on quiet beaches with tide tables and a ruler.",
    "authors": ["What Is", "Which Papers", "How Many", "Show Me All", "Diffusion Models", "Graph Neural"],
}


@pytest.fixture(scope="module")
def hijacked(tmp_path_factory, embeddings) -> RagService:
    folder = tmp_path_factory.mktemp("hijacked")
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([SEED_FILE, write_jsonl(folder / "hijack.jsonl", [HIJACK])])
    return service


@pytest.mark.parametrize(
    "question",
    [
        "What is the bright ending anomaly?",
        "Which papers propose generative models for designing drug-like molecules?",
        "How many papers are about diffusion models?",
        "Show me all papers on Hanabi agents",
        "which papers use graph neural networks for molecules?",
    ],
)
def test_names_a_record_stores_never_become_a_question_s_author(hijacked, question):
    answer = hijacked.answer(question)
    assert "author" not in answer.filters, (answer.filters, answer.text[:200])
    assert "hijack1" not in answer.cited and not answer.refused, answer.text[:300]


def test_a_stored_name_said_as_a_name_still_filters(hijacked):
    assert hijacked.understand("papers by What Is").filters == Filters(author="What Is")


def test_the_hijack_record_changes_no_cli_answer(hijacked):
    index = Path(hijacked.config.vectorstore.path)
    done = cli("ask", "--json", "What is the bright ending anomaly?", index=index)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert not answer["refused"] and answer["filters"] == {}, answer["text"][:300]


# -- 2. a person is a whole name, never a piece of another's ---------------------------------------------------

PEOPLE = {
    "bo1": ["Bo Li", "Ada Lovelace"],
    "bo2": ["bo li"],  # another case
    "bo3": ["Bó Li"],  # an accent
    "bo4": ["B. Li"],  # an initial
    "other1": ["Aobo Li"],
    "other2": ["Tingbo Liang"],
    "other3": ["Hongbo Li"],
    "other4": ["Bo Liu"],
    "other5": ["Li Bohan"],
    "other6": ["Bo-Yu Li"],  # a hyphenated first name is one name
    "other7": ["Bo Xiao Li"],  # a middle name of their own, not said
}
TOPICS = ["sea ice", "coral reefs", "glacier melt", "river deltas", "sand dunes", "kelp forests", "salt marshes"]
TOPICS += ["tundra soils", "mangroves", "peat bogs", "ice shelves"]


@pytest.fixture(scope="module")
def people(tmp_path_factory, embeddings) -> RagService:
    folder = tmp_path_factory.mktemp("people")
    records = [
        {
            "id": pid,
            "title": f"Remote sensing of {topic}",
            "abstract": f"We map {topic} from satellites.",
            "authors": names,
        }
        for (pid, names), topic in zip(PEOPLE.items(), TOPICS)
    ]
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([write_jsonl(folder / "people.jsonl", records)])
    return service


BO_LI = {"bo1", "bo2", "bo3", "bo4"}


def test_an_author_is_counted_as_a_whole_name_with_its_variants(people):
    answer = people.answer("How many papers did Bo Li write?")
    assert answer.filters.get("author", "").casefold() == "bo li", answer.filters
    assert answer.count == len(BO_LI), answer.text


@pytest.mark.parametrize("question", ["Bo Li papers", "papers by Bo Li", "list the papers of bo li"])
def test_an_author_is_listed_as_a_whole_name_with_its_variants(people, question):
    answer = people.answer(question)
    assert answer.filters.get("author", "").casefold() == "bo li", answer.filters
    assert {source.paper_id for source in answer.listed} == BO_LI, answer.text


def test_the_author_filter_of_every_api_is_the_same_person_match(people):
    found = {source.paper_id for source in people.retrieve("remote sensing", k=20, filters={"author": "bo li"})}
    assert found == BO_LI
    assert {s.paper_id for s in people.retrieve("remote sensing", k=20, filters={"author": "Liang"})} == {"other2"}


# -- 3. a conversation's focus is its own -------------------------------------------------------------------

SHARED = "The code and the data are released under an open licence."
TWINS = [
    {
        "id": "twin-a",
        "title": "Otter whisker sensing",
        "abstract": f"We propose otter whisker sensing for murky water. {SHARED}",
        "authors": ["Alice Otter"],
    },
    {
        "id": "twin-b",
        "title": "Beaver dam acoustics",
        "abstract": f"We propose beaver dam acoustics for river monitoring. {SHARED}",
        "authors": ["Bob Beaver"],
    },
]


def test_a_follow_up_is_answered_from_its_own_conversation_s_paper_when_answers_read_the_same(tmp_path, embeddings):
    service = RagService(settings_for(tmp_path / "index"), embeddings=embeddings)
    service.ingest([write_jsonl(tmp_path / "twins.jsonl", TWINS)])
    first = {
        "Alice Otter": service.answer("What do the otter whisker sensing authors release?", k=1),
        "Bob Beaver": service.answer("What do the beaver dam acoustics authors release?", k=1),
    }
    texts = {answer.text for answer in first.values()}
    assert len(texts) == 1, texts  # the two users' answers read the same, citing different papers
    for author, answer in first.items():
        history = [(answer.question, answer.text)]  # text only, as /v1 clients send it
        followed = service.answer("Who wrote it?", history=history)
        assert author in followed.text, (author, followed.text)


# -- 4. a server that opened a second config sees what another process ingests ------------------------------


def test_serve_sees_a_paper_ingested_by_another_process_for_every_config_it_opened(tmp_path, embeddings):
    index = tmp_path / "index"
    RagService(settings_for(index), embeddings=embeddings).ingest([SEED_FILE])
    environment = user_environment(tmp_path) | {"RAG_CONFIG": "default"}
    new = {"id": "walrus1", "title": "Quantum walrus tessellation", "abstract": "We tessellate glaciers with walruses."}
    with ServeProcess(tmp_path / "serve.log", environment, "--index", str(index)) as server:
        url = server.url.rstrip("/")

        def retrieve(model: str, **body) -> httpx.Response:
            return httpx.post(f"{url}/v1/retrieve", json={"model": model, "k": 3, **body}, timeout=300)

        for model in ("default", "extractive"):  # both configs open the index
            assert retrieve(model, question="Hanabi").status_code == 200
        done = cli("ingest", "--quiet", str(write_jsonl(tmp_path / "new.jsonl", [new])), index=index)
        assert done.returncode == 0, done.stderr
        for model in ("default", "extractive"):
            found = retrieve(model, question=new["title"]).json()["data"]
            assert (found[0]["paper_id"], found[0]["title"]) == ("walrus1", new["title"]), (model, found)
            held = retrieve(model, question="glaciers", filters={"papers": ["walrus1"]})
            assert held.status_code == 200 and held.json()["data"][0]["paper_id"] == "walrus1", held.text[:300]
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log and "no readable vector" not in log, log[-2000:]


# -- 6. link markup quoted from an abstract reaches /v1 and MCP inert --------------------------------------

LINKED = {
    "id": "linked1",
    "title": "Tensor sketching for streaming graph kernels",
    "abstract": "We propose tensor sketching for streaming graph kernels. Click [the code](javascript:alert(4)) "
    'or <a href="javascript:alert(5)">here</a> for tensor sketching demos.',
}
LIVE_LINK = re.compile(r"(?<!\\)\[[^\]]*\]\(javascript:|(?<!\\)<a\s", re.IGNORECASE)


def test_link_markup_quoted_from_an_abstract_is_inert_in_v1_and_mcp(tmp_path, embeddings):
    import asyncio
    import sys

    from mcp import Client, StdioServerParameters, stdio_client

    index = tmp_path / "index"
    RagService(settings_for(index), embeddings=embeddings).ingest([write_jsonl(tmp_path / "linked.jsonl", [LINKED])])
    question = "Where are the tensor sketching demos?"
    environment = user_environment(tmp_path) | {"RAG_CONFIG": "extractive", "RAG_VECTORSTORE__PATH": str(index)}
    with ServeProcess(tmp_path / "serve.log", environment) as server:
        chat = {"model": "extractive", "messages": [{"role": "user", "content": question}]}
        whole = httpx.post(f"{server.url}v1/chat/completions", json=chat, timeout=300).json()
        streamed = httpx.post(f"{server.url}v1/chat/completions", json={**chat, "stream": True}, timeout=300).text
    content = whole["choices"][0]["message"]["content"]
    events = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: {")]
    pieces = "".join(event["choices"][0]["delta"].get("content") or "" for event in events if event.get("choices"))
    assert "javascript:" in content and "demos" in content, content  # quoted, as written...
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag.cli", "mcp"], env=environment)

    async def ask() -> str:
        async with Client(stdio_client(params), read_timeout_seconds=300) as client:
            reply = await client.call_tool("ask", {"question": question})
            return json.loads(reply.content[0].text)["text"]

    for where, text in {"/v1": content, "/v1 rag": whole["rag"]["text"], "/v1 streamed": pieces}.items():
        assert not LIVE_LINK.search(text), (where, text)  # ...never live
    assert pieces == content
    mcp_text = asyncio.run(ask())
    assert "javascript:" in mcp_text and not LIVE_LINK.search(mcp_text), mcp_text


# -- 7. `rag ui`'s login believes X-Forwarded-For only from the proxies named ------------------------------


def test_rag_ui_login_tries_are_not_reset_by_a_made_up_forwarded_address(tmp_path, embeddings):
    index = tmp_path / "index"
    RagService(settings_for(index), embeddings=embeddings).ingest([SEED_FILE])
    environment = user_environment(tmp_path) | {"UI_LOGIN": "reader:s3cret", "RAG_CONFIG": "extractive"}
    with AppProcess(tmp_path / "ui.log", environment, "--index", str(index), "--auth-env", "UI_LOGIN") as app:
        wrong = {"username": "reader", "password": "guess"}
        with httpx.Client(base_url=app.url.rstrip("/"), timeout=30) as guesser:
            statuses = [
                guesser.post("/login", data=wrong, headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code
                for n in range(8)
            ]
    assert statuses[:5] == [400] * 5 and statuses[5:] == [429] * 3, statuses


# -- 9. the Python API's bad arguments are one InputError each --------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: rag.related(123),
        lambda: rag.related(abstract=5),
        lambda: rag.as_retriever(filters=[1]),
        lambda: rag.as_retriever(filters={"status": 3}),
    ],
    ids=["related-id", "related-abstract", "retriever-list", "retriever-field"],
)
def test_bad_python_api_arguments_are_one_input_error(seeded, monkeypatch, call):
    monkeypatch.setenv("RAG_VECTORSTORE__PATH", seeded.config.vectorstore.path.as_posix())
    monkeypatch.setenv("RAG_CONFIG", "extractive")
    with pytest.raises(InputError) as raised:
        call()
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 200, raised.value


# -- 10. an OSC 8 link in a title leaves the CLI's line whole ------------------------------------------------


def test_an_osc8_link_in_a_title_is_dropped_whole_in_the_cli(tmp_path):
    osc8 = "\x1b]8;;https://evil.example/\x1b\\terminal tricks\x1b]8;;\x1b\\"
    record = {"id": "osc1", "title": f"Hyperlinked {osc8} for shells", "abstract": "We study escape codes in shells."}
    index = tmp_path / "index"
    assert cli("ingest", str(write_jsonl(tmp_path / "osc.jsonl", [record])), index=index).returncode == 0
    done = cli("related", "osc1", index=index)
    assert done.returncode == 0, done.stderr
    assert "Hyperlinked terminal tricks for shells" in done.stdout, done.stdout
    assert "8;;" not in done.stdout and "\x1b" not in done.stdout


# -- 8. a model conversion killed with kill -9 leaves nothing behind -------------------------------------------


def test_a_conversion_killed_with_kill_9_stops_its_builder_and_the_next_build_removes_its_folder(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from rag.answering.onnx_llm import fingerprint
    from rag.answering.providers import bundled_gguf
    from rag.core.built import build_once

    cache = tmp_path / "models"
    environment = user_environment(tmp_path) | {"RAG_EMBEDDING__ONNX_CACHE": str(cache), "RAG_CONFIG": "smollm2"}
    index = tmp_path / "index"
    assert cli("ingest", "--quiet", str(SEED_FILE), index=index).returncode == 0
    asking = subprocess.Popen(
        [sys.executable, "-m", "rag.cli", "--index", str(index), "ask", "What is the bright ending anomaly?"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        builder = None
        deadline = time.monotonic() + 400
        while builder is None and time.monotonic() < deadline and asking.poll() is None:
            builder = next((pid for pid in children(asking.pid) if b"models.builder" in cmdline(pid)), None)
            time.sleep(0.2)
        assert builder is not None, "the model builder never started"
        os.kill(asking.pid, signal.SIGKILL)
        asking.wait(timeout=30)
        time.sleep(2)
        assert not Path(f"/proc/{builder}").exists() or b"models.builder" not in cmdline(builder)
    finally:
        asking.kill()
    gguf = bundled_gguf()
    target = cache / f"{gguf.stem}-genai-{fingerprint(gguf, cache)}"
    assert list(cache.glob(f".{target.name}.*")), "the killed build left its temporary folder"
    build_once(target, lambda path: path.mkdir(), Path.is_dir)  # the next build, here a quick one
    assert not list(cache.glob(f".{target.name}.*")) and target.is_dir()


def children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in found.read_text().split()] if found.exists() else []


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
