"""The question read by models learned from how researchers ask (issue 41), not by a pattern per phrasing.

Three small linear models, trained by benchmarks/train_reader.py on tests/eval/phrasing_train.jsonl, the kinds
of tests/eval/phrasing_round5.jsonl, the dev split of tests/eval/phrasing_questions.jsonl and the dev splits of
the other question sets, and shipped in the package (`reader.npz`, read once; numpy only, no scikit-learn or
torch on the question path):

- **the kind**: a logistic regression over the question's word and word-pair weights (tf-idf), the bundled
  MiniLM's embedding of it, the kind the rules read (understand.py), which it learns when to trust, and how
  many names of papers it gives (`name_features`);
- **the field a tally groups by** (primary area, status, author, or none), and **what a count measures** (a
  count, a ranking, or a share: "what fraction of …", "acceptance rate per area"), over the same features;
- **the spans**: a logistic regression per word over the word, its shape and its neighbours, which tags
  the topic ("the landscape of *LLM unlearning* research"), the paper a question is anchored on
  ("if I liked *Proteina*") and the other paper of a comparison (`_run` says how words make a span).

Exact rules stay where exactness is the point: ids, quoted titles, filters named in words, numbers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from rag.core.types import Kind

READER_FILE = Path(__file__).with_name("reader.npz")
TERM = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token pattern: what the tf-idf was fitted with
WORD = re.compile(r"\w[\w'’.+-]*\w|\w|[^\w\s]")  # the words and marks the tagger tags
NAME_WORD = re.compile(r"\w[\w'’.+-]*\w|\w")  # its words alone
QUOTED = re.compile(r"['\"‘“][^'\"’”]{8,}['\"’”]")  # a quoted title
TEXT_WEIGHT, RULES_WEIGHT = 2.0, 0.5  # the weights of the tf-idf and of the rules' kind beside the embedding
KINDS = tuple(Kind)
SPANS = ("topic", "anchor", "other")
TAGS = {"T": "topic", "A": "anchor", "B": "other"}


def terms(question: str) -> list[str]:
    """The words and word pairs the kind model weighs, as TfidfVectorizer(ngram_range=(1, 2)) makes them."""
    words = TERM.findall(question.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def rules_features(ruled: Kind) -> np.ndarray:
    """The rules' kind, one-hot in the order of `KINDS`."""
    return np.array([float(kind == ruled) for kind in KINDS]) * RULES_WEIGHT


def name_features(question: str) -> np.ndarray:
    """How many names of papers or methods the question gives, judged by their shape (`_named`) and quoted
    titles: one name is asked about, two are compared."""
    shaped = sum(_named(word) for word in NAME_WORD.findall(question))
    quoted = len(QUOTED.findall(question))
    found = [shaped == 0, shaped == 1, shaped >= 2, quoted >= 1, quoted >= 2, shaped + quoted >= 2]
    return np.array(found, dtype=float)


def _named(word: str) -> bool:
    """A capital or a digit inside a word of letters: "AlphaEdit", "MEMIT", "LLM-SR", "Qwen2"."""
    has_digit = any(c.isdigit() for c in word)
    return any(c.isupper() for c in word[1:]) or (has_digit and any(c.isalpha() for c in word))


def words(question: str) -> list[re.Match]:
    return list(WORD.finditer(question))


def _shape(word: str) -> str:
    if not word[0].isalnum():
        return "mark"
    if any(c.isdigit() for c in word):
        return "digit"
    if word.isupper() and len(word) > 1:
        return "CAPS"
    return "Cap" if word[0].isupper() else "low"


def word_features(tokens: list[str], kind: str, i: int) -> list[str]:
    """What the tagger sees of word `i`: itself, its shape, its suffix, two neighbours each side, the kind."""
    low = [token.lower() for token in tokens]
    found = [
        "bias",
        f"w={low[i]}",
        f"shape={_shape(tokens[i])}",
        f"suffix={low[i][-3:]}",
        f"kind={kind}",
        f"kind+w={kind}:{low[i]}",
    ]
    found += ["first"] if i == 0 else []
    found += ["last"] if i == len(tokens) - 1 else []
    for step in (-2, -1, 1, 2):
        j = i + step
        found.append(f"w{step:+d}={low[j] if 0 <= j < len(tokens) else '<edge>'}")
        if 0 <= j < len(tokens):
            found.append(f"shape{step:+d}={_shape(tokens[j])}")
    return found


def _softmax(scores: np.ndarray) -> np.ndarray:
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return scores / scores.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class Spans:
    """The spans the tagger found, each the words as the question has them ("" when none)."""

    topic: str = ""
    anchor: str = ""
    other: str = ""


