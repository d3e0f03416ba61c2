"""An overview answer on the page: its themes as a short list, each theme's papers folded under it.

Each theme shows its name (its distinctive words), its size, a configured model's checked sentence about
it when it has one, and its quoted sentences, all with their `[n]` badges; its papers sit in a `<details>`
under it, closed until opened. Every piece of text is escaped
(titles and quotes through `markup_html`), as in ui/render.py, which calls `themes_html` for an answer
that has themes.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from rag.core.markers import MARKER, cited_numbers
from rag.core.markup import markup_html
from rag.core.types import Answer, Theme, safe_url

Badge = Callable[[int, int, str], str]  # (turn, number, title) -> the [n] badge (ui.render.badge_html)


def themes_html(answer: Answer, turn: int, badge: Badge) -> str:
    """The chat bubble of an overview: its first line, the themes largest first, who wrote it, the line."""
    head = answer.text.split("\n", 1)[0]
    items = "".join(_theme_html(theme, answer, turn, badge) for theme in answer.themes)
    note = f'<p class="rag-by">{escape(answer.provenance() or "")}</p>'
    why = "How the papers and themes were drawn"
    line = f'<details class="rag-why"><summary>{why}</summary>{escape(answer.line or "")}</details>'
    return f'<p class="rag-answer">{escape(head)}</p><ol class="rag-themes">{items}</ol>{note}{line}'


def _theme_html(theme: Theme, answer: Answer, turn: int, badge: Badge) -> str:
    numbered = {source.paper_id: (number, source) for number, source in enumerate(answer.sources, start=1)}
    quotes = "".join(
        f'<span class="rag-theme-quote">“{markup_html(quote.sentence)}”'
        f"{badge(turn, quote.number, numbered[quote.paper_id][1].title)}</span>"
        for quote in theme.quotes
    )
    papers = []
    for paper_id in theme.paper_ids:
        number, source = numbered[paper_id]
        title = markup_html(source.title)
        if url := safe_url(source.url):
            title = f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{title}</a>'
        papers.append(f"<li>{badge(turn, number, source.title)} {title}</li>")
    noun = "paper" if theme.size == 1 else "papers"
    summary = f'<span class="rag-theme-summary">{_cited_html(theme.summary, answer, turn, badge)}</span>'
    return (
        f'<li class="rag-theme"><span class="rag-theme-name">{escape(theme.name)}</span> '
        f'<span class="rag-theme-size">({theme.size} {noun})</span>{summary if theme.summary else ""}{quotes}'
        f'<details class="rag-theme-papers"><summary>Its {theme.size} {noun}</summary><ul>{"".join(papers)}</ul>'
        "</details></li>"
    )


def _cited_html(text: str, answer: Answer, turn: int, badge: Badge) -> str:
    """A model's sentence, escaped, its `[n]` markers as badges (the answer's numbers, checked already)."""
    html, last = "", 0
    for match in MARKER.finditer(text):
        numbers = cited_numbers(match.group(0), len(answer.sources))
        html += markup_html(text[last : match.start()]).rstrip()
        html += "".join(" " + badge(turn, n, answer.sources[n - 1].title) for n in numbers)
        last = match.end()
    return html + markup_html(text[last:])
