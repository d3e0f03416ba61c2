"""The page's "More like this": each source card has one (ui/render.py), and a click shows, under the sources
panel, the papers most related to that card's paper, each with the two sentences that tie them
(rag/answering/related.py). The action is a `role="button"` span, not a `<button>`: the panel's only
controls are ours, and a click on one reaches Python as the panel's click event carrying the paper's id."""

from __future__ import annotations

from html import escape
from typing import Any

import gradio as gr

from rag.answering.related import Related, find_related
from rag.core.errors import RagError
from rag.core.markup import markup_html
from rag.core.types import safe_url
from ui.render import error_html

# Run once when the sources panel mounts: a click (or Enter, Space) on a card's "More like this" sends its
# paper's id; every other click on the panel does nothing here.
PANEL_JS = """
const send = (event) => {
  const action = event.target.closest('.rag-more-like');
  if (!action || (event.type === 'keydown' && event.key !== 'Enter' && event.key !== ' ')) return;
  event.preventDefault();
  trigger('click', {paper: action.dataset.paper});
};
element.addEventListener('click', send);
element.addEventListener('keydown', send);
"""

SCROLL_JS = "() => document.querySelector('#rag-related')?.scrollIntoView({block: 'start', behavior: 'instant'})"


def related_html(found: Related) -> str:
    """The related papers of one paper: title (linked to OpenReview), id, status and area, and the tie."""
    items = []
    for paper in found.papers:
        source, tie = paper.source, paper.tie
        title = markup_html(source.title)
        if url := safe_url(source.url):
            title = f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{title}</a>'
        facts = " · ".join(escape(fact.replace("&amp;", "&")) for fact in (source.status, source.primary_area) if fact)
        items.append(
            f'<li class="rag-related-paper">{title} <span class="rag-id">({escape(source.paper_id)})</span>'
            + (f' <span class="rag-facts">{facts}</span>' if facts else "")
            + f'<div class="rag-tie">“{markup_html(tie.sentence)}” <span class="rag-tie-sep">~</span> '
            f"this paper: “{markup_html(tie.subject_sentence)}” "
            f'<span class="rag-relevance">(similarity {tie.similarity:.2f})</span></div></li>'
        )
    heading = f"More like “{markup_html(found.subject.title)}”"
    if not items:
        return f'<div class="rag-related"><div class="rag-panel-heading">{heading}: no other paper.</div></div>'
    return (
        f'<div class="rag-related"><div class="rag-panel-heading">{heading}, each with the sentences that tie '
        f'them:</div><ol class="rag-related-list">{"".join(items)}</ol></div>'
    )


def sources_panel(service: Any, html: str) -> gr.HTML:
    """The sources panel showing `html`, and under it the related papers its cards' "More like this" shows."""
    panel = gr.HTML(html, elem_id="rag-sources", js_on_load=PANEL_JS)
    add_more_like_this(service, panel)
    return panel


def add_more_like_this(service: Any, panel: gr.HTML) -> gr.HTML:
    """Under the sources panel, where a card's "More like this" shows that paper's related papers."""
    shown = gr.HTML(elem_id="rag-related")

    def more_like_this(event: gr.EventData) -> str:
        paper = getattr(event, "_data", None) or {}
        try:
            return related_html(find_related(service, str(paper.get("paper", ""))))
        except RagError as err:  # an id the index no longer holds, a store that went away
            return error_html(str(err))

    # Another answer's sources (or none, the chat cleared): the related papers of one of the old cards go.
    panel.change(lambda: "", outputs=[shown], api_visibility="private", queue=False)
    event = panel.click(more_like_this, outputs=[shown], api_visibility="private")
    event.then(None, js=SCROLL_JS, api_visibility="private")  # below a long panel: brought into view
    return shown
