"""Turn `Answer`s into what the page shows: HTML built from escaped text, and JSON for the API.

Abstracts, titles, links and model output are all untrusted. Every piece of them goes through
`html.escape` before it meets markup built here (`rag.core.markup.markup_html` escapes the text it made
of the LaTeX, then adds only `<strong>`/`<em>` for emphasis), links are kept only when they are
http(s), and the only markup added is ours (citation badges, source cards, highlights). The chat
renders these strings as HTML without Markdown, so `[text](javascript:…)`, `<img onerror=…>` or a
fake heading inside an abstract or an answer stays visible text.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from rag.core.export import ExportFormat
from rag.core.filters import as_filters
from rag.core.markers import MARKER, attach_marker, split_sentences
from rag.core.markup import markup_html, plain_text
from rag.core.types import PASSAGE_GAP, Answer, Source, Span, by_relevance, safe_url
from rag.core.wording import plural
from rag.retrieval.related import OWN_ABSTRACT_ID
from rag.text.words import source_sentences
from ui.themes import themes_html

WORD = re.compile(r"[a-z0-9]+")
# Below this share of an answer sentence's words found in a source sentence, nothing is highlighted:
# a paraphrase that shares almost no words would point at an arbitrary sentence.
MIN_OVERLAP = 0.3
STREAM_CURSOR = "▍"
RELEVANCE_TIP = "How well the paper ranked for the question: 100% is first by both meaning and keywords"


def anchor(turn: int, number: int) -> str:
    """The element id of source `number` of chat turn `turn` in the sources panel."""
    return f"source-{turn}-{number}"


def answer_html(answer: Answer, turn: int) -> str:
    """The chat bubble of a finished answer: the text with linked `[n]` badges, who wrote it, its sources."""
    if answer.refused:
        return refusal_html(answer)
    if answer.themes:
        return themes_html(answer, turn, badge_html)
    if answer.listed:
        return list_html(answer, turn)
    parts = [f'<p class="rag-answer">{checked_text_html(answer, turn)}</p>']
    if note := answer.provenance():
        doubt = " rag-by-fallback" if answer.fallback or answer.replaced else ""
        parts.append(f'<p class="rag-by{doubt}">{escape(note)}</p>')
    if any(not check.supported for check in answer.checks):
        parts.append(
            '<p class="rag-legend"><span class="rag-unsupported">Greyed sentences</span> '
            "are not supported by any retrieved abstract: treat them with doubt.</p>"
        )
    parts.append(focus_html(answer, turn))
    if answer.sources:
        cited = set(answer.cited)
        items = "".join(
            f'<li class="{"rag-cited" if source.paper_id in cited else "rag-uncited"}">'
            f"{badge_html(turn, number, source.title)} {markup_html(source.title)} "
            f'<span class="rag-id">({escape(source.paper_id)})</span></li>'
            for number, source in by_relevance(answer.sources)
        )
        parts.append(f'<p class="rag-list-heading">Sources:</p><ol class="rag-source-list">{items}</ol>')
    return "".join(parts)


def focus_html(answer: Answer, turn: int) -> str:
    """For a follow-up held to the papers in focus, a line naming them and the question asked of them;
    for one made standalone otherwise, the question it was asked as; else nothing."""
    if answer.focus:
        papers = ", ".join(
            f"{badge_html(turn, number, source.title)} {markup_html(source.title)}"
            for number, source in enumerate(answer.sources, start=1)
            if source.paper_id in answer.focus
        )
        asked = escape(answer.standalone_question)
        return f'<p class="rag-focus">A follow-up on {papers}, asked as: “{asked}”</p>'
    if answer.standalone_question and answer.standalone_question != answer.question:
        return f'<p class="rag-focus">Asked as: “{escape(answer.standalone_question)}”</p>'
    return ""


def focus_choices(answer: Answer) -> list[tuple[str, str]]:
    """The answer's sources as the focus picker's choices, in the panel's order: ("[n] title", paper id)."""
    ranked = by_relevance(answer.sources)
    return [(f"[{number}] {shortened(plain_text(source.title))}", source.paper_id) for number, source in ranked]


