"""The one place that reads, checks and writes `[n]` citation markers.

Small models cite badly, so an answer's citations are checked after it is generated: markers that
point at no source are dropped, and a sentence left without a valid marker is attributed to the
source whose own sentences support it best, or left uncited when none supports it enough. A
sentence counts as supported only if a cited source reads close to it and also holds every number
and name it states.
Before that, what small models add around an answer is tidied away: a sentence said twice is kept
once, and an unfinished last sentence (the model hit its token limit, or was stopped in a loop) is
dropped when complete sentences come before it.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answering.evidence import Evidence
from rag.core.markers import MARKER, attach_marker, cited_numbers, format_marker, split_sentences
from rag.core.markup import model_text, plain_text
from rag.core.types import SentenceCheck, Source
from rag.text.naming import paper_name
from rag.text.words import DIGITS, NAME, content_stems, counted, source_sentences

FOREIGN_SHARE = 0.3  # see foreign_words: the share of a sentence's content words its source may lack
FINISHED = re.compile(r"[.!?:;)\]\"'”’]\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")
# A term a sentence coins: in quotes ('a formula called "Causalization"'), or capitalised mid-sentence.
COINED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]|(?<=[a-z,] )([A-Z][a-z]{3,})\b")


def tidy_sentences(sentences: list[str]) -> list[str]:
    """Sentences without repeats (markers and case ignored) and without an unfinished tail."""
    seen, kept = set(), []
    for sentence in sentences:
        key = " ".join(re.findall(r"\w+", MARKER.sub("", sentence).lower()))
        if key and key not in seen:
            seen.add(key)
            kept.append(sentence)
    if len(kept) > 1 and not FINISHED.search(kept[-1]) and not LIST_ITEM.match(kept[-1]):
        kept.pop()
    return kept


class CitationChecker:
    """Checks and repairs the citations of an answer against its sources."""

    def __init__(self, embeddings: Embeddings, threshold: float):
        self.embeddings = embeddings  # a CachedEmbeddings: source sentences are embedded once
        self.threshold = threshold

    def check(self, text: str, sources: list[Source]) -> tuple[str, list[SentenceCheck]]:
        """The repaired text, and for each of its sentences: what it cites and whether that supports it.
        LaTeX and Markdown a model wrote are rendered first, as the abstracts are (`91\\%` reads 91%)."""
        text = model_text(text)
        sentences = [s for s in tidy_sentences(split_sentences(text)) if MARKER.sub("", s).strip()]
        if not sentences or not sources:
            return " ".join(MARKER.sub("", sentence).strip() for sentence in sentences), []
        checks = self.check_sentences(sentences, sources)
        return kept_text(checks), checks

    def check_sentences(self, sentences: list[str], sources: list[Source]) -> list[SentenceCheck]:
        """Each sentence (split and tidied already, markers referring to `sources`) checked on its own:
        its valid markers, or the source that supports it best when it has none, and whether they do.
        A sentence's check doesn't depend on the others, so a stream checks them as they come."""
        plain = [MARKER.sub("", sentence).strip() for sentence in sentences]
        names = {paper_name(source).lower() for source in sources}
        support = self._support([unnamed(bare, names) for bare in plain], sources)  # [sentence, source] best similarity
        checks = []
        for i, (sentence, bare) in enumerate(zip(sentences, plain)):
            numbers = cited_numbers(sentence, len(sources))
            if not numbers:
                best = int(np.argmax(support[i]))
                if support[i, best] >= self.threshold:
                    numbers = [best + 1]
            score = max((support[i, n - 1] for n in numbers), default=0.0)
            cited = [sources[n - 1] for n in numbers]
            supported = bool(score >= self.threshold) and not ungrounded(bare, cited) and not foreign_words(bare, cited)
            checks.append(SentenceCheck(bare, tuple(numbers), supported, round(float(score), 4)))
        return checks

    def _support(self, sentences: list[str], sources: list[Source]) -> np.ndarray:
        """For each answer sentence and source: the best cosine similarity to one of its sentences."""
        groups = [source_sentences(source) or [source.text] for source in sources]
        answer_vecs = np.asarray(self.embeddings.embed_documents(sentences))
        similarity = answer_vecs @ np.asarray(self.embeddings.embed_documents([s for group in groups for s in group])).T
        support = np.zeros((len(sentences), len(sources)))
        start = 0
        for j, group in enumerate(groups):
            support[:, j] = similarity[:, start : start + len(group)].max(axis=1)
            start += len(group)
        return support


def unnamed(sentence: str, names: AbstractSet[str]) -> str:
    """The sentence without the paper's name (one of `names`, in lower case) an extractive answer puts before
    a quote ("“Task-Adaptive Pretrained Language Models via Clustered-Importance Sampling”: We also present
    …"): a long name makes the quote read less like its own abstract, and no sentence of the abstract holds it."""
    head, colon, rest = sentence.partition(": ")
    return rest if colon and rest and head.lower() in names else sentence


def ungrounded(sentence: str, cited: list[Source]) -> list[str]:
    """The numbers and names a sentence states that none of its cited sources contains.

    Numbers are where models drift ("87%" written as "85%", 71 templates as "10,248", or 71 reaction templates
    as "71 building blocks": a number counts what it counts in the source, `miscounts`), and names
    where they invent (a formula called "Causalization"); a sentence with such a number, name or
    coined term is not supported, however similar it reads.
    """
    if not cited:
        return []
    text = " ".join(f"{source.title} {source.text}" for source in cited)
    text = f"{text} {plain_text(text)}"  # a sentence rendered as the abstract reads ('ϵ-VAE', '26%') is grounded too
    held: dict[str, list[set[str]]] = {}  # each number the sources give, with what it counts at each place
    for match in DIGITS.finditer(text):
        held.setdefault(number_value(match.group(0)), []).append(counted(text, match))
    lowered = text.lower()
    missing = [
        m.group(0)
        for m in DIGITS.finditer(sentence)
        if (value := number_value(m.group(0))) not in held or miscounts(counted(sentence, m), held[value])
    ]
    missing += [m.group(0) for m in NAME.finditer(sentence) if m.group(0).lower() not in lowered]
    coined = [m.group(1) or m.group(2) for m in COINED.finditer(sentence)]
    missing += [term for term in coined if term.lower() not in lowered]
    return missing


def miscounts(says: set[str], counts: list[set[str]]) -> bool:
    """Whether a number counts something else than wherever the sources give it: '71 building blocks' where
    the abstract has '71 reaction templates' (and '1.2 million building blocks'). Not when either side
    doesn't tell what it counts (`counted`): '71%', '20 of 24 tasks'."""
    return bool(says and counts) and all(count and not count & says for count in counts)


def foreign_words(sentence: str, cited: list[Source]) -> list[str]:
    """The sentence's content words (stems) that the cited text lacks, when they are more than
    `FOREIGN_SHARE` of its words: a sentence mostly in words its source doesn't use ("a type of dark mode
    anomaly that occurs when the light-dark ratio is not calibrated") is the model's, however close its
    embedding reads; a few new words (a paraphrase's verbs) are not."""
    stems = content_stems(sentence)
    foreign = sorted(stems - content_stems(" ".join(f"{source.title} {source.text}" for source in cited)))
    return foreign if stems and len(foreign) > FOREIGN_SHARE * len(stems) else []


def number_value(text: str) -> str:
    """A number as written, without thousands separators: '10,248' and '10248' compare equal."""
    return text.replace(",", "")


def kept_text(checks: list[SentenceCheck]) -> str:
    """The text of checked sentences, each with its markers."""
    return " ".join(attach_marker(check.text, check.cited) for check in checks)


def renumbered(text: str, evidence: list[Evidence]) -> str:
    """Model text whose `[n]` refer to `evidence_sources`, with markers that refer to the full source list.
    A marker outside the prompt's range is left to the citation checker, which drops it."""
    order = list(dict.fromkeys(item.number for item in evidence))

    def original(match: re.Match) -> str:
        numbers = [int(n) for n in re.split(r"[,;]", match.group(1))]
        space = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
        return space + format_marker([order[n - 1] if 1 <= n <= len(order) else 0 for n in numbers])

    return MARKER.sub(original, text)
