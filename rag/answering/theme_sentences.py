"""A configured model's sentence for each theme of an overview, kept only when its citations check out.

The model is asked, through the answer prompt every model answer uses, what the theme's quoted papers do
about the topic, given the quotes alone as its numbered sources; it is stopped after two sentences. Its
first sentence that cites a quote and
that the citation check supports (rag/answering/citations.py: similar enough to a sentence of what it
cites, no number or name the sources lack) is kept, renumbered to the answer's `[n]`; one that copies a
quote or a title word for word adds nothing, and one of fewer than six words is a fragment: neither is kept.
A sentence about a theme stands on two of its quotes at least: one citing a single paper speaks for that
paper, not the theme (the bundled model's "These papers focus on … [26]" restated one paper as all five).
Otherwise, or when the model fails, the theme has no sentence and its quotes stand alone, as in the
extractive config.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rag.core.errors import RagError
from rag.core.markers import MARKER, attach_marker
from rag.core.types import Quote, Source

if TYPE_CHECKING:
    from rag.answering.pipeline import AnswerPipeline

FEWEST_WORDS = 6  # fewer make a name or a fragment, not a sentence about the papers
THEME_QUOTES = 2  # the quotes a sentence about a theme cites at least (fewer when the theme has one)
SENTENCES_READ = 2  # the model's first sentences read; generation stops there (each costs seconds)
SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def theme_sentence(pipeline: AnswerPipeline, topic: str, quotes: tuple[Quote, ...], titles: dict[str, str]) -> str:
    """The model's checked sentence about the quoted papers, cited with the answer's numbers; "" when none."""
    if pipeline.config.llm.provider == "extractive" or not quotes:
        return ""
    sources = [Source.from_text(quote.paper_id, titles[quote.paper_id], quote.sentence) for quote in quotes]
    question = f"In one sentence, what do these papers do about {topic}?"
    try:
        text = _first_sentences(pipeline.provider().stream(question, sources))
    except RagError:  # the model failed or did not load: the quotes stand alone
        return ""
    _, checks = pipeline.checker.check(text, sources)
    copies = [_words(text) for text in [*(quote.sentence for quote in quotes), *titles.values()]]
    for check in checks:
        words = _words(MARKER.sub("", check.text))
        about_theme = len(set(check.cited)) >= min(THEME_QUOTES, len(quotes))
        if check.supported and about_theme and len(words) >= FEWEST_WORDS and words not in copies:
            return attach_marker(MARKER.sub("", check.text).strip(), [quotes[n - 1].number for n in check.cited])
    return ""


def _first_sentences(pieces: Iterator[str]) -> str:
    """The model's text up to its `SENTENCES_READ`th sentence end. The stream, left unread, is closed when
    this returns (its last reference gone), which stops the model's generation."""
    text = ""
    for piece in pieces:
        text += piece
        if len(SENTENCE_END.findall(text)) >= SENTENCES_READ:
            break
    return text


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())
