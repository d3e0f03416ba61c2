"""Overview answers ("what are the main approaches to X?"): the topic's papers grouped into themes.

Over the real index of the mixture-of-experts slice of the ICLR 2025 list (tests/conftest.py), with the
bundled embedding model: through `rag.answer()`, the service and the CLI as typed.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import settings_for

from rag.answering.themes import MIN_PAPERS, OTHERS, distinctive_words, find_themes, silhouette
from rag.core.markup import plain_text
from rag.core.types import Source
from rag.service import RagService

OVERVIEW = "What are the main approaches to mixture-of-experts?"


@pytest.fixture(scope="module")
def moe(moe_index, embeddings) -> RagService:
    return RagService(settings_for(moe_index), embeddings=embeddings)


def test_an_overview_groups_every_listed_paper_into_exactly_one_theme(moe_index):
    import rag

    answer = rag.answer(OVERVIEW, config=settings_for(moe_index))
    listed = rag.answer("Which papers are about mixture-of-experts?", config=settings_for(moe_index))
    assert answer.kind == "overview" and answer.answered_by == "overview" and not answer.refused
    assert len(answer.themes) >= 2
    grouped = [paper_id for theme in answer.themes for paper_id in theme.paper_ids]
    assert len(grouped) == len(set(grouped)), "a paper sits in two themes"
    # The themes partition the papers the list of the same topic draws: no paper dropped, none added.
    assert set(grouped) == {source.paper_id for source in answer.sources} == {s.paper_id for s in listed.listed}
    named = [theme for theme in answer.themes if theme.name != OTHERS]
    assert [theme.size for theme in named] == sorted((theme.size for theme in named), reverse=True)
    assert all(theme.words and theme.name == ", ".join(theme.words) for theme in named)
    assert len({theme.name for theme in answer.themes}) == len(answer.themes), "two themes of one name"
    exported = answer.export("csv").strip().splitlines()  # the papers to take away: every grouped paper
    assert len(exported) == len(grouped) + 1


def test_each_quote_is_a_sentence_of_the_abstract_it_cites(moe):
    answer = moe.answer(OVERVIEW)
    assert all(1 <= len(theme.quotes) <= 3 for theme in answer.themes)
    for theme in answer.themes:
        for quote in theme.quotes:
            assert quote.paper_id in theme.paper_ids
            assert answer.sources[quote.number - 1].paper_id == quote.paper_id
            assert quote.sentence in moe.paper(quote.paper_id)["abstract"]
            assert f"“{plain_text(quote.sentence)}” [{quote.number}]" in answer.text
    # The text: the head, then one line per theme that cites each of its papers.
    head, *lines = answer.text.split("\n")
    assert head.endswith(f"grouped into {len(answer.themes)} themes by what they do, largest first:")
    assert len(lines) == len(answer.themes)
    assert set(answer.cited) == {source.paper_id for source in answer.sources}


def test_a_quote_says_what_its_paper_does_when_the_paper_says_it_in_a_whole_sentence(moe):
    """The quote was the sentence nearest the theme's centre, often background ("This optimization typically
    relies on pre-collected prompts.") though the paper says "we propose …" too; never a fragment or a code link."""
    from rag.answering.themes import LONGEST_QUOTE, doing_sentences, says_what_it_does

    answer = moe.answer(OVERVIEW)
    quotes = [(quote, answer.sources[quote.number - 1]) for theme in answer.themes for quote in theme.quotes]
    saying = 0
    for quote, source in quotes:
        whole = [s for s in doing_sentences(source) if says_what_it_does(s) and len(s) <= LONGEST_QUOTE]
        if whole:
            assert quote.sentence in whole, (quote.sentence, whole)
            saying += 1
    assert saying >= len(quotes) // 2  # the case is met, not vacuous