@dataclass(frozen=True)
class Head:
    """One linear model: a weight per feature and label, a bias per label, the labels."""

    weights: np.ndarray  # (features, labels)
    bias: np.ndarray
    labels: tuple[str, ...]

    def best(self, features: np.ndarray) -> str:
        """The likeliest label for `features`."""
        return self.labels[int(np.argmax(features @ self.weights + self.bias))]

    @classmethod
    def of(cls, data: Any, name: str, labels: str) -> Head:
        return cls(data[f"{name}_weights"], data[f"{name}_bias"], tuple(str(label) for label in data[labels]))


@dataclass(frozen=True)
class Reader:
    """The shipped models (see the module's docstring); `load()` reads them once. The three question-level
    heads read the same features (`features`), computed once per question."""

    vocabulary: dict[str, int]  # term -> its column among the tf-idf features
    idf: np.ndarray
    kinds: Head  # over embedding + terms + the rules' kind: a column per Kind, in the order of KINDS
    groups: Head  # the same features: "primary_area", "status", "authors", "" (none)
    measures: Head  # the same features: "count", "ranking", "share"
    word_features: dict[str, int]  # word feature -> its row of the tagger's weights
    tags: Head  # "O", "T", "A", "B"

    def text_features(self, question: str) -> np.ndarray:
        """tf-idf as the model was fitted with it: sublinear counts, the idf, unit length."""
        counts = Counter(term for term in terms(question) if term in self.vocabulary)
        vector = np.zeros(len(self.vocabulary))
        for term, count in counts.items():
            vector[self.vocabulary[term]] = (1 + math.log(count)) * self.idf[self.vocabulary[term]]
        norm = np.linalg.norm(vector)
        return vector / norm * TEXT_WEIGHT if norm else vector

    def features(self, question: str, ruled: Kind, embedding: np.ndarray) -> np.ndarray:
        """What the question-level heads read: the embedding, the weighted tf-idf, the rules' kind (`ruled`), the
        names it gives."""
        embedded = np.asarray(embedding, dtype=float)
        return np.concatenate([embedded, self.text_features(question), rules_features(ruled), name_features(question)])

    def kind(self, features: np.ndarray) -> Kind:
        """The likeliest kind of the question whose `features` these are."""
        return Kind(self.kinds.best(features))

    def tag_probabilities(self, tokens: list[str], kind: Kind) -> np.ndarray:
        rows = [
            [self.word_features[f] for f in word_features(tokens, kind.value, i) if f in self.word_features]
            for i in range(len(tokens))
        ]
        return _softmax(np.array([self.tags.weights[row].sum(axis=0) for row in rows]) + self.tags.bias)

    def spans(self, question: str, kind: Kind) -> Spans:
        """The topic, anchor and other paper of `question`, each the words tagged so (`_run`)."""
        found = words(question)
        if not found:
            return Spans()
        probabilities = self.tag_probabilities([match.group() for match in found], kind)
        spans = {}
        for column, tag in enumerate(self.tags.labels):
            if tag in TAGS and (run := _run(probabilities[:, column], whole=TAGS[tag] == "topic")):
                spans[TAGS[tag]] = question[found[run[0]].start() : found[run[1]].end()]
        return Spans(**spans)

    @classmethod
    def load(cls, path: Path = READER_FILE) -> Reader:
        with np.load(path, allow_pickle=False) as data:
            if tuple(data["kinds"]) != tuple(kind.value for kind in KINDS):
                raise ValueError(f"{path} was trained on kinds {list(data['kinds'])}; retrain it")
            return cls(
                vocabulary={str(term): i for i, term in enumerate(data["terms"])},
                idf=data["idf"],
                kinds=Head.of(data, "kind", "kinds"),
                groups=Head.of(data, "group", "groups"),
                measures=Head.of(data, "measure", "measures"),
                word_features={str(feature): i for i, feature in enumerate(data["features"])},
                tags=Head.of(data, "tag", "tags"),
            )


@cache
def shipped() -> Reader:
    """The models shipped with the package, read once per process."""
    return Reader.load()


def _run(probabilities: np.ndarray, whole: bool, line: float = 0.5) -> tuple[int, int] | None:
    """The first and last index of the words tagged: from the first above `line` to the last (`whole`; a topic,
    which may hold a word the tagger doubts: "detecting dyslexia in children … using machine learning"), else
    the run of words above it whose probabilities sum highest (a paper's name). Chosen by five-fold
    cross-validation on the training questions (benchmarks/train_reader.py): topic F1 0.805 whole, 0.795 run."""
    above = np.flatnonzero(probabilities >= line)
    if whole:
        return (int(above[0]), int(above[-1])) if above.size else None
    best, total, start = None, 0.0, None
    for i, p in enumerate([*probabilities, 0.0]):
        if p >= line and start is None:
            start = i
        elif p < line and start is not None:
            if (run := float(probabilities[start:i].sum())) > total:
                best, total = (start, i - 1), run
            start = None
    return best