def shortened(text: str, most: int = 90) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def list_html(answer: Answer, turn: int) -> str:
    """A list or count answer as a compact table: badge, linked title, status, area, the quoted sentence.

    The text's first line says how many matched; line n + 1 is paper n, ending with its quote."""
    head, *lines = answer.text.split("\n")
    rows = []
    for number, (source, line) in enumerate(zip(answer.sources, lines), start=1):
        title = markup_html(source.title)
        if url := safe_url(source.url):
            title = f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{title}</a>'
        quote = line.split(": “", 1)[1].removesuffix("”") if ": “" in line else ""
        status = source.status or "—"
        kind = escape(status.lower().replace(" ", "-"))
        rows.append(
            f"<tr><td>{badge_html(turn, number, source.title)}</td><td>{title}</td>"
            f'<td><span class="rag-badge rag-badge-{kind}">{escape(status)}</span></td>'
            f'<td class="rag-area">{escape(source.primary_area.replace("&amp;", "&"))}</td>'
            f'<td class="rag-quote">{markup_html(quote)}</td></tr>'
        )
    table = (
        '<table class="rag-list-table"><thead><tr><th></th><th>Paper</th><th>Status</th><th>Area</th>'
        f"<th>Why it matches</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    note = f'<p class="rag-by">{escape(answer.provenance() or "")}</p>'
    line = f'<details class="rag-why"><summary>How the line was drawn</summary>{escape(answer.line or "")}</details>'
    return f'<p class="rag-answer">{escape(head)}</p>{table}{note}{line}'


def refusal_html(answer: Answer) -> str:
    """A refusal in words, its figures behind a toggle. The closest papers are the panel's cards,
    so they are not named again here."""
    where = f"{escape(no_paper(answer))} matches it"
    if answer.sources:
        where = "the closest papers are in the sources panel"
    html = (
        '<p class="rag-answer rag-note rag-refused"><strong>Not answered:</strong> '
        f"the indexed abstracts don't answer this question; {where}.</p>"
    )
    if answer.refusal_reason:
        html += f'<details class="rag-why"><summary>Why</summary>{escape(answer.refusal_reason)}</details>'
    return html


def no_paper(answer: Answer) -> str:
    """'no paper in the index', naming the filters applied when there are some: 'no paper with status: Oral in
    the index'."""
    labels = as_filters(answer.filters).labels()
    return f"no paper {'with ' + '; '.join(labels) + ' ' if labels else ''}in the index"


def checked_text_html(answer: Answer, turn: int) -> str:
    """The answer text with badges, and each sentence no source supports greyed out.

    The checker writes the text as its checked sentences joined by spaces; when that holds, the
    sentences are shown one by one, else (no checks, e.g. a refusal) the text as it is.
    """
    sentences = [attach_marker(check.text, check.cited) for check in answer.checks]
    if not answer.checks or " ".join(s for s in sentences if s) != answer.text:
        return cited_text_html(answer.text, answer.sources, turn)
    shown = []
    for check, sentence in zip(answer.checks, sentences):
        if not sentence:
            continue
        html = cited_text_html(sentence, answer.sources, turn)
        if not check.supported:
            why = f"No retrieved abstract supports this sentence (best similarity {check.score:.2f})"
            html = f'<span class="rag-unsupported" title="{why}">{html}</span>'
        shown.append(html)
    return " ".join(shown)


def cited_text_html(text: str, sources: list[Source], turn: int) -> str:
    """Escaped text (its LaTeX and emphasis rendered) whose valid `[n]` markers become badges to the sources panel."""

    def badges(match: re.Match) -> str:
        numbers = [int(n) for n in re.split(r"[,;]", match.group(1))]
        return "".join(" " + badge_html(turn, n, sources[n - 1].title) for n in numbers if 1 <= n <= len(sources))

    pieces, last = [], 0
    for match in MARKER.finditer(text):
        pieces.append(markup_html(text[last : match.start()]))
        pieces.append(badges(match))
        last = match.end()
    pieces.append(markup_html(text[last:]))
    return "".join(pieces).replace("\n", "<br>")


def badge_html(turn: int, number: int, title: str) -> str:
    """A `[n]` badge; clicking it shows source card n of its turn (see ui.style.SCRIPT).

    Not an `href="#…"` link: Gradio treats a changed URL fragment as navigation and resets the page.
    The card's id rides in a class because the chat's sanitizer drops `data-` attributes.
    """
    return f'<span class="rag-cite goto-{anchor(turn, number)}" title="{escape(plain_text(title))}">[{number}]</span>'


def streaming_html(partial: str) -> str:
    """The chat bubble while the answer streams: its checked sentences so far, escaped (the finished
    bubble shows the same text, with badges)."""
    return f'<p class="rag-answer rag-streaming">{escape(partial).replace(chr(10), "<br>")}{STREAM_CURSOR}</p>'


def error_html(message: str) -> str:
    return f'<p class="rag-note rag-error"><strong>Error:</strong> {escape(message)}</p>'


def sources_panel_html(answer: Answer | None, turn: int) -> str:
    """The sources panel for one answer: a card per source, cited sentences highlighted."""
    if answer is None:
        return '<div class="rag-panel-empty">Ask a question: the abstracts each answer cites appear here.</div>'
    if not answer.sources and answer.table:
        return '<div class="rag-panel-empty">Counted from the stored metadata: the counts are below.</div>'
    if not answer.sources:
        return f'<div class="rag-panel-empty">{escape("N" + no_paper(answer)[1:])} matched this question.</div>'
    cited = set(answer.cited)
    highlights = supporting_sentences(answer)
    heading = "Closest papers (none close enough to answer)" if answer.refused else "Sources"
    cards = [
        source_card(source, number, turn, source.paper_id in cited, highlights.get(number, set()))
        for number, source in by_relevance(answer.sources)
    ]
    return (
        f'<div class="rag-panel"><div class="rag-panel-heading">{heading} for: '
        f"<em>{escape(answer.question)}</em></div>{''.join(cards)}</div>"
    )


def source_card(source: Source, number: int, turn: int, cited: bool, highlight: set[str]) -> str:
    links = []
    if url := safe_url(source.url):
        links.append(f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">OpenReview</a>')
    for github in source.github:
        if url := safe_url(github):
            links.append(f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{escape(url)}</a>')
    facts = [
        f'<span class="rag-id">{escape(source.paper_id)}</span>',
        f'<span class="rag-relevance" title="{RELEVANCE_TIP}">relevance {source.relevance:.0%}</span>',
    ]
    if source.status:
        facts.append(f'<span class="rag-status">{escape(source.status)}</span>')
    if source.primary_area:
        facts.append(escape(source.primary_area))
    state = "cited" if cited else "not cited"
    # ui/related.py: the papers like this one, under the panel (a span, so the panel holds no <button>).
    if source.paper_id != OWN_ABSTRACT_ID:  # a stored paper (not an abstract pasted into a question)
        paper = escape(source.paper_id)
        action = f'<span class="rag-more-like" role="button" tabindex="0" data-paper="{paper}">More like this</span>'
        facts.append(action)
    return (
        f'<div class="rag-card {"rag-cited" if cited else "rag-uncited"}" id="{anchor(turn, number)}">'
        f'<div class="rag-card-title"><span class="rag-number">[{number}]</span> {markup_html(source.title)} '
        f'<span class="rag-state">{state}</span></div>'
        f'<div class="rag-facts">{" · ".join(facts)}</div>'
        + (f'<div class="rag-links">{" · ".join(links)}</div>' if links else "")
        + f'<div class="rag-passage">{passage_html(source, highlight)}</div></div>'
    )


def passage_html(source: Source, highlight: set[str]) -> str:
    """The passages used, escaped, with the sentences in `highlight` marked.

    Neighbouring chunks overlap by design, so a sentence already shown is not repeated, and two
    passages that touch in the abstract (their spans, start/end offsets) are not split by "…".
    """
    parts = source.passages
    touching = [False] + [touch(before.span, after.span) for before, after in zip(parts, parts[1:])]
    shown: set[str] = set()
    html = ""
    for part, joins in zip(parts, touching):
        sentences = []
        for sentence in split_sentences(part.text):
            if sentence in shown:
                continue
            shown.add(sentence)
            shown_html = markup_html(sentence)
            sentences.append(f"<mark>{shown_html}</mark>" if sentence in highlight else shown_html)
        if sentences:
            html += ("" if not html else " " if joins else escape(PASSAGE_GAP)) + " ".join(sentences)
    return html


def touch(before: Span | None, after: Span | None) -> bool:
    """True when two passages' spans meet in the abstract (at most one character apart)."""
    return bool(before and after and after.start <= before.end + 1)


def supporting_sentences(answer: Answer) -> dict[int, set[str]]:
    """Source number -> its sentences that best match the supported answer sentences citing it.

    Word overlap, not embeddings: the display needs no model, and an extractive answer quotes its
    source sentences verbatim, so they match exactly.
    """
    found: dict[int, set[str]] = {}
    for check in answer.checks:
        words = set(WORD.findall(check.text.lower()))
        if not check.supported or not words:
            continue
        for number in check.cited:
            if not 1 <= number <= len(answer.sources):
                continue
            candidates = source_sentences(answer.sources[number - 1])
            scored = [(len(words & set(WORD.findall(s.lower()))) / len(words), s) for s in candidates]
            overlap, best = max(scored, default=(0.0, ""))
            if overlap >= MIN_OVERLAP:
                found.setdefault(number, set()).add(best)
    return found


def answer_payload(answer: Answer, export: ExportFormat | None = None) -> dict[str, Any]:
    """The JSON the `/ask` API endpoint returns; with `export` ("bib", "csv", "md"), also the answer's
    papers in that format, as `export` (see `Answer.export`)."""
    payload = answer.to_payload()
    if export:
        payload["export"] = answer.export(export)
    return payload


def header_html(model: str, stats: dict[str, Any]) -> str:
    """The line under the title: which model answers and how big the index is."""
    papers, chunks = stats.get("papers", 0), stats.get("chunks", 0)
    return (
        f'<div class="rag-header">Model: <code class="rag-model">{escape(model)}</code> · '
        f'index: <span class="rag-papers">{papers:,}</span> {plural("paper", papers)}, '
        f'<span class="rag-chunks">{chunks:,}</span> {plural("chunk", chunks)} · '
        f"embeddings: <code>{escape(str(stats.get('embedding', '')))}</code> · "
        f"config: <code>{escape(str(stats.get('config', '')))}</code></div>"
    )