def test_a_paper_that_says_what_it_does_only_in_its_opening_sentence_is_quoted_by_it(embeddings):
    """An opening sentence counts as background, so LogQuant's "We introduce LogQuant, …" gave way to the
    filler after it ("Both approaches, however, …", the KV cache compression overview)."""
    logquant = Source.from_text(
        "q",
        "LogQuant: 2-Bit Quantization of KV Cache",
        "We introduce LogQuant, a 2-bit quantization technique for the KV cache of language models. Previous "
        "methods assume that later tokens matter more. Both approaches, however, can result in performance "
        "bottlenecks. LogQuant takes a different approach.",
        0.9,
    )
    others = [
        Source.from_text(f"p{n}", f"KV cache method {n}", f"KV caches are large. We propose {name}, which quantizes "
                         f"the KV cache to {n + 2} bits. It saves memory at inference.", 0.9)
        for n, name in enumerate(["KVQuant", "QJL"])
    ]  # fmt: skip
    quoted = {paper: sentence for group in find_themes([logquant, *others], "KV cache", embeddings)
              for paper, sentence in group.quotes}  # fmt: skip
    assert quoted[0].startswith("We introduce LogQuant")
    assert quoted[1].startswith("We propose KVQuant")  # a paper that says it past its opening: as before


def test_a_topic_with_too_few_papers_says_so_in_one_line_and_lists_them(moe):
    answer = moe.answer("Summarize the oral papers on mixture-of-experts")
    assert answer.kind == "overview" and answer.filters == {"status": ["Oral"]}
    assert 0 < len(answer.listed) < MIN_PAPERS and answer.themes == []
    head, *lines = answer.text.split("\n")
    assert head.endswith(f"too few to group into themes ({MIN_PAPERS} at least), so listed instead:")
    assert len(lines) == len(answer.listed)


def test_a_second_ask_on_a_topic_too_small_for_themes_is_answered_from_its_paper(seeded):
    """An overview asks one thing of a field. Asked with a second ask of a topic too small for themes, it listed
    the paper with one line and lost the second ask ("… and what do the ablation studies examine?" lost
    "clustering configurations"); now the paper's sentences answer each ask, as for any two-part look-up."""
    question = "Overview of the research on Hanabi agents, and how many players can they handle?"
    assert seeded.understand(question).kind == "overview"
    answer = seeded.answer(question)
    assert answer.kind == "lookup" and answer.sources[0].title == "A Generalist Hanabi Agent"
    assert "2-to-5 player" in answer.text
    listed = seeded.answer("Summarize the work on Hanabi agents")  # one ask: the list of one paper, as before
    assert listed.kind == "overview" and "too few to group into themes" in listed.text


def test_a_topic_no_paper_is_about_is_refused_as_a_list_would_be(moe):
    answer = moe.answer("What are the main approaches to knitting patterns for garments?")
    assert answer.kind == "overview" and answer.refused and answer.themes == []
    assert answer.refusal_reason == answer.line and answer.line.startswith("judged: the relevance judge")


def test_a_lookup_and_a_list_are_not_overviews(moe):
    assert moe.answer("Which papers are about mixture-of-experts?").themes == []
    assert moe.answer("How does Ada-K routing choose the number of experts?").kind == "lookup"


def test_the_cli_prints_the_themes_and_json_and_the_api_payload_carry_them(moe_index, moe):
    from clirun import rag

    shown = rag("ask", OVERVIEW, index=moe_index)
    assert shown.returncode == 0, shown.stderr
    assert "themes by what they do, largest first:" in shown.stdout and "\n1. " in shown.stdout
    data = json.loads(rag("ask", OVERVIEW, "--json", index=moe_index).stdout)
    assert data["kind"] == "overview" and data["themes"]
    ids = {source["paper_id"] for source in data["sources"]}
    assert {paper_id for theme in data["themes"] for paper_id in theme["paper_ids"]} == ids
    payload = moe.answer(OVERVIEW).to_payload()  # what /v1's `rag` field and MCP's `ask` return
    assert payload["themes"] and all(theme["size"] == len(theme["paper_ids"]) for theme in payload["themes"])
    assert {"name", "words", "paper_ids", "quotes"} <= set(payload["themes"][0])


def test_silhouette_prefers_the_grouping_that_separates():
    import numpy as np

    vectors = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.14, 0.99]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert silhouette(vectors, np.array([1, 1, 2, 2])) > 0.5 > silhouette(vectors, np.array([1, 2, 1, 2]))
    assert silhouette(vectors, np.array([1, 1, 1, 1])) == 0.0


