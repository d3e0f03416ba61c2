"""Hostile stored text on its way out (issue 39, items 5, 6, 9 and 11): a `javascript:` link, terminal escape
sequences, bidi overrides and HTML in a paper's title, area or link, and odd input to the Python API and `rag chat`.

Every output is the real one: `rag` in a subprocess (piped, or on a pseudo-terminal), `rag serve` on loopback
(/v1 and the chat's /ask), `rag mcp` with the SDK's client, the map's page rendered by Debian's chromium. The
records are made up here; one index is ingested once for the module.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS, require_chromium
from clirun import rag
from conftest import settings_for, write_jsonl
from terminal import converse_on_terminal, run_on_terminal

from benchmarks.harness.servers import ServeProcess
from rag.core.errors import InputError
from rag.service import RagService

pytestmark = pytest.mark.slow

POISON_URL = "javascript:alert(document.domain)"
ESCAPES = "\x1b]0;pwned\x07\x1b[2J"  # the window's title set, the screen cleared
EVIL_AREA = '<a href="https://evil.example/">Evil area</a>'
BIG_AREA = '<span style="font-size:80px;color:red">Big area</span>'
# What a terminal acts on: C0 but newline and tab, DEL, C1 (U+009B is CSI), the bidi overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
ODD_IDS = ["a/b", "/lead", "../up", "x:y"]  # ids, not paths: each must read back as a paper:// resource


def made_up(name: str, abstract: str, **fields) -> dict:
    return {"id": name, "title": f"Made-up paper {name}", "abstract": abstract, **fields}


RECORDS = [
    *(
        made_up(f"p{n}", f"We study problem {n} of list p: graph networks for molecule property prediction.")
        for n in range(5)
    ),  # fmt: skip
    made_up(
        "poison0",
        "We propose tensor sketching for streaming graph kernels over molecule libraries. "
        "Code: https://github.com/made-up/sketch.",
        title="Tensor sketching for streaming graph kernels",
        url=POISON_URL,
    ),  # fmt: skip
    made_up(
        "esc0",
        f"We propose wavelet {ESCAPES}denoising of astronomical spectra with \u202ereversed\u202c noise.",
        title=f"Wavelet {ESCAPES}denoising of \u009b31mastronomical spectra \u202eevil",
        status="Poster",
        primary_area=f"astronomy {ESCAPES}and \u2066space\u2069",
    ),  # fmt: skip
    made_up("html0", "We study legend markup in maps of conference papers drawn with plotly.", primary_area=EVIL_AREA),
    made_up("html1", "We study style injection in legends of scatter plots.", primary_area=BIG_AREA),
    *(
        made_up(odd_id, f"We study identifiers of kind {n} holding slashes, dots and colons in resource names.")
        for n, odd_id in enumerate(ODD_IDS)
    ),  # fmt: skip
]
SKETCH = "Which papers are most similar to Tensor sketching for streaming graph kernels?"
WAVELET = "Which paper proposes wavelet denoising of astronomical spectra?"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, embeddings) -> RagService:
    folder = tmp_path_factory.mktemp("hostile-output")
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([write_jsonl(folder / "list.jsonl", RECORDS)])
    return service


def index_of(service: RagService) -> Path:
    return Path(service.config.vectorstore.path)


def environment(service: RagService) -> dict[str, str]:
    return {**os.environ, "RAG_CONFIG": "extractive", "RAG_VECTORSTORE__PATH": str(index_of(service))}


def run_ok(service: RagService, *args: str) -> str:
    done = rag(*args, index=index_of(service))
    assert done.returncode == 0, done.stderr
    return done.stdout


def mcp(service: RagService, session):
    """`session(client)` against `rag mcp` over the index, with the MCP SDK's own stdio client."""
    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "rag.cli", "mcp"], env=environment(service))

    async def run():
        async with Client(stdio_client(params), read_timeout_seconds=300) as client:
            return await session(client)

    return asyncio.run(run())


# -- item 5: a javascript: link leaves through no output -------------------------------------------------


