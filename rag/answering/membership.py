"""Which papers of the whole (filtered) index are about a topic: a generous candidate set, each candidate judged.

A list or count is decided over every paper the filters admit, not over the top of one search. The cheap stage is
the retriever asked for `CANDIDATES` papers per alternative of the topic (dense and BM25 fused over the whole index,
0.5 s for 600 papers of the full list); the judge is a logistic model over what the cheap stage measured of each
candidate and of its title (`features`), learned from topics whose every candidate blind writers judged
(tests/eval/judge_*.jsonl; `python -m benchmarks.train_judge` writes `judge.json`). A paper is on the topic when
the judge gives it at least `JUDGED_IN`; the number said is the number judged.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.core.types import Source
from rag.text.terms import terms

if TYPE_CHECKING:
    from rag.answering.tools import Search
    from rag.core.filters import Filters

CANDIDATES = 600  # per alternative: the largest gold set of the blind writers' topics is 223
JUDGED_IN = 0.5  # the judge's probability from which a candidate is a member
JUDGE_FILE = Path(__file__).with_name("judge.json")
FEATURES = (
    "cosine",  # the best passage's cosine with the topic
    "cosine_below_best",  # how far under the best candidate's
    "coverage",  # the IDF-weighted share of the topic's words in title and abstract
    "all_words",  # 1 when the paper holds every word of the topic
    "title_share",  # the share of the topic's words in the title
    "bm25_share",  # BM25 over the best candidate's
    "rank",  # the fused rank, log-scaled to 0..1 over the candidates
    "topic_words",  # how many words the topic has (a long description is held less wholly)
    "title_pairs",  # the share of the topic's pairs of neighbouring words said together in the title
    "text_pairs",  # the same in the passages retrieved: "dataset distillation", not "knowledge distillation"
)


@dataclass(frozen=True)
class Judged:
    """A candidate and the judge's probability that it is about the topic."""

    source: Source
    probability: float


def features(topic: str, candidates: list[Source]) -> np.ndarray:
    """One row of `FEATURES` per candidate (in rank order) for the topic."""
    stems = terms(topic)
    words = set(stems)
    pairs: set[tuple[str, ...]] = set(zip(stems, stems[1:])) or {(stem,) for stem in stems}
    best_cosine = max((source.score for source in candidates), default=0.0)
    best_bm25 = max(((source.match.bm25 or 0.0) for source in candidates), default=0.0) or 1.0
    scale = math.log(len(candidates) + 1)
    rows = []
    for rank, source in enumerate(candidates, start=1):
        title_stems, text_stems = terms(source.title), terms(source.text)
        title = set(title_stems)
        rows.append(
            [
                source.score,
                best_cosine - source.score,
                source.match.coverage,
                float(source.match.coverage >= 0.999),
                len(words & title) / len(words) if words else 0.0,
                (source.match.bm25 or 0.0) / best_bm25,
                math.log(rank) / scale,
                min(len(words), 12) / 12,
                _held(pairs, title_stems),
                _held(pairs, text_stems),
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(candidates), len(FEATURES))


def _held(pairs: set[tuple[str, ...]], stems: list[str]) -> float:
    """The share of the topic's neighbouring pairs of words (its single word, for a topic of one) the stems hold."""
    if not pairs:
        return 0.0
    size = len(next(iter(pairs)))
    found = set(zip(*(stems[i:] for i in range(size))))
    return len(pairs & found) / len(pairs)


@cache
def judge_weights(path: Path = JUDGE_FILE) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """The judge as trained: weights and bias over the standardised features (their mean and scale)."""
    model = json.loads(path.read_text(encoding="utf-8"))
    if tuple(model["features"]) != FEATURES:
        raise ValueError(f"{path.name} was trained on other features: retrain it (benchmarks/train_judge.py)")
    return (np.asarray(model["weights"]), float(model["bias"]), np.asarray(model["mean"]), np.asarray(model["scale"]))


def probabilities(rows: np.ndarray) -> np.ndarray:
    """The judge's probability for each row of features."""
    weights, bias, mean, scale = judge_weights()
    return 1.0 / (1.0 + np.exp(-(((rows - mean) / scale) @ weights + bias)))


def candidates(alternatives: tuple[str, ...], search: Search, filters: Filters) -> dict[str, list[Source]]:
    """Each alternative of the topic with its candidates, best first."""
    return {text: search(text, CANDIDATES, filters) for text in alternatives}


def judged_members(found: dict[str, list[Source]]) -> list[Judged]:
    """The candidates (`candidates`: each alternative of the topic with its own) that the judge admits, each once
    with its best probability, most probable first (a stable order: rank among equals)."""
    best: dict[str, Judged] = {}
    for text, found_for in found.items():
        if not found_for:
            continue
        for source, probability in zip(found_for, probabilities(features(text, found_for))):
            if probability >= JUDGED_IN and (
                source.paper_id not in best or probability > best[source.paper_id].probability
            ):
                best[source.paper_id] = Judged(source, float(probability))
    return sorted(best.values(), key=lambda judged: -judged.probability)