def test_a_term_most_papers_use_names_no_theme_when_a_map_says_so():
    texts = [
        "Neural graph networks for molecules", "Neural graph networks for proteins",
        "Neural policy learning for robots", "Neural policy learning for games",
    ]  # fmt: skip
    groups, titles = [[0, 1], [2, 3]], [text.split(" for ")[0] for text in texts]
    named = distinctive_words(groups, texts, "", titles)
    assert named[0] == ["graph", "networks", "neural"]  # as overviews name
    assert named[1] == ["policy"], "a word of a larger theme's name tells the second theme from it"
    # the map's: "neural" is in all four texts, so it names no theme (a pair with it, used by two of them, may)
    assert distinctive_words(groups, texts, "", titles, most_common=0.5) == [["graph", "networks"], ["neural policy"]]


@pytest.mark.slow
def test_the_v1_api_carries_the_themes_in_its_rag_field(moe_index, tmp_path):
    import httpx
    from conftest import user_environment

    from benchmarks.harness.servers import ServeProcess

    env = user_environment(tmp_path) | {"RAG_VECTORSTORE__PATH": str(moe_index)}
    with ServeProcess(tmp_path / "serve.log", env, "--config", "extractive") as server:
        body = {"model": "extractive", "messages": [{"role": "user", "content": OVERVIEW}]}
        reply = httpx.post(f"{server.url}v1/chat/completions", json=body, timeout=300).json()
    rag = reply["rag"]
    assert rag["kind"] == "overview" and len(rag["themes"]) >= 2
    assert reply["choices"][0]["message"]["content"] == rag["text"]
    numbered = {source["number"]: source["paper_id"] for source in rag["sources"]}
    assert all(numbered[quote["number"]] == quote["paper_id"] for theme in rag["themes"] for quote in theme["quotes"])


@pytest.mark.slow
def test_with_the_bundled_model_a_theme_sentence_is_kept_only_when_its_citations_check(moe_index, embeddings):
    from rag.answering.citations import CitationChecker
    from rag.core.types import Source

    # Asked only where llm.theme_sentences is on (off in the default config: none of the bundled model's is kept).
    service = RagService(settings_for(moe_index, "smollm2", llm={"theme_sentences": True}), embeddings=embeddings)
    answer = service.answer(OVERVIEW)
    assert answer.themes and "overview" in answer.answered_by
    written = [theme for theme in answer.themes if theme.summary]  # often none: the small model cites one quote
    checker = CitationChecker(embeddings, service.config.answer.support_threshold)
    for theme in written:
        quoted = {quote.number: quote for quote in theme.quotes}
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", theme.summary)]
        assert len(set(cited)) >= min(2, len(quoted)) and set(cited) <= set(quoted), theme.summary
        sources = [Source.from_text(quoted[n].paper_id, "", quoted[n].sentence) for n in sorted(quoted)]
        order = sorted(quoted)
        local = re.sub(r"\[(\d+)\]", lambda m, order=order: f"[{order.index(int(m[1])) + 1}]", theme.summary)
        _, checks = checker.check(local, sources)
        assert checks and all(check.supported for check in checks), theme.summary
        assert theme.summary in answer.text and "written by the language model" in answer.provenance()


class Says:
    """A model that says `text` (the sentence rule below, without the bundled model's chance wording)."""

    def __init__(self, text: str):
        self.text = text

    def stream(self, question, sources):
        yield self.text


