"""The map of the conference on the page, in a real Chromium: every paper drawn (WebGL), its title on hover, the
answer's papers highlighted, the filters applied, and a click on a paper opening its card."""

from __future__ import annotations

import pytest
from test_browser import RXNFLOW, SCREENSHOTS, app_url, ask, browser, index_dir, open_app, page  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

MAP = "#rag-map .js-plotly-plot"
DRAWN = f"document.querySelector('{MAP} canvas') !== null"
HIGHLIGHT = "this answer's papers"
RXNFLOW_ID = "pB1XSj2y4X"
RL_PAPERS = {"pCj2sLNoJq", "p9OsTj0nMP", "p01BR4njlY"}  # the seeds of the area "reinforcement learning"


def traces(page) -> list[dict]:
    """The map's traces as Plotly holds them in the page: name, type, paper ids and hover texts."""
    return page.evaluate(
        f"""() => document.querySelector('{MAP}').data.map(t => ({{
            name: t.name, type: t.type, ids: Array.from(t.customdata), hover: Array.from(t.hovertext)}}))"""
    )


def shown(page) -> set[str]:
    return {pid for trace in traces(page) if not trace["name"].startswith(HIGHLIGHT) for pid in trace["ids"]}


def wait_for_map(page, condition: str) -> None:
    """Until the map's data satisfies `condition`, a JavaScript expression over `traces` (its traces)."""
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP}'); const traces = g && g.data; "
                           f"return !!traces && ({condition}); }}", timeout=60_000)


def click_paper(page, paper_id: str) -> None:
    """A real mouse click on the paper's point, where Plotly draws it (hovered first, as a hand would)."""
    page.locator(MAP).scroll_into_view_if_needed()
    x, y = page.evaluate(
        f"""(id) => {{
            const g = document.querySelector('{MAP}'), layout = g._fullLayout, box = g.getBoundingClientRect();
            const trace = g._fullData.find(t => Array.from(t.customdata).includes(id));  // x, y decoded
            const i = Array.from(trace.customdata).indexOf(id);
            return [box.left + layout._size.l + layout.xaxis.l2p(trace.x[i]),
                    box.top + layout._size.t + layout.yaxis.l2p(trace.y[i])];
        }}""",
        paper_id,
    )
    page.mouse.move(x, y)
    page.wait_for_timeout(300)
    page.mouse.click(x, y)


def test_the_map_draws_every_paper_highlights_the_answer_follows_the_filters_and_opens_a_card(page, app_url):  # noqa: F811
    open_app(page, app_url)
    page.wait_for_function(DRAWN)
    drawn = traces(page)
    assert {trace["type"] for trace in drawn} == {"scattergl"}
    assert len(shown(page)) == 20  # the seeds and the poisoned paper
    hovers = [text for trace in drawn for text in trace["hover"]]
    assert "A Generalist Hanabi Agent (Poster)" in hovers
    assert any("&lt;script&gt;" in text for text in hovers) and not any("<script>" in text for text in hovers)

    ask(page, RXNFLOW)
    wait_for_map(page, f"traces.some(t => t.name.startsWith(\"{HIGHLIGHT}\"))")
    highlighted = next(trace for trace in traces(page) if trace["name"].startswith(HIGHLIGHT))
    assert RXNFLOW_ID in highlighted["ids"] and len(highlighted["ids"]) < 20
    dimmed = page.evaluate(f"() => document.querySelector('{MAP}').data[0].marker.opacity")
    assert dimmed < 0.5

    page.locator("#rag-filters").get_by_text("Filters").first.click()
    page.locator("#rag-primary-area input").click()
    page.get_by_role("option", name="reinforcement learning", exact=True).click()
    page.keyboard.press("Escape")
    wait_for_map(page, "traces.reduce((n, t) => n + t.customdata.length, 0) <= 4")
    assert shown(page) == RL_PAPERS
    assert not any(trace["name"].startswith(HIGHLIGHT) for trace in traces(page))  # RxnFlow is filtered out

    click_paper(page, "pCj2sLNoJq")
    card = page.locator("#rag-map-card .rag-map-card")
    card.wait_for(timeout=30_000)
    assert "A Generalist Hanabi Agent" in card.inner_text() and "reinforcement learning" in card.inner_text()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.locator("#rag-map-section").screenshot(path=str(SCREENSHOTS / "ui-map-seeds.png"))
    assert page.dialogs == []
