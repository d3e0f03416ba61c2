"""The one place that reads, checks and writes `[n]` citation markers.

Small models cite badly, so an answer's citations are checked after it is generated: markers that
point at no source are dropped, and a sentence left without a valid marker is attributed to the
source whose own sentences support it best, or left uncited when none supports it enough.
Before that, what small models add around an answer is tidied away: a sentence said twice is kept
once, and an unfinished last sentence (the model hit its token limit, or was stopped in a loop) is
dropped when complete sentences come before it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.markers import MARKER, attach_marker, cited_numbers, split_sentences
from rag.results import SentenceCheck, Source
from rag.retrieval import PASSAGE_GAP

FINISHED = re.compile(r"[.!?:;)\]\"'”’]\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")


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

    CACHED_SENTENCES = 20_000  # about 30 MB of vectors

    def __init__(self, embeddings: Embeddings, threshold: float):
        self.embeddings = embeddings
        self.threshold = threshold
        # The same papers come back for related questions: their sentences are embedded once.
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, text: str, sources: list[Source]) -> tuple[str, list[SentenceCheck]]:
        """The repaired text, and for each of its sentences: what it cites and whether that supports it."""
        sentences = [s for s in tidy_sentences(split_sentences(text)) if MARKER.sub("", s).strip()]
        if not sentences or not sources:
            return " ".join(MARKER.sub("", sentence).strip() for sentence in sentences), []
        plain = [MARKER.sub("", sentence).strip() for sentence in sentences]
        support = self._support(plain, sources)  # [sentence, source] best similarity
        fixed, checks = [], []
        for i, (sentence, bare) in enumerate(zip(sentences, plain)):
            numbers = cited_numbers(sentence, len(sources))
            if not numbers:
                best = int(np.argmax(support[i]))
                if support[i, best] >= self.threshold:
                    numbers = [best + 1]
            score = max((support[i, n - 1] for n in numbers), default=0.0)
            fixed.append(attach_marker(bare, numbers))
            checks.append(SentenceCheck(bare, tuple(numbers), bool(score >= self.threshold), round(float(score), 4)))
        return " ".join(fixed), checks

    def _support(self, sentences: list[str], sources: list[Source]) -> np.ndarray:
        """For each answer sentence and source: the best cosine similarity to one of its sentences."""
        source_sentences = [
            [s for part in source.text.split(PASSAGE_GAP) for s in split_sentences(part)] or [source.text]
            for source in sources
        ]
        answer_vecs = np.asarray(self.embeddings.embed_documents(sentences))
        source_vecs = self._source_vectors([s for group in source_sentences for s in group])
        similarity = answer_vecs @ source_vecs.T
        support = np.zeros((len(sentences), len(sources)))
        start = 0
        for j, group in enumerate(source_sentences):
            support[:, j] = similarity[:, start : start + len(group)].max(axis=1)
            start += len(group)
        return support

    def _source_vectors(self, sentences: list[str]) -> np.ndarray:
        with self._lock:  # held while embedding: simpler than reconciling two checkers' caches
            missing = [s for s in dict.fromkeys(sentences) if s not in self._vectors]
            if missing:
                self._vectors.update(zip(missing, np.asarray(self.embeddings.embed_documents(missing))))
            found = np.stack([self._vectors[s] for s in sentences])
            for sentence in sentences:
                self._vectors.move_to_end(sentence)
            while len(self._vectors) > self.CACHED_SENTENCES:
                self._vectors.popitem(last=False)
        return found
