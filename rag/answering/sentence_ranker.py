"""Which of a paper's sentences an answer quotes, learned from where the facts of blind questions sit (issue 43).

The hand score (`SentenceCandidate.score`) decides which paper answers and how many of its sentences join;
this decides which of its sentences they are. A logistic regression over each sentence's score parts, its
place in the abstract and what its neighbours score: a fact is often in the sentence after the one that
restates the question ("We propose PFDiff, a training-free … strategy" is followed by "Specifically, PFDiff
initially utilizes score replacement from past time steps …"). A question that asks why ("why do static
noise-aware training methods fall short …?", "what observation motivates …?") is often answered before the
paper's own work starts, by the problem its abstract states ("Current NAT methods typically assume static error
rates …"): two features say so, learned like the rest. Its weights are a small JSON file shipped in
the package (`sentence_ranker.json`); the question path scores with a dot product. Trained, and measured
writer by writer on the blind set's dev split, by

    python benchmarks/sentence_ranker.py --index /tmp/fullidx

(scikit-learn, the `train` extra).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag.answering.ask_ranker import read_weights

if TYPE_CHECKING:
    from rag.answering.evidence import SentenceCandidate
    from rag.core.config import AnswerConfig

RANKER_FILE = Path(__file__).with_name("sentence_ranker.json")
NO_NEIGHBOUR = -2.0  # what a first or last sentence's missing neighbour scores below the best
FEATURES = (
    "score",
    "below_best",
    "cosine",
    "words",
    "novelty",
    "kind",
    "proposal",
    "background",
    "introduces",
    "proposes",
    "before_below_best",
    "after_below_best",
    "place",
    "is_best",
    "after_proposal",
    "why_background",
    "why_place",
)


def sentence_features(own: Sequence[SentenceCandidate], config: AnswerConfig, why: bool = False) -> list[list[float]]:
    """The features (`FEATURES`) of each of one paper's candidate sentences, given in abstract order. `why`: the
    question asks why (a reason is often the problem an abstract states before its own work)."""
    scores = [c.score(config) for c in own]
    best = max(scores)
    below = [score - best for score in scores]
    last = len(own) - 1
    places = [i / last if last else 0.0 for i in range(len(own))]
    return [
        [
            scores[i],
            below[i],
            c.cosine,
            c.words,
            c.novelty,
            float(c.kind),
            float(c.proposal),
            float(c.background),
            float(c.introduces),
            float(c.proposes),
            below[i - 1] if i > 0 else NO_NEIGHBOUR,
            below[i + 1] if i < last else NO_NEIGHBOUR,
            places[i],
            float(scores[i] == best),
            float(i > 0 and own[i - 1].proposes),
            float(why and c.background),
            places[i] if why else 0.0,
        ]
        for i, c in enumerate(own)
    ]


@dataclass(frozen=True)
class SentenceRanker:
    """The learned weights: a sentence's score is their dot product with its features."""

    weights: tuple[float, ...]
    bias: float

    def scores(self, own: Sequence[SentenceCandidate], config: AnswerConfig, why: bool = False) -> list[float]:
        """Each of one paper's sentences (in abstract order) scored: higher, likelier to hold what is asked."""
        rows = sentence_features(own, config, why)
        return [self.bias + sum(w * v for w, v in zip(self.weights, row)) for row in rows]

    def choose(
        self,
        own: Sequence[SentenceCandidate],
        count: int,
        room: int,
        config: AnswerConfig,
        may: Callable[[str], bool],
        why: bool = False,
    ) -> list[int] | None:
        """Of one paper's sentences (in abstract order), the `count` this ranks first, then up to `room` more it
        scores at least `config.sentence_gate` sure to hold what is asked, best first; only those `may` quote.
        None when fewer than `count` may be quoted."""
        scores = self.scores(own, config, why)
        takes = [i for i in sorted(range(len(own)), key=lambda i: -scores[i]) if may(own[i].sentence)]
        if len(takes) < count:
            return None
        gate = math.log(config.sentence_gate / (1 - config.sentence_gate)) if config.sentence_gate < 1 else math.inf
        return takes[:count] + [i for i in takes[count:] if scores[i] >= gate][: max(room, 0)]  # room < 0: none

    @classmethod
    def load(cls, path: Path = RANKER_FILE) -> SentenceRanker:
        """The shipped weights; a file made for other features is refused by name."""
        return cls(*read_weights(path, FEATURES))