@pytest.fixture(scope="module")
def served(hostile, tmp_path_factory):
    """`rag serve` over the index on loopback (no key: loopback only), as a lab starts it."""
    with ServeProcess(tmp_path_factory.mktemp("serve") / "serve.log", environment(hostile)) as server:
        yield server.url.rstrip("/")


def assert_no_raw_link(text: str, where: str) -> None:
    assert "poison0" in text, where  # the poisoned paper is in it...
    assert "javascript:" not in text, where  # ...without its link


def test_a_javascript_link_leaves_through_no_output(hostile, served):
    from gradio_client import Client

    related = json.loads(run_ok(hostile, "related", "--json", "poison0"))
    assert related["subject"]["url"] == "" and related["subject"]["github"] == ["https://github.com/made-up/sketch"]
    outputs = {
        "rag related --json": json.dumps(related),
        "rag ask --json": run_ok(hostile, "ask", "--json", SKETCH),
        "/v1/related": httpx.post(f"{served}/v1/related", json={"paper": "poison0"}, timeout=300).text,
        "/v1/chat/completions": httpx.post(
            f"{served}/v1/chat/completions",
            json={"model": "extractive", "messages": [{"role": "user", "content": SKETCH}]},
            timeout=300,
        ).text,
        "/ask": json.dumps(Client(f"{served}/", verbose=False).predict(SKETCH, api_name="/ask")),
    }

    async def session(client) -> dict[str, str]:
        paper = await client.read_resource("paper://poison0")
        related = await client.call_tool("related_papers", {"paper": "poison0"})
        return {"MCP paper://poison0": paper.contents[0].text, "MCP related_papers": related.content[0].text}

    outputs |= mcp(hostile, session)
    for where, text in outputs.items():
        assert_no_raw_link(text, where)


# -- item 6: nothing a terminal would act on reaches it ------------------------------------------------------


def assert_plain(text: str, where: str) -> None:
    found = RAW.search(text)
    around = text[max(0, found.start() - 60) : found.start() + 20] if found else ""
    assert found is None, f"{where}: U+{ord(found.group()):04X} at {found.start()}: {around!r}"


def test_rag_ask_related_and_map_print_no_control_sequences(hostile):
    answer = run_ok(hostile, "ask", WAVELET)
    assert_plain(answer, "rag ask")
    assert "Wavelet denoising of" in answer and "astronomical spectra evil" in answer  # the sequences dropped whole
    tally = run_ok(hostile, "ask", "Which primary areas have the most papers?")
    assert_plain(tally, "rag ask (a tally)")
    table = tally[tally.index("primary area ") :].splitlines()[1:4]
    assert "astronomy and space" in tally and len({len(row) for row in table}) == 1  # in columns still
    assert_plain(run_ok(hostile, "related", "esc0"), "rag related")
    shown = json.loads(run_ok(hostile, "related", "--json", "esc0"))  # JSON: every character kept, as \u escapes
    assert shown["subject"]["title"] == RECORDS[6]["title"]
    chunks, status = run_on_terminal([sys.executable, "-m", "rag.cli", "ask", WAVELET], environment(hostile))
    assert status == 0 and "Wavelet denoising of" in "".join(chunks)
    assert_plain("".join(chunks).replace("\r", ""), "rag ask on a terminal (streamed)")


def test_rag_chat_from_a_file_echoes_and_answers_in_plain_lines(hostile, tmp_path):
    questions = tmp_path / "questions.txt"
    lines = [WAVELET, "What \u009b2Jdoes it \u202edenoise?", "Which paper\x00 proposes tensor sketching?"]
    lines.append("x" * 1_000_000)
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = rag("chat", str(questions), index=index_of(hostile))
    assert done.returncode == 0, done.stderr
    assert_plain(done.stdout, "rag chat FILE")
    assert "> What does it denoise?\n" in done.stdout and "asked as: What does it denoise?)" in done.stdout
    assert "> Which paper proposes tensor sketching?" in done.stdout  # the NUL dropped from the echo
    assert len(done.stdout) < 20_000 and "(shown cut: 1,000,000 characters)" in done.stdout
    assert "error: the question is 1,000,000 characters long" in done.stdout


