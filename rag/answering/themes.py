"""Themes among a topic's papers, found the way BERTopic finds them, at the size of one answer.

Each paper is represented by the sentences that say what it does (its proposal, else the sentences
after its background; for "how do papers evaluate X", its evaluation sentences), embedded with the
service's cached sentence embeddings (the bundled model) and averaged. The papers are clustered with
Ward's hierarchical clustering (scipy, imported only here, when an overview is asked for); of √(papers / 2)
to `MOST_THEMES` themes, the number whose silhouette is best. Each theme is named by its distinctive words:
class-based TF-IDF, a word (or two-word term) frequent among the theme's papers and rare among the
others', and sharing no word with a larger theme's name. Papers left alone in a theme of their own are
gathered last, as "other papers", and so are the papers of a theme no term names."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag.answering.asks import CODE_LINK
from rag.answering.background import is_background
from rag.core.markup import plain_text
from rag.core.text import SEARCH_STOPWORDS
from rag.core.types import Source
from rag.question.overview_words import EVALUATION
from rag.text.naming import PROPOSAL
from rag.text.words import content_stems, source_sentences

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

MIN_PAPERS = 6  # fewer papers than this make no themes: the overview is a list
MOST_THEMES = 6
SENTENCES_PER_PAPER = 3
WORDS_PER_NAME = 3
QUOTES_PER_THEME = 3
LONGEST_QUOTE = 300  # characters: a longer sentence is quoted only when the paper has no shorter one
OTHERS = "other papers"
WORD = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]")
# The words of research writing, which every theme has: they name no theme.
WRITING = SEARCH_STOPWORDS | frozenset(
    "method framework frameworks model models result results demonstrate demonstrates performance task tasks "
    "state-of-the-art art achieve achieves achieving significantly significant extensive experiments experimental "
    "experiment outperforms outperform improve improves improved improving effective effectively effectiveness "
    "efficient address addresses problem problems leverage leverages leveraging enable enables enabling first "
    "code available github https com across provide provides large including however data learning towards "
    "toward further thus these three can key well superior strong demonstrating demonstrated compared baselines "
    "baseline benchmarks benchmark empirical results highly inspired novel prior recent without remains through "
    "combined combines combining given often many several while can itself challenge challenges technique techniques "
    "information usage called named termed substantial conventional typically llm llms".split()
)


@dataclass(frozen=True)
class Group:
    """A theme as found: its papers (indexes into the papers given, most typical first), its distinctive
    words, and its quotes (paper index, sentence as the abstract has it)."""

    members: tuple[int, ...]
    words: tuple[str, ...]
    quotes: tuple[tuple[int, str], ...]


def doing_sentences(source: Source, evaluation: bool = False) -> list[str]:
    """Up to three sentences of the paper that say what it does: those saying "we propose …" (or, for
    `evaluation`, how it evaluates) first, then the others past its background, in abstract order."""
    sentences = source_sentences(source)
    kept = [sentence for position, sentence in enumerate(sentences) if not is_background(position, sentence)]
    wanted = EVALUATION if evaluation else PROPOSAL
    ranked = sorted(kept or sentences, key=lambda sentence: not wanted.search(sentence))
    return ranked[:SENTENCES_PER_PAPER] or [source.title]  # a paper with no sentence stands by its title


def find_themes(papers: list[Source], topic: str, embeddings: Embeddings, evaluation: bool = False) -> list[Group]:
    """The papers partitioned into themes, largest first (the other papers last)."""
    sentences = [doing_sentences(paper, evaluation) for paper in papers]
    flat = [sentence for held in sentences for sentence in held]
    vectors = _unit(np.asarray(embeddings.embed_documents([plain_text(s) for s in flat]), dtype=np.float64))
    by_paper, start = [], 0
    for held in sentences:
        by_paper.append(vectors[start : start + len(held)])
        start += len(held)
    papers_vectors = _unit(np.stack([held.mean(axis=0) for held in by_paper]))
    labels = clusters(papers_vectors)
    groups = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    alone = [int(member) for group in groups if len(group) == 1 for member in group]
    groups = sorted((group for group in groups if len(group) > 1), key=len, reverse=True)
    if alone:
        groups.append(np.asarray(alone))
    texts = [" ".join([paper.title, *held]) for paper, held in zip(papers, sentences)]
    named = distinctive_words([list(group) for group in groups], texts, topic, [paper.title for paper in papers])
    if alone:  # the last group gathers the papers left alone: no name
        named[-1] = []
    unnamed = [int(member) for group, words in zip(groups, named) if not words for member in group]
    groups = [group for group, words in zip(groups, named) if words] + ([np.asarray(unnamed)] if unnamed else [])
    named = [words for words in named if words] + ([[]] if unnamed else [])
    found = []
    for group, words in zip(groups, named):
        centre = _unit(papers_vectors[group].mean(axis=0))
        members = sorted(map(int, group), key=lambda i: -float(papers_vectors[i] @ centre))
        quotes = tuple((i, _quote(papers[i], sentences[i], by_paper[i] @ centre)) for i in members[:QUOTES_PER_THEME])
        found.append(Group(tuple(members), tuple(words), quotes))
    return found


def _quote(paper: Source, sentences: list[str], closeness: np.ndarray) -> str:
    """The paper's quote: of its doing sentences, the one `_nearest` the theme's centre; but when none of them
    says what the paper does and its opening sentence does, that one, short enough. An opening sentence counts
    as background, so "We introduce LogQuant, a … 2-bit quantization technique for KV Cache …" gave way to
    "Both approaches, however, can result in performance bottlenecks or frequent mispredictions."."""
    if not any(map(says_what_it_does, sentences)):
        opening = next(iter(source_sentences(paper)), "")
        if says_what_it_does(opening) and len(opening) <= LONGEST_QUOTE:
            return opening
    return _nearest(sentences, closeness)


def _nearest(sentences: list[str], closeness: np.ndarray) -> str:
    """The sentence that says what the paper does ("we propose …") nearest the theme's centre, else any
    nearest; a short one (at most `LONGEST_QUOTE` characters) if any is."""
    short = [i for i, sentence in enumerate(sentences) if len(sentence) <= LONGEST_QUOTE] or range(len(sentences))
    doing = [i for i in short if says_what_it_does(sentences[i])] or short
    return sentences[max(doing, key=lambda i: closeness[i])]


def says_what_it_does(sentence: str) -> bool:
    """A whole sentence saying what its paper does ("We propose …"): not a fragment the sentence splitter left
    ("We propose a novel approach (Our code is …"), nor a code link."""
    return (
        bool(PROPOSAL.search(sentence))
        and sentence.count("(") == sentence.count(")")
        and not CODE_LINK.search(sentence)
    )


def clusters(vectors: np.ndarray) -> np.ndarray:
    """A theme label per row: Ward's clustering cut at the number of themes with the best silhouette, at
    least √(papers / 2) of them (silhouette alone mostly picks two, fewer than an overview wants; on the
    dev split of tests/eval/overview_questions.jsonl the floor also matched the hand-made groups better,
    docs/overviews.md)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(vectors, method="ward")
    least = max(2, min(MOST_THEMES, round(math.sqrt(len(vectors) / 2))))
    most = max(least, min(MOST_THEMES, len(vectors) // 3))
    cuts = [fcluster(tree, count, criterion="maxclust") for count in range(least, most + 1)]
    return max(cuts, key=lambda labels: silhouette(vectors, labels))


def silhouette(vectors: np.ndarray, labels: np.ndarray) -> float:
    """The mean silhouette of a clustering, in cosine distance (unit vectors); 0 for a single cluster.
    A paper alone in its cluster counts 0, as in scikit-learn."""
    if len(set(labels.tolist())) < 2:
        return 0.0
    distances = 1.0 - vectors @ vectors.T
    scores = []
    for i, label in enumerate(labels):
        own = labels == label
        if own.sum() == 1:
            scores.append(0.0)
            continue
        inside = distances[i, own].sum() / (own.sum() - 1)
        outside = min(distances[i, labels == other].mean() for other in set(labels.tolist()) - {label})
        scores.append((outside - inside) / max(inside, outside, 1e-12))
    return float(np.mean(scores))


def distinctive_words(
    groups: list[list[int]], texts: list[str], topic: str, titles: list[str], most_common: float = 1.0
) -> list[list[str]]:
    """Each group's most distinctive terms by class-based TF-IDF: the share of the group's papers that use
    a term, times log(1 + papers / papers using it anywhere). Only a term some title uses names a theme
    (titles hold what papers are about; abstracts' sentences also hold their verbs and connectives), unless
    none does; the topic's own words name none; a term must be used by two of the group's papers (when it
    has two); a term used by more than `most_common` of all the papers names none (the map of a whole
    conference: "neural", "language", "datasets" are in a fifth to a third of its abstracts); a term sharing
    a word with an earlier group's name names none (two themes were both named "language")."""
    topical = content_stems(topic) | content_stems(topic.replace("-", " "))  # "mixture-of-experts": "experts" too
    held = [_terms(text, topical) for text in texts]
    titled = set().union(*(_terms(title, topical) for title in titles))
    everywhere = Counter(term for terms in held for term in terms)
    named: list[list[str]] = []
    for group in groups:
        inside = Counter(term for member in group for term in held[member])
        least = min(2, len(group))
        scores = {
            term: count / len(group) * math.log(1 + len(texts) / everywhere[term])
            for term, count in inside.items()
            if count >= least and everywhere[term] <= most_common * len(texts)
        }
        ranked = sorted(scores, key=lambda term: (-scores[term], term))
        earlier = [term for name in named for term in name]
        named.append(_without_overlap([term for term in ranked if term in titled] or ranked, earlier))
    return named


def _terms(text: str, topic_stems: set[str]) -> set[str]:
    """The words of a paper's text that could name a theme, and each pair of them that stand together."""
    words = WORD.findall(plain_text(text).lower())
    kept = [word if word not in WRITING and len(word) > 2 else "" for word in words]
    on_topic = {word for word in kept if word[:6] in topic_stems}
    pairs = {f"{a} {b}" for a, b in zip(kept, kept[1:]) if a and b and a != b and not {a, b} <= on_topic}
    return {word for word in kept if word and word not in on_topic} | pairs


def _without_overlap(ranked: list[str], earlier: list[str]) -> list[str]:
    """The first `WORDS_PER_NAME` terms, skipping one that shares a word (see `_stem`) with a term chosen
    already, for this name or an `earlier` one: each name tells its theme from the others."""
    chosen: list[str] = []
    for term in ranked:
        taken = {_stem(word) for picked in [*earlier, *chosen] for word in picked.split()}
        if not {_stem(word) for word in term.split()} & taken:
            chosen.append(term)
        if len(chosen) == WORDS_PER_NAME:
            break
    return chosen


def _stem(word: str) -> str:
    """Enough of a word to tell its forms apart from other words: "expert" and "experts" are one."""
    return word.rstrip("s")[:5]


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
