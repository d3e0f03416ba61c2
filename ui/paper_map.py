"""The map of the conference on the page, under the chat: every paper in 2-D, coloured by theme or by area, the
latest answer's papers highlighted, only the papers the page's filters admit; a click on a paper shows its card
under the map.

The page draws the map itself, on a <canvas> in a `gr.HTML` (ui/paper_map.js, its `js_on_load`), from compact
JSON (ui/map_data.py): Gradio's `gr.Plot` spent 1.3 to 1.4 s starting plotly.js and drawing with WebGL before the
full list's map showed (docs/map.md), where a canvas draws its 11,669 points in a few tens of milliseconds. The
script sends a clicked paper's id to Python as the component's `click` event.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

import gradio as gr

from rag.answering.paper_map import MapReader
from rag.core.errors import RagError
from rag.core.export import answer_papers
from rag.core.filters import Filters
from rag.core.markup import markup_html
from rag.core.types import Answer, safe_url
from ui.map_data import map_data
from ui.render import error_html

SCRIPT = Path(__file__).with_name("paper_map.js")  # shipped as package data (pyproject.toml)
LAYOUT = (
    '<div class="rag-map-title"></div><div class="rag-map-body">'
    '<div class="rag-map-plot"><canvas aria-label="the map of the conference"></canvas>'
    '<div class="rag-map-tip" hidden></div></div><ul class="rag-map-legend"></ul></div>'
)
PROMPT = '<div class="rag-panel-empty">Click a paper on the map to show its card here.</div>'


def map_view(service: Any, answers: gr.State, pickers: list[gr.Dropdown]) -> dict[str, Any]:
    """The map, its colour switch and the card of the paper clicked; returns the step that draws the map, to
    run when the page loads and after each answer (`event.then(**step)`)."""
    reader = MapReader(service)
    drawn: dict[tuple, str] = {}  # the last few maps' data: packing the full list's takes about 0.2 s

    def draw(answers: list[Answer | None], colour_by: str, *picked: list[str] | None) -> str:
        latest = answers[-1] if answers else None
        highlight = tuple(source.paper_id for source in answer_papers(latest)) if latest is not None else ()
        try:
            found = reader(Filters.from_pickers(picked))
        except RagError as err:  # an index without a map: the warning says how to build one
            gr.Warning(str(err))
            return ""
        key = (found.revision, found.filters, colour_by, highlight)
        if key not in drawn:
            if len(drawn) >= 8:
                drawn.clear()
            drawn[key] = map_data(found, "area" if colour_by == "area" else "theme", highlight)
        return drawn[key]

    with gr.Accordion("Map of the conference", open=True, elem_id="rag-map-section"):
        colour = gr.Radio(
            [("Theme", "theme"), ("Primary area", "area")], value="theme", label="Colour by", elem_id="rag-map-colour"
        )
        canvas = gr.HTML(
            "",
            html_template=LAYOUT,
            js_on_load=SCRIPT.read_text(encoding="utf-8"),
            elem_id="rag-map",
            apply_default_css=False,
        )
        card = gr.HTML(PROMPT, elem_id="rag-map-card", js_on_load=None)

    def open_card(event: gr.EventData) -> str:
        paper = str((getattr(event, "_data", None) or {}).get("paper", ""))
        try:
            found = service.paper(paper)
        except RagError as err:
            return error_html(str(err))
        return paper_card(found) if found else error_html(f"no paper {paper!r} in the index")

    step: dict[str, Any] = {"fn": draw, "inputs": [answers, colour, *pickers], "outputs": [canvas]}
    # A queue of its own: drawing the map never waits behind an answer or the header's model (limit 1 by default).
    step |= {"api_visibility": "private", "show_progress": "hidden", "concurrency_id": "map", "concurrency_limit": 4}
    gr.on([colour.change, *(picker.change for picker in pickers)], **step)
    canvas.click(open_card, outputs=[card], api_visibility="private")
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
