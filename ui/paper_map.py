"""The map of the conference on the page, under the chat: every paper in 2-D (ui/map_figure.py), coloured by
theme or by area, the latest answer's papers highlighted, only the papers the page's filters admit.

Gradio's `gr.Plot` has no click event (gradio-app/gradio#11413), so the card under the map listens itself:
when it mounts, it hooks Plotly's own `plotly_click` on the map's plot (again whenever Gradio draws a new
plot element) and sends the clicked paper's id to Python as its click event, which shows that paper's card.
"""

from __future__ import annotations

from html import escape
from typing import Any

import gradio as gr

from rag.answering.paper_map import MapReader
from rag.core.errors import RagError
from rag.core.export import answer_papers
from rag.core.filters import Filters
from rag.core.markup import markup_html
from rag.core.types import Answer, safe_url
from ui.map_figure import map_figure
from ui.render import error_html

CLICK_JS = """
const hook = () => {
  const plot = document.querySelector('#rag-map .js-plotly-plot');
  if (!plot || !plot.on || plot.dataset.ragClick) return;
  plot.dataset.ragClick = 'yes';
  plot.on('plotly_click', (event) => {
    const point = event && event.points && event.points[0];
    if (point && point.customdata) trigger('click', {paper: String(point.customdata)});
  });
};
new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});
hook();
"""
PROMPT = '<div class="rag-panel-empty">Click a paper on the map to show its card here.</div>'


def map_view(service: Any, answers: gr.State, pickers: list[gr.Dropdown]) -> dict[str, Any]:
    """The map, its colour switch and the card of the paper clicked; returns the step that draws the map, to
    run when the page loads and after each answer (`event.then(**step)`)."""
    reader = MapReader(service)
    drawn: dict[tuple, Any] = {}  # the last few figures: building one of the full list takes a few tenths of a second

    def draw(answers: list[Answer | None], colour_by: str, *picked: list[str] | None) -> Any:
        latest = answers[-1] if answers else None
        highlight = tuple(source.paper_id for source in answer_papers(latest)) if latest is not None else ()
        try:
            found = reader(Filters.from_pickers(picked))
        except RagError as err:  # an index without a map: the warning says how to build one
            gr.Warning(str(err))
            return None
        key = (found.revision, found.filters, colour_by, highlight)
        if key not in drawn:
            if len(drawn) >= 8:
                drawn.clear()
            drawn[key] = map_figure(found, "area" if colour_by == "area" else "theme", highlight)
        return drawn[key]

    with gr.Accordion("Map of the conference", open=True, elem_id="rag-map-section"):
        colour = gr.Radio(
            [("Theme", "theme"), ("Primary area", "area")], value="theme", label="Colour by", elem_id="rag-map-colour"
        )
        plot = gr.Plot(elem_id="rag-map", show_label=False)
        card = gr.HTML(PROMPT, elem_id="rag-map-card", js_on_load=CLICK_JS)

    def open_card(event: gr.EventData) -> str:
        paper = str((getattr(event, "_data", None) or {}).get("paper", ""))
        try:
            found = service.paper(paper)
        except RagError as err:
            return error_html(str(err))
        return paper_card(found) if found else error_html(f"no paper {paper!r} in the index")

    step: dict[str, Any] = {"fn": draw, "inputs": [answers, colour, *pickers], "outputs": [plot]}
    # A queue of its own: drawing the map never waits behind an answer or the header's model (limit 1 by default).
    step |= {"api_visibility": "private", "show_progress": "hidden", "concurrency_id": "map", "concurrency_limit": 4}
    gr.on([colour.change, *(picker.change for picker in pickers)], **step)
    card.click(open_card, outputs=[card], api_visibility="private")
    return step


def paper_card(paper: dict[str, Any]) -> str:
    """A stored paper (`RagService.paper`): its title (linked to OpenReview), id, status, area, authors, abstract."""
    title = markup_html(paper["title"])
    if url := safe_url(paper.get("url", "")):
        title = f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{title}</a>'
    facts = [f'<span class="rag-id">{escape(paper["paper_id"])}</span>']
    labels = (paper.get("status"), paper.get("primary_area"))
    facts += [escape(str(label).replace("&amp;", "&")) for label in labels if label]
    authors = ", ".join(paper.get("authors") or [])
    return (
        f'<div class="rag-card rag-map-card"><div class="rag-card-title">{title}</div>'
        f'<div class="rag-facts">{" · ".join(facts)}</div>'
        + (f'<div class="rag-authors">{escape(authors)}</div>' if authors else "")
        + f'<div class="rag-passage">{markup_html(paper["abstract"])}</div></div>'
    )