@pytest.mark.parametrize("cites, kept", [("[1]", False), ("[1][2]", True)])
def test_a_theme_sentence_is_kept_only_when_it_cites_two_of_the_themes_quotes(moe, cites, kept):
    """ "These papers … [26]" about a theme of five, from one paper's quote, speaks for one paper: set aside.
    The same words citing two of the theme's quotes, both supporting it, stand for the theme."""
    from types import SimpleNamespace

    from rag.answering.theme_sentences import theme_sentence
    from rag.core.config import with_overrides
    from rag.core.types import Quote

    theme = next(theme for theme in moe.answer(OVERVIEW).themes if len(theme.quotes) >= 2)
    first, second = theme.quotes[:2]
    quotes = (first, Quote(second.paper_id, second.number, first.sentence))  # both quotes hold the words
    titles = {quote.paper_id: "" for quote in quotes}
    said = f"These papers: {first.sentence.rstrip('.')} {cites}."
    default = with_overrides("smollm2")
    pipeline = SimpleNamespace(config=default, provider=lambda: Says(said), checker=moe.pipeline.checker)
    written = theme_sentence(pipeline, "mixture-of-experts", quotes, titles)
    assert bool(written) == kept, written


class Records:
    """A model that records what it is asked, and says the first source's sentence as its own, citing `cites`."""

    label = "records"

    def __init__(self, cites: str):
        self.cites, self.asked = cites, []

    def stream(self, question, sources):
        self.asked.append(question)
        yield f"These papers: {sources[0].text.rstrip('.')} {self.cites}."

    def rewrite(self, question, history):
        return None


def test_the_bundled_model_s_config_asks_its_model_for_no_theme_sentence(moe_index, embeddings):
    model = Records("[1][2]")
    answer = RagService(settings_for(moe_index, "smollm2"), embeddings=embeddings, provider=model).answer(OVERVIEW)
    assert len(answer.themes) >= 2 and model.asked == []
    assert not any(theme.summary for theme in answer.themes)


@pytest.mark.parametrize("cites, kept", [("[1]", False), ("[1][2]", True)])
def test_with_theme_sentences_on_each_theme_is_asked_and_its_sentence_must_cite_two_quotes(
    moe_index, embeddings, cites, kept
):
    model = Records(cites)
    settings = settings_for(moe_index, "smollm2", llm={"theme_sentences": True})
    answer = RagService(settings, embeddings=embeddings, provider=model).answer(OVERVIEW)
    named = [theme for theme in answer.themes if theme.words]  # the other papers share no theme to say
    assert len(model.asked) == len(named) >= 1
    written = [theme for theme in answer.themes if theme.summary]
    assert bool(written) == kept, [theme.summary for theme in written]
    for theme in written:
        cited = {int(n) for n in re.findall(r"\[(\d+)\]", theme.summary)}
        assert len(cited) >= 2 and cited <= {quote.number for quote in theme.quotes}, theme.summary


def test_the_page_shows_a_theme_sentence_escaped_with_its_badges(moe):
    from dataclasses import replace

    from ui.render import answer_html

    answer = moe.answer(OVERVIEW)
    first = answer.themes[0]
    number = first.quotes[0].number
    written = replace(first, summary=f"They route <img src=x onerror=alert(1)> tokens [{number}].")
    html = answer_html(replace(answer, themes=[written, *answer.themes[1:]]), turn=0)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html
    summary = html.split('<span class="rag-theme-summary">', 1)[1].split("</span>", 1)[0]
    assert summary.startswith("They route") and f"goto-source-0-{number}" in html.split("rag-theme-quote")[0]
    assert html.count('class="rag-theme"') == len(answer.themes)


@pytest.mark.slow
def test_mcp_ask_carries_the_themes(moe_index, tmp_path):
    import asyncio
    import sys

    from conftest import user_environment
    from mcp import Client, StdioServerParameters, stdio_client

    from rag.core.config import PROJECT_ROOT

    env = user_environment(tmp_path) | {"RAG_VECTORSTORE__PATH": str(moe_index)}
    command = ["-m", "rag.cli", "--config", "extractive", "mcp"]
    params = StdioServerParameters(command=sys.executable, args=command, env=env, cwd=PROJECT_ROOT)

    async def ask() -> dict:
        with (tmp_path / "mcp.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as client:
                return (await client.call_tool("ask", {"question": OVERVIEW})).structured_content

    said = asyncio.run(ask())
    assert said["kind"] == "overview" and len(said["themes"]) >= 2
    grouped = {paper_id for theme in said["themes"] for paper_id in theme["paper_ids"]}
    assert grouped == {source["paper_id"] for source in said["sources"]}
