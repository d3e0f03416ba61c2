"""The chat page as a person sees it, in a real Chromium: a list's columns break between words, a count's
chart is drawn by the Vega-Lite the page ships with its labels whole, the panels follow the latest answer,
the focus picker stays a few papers, the chat's own clear icon clears the focus too, and counts and
filters are worded right on the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SEED_FILE, settings_for
from test_browser import FINAL, SCREENSHOTS, ask, browser, open_app, page, screenshot, serve  # noqa: F401 - fixtures
from test_browser_overview import overview_app  # noqa: F401 - a fixture: the app over the mixture-of-experts slice

from rag.service import RagService

pytestmark = pytest.mark.browser

RXNFLOW = "How does RxnFlow keep generated molecules synthesizable?"
OVERVIEW = "What are the main approaches to mixture-of-experts?"
AREAS_OF_ORALS = "Which research areas have the most oral papers?"
VEGA_VERSION_WARNING = re.compile(r"uses Vega(-Lite)? v[\d.]+, but (the )?current version", re.IGNORECASE)
# Run in the page from its start: each change of the count chart's state (shown at all, drawn), every frame.
WATCH_CHART = """
window.__chartStates = [];
const watch = () => {
  const chart = document.querySelector('#rag-tally-chart');
  if (chart) {
    const state = {shown: chart.offsetHeight > 0, drawn: !!chart.querySelector('svg.marks .mark-rect path')};
    const last = window.__chartStates[window.__chartStates.length - 1];
    if (!last || last.shown !== state.shown || last.drawn !== state.drawn) window.__chartStates.push(state);
  }
  requestAnimationFrame(watch);
};
requestAnimationFrame(watch);
"""


@pytest.fixture(scope="module")
def seeds_app(tmp_path_factory, embeddings):
    """The app over the 19 seeds (all Posters but one Spotlight; no Oral)."""
    folder: Path = tmp_path_factory.mktemp("page-wording") / "index"
    service = RagService(settings_for(folder), embeddings=embeddings)
    service.ingest([SEED_FILE])
    demo, url = serve(service)
    yield url, service
    demo.close()


def words_broken_inside(page, selector: str) -> list[str]:
    """The words (split at spaces, hyphens and slashes) of the elements at `selector` that the browser drew
    across two lines: a word broken inside itself."""
    return page.locator(selector).evaluate_all(
        """cells => cells.flatMap(cell => {
            const broken = [];
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                for (const match of node.data.matchAll(/[^\\s\\-\\/]+/g)) {
                    const range = document.createRange();
                    range.setStart(node, match.index);
                    range.setEnd(node, match.index + match[0].length);
                    const lines = new Set([...range.getClientRects()].map(rect => Math.round(rect.top)));
                    if (lines.size > 1) broken.push(match[0]);
                }
            }
            return broken;
        })"""
    )


def test_a_lists_area_column_breaks_between_words_never_inside_one(page, overview_app):
    url, _ = overview_app
    open_app(page, url)
    ask(page, "Which oral papers are about mixture-of-experts?")
    areas = page.locator("#rag-chat .rag-list-table .rag-area")
    assert areas.count() >= 3 and any(len(text) > 30 for text in areas.all_inner_texts())
    assert words_broken_inside(page, "#rag-chat .rag-list-table .rag-area") == []
    assert words_broken_inside(page, "#rag-chat .rag-list-table td") == []
    table = page.locator("#rag-chat .rag-list-table").last
    chat = page.locator("#rag-chat").bounding_box()
    assert table.bounding_box()["x"] + table.bounding_box()["width"] <= chat["x"] + chat["width"] + 1
    screenshot(page, "ui-list-columns.png")


def test_a_counts_chart_is_drawn_by_the_shipped_vega_lite_with_every_label_whole(page, overview_app):
    url, service = overview_app
    warnings: list[str] = []
    page.on("console", lambda message: warnings.append(message.text))
    page.add_init_script(WATCH_CHART)
    open_app(page, url)
    ask(page, AREAS_OF_ORALS)
    expected = service.answer(AREAS_OF_ORALS).table
    chart = page.locator("#rag-tally-chart")
    chart.wait_for(state="visible")
    labels = chart.locator("svg .role-axis-label text")
    labels.first.wait_for(timeout=30_000)  # drawn as SVG, so each label is a text element
    page.wait_for_timeout(500)  # any warning Vega logs comes with the drawing
    assert [text for text in warnings if VEGA_VERSION_WARNING.search(text)] == []
    states = page.evaluate("window.__chartStates")
    assert {"shown": True, "drawn": False} not in states, states  # never an empty box before the bars
    shown = labels.evaluate_all(  # a label on several lines is a text element of one tspan a line
        "texts => texts.map(t => [...t.querySelectorAll('tspan')].map(l => l.textContent).join(' ') || t.textContent)"
    )
    names = [name for name, _ in expected.rows]
    assert [name for name in names if name not in shown] == [], shown  # every group named in full, no "…"
    box = chart.bounding_box()
    for label in labels.all():
        edge = label.bounding_box()
        assert edge["x"] >= box["x"] - 1 and edge["x"] + edge["width"] <= box["x"] + box["width"] + 1, label
        assert edge["y"] >= box["y"] - 1 and edge["y"] + edge["height"] <= box["y"] + box["height"] + 1, label
    chart.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    chart.screenshot(path=str(SCREENSHOTS / "ui-counts-chart.png"))


def test_more_like_this_goes_away_when_the_next_answer_comes(page, overview_app):
    url, _ = overview_app
    open_app(page, url)
    ask(page, "Which oral papers are about mixture-of-experts?")
    page.locator("#rag-sources .rag-more-like").first.click()
    heading = page.locator("#rag-related .rag-panel-heading")
    heading.wait_for(timeout=60_000)
    subject = heading.inner_text()
    ask(page, "Which research areas have the most oral papers?")
    page.wait_for_function(
        "t => !(document.querySelector('#rag-related')?.innerText || '').includes(t)", arg=subject[:60], timeout=30_000
    )
    ask(page, OVERVIEW)
    page.locator("#rag-sources .rag-more-like").first.click()
    heading.wait_for(timeout=60_000)
    page.locator("#rag-clear").click()  # a cleared chat takes the related papers too
    page.wait_for_function("() => !document.querySelector('#rag-related .rag-panel-heading')", timeout=30_000)


def test_an_overviews_focus_is_a_few_papers_in_a_compact_picker_and_a_follow_up_is_asked_of_them(page, overview_app):
    url, service = overview_app
    open_app(page, url)
    ask(page, OVERVIEW)
    papers = len(service.answer(OVERVIEW).sources)
    picker = page.locator("#rag-focus-picker")
    picker.locator("input:checked").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    boxes, ticked = picker.locator("input"), picker.locator("input:checked")
    assert papers > 10 and boxes.count() <= 10 and 1 <= ticked.count() <= 10
    assert picker.bounding_box()["height"] <= 320, picker.bounding_box()
    screenshot(page, "ui-overview-focus.png")
    labels = picker.locator("label:has(input:checked)").all_inner_texts()
    titles = [label.split("] ", 1)[1].rstrip("…") for label in labels]
    ask(page, "What datasets do they use?")
    focus_line = page.locator("#rag-chat .rag-focus").last.inner_text()
    assert focus_line.startswith("A follow-up on [")
    named = re.findall(r"\[\d+\] ", focus_line)
    assert 1 <= len(named) <= len(titles) and all(title[:40] in focus_line for title in titles[:1])


def test_the_chats_own_clear_icon_clears_the_focus_and_the_panels(page, seeds_app):
    url, _ = seeds_app
    open_app(page, url)
    ask(page, RXNFLOW)
    page.locator("#rag-focus-picker input:checked").first.wait_for(timeout=30_000)
    page.locator("#rag-sources .rag-more-like").first.click()
    page.locator("#rag-related .rag-panel-heading").wait_for(timeout=60_000)
    page.locator('#rag-chat button[aria-label="Clear"]').click()
    page.wait_for_function("() => !document.querySelector('#rag-chat .rag-answer')")
    page.locator("#rag-focus-picker").wait_for(state="hidden", timeout=30_000)
    page.wait_for_function("() => document.querySelector('#rag-sources').innerText.includes('Ask a question')")
    page.wait_for_function("() => !document.querySelector('#rag-related .rag-panel-heading')")
    ask(page, "What dataset do they use?")  # a follow-up on nothing now on screen: asked on its own
    assert page.locator("#rag-chat .rag-focus").count() == 0
    assert page.locator("#rag-chat .rag-answer").count() == 1


def test_the_page_words_a_count_of_one_and_names_the_filter_that_left_nothing(page, seeds_app):
    url, _ = seeds_app
    open_app(page, url)
    ask(page, "How many spotlight papers are there?")
    assert page.locator(FINAL).last.inner_text().startswith("There is 1 paper with status: Spotlight.")
    table = page.locator("#rag-tally-table")
    table.wait_for(state="visible")
    assert "the 1 paper with status: Spotlight" in table.inner_text()
    ask(page, "How does the oral paper RxnFlow keep molecules synthesizable?")
    refusal = page.locator("#rag-chat .rag-refused").last.inner_text()
    assert "no paper with status: Oral in the index matches it" in refusal, refusal
    assert "status: Oral" in page.locator("#rag-sources").inner_text()
    assert re.search(r"\b1 papers\b", page.locator("body").inner_text()) is None
