"""A count over the metadata in the chat page, in a real Chromium: the table and the bar chart show the
direct count of the records the index holds, and go away with the next question that counts nothing."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import settings_for
from test_browser import FINAL, ask, browser, open_app, page, screenshot, serve  # noqa: F401 - fixtures

from rag.service import RagService

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def counts_app_url(moe_index, embeddings):
    demo, url = serve(RagService(settings_for(moe_index), embeddings=embeddings))
    yield url
    demo.close()


def test_a_count_shows_as_a_table_and_a_bar_chart(page, counts_app_url, moe_sample):  # noqa: F811 - the fixture
    records = [json.loads(line) for line in moe_sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = Counter(r["primary_area"].replace("&amp;", "&") for r in records if r["status"] == "Oral")
    open_app(page, counts_app_url)
    ask(page, "Which research areas have the most oral papers?")
    top, most = expected.most_common(1)[0]
    assert f"{top} ({most})" in page.locator(FINAL).last.inner_text()
    table = page.locator("#rag-tally-table")
    table.wait_for(state="visible")
    table.get_by_text(top, exact=True).first.wait_for()
    rows = table.locator('[role="row"]:has([role="gridcell"])')
    assert rows.count() == len(expected)
    cells = [row.locator('[role="gridcell"]').all_inner_texts() for row in rows.all()]
    shown = {name.strip(): int(number) for name, number in cells}
    assert shown == expected
    chart = page.locator("#rag-tally-chart")
    chart.locator("canvas, svg").first.wait_for(state="visible")  # Vega has drawn the bars
    chart.scroll_into_view_if_needed()
    screenshot(page, "ui-counts.png")
    ask(page, "Which oral papers are about mixture-of-experts?")
    table.wait_for(state="hidden")
    chart.wait_for(state="hidden")
    assert page.dialogs == []
