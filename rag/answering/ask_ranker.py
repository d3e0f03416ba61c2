"""How well a sentence answers one ask, learned from labelled questions instead of weighed by hand.

A logistic regression over a few features of (ask, sentence): the sentence's similarity to the ask and
to the whole question, the share of the ask's and the question's telling words it holds, whether it
holds the kind of answer the ask wants (asks.py), and whether it is background, a code link, or the
sentence that introduces the paper. Its weights are a small JSON file shipped in the package
(`ask_ranker.json`), read once per picker: the question path imports nothing to use them (the score is a
logistic of a dot product), and scikit-learn is needed only to train them again:

    python benchmarks/ask_ranker.py --index /tmp/fullidx tests/eval/seed_questions.jsonl \
        tests/eval/asks_questions.jsonl tests/eval/blind_questions.jsonl

which labels every candidate sentence of the best paper for each ask of the dev questions (positive when
it holds one of the ask's facts), reports each group held out against the hand weights, and writes the file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.answering.evidence import SentenceCandidate

RANKER_FILE = Path(__file__).with_name("ask_ranker.json")
FEATURES = (
    "ask_cosine",
    "question_cosine",
    "ask_words",
    "question_words",
    "holds_kind",
    "background",
    "code_link",
    "introduces",
)


def ask_features(candidate: SentenceCandidate, cosine: float, words: float, holds: int, code_link: bool) -> list[float]:
    """The features of one sentence for one ask, in the order of `FEATURES`; `holds`: whether it holds the kind
    of answer the ask wants (asks.held_by)."""
    return [
        cosine,
        candidate.cosine,
        words,
        candidate.words,
        float(holds),
        float(candidate.background),
        float(code_link),
        float(candidate.introduces),
    ]


@dataclass(frozen=True)
class AskRanker:
    """The learned weights: a sentence's score for an ask is the probability that it holds what the ask wants,
    the logistic of their dot product with its features. A probability, so that `answer.evidence_margin` (how
    close an ask's runner-up must come) means on it what it means on the hand score, whose values span a
    similar range; on the raw dot product, about three times as spread, fewer runners-up joined."""

    weights: tuple[float, ...]
    bias: float

    def score(self, features: list[float]) -> float:
        return 1 / (1 + math.exp(-self.bias - sum(weight * value for weight, value in zip(self.weights, features))))

    @classmethod
    def load(cls, path: Path = RANKER_FILE) -> AskRanker:
        """The shipped weights; a file made for other features is refused by name."""
        return cls(*read_weights(path, FEATURES))


def read_weights(path: Path, features: tuple[str, ...]) -> tuple[tuple[float, ...], float]:
    """A learned ranker's weights and bias from its JSON file, refused by name when made for other `features`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if tuple(data["features"]) != features:
        raise ValueError(f"{path} was trained on features {data['features']}, not {list(features)}; retrain it")
    return tuple(float(w) for w in data["weights"]), float(data["bias"])
