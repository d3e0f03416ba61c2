"""The map of the conference on the page, in a real Chromium: every paper drawn on the map's canvas, its title
on hover, the answer's papers highlighted and the others dimmed, the filters applied, the legend hiding a group,
zoom, and a click on a paper opening its card."""

from __future__ import annotations

import pytest
from test_browser import RXNFLOW, SCREENSHOTS, app_url, ask, browser, index_dir, open_app, page  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

CANVAS = "#rag-map canvas"
HIGHLIGHT = (255, 212, 0)  # #ffd400, ui/paper_map.js
RXNFLOW_ID = "pB1XSj2y4X"
HANABI_ID = "pCj2sLNoJq"
POISON_ID = "poison-1"
RL_PAPERS = {"pCj2sLNoJq", "p9OsTj0nMP", "p01BR4njlY"}  # the seeds of the area "reinforcement learning"


def drawn(page, what: str = "points") -> int:
    """How many points the canvas last drew (`points`), or how many of them are highlighted (`highlighted`)."""
    return int(page.evaluate(f"() => Number(document.querySelector('{CANVAS}').dataset.{what})"))


def shown(page) -> set[str]:
    return set(page.evaluate(f"() => document.querySelector('{CANVAS}').ragMap.shown()"))


def place(page, paper_id: str) -> tuple[float, float]:
    """Where the paper's point is on the screen (scrolled into view first)."""
    page.locator(CANVAS).scroll_into_view_if_needed()
    found = page.evaluate(f"(id) => document.querySelector('{CANVAS}').ragMap.place(id)", paper_id)
    assert found, f"{paper_id} is not on the map"
    return found[0], found[1]


def pixel(page, paper_id: str) -> list[int]:
    """The RGBA the canvas holds at the centre of the paper's point: what was really drawn there."""
    return page.evaluate(
        f"""(id) => {{
            const canvas = document.querySelector('{CANVAS}'), [x, y] = canvas.ragMap.place(id);
            const box = canvas.getBoundingClientRect(), ratio = canvas.width / box.width;
            const at = [Math.round((x - box.left) * ratio), Math.round((y - box.top) * ratio)];
            return Array.from(canvas.getContext('2d').getImageData(at[0], at[1], 1, 1).data);
        }}""",
        paper_id,
    )


def hover(page, paper_id: str) -> str:
    """The tooltip's text with the mouse over the paper's point, as a hand would move it there."""
    page.mouse.move(0, 0)
    page.mouse.move(*place(page, paper_id), steps=4)
    tip = page.locator("#rag-map .rag-map-tip")
    tip.wait_for(state="visible", timeout=5_000)
    return tip.inner_text()


def test_the_map_draws_every_paper_shows_titles_on_hover_and_zooms(page, app_url):  # noqa: F811
    open_app(page, app_url)
    page.wait_for_function(f"() => Number(document.querySelector('{CANVAS}')?.dataset.points) > 0")
    assert drawn(page) == 20 and len(shown(page)) == 20  # the seeds and the poisoned paper
    legend = page.locator("#rag-map .rag-map-legend li").all_inner_texts()
    assert sum(int(entry.rsplit("(", 1)[1].rstrip(")")) for entry in legend) == 20  # each group named with its size
    assert "coloured by theme" in page.locator("#rag-map .rag-map-title").inner_text()
    assert pixel(page, HANABI_ID)[3] > 150  # drawn, not dimmed (no answer yet)

    assert hover(page, HANABI_ID) == "A Generalist Hanabi Agent (Poster)"
    poisoned = hover(page, POISON_ID)  # a title is text on the map, never markup
    assert "<script>window.__pwned=1</script>" in poisoned
    assert page.locator("#rag-map script, #rag-map img").count() == 0 and page.evaluate("window.__pwned") is None

    first = page.locator("#rag-map .rag-map-legend li").first
    size = int(first.inner_text().rsplit("(", 1)[1].rstrip(")"))
    first.click()  # the legend hides a group, and shows it again
    assert drawn(page) == 20 - size
    first.click()
    assert drawn(page) == 20

    (x0, y0), (x1, y1) = place(page, HANABI_ID), place(page, RXNFLOW_ID)
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2)
    page.mouse.wheel(0, -400)  # zoom in around the mouse
    page.wait_for_timeout(200)
    (a0, b0), (a1, b1) = place(page, HANABI_ID), place(page, RXNFLOW_ID)
    assert abs(a1 - a0) + abs(b1 - b0) > 1.5 * (abs(x1 - x0) + abs(y1 - y0))
    page.mouse.dblclick((x0 + x1) / 2 + 3, (y0 + y1) / 2 + 3)  # back to the whole map
    assert place(page, HANABI_ID) == pytest.approx((x0, y0), abs=1)
    page.locator("#rag-map-colour").get_by_text("Primary area").click()
    page.wait_for_function("() => document.querySelector('#rag-map .rag-map-title').innerText.includes('by area')")
    assert drawn(page) == 20 and any(
        entry.startswith("reinforcement learning (3)")
        for entry in page.locator("#rag-map .rag-map-legend li").all_inner_texts()
    )
    assert page.dialogs == []


def test_the_map_highlights_the_answer_follows_the_filters_and_opens_a_card(page, app_url):  # noqa: F811
    open_app(page, app_url)
    page.wait_for_function(f"() => Number(document.querySelector('{CANVAS}')?.dataset.points) > 0")
    ask(page, RXNFLOW)
    page.wait_for_function(f"() => Number(document.querySelector('{CANVAS}').dataset.highlighted) > 0")
    assert 0 < drawn(page, "highlighted") < 20
    assert pixel(page, RXNFLOW_ID)[:3] == list(HIGHLIGHT)  # drawn large, in the highlight's colour, on top
    assert 0 < pixel(page, POISON_ID)[3] < 100  # a paper the answer does not name, dimmed
    legend = page.locator("#rag-map .rag-map-legend li").all_inner_texts()
    assert legend[-1] == f"this answer's papers ({drawn(page, 'highlighted')})"

    page.locator("#rag-filters").get_by_text("Filters").first.click()
    page.locator("#rag-primary-area input").click()
    page.get_by_role("option", name="reinforcement learning", exact=True).click()
    page.keyboard.press("Escape")
    page.wait_for_function(f"() => Number(document.querySelector('{CANVAS}').dataset.points) <= 4")
    assert shown(page) == RL_PAPERS
    assert drawn(page, "highlighted") == 0  # RxnFlow is filtered out
    assert "3 of 20 papers" in page.locator("#rag-map .rag-map-title").inner_text()

    page.mouse.move(*place(page, HANABI_ID), steps=4)
    page.mouse.click(*place(page, HANABI_ID))
    card = page.locator("#rag-map-card .rag-map-card")
    card.wait_for(timeout=30_000)
    assert "A Generalist Hanabi Agent" in card.inner_text() and "reinforcement learning" in card.inner_text()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.locator("#rag-map-section").screenshot(path=str(SCREENSHOTS / "ui-map-seeds.png"))
    assert page.dialogs == []
