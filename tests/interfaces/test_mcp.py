"""`rag mcp` as an agent meets it: the MCP SDK's own stdio client starts `rag --config extractive mcp` for a
new user, lists and calls both tools and reads paper resources; results must be what `rag` gives."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from conftest import user_environment

from rag.core.config import PROJECT_ROOT

pytestmark = pytest.mark.slow

RXNFLOW = "How many reaction templates does RxnFlow use?"
HANABI = "Which agent learns to play Hanabi with unfamiliar partners?"
FOLLOW_UP = "What does it outperform?"


def with_client(home, session) -> dict:
    """Run `session(client)` against a fresh `rag mcp`; its stderr goes to home/mcp.log."""
    from mcp import Client, StdioServerParameters, stdio_client

    env = user_environment(home)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rag.cli", "--config", "extractive", "mcp"], env=env, cwd=PROJECT_ROOT
    )

    async def run():
        with (home / "mcp.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as client:
                return await session(client)

    return asyncio.run(run())


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> dict:
    """One server, every call the tests look at (starting it, and the first call's seeding, take a while)."""
    from mcp import MCPError

    home = tmp_path_factory.mktemp("mcp-user")

    async def session(client) -> dict:
        seen = {"tools": (await client.list_tools()).tools}
        seen["search"] = await client.call_tool("search_papers", {"question": HANABI, "k": 3})
        seen["oral"] = await client.call_tool("search_papers", {"question": HANABI, "filters": {"status": ["Oral"]}})
        seen["ask"] = await client.call_tool("ask", {"question": RXNFLOW})
        said = seen["ask"].structured_content["text"]
        seen["follow"] = await client.call_tool("ask", {"question": FOLLOW_UP, "history": [[RXNFLOW, said]]})
        seen["conversation errors"] = [
            await client.call_tool("ask", {"question": FOLLOW_UP, "history": [[RXNFLOW, " "]]}),
            await client.call_tool("ask", {"question": FOLLOW_UP, "history": [["x" * 3001, said]]}),
            await client.call_tool("ask", {"question": FOLLOW_UP, "history": [[RXNFLOW]]}),
        ]
        seen["errors"] = [
            await client.call_tool("ask", {"question": "   "}),
            await client.call_tool("ask", {"question": "why? " * 500}),
            await client.call_tool("search_papers", {"question": HANABI, "k": 0}),
            await client.call_tool("search_papers", {"question": HANABI, "filters": {"stats": ["Oral"]}}),
            await client.call_tool("search_papers", {}),
        ]
        seen["templates"] = (await client.list_resource_templates()).resource_templates
        uri = seen["search"].structured_content["papers"][0]["uri"]
        seen["paper"] = (await client.read_resource(uri)).contents
        try:
            await client.read_resource("paper://no-such-paper")
        except MCPError as err:
            seen["missing"] = str(err)
        return seen

    seen = with_client(home, session)
    seen["log"] = (home / "mcp.log").read_text(errors="replace")
    return seen


def test_an_mcp_client_lists_its_tools_with_their_schemas(calls):
    tools = {tool.name: tool for tool in calls["tools"]}
    # related_papers: tests/interfaces/test_related.py; paper_map: tests/interfaces/test_map.py
    assert set(tools) == {"search_papers", "ask", "related_papers", "paper_map"}
    for tool in (tools["search_papers"], tools["ask"]):
        assert tool.description and tool.input_schema["required"] == ["question"]
        assert {"question", "k", "filters"} <= set(tool.input_schema["properties"])
        assert tool.annotations.read_only_hint is True


def test_search_papers_gives_what_rag_retrieves(calls, seeded):
    result = calls["search"]
    assert not result.is_error
    papers = result.structured_content["papers"]
    expected = seeded.retrieve(HANABI, k=3)
    assert [p["paper_id"] for p in papers] == [s.paper_id for s in expected]
    assert papers[0]["passage"] == expected[0].text and papers[0]["uri"] == f"paper://{expected[0].paper_id}"
    assert json.loads(result.content[0].text) == result.structured_content  # text for clients without structure
    assert calls["oral"].structured_content == {"papers": []}  # no seed is an oral


def test_ask_gives_the_cited_answer_rag_gives(calls, seeded):
    result = calls["ask"]
    expected = seeded.answer(RXNFLOW)
    assert not result.is_error
    answer = result.structured_content
    assert (answer["text"], answer["cited"], answer["refused"]) == (expected.text, expected.cited, False)
    assert [s["paper_id"] for s in answer["sources"]] == [s.paper_id for s in expected.sources]
    assert answer["sources"][0]["number"] == 1


def test_bad_input_comes_back_as_tool_errors_with_the_reason(calls):
    empty, long, zero, unknown, missing = calls["errors"]
    assert all(result.is_error for result in calls["errors"])
    assert "the question is empty" in empty.content[0].text
    assert "the limit is 2,000" in long.content[0].text
    assert "greater than or equal to 1" in zero.content[0].text
    assert "stats" in unknown.content[0].text and "question" in missing.content[0].text
    assert "Traceback" not in calls["log"], calls["log"][-3000:]


def test_ask_takes_the_conversation_as_agents_send_it_and_names_a_malformed_one(calls, seeded):
    expected = seeded.answer(FOLLOW_UP, history=[(RXNFLOW, seeded.answer(RXNFLOW).text)])
    follow = calls["follow"].structured_content
    assert follow["focus"] == expected.focus == [expected.sources[0].paper_id] and follow["text"] == expected.text
    empty, long, half = calls["conversation errors"]
    assert all(result.is_error for result in calls["conversation errors"])
    assert "answer 1 of the history is empty" in empty.content[0].text
    assert "question 1 of the history is 3,001 characters long" in long.content[0].text
    assert "history" in half.content[0].text  # a pair without its answer: the schema's own message


def test_each_paper_is_a_resource(calls, seeded):
    assert [t.uri_template for t in calls["templates"]] == ["paper://{paper_id}"]
    (content,) = calls["paper"]
    paper = json.loads(content.text)
    first = seeded.retrieve(HANABI, k=1)[0]
    assert content.mime_type == "application/json" and paper["paper_id"] == first.paper_id
    assert paper["title"] == first.title and "Hanabi" in paper["abstract"]
    assert {"authors", "status", "primary_area", "url", "github"} <= set(paper)
    assert "no-such-paper" in calls["missing"]


def test_without_the_sdk_the_command_names_the_install(monkeypatch, seeded):
    from rag.core.errors import ConfigError
    from rag.mcp_server import build_mcp_server

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # as if `mcp` were not installed
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[mcp\]"'):
        build_mcp_server(seeded)


def test_mcp_ask_returns_the_table(tmp_path, moe_sample):
    """A count over the metadata: `table` holds it, as a direct count of the records (a user who ingested the
    slice of the list in `moe_sample`)."""
    import subprocess
    from collections import Counter

    command = [sys.executable, "-m", "rag.cli", "--config", "extractive", "ingest", str(moe_sample)]
    env = user_environment(tmp_path)
    ingested = subprocess.run(command, capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=600)
    assert ingested.returncode == 0, ingested.stderr

    async def session(client) -> dict:
        return (
            await client.call_tool("ask", {"question": "Which research areas have the most oral papers?"})
        ).structured_content

    called = with_client(tmp_path, session)
    assert called["kind"] == "tally" and called["table"]["columns"] == ["primary area", "papers"]
    records = [json.loads(line) for line in moe_sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    orals = Counter(r["primary_area"].replace("&amp;", "&") for r in records if r["status"] == "Oral")
    assert {name: number for name, number in called["table"]["rows"]} == orals
