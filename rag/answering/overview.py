"""Overview answers: "what are the main approaches to X?" answered by the field, not by one paper.

The topic's papers are drawn as a list answer draws them (rag/answering/lists.py, the same line), then
grouped into themes by what they do (rag/answering/themes.py). The answer names each theme by its
distinctive words, says how many papers it holds and cites them, and quotes two or three sentences of
its most typical papers; largest themes first. The sources are renumbered theme by theme, so a theme's
papers are cited as a run ([1]–[8], then [9]–…). A topic with too few papers for themes is answered as
the list, with one line saying so. Every sentence is quoted, but for one per theme a configured model may
write when `llm.theme_sentences` is on, kept only when the citation check supports it (theme_sentences.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answering.theme_sentences import theme_sentence
from rag.answering.themes import MIN_PAPERS, OTHERS, Group, find_themes
from rag.core.markup import plain_text
from rag.core.types import Answer, Quote, Theme
from rag.core.wording import counted

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.answering.pipeline import AnswerPipeline
    from rag.question.understand import Topic


def overview_answer(
    listed: Answer, topic: Topic, embeddings: Embeddings, pipeline: AnswerPipeline | None = None
) -> Answer:
    """The list answer `listed` (the topic's papers, each with its line) regrouped into themes; with the
    `pipeline` of a configured model, each theme led by the model's checked sentence (theme_sentences.py)."""
    if listed.refused:
        return listed
    head, *_ = listed.text.split("\n")
    if too_few_for_themes(listed):
        few = f"{head.rstrip(':')}: too few to group into themes ({MIN_PAPERS} at least), so listed instead:"
        return replace(listed, text="\n".join([few, *listed.text.split("\n")[1:]]))
    evaluation = topic.about_evaluation
    groups = find_themes(listed.sources, topic.text, embeddings, evaluation)
    sources = [listed.sources[member] for group in groups for member in group.members]
    number = {source.paper_id: n for n, source in enumerate(sources, start=1)}
    themes = [_theme(group, listed, number) for group in groups]
    if pipeline is not None:
        titles = {source.paper_id: source.title for source in sources}
        themes = [
            replace(theme, summary=theme_sentence(pipeline, topic.text, theme.quotes, titles)) if theme.words else theme
            for theme in themes  # not for the other papers, which share no theme to say
        ]
    what = "their evaluations say" if evaluation else "they do"
    grouped = f"grouped into {counted(len(themes), 'theme')} by what {what}"
    lines = [f"{head.rstrip(':')}, {grouped}, largest first:"]
    lines += [_line(position, theme, number) for position, theme in enumerate(themes, start=1)]
    how = (
        f"; themes: the papers' {'evaluation' if evaluation else 'proposal'} sentences embedded, clustered (Ward; "
        "of √(papers / 2) to 6 themes, the number with the best silhouette), each named by its distinctive words "
        "(class-based TF-IDF)"
    )
    text, line = "\n".join(lines), f"{listed.line}{how}"
    return replace(listed, text=text, sources=sources, themes=themes, answered_by="overview", line=line)


def too_few_for_themes(listed: Answer) -> bool:
    """Whether a list answer holds too few papers to group into themes (`MIN_PAPERS`): it is answered as the list."""
    return not listed.refused and len(listed.sources) < MIN_PAPERS


def _theme(group: Group, listed: Answer, number: dict[str, int]) -> Theme:
    papers = [listed.sources[member] for member in group.members]
    quotes = tuple(
        Quote(listed.sources[member].paper_id, number[listed.sources[member].paper_id], sentence)
        for member, sentence in group.quotes
    )
    name = ", ".join(group.words) if group.words else OTHERS
    return Theme(name, group.words, tuple(paper.paper_id for paper in papers), quotes)


def _line(position: int, theme: Theme, number: dict[str, int]) -> str:
    """'1. gradient ascent, retain set (8 papers [1, 2, …, 8]): “…” [1] “…” [2]'"""
    cited = ", ".join(str(number[paper_id]) for paper_id in theme.paper_ids)
    noun = "paper" if theme.size == 1 else "papers"
    quoted = " ".join(f"“{plain_text(quote.sentence)}” [{quote.number}]" for quote in theme.quotes)
    summary = f"{theme.summary} " if theme.summary else ""
    return f"{position}. {theme.name} ({theme.size} {noun} [{cited}]): {summary}{quoted}"
