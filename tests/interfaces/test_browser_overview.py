"""An overview answer on the page, in a real Chromium: its themes as a short list, papers folded under each."""

from __future__ import annotations

import os

import pytest
from conftest import settings_for
from test_browser import FINAL, SCREENSHOTS, ask, browser, open_app, page, screenshot, serve  # noqa: F401 - fixtures

from rag.core.config import PROJECT_ROOT
from rag.service import RagService

pytestmark = pytest.mark.browser

OVERVIEW = "What are the main approaches to mixture-of-experts?"


@pytest.fixture(scope="module")
def overview_app(moe_index, embeddings):
    service = RagService(settings_for(moe_index), embeddings=embeddings)
    demo, url = serve(service)
    yield url, service
    demo.close()


def test_the_themes_show_as_a_list_with_their_papers_folded_under_each(page, overview_app):  # noqa: F811
    url, service = overview_app
    open_app(page, url)
    ask(page, OVERVIEW)
    expected = service.answer(OVERVIEW)  # the same question through the service: the themes the page shows
    themes = page.locator("#rag-chat .rag-themes > li.rag-theme")
    assert themes.count() == len(expected.themes) >= 2
    assert themes.locator(".rag-theme-name").all_inner_texts() == [theme.name for theme in expected.themes]
    first = themes.first
    papers = first.locator("details.rag-theme-papers li")
    assert not papers.first.is_visible(), "a theme's papers are folded until opened"
    first.locator("details.rag-theme-papers summary").click()
    papers.first.wait_for(state="visible", timeout=5_000)
    assert papers.count() == expected.themes[0].size
    # A quote's badge shows the paper it quotes in the sources panel.
    badge = first.locator(".rag-theme-quote .rag-cite").first
    number = int(badge.inner_text().strip("[]"))
    badge.click()
    page.locator(f"#source-0-{number}.rag-flash").wait_for(timeout=5_000)
    card_title = page.locator(f"#source-0-{number} .rag-card-title").inner_text()
    assert expected.sources[number - 1].title.split(":")[0] in card_title
    screenshot(page, "ui-overview.png")
    assert "grouped into" in page.locator(FINAL).last.inner_text() and page.dialogs == []
    # The README's ui/overview.png, the answer alone, made again with UPDATE_README_SCREENSHOT=1.
    readme = os.environ.get("UPDATE_README_SCREENSHOT") == "1"
    chat = page.locator("#rag-chat")
    chat.screenshot(path=str(PROJECT_ROOT / "ui" / "overview.png" if readme else SCREENSHOTS / "ui-overview-chat.png"))
