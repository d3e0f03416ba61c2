"""The one place that reads, checks and writes `[n]` citation markers.

Small models cite badly, so an answer's citations are checked after it is generated: markers that
point at no source are dropped, and a sentence left without a valid marker is attributed to the
source whose own sentences support it best, or left uncited when none supports it enough.
"""

from __future__ import annotations

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.markers import MARKER, attach_marker, cited_numbers, split_sentences
from rag.results import SentenceCheck, Source


class CitationChecker:
    """Checks and repairs the citations of an answer against its sources."""

    def __init__(self, embeddings: Embeddings, threshold: float):
        self.embeddings = embeddings
        self.threshold = threshold

    def check(self, text: str, sources: list[Source]) -> tuple[str, list[SentenceCheck]]:
        sentences = split_sentences(text)
        if not sentences or not sources:
            return MARKER.sub("", text).strip(), []
        plain = [MARKER.sub("", sentence).strip() for sentence in sentences]
        support = self._support(plain, sources)  # [sentence, source] best similarity
        fixed, checks = [], []
        for i, (sentence, bare) in enumerate(zip(sentences, plain)):
            numbers = cited_numbers(sentence, len(sources))
            if not numbers and bare:
                best = int(np.argmax(support[i]))
                if support[i, best] >= self.threshold:
                    numbers = [best + 1]
            score = max((support[i, n - 1] for n in numbers), default=0.0)
            fixed.append(attach_marker(bare, numbers))
            checks.append(SentenceCheck(bare, tuple(numbers), bool(score >= self.threshold), round(float(score), 4)))
        return " ".join(part for part in fixed if part), checks

    def _support(self, sentences: list[str], sources: list[Source]) -> np.ndarray:
        """For each answer sentence and source: the best cosine similarity to one of its sentences."""
        source_sentences = [split_sentences(source.text) or [source.text] for source in sources]
        flat = [s for group in source_sentences for s in group]
        vectors = np.asarray(self.embeddings.embed_documents(sentences + flat))
        answer_vecs, source_vecs = vectors[: len(sentences)], vectors[len(sentences) :]
        similarity = answer_vecs @ source_vecs.T
        support = np.zeros((len(sentences), len(sources)))
        start = 0
        for j, group in enumerate(source_sentences):
            support[:, j] = similarity[:, start : start + len(group)].max(axis=1)
            start += len(group)
        return support