# -- item 9: the map's legend shows an area's markup as text ------------------------------------------------


def test_the_maps_legend_shows_markup_as_text_in_chromium(hostile, tmp_path):
    require_chromium()
    page = tmp_path / "map.html"
    done = rag("map", "--html", str(page), "--colour", "area", index=index_of(hostile))
    assert done.returncode == 0, done.stderr
    dom = subprocess.run(
        [str(CHROMIUM), *CHROMIUM_ARGS, "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180,
    ).stdout  # fmt: skip
    assert 'class="legendtext"' in dom  # the legend was drawn
    assert not re.search(r"<a\b[^>]*evil\.example", dom)  # no link made of a name
    assert not re.search(r"<tspan\b[^>]*font-size:\s*80px", dom)  # no name restyling the legend
    assert '&lt;a href="https://evil.example/"&gt;Evil area&lt;/a&gt; (1)' in dom  # the name, as written
    assert '&lt;span style="font-size:80px;color:red"&gt;Big area&lt;/span&gt; (1)' in dom


# -- item 11: odd input gets one clear sentence ---------------------------------------------------------------


def test_a_typed_line_with_a_nul_is_one_question(hostile):
    typed = ["Which paper\x00 proposes tensor sketching?", WAVELET]
    shown, status = converse_on_terminal([sys.executable, "-m", "rag.cli", "chat"], environment(hostile), typed)
    assert status == 0, shown
    answers = shown.split("Sources, best match first")
    assert len(answers) == 3, shown  # two questions, two answers: the NUL's line was not joined to the next
    assert "(poison0)" in answers[1] and "(esc0)" in answers[2]


@pytest.mark.parametrize(
    "question, options, message",
    [
        (123, {}, "the question is not text: got int 123"),
        (WAVELET, {"history": [None]}, "turn 1 of the history is not a (question, answer) pair"),
        (WAVELET, {"history": 5}, "the history is not a list of (question, answer) pairs: got int"),
        (WAVELET, {"history": [(WAVELET, None)]}, "turn 1 of the history is not a (question, answer) pair of texts"),
        (WAVELET, {"history": [(WAVELET, "It does.", None)]}, "turn 1 of the history: its third item is not a list"),
        (WAVELET, {"filters": {"status": "Poster"}}, "filters.status: Input should be a valid list"),
        (WAVELET, {"filters": {"stats": ["Poster"]}}, "filters.stats: Extra inputs are not permitted"),
        (WAVELET, {"filters": ["Poster"]}, "filters: give a Filters or a dict of filter values, not list"),
    ],
)
def test_the_python_api_names_odd_input_in_one_sentence(hostile, question, options, message):
    import rag as api

    with pytest.raises(InputError) as raised:
        api.answer(question, config=hostile.config, **options)
    assert str(raised.value).startswith(message)


def test_filters_as_a_dict_are_applied(hostile):
    import rag as api

    answer = api.answer(WAVELET, config=hostile.config, filters={"status": ["Poster"]})
    assert answer.sources and {source.status for source in answer.sources} == {"Poster"}


def test_an_mcp_resource_for_an_id_with_a_slash_reads_back(hostile):
    async def session(client) -> dict[str, str]:
        read = {}
        for n, odd_id in enumerate(ODD_IDS):
            question = f"Which paper studies identifiers of kind {n} holding slashes, dots and colons?"
            found = await client.call_tool("search_papers", {"question": question, "k": 20})
            [uri] = [paper["uri"] for paper in found.structured_content["papers"] if paper["paper_id"] == odd_id]
            try:
                read[odd_id] = json.loads((await client.read_resource(uri)).contents[0].text)["paper_id"]
            except Exception as err:  # noqa: BLE001 - the SDK's error, kept to show which id failed and how
                read[odd_id] = f"{uri}: {err}"
        return read

    assert mcp(hostile, session) == {odd_id: odd_id for odd_id in ODD_IDS}
