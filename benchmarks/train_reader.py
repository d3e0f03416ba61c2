"""Train the learned question reader (rag/question/learned.py) and write the file the package ships with it.

    python benchmarks/train_reader.py            # cross-validated figures, then writes rag/question/reader.npz
    python benchmarks/train_reader.py --no-write
    python benchmarks/train_reader.py --hold-out-dev   # without the phrasing dev split, for a held-out
                                                       # `benchmarks/reader.py --split dev`; retrain after
    python benchmarks/train_reader.py --writers --no-write [--no-round5] [--no-round6]   # each writer held out

What it learns from, all dev or training data (the test splits are kept for reporting, benchmarks/reader.py):
- tests/eval/phrasing_train.jsonl (writers p3 to p10) and the dev split of tests/eval/phrasing_questions.jsonl
  (p1): kinds, the field a tally groups by, what a count measures (a count, a ranking, a share), and the
  spans of topic, anchor and other paper;
- tests/eval/phrasing_round5.jsonl (p11, p12): the same but the spans (`KINDS_ONLY`);
- tests/eval/phrasing_round6.jsonl (p13 to p15): all of it, spans too;
- a count labelled with no topic is learned as the tally it is (`labelled_kind`, benchmarks/reader.py);
- the dev splits of the other question sets, each question labelled with the kind today's rules read (those
  sets were written for the kinds the rules know): they teach the model when the rules are right.

The hyper-parameters (C) were chosen by five-fold cross-validation on this pool, which `--cv` reports again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from reader import labelled_kind  # benchmarks/reader.py, beside this script
from scipy.sparse import csr_matrix, hstack
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from rag.core.config import load_config
from rag.question.learned import (
    KINDS,
    READER_FILE,
    TEXT_WEIGHT,
    Reader,
    name_features,
    rules_features,
    word_features,
    words,
)
from rag.question.understand import understand
from rag.service import RagService

EVAL = Path(__file__).resolve().parent.parent / "tests" / "eval"
OTHER_SETS = ("asks", "blind", "conversation", "full", "how", "researcher", "seed", "list", "count", "overview")
GROUPS = {"area": "primary_area", "status": "status", "author": "authors", None: ""}
TAGS = {"topic": "T", "anchor": "A", "other": "B"}
C = 10.0
HELD_OUT = ("p1", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p13", "p14", "p15")  # those `by_writer` holds out
KINDS_ONLY = ("p11", "p12")  # the fifth round's writers: their spans cut list topics short (docs/evaluation.md)


def rows(name: str, split: str | None = None) -> list[dict]:
    found = [json.loads(line) for line in (EVAL / name).read_text(encoding="utf-8").splitlines()]
    return [row for row in found if split is None or row["split"] == split]


def pool(hold_out_dev: bool = False, round5: bool = True, round6: bool = True) -> list[dict]:
    """Every training question as {question, kind, group (tally only), spans (phrasing only), writer}; without the
    phrasing set's dev split if `hold_out_dev`, without the fifth or sixth round's questions unless asked."""
    phrasing = rows("phrasing_train.jsonl") + ([] if hold_out_dev else rows("phrasing_questions.jsonl", "dev"))
    phrasing += (rows("phrasing_round5.jsonl") if round5 else []) + (rows("phrasing_round6.jsonl") if round6 else [])
    out = [item_of(row) for row in phrasing]
    for name in OTHER_SETS:
        for row in rows(f"{name}_questions.jsonl", "dev"):
            read = understand(row["question"])
            group = (read.tally.field or "") if read.tally else None
            out.append(
                {"question": row["question"], "kind": read.kind.value, "group": group, "measure": None, "spans": None}
                | {"writer": name}
            )
    return out


def item_of(row: dict) -> dict:
    """A phrasing question as a training item; a count labelled with no topic is the tally it is, of a count."""
    kind = labelled_kind(row)
    return {
        "question": row["question"],
        "kind": kind,
        "group": GROUPS[row.get("group_by")] if kind == "tally" else None,
        "measure": row.get("measure") or ("count" if kind != row["kind"] else None),
        "spans": {slot: row[slot] for slot in TAGS if row.get(slot)} if row["writer"] not in KINDS_ONLY else None,
        "writer": row["writer"],
    }


def tagged(question: str, spans: dict[str, str]) -> list[str] | None:
    """The tag of each word of `question` ("O", or the span's tag), None when a span isn't found in it."""
    tokens = [match.group().lower() for match in words(question)]
    tags = ["O"] * len(tokens)
    for slot, span in spans.items():
        wanted = [match.group().lower() for match in words(span)]
        start = next((i for i in range(len(tokens) - len(wanted) + 1) if tokens[i : i + len(wanted)] == wanted), None)
        if start is None:
            return None
        tags[start : start + len(wanted)] = [TAGS[slot]] * len(wanted)
    return tags


class KindFeatures:
    """The kind model's features, as learned.Reader builds them: embedding, weighted tf-idf, the rules' kind, the
    names the question gives."""

    def __init__(self, questions: list[str]):
        self.tfidf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit(questions)

    def __call__(self, questions: list[str], embeddings: np.ndarray) -> csr_matrix:
        ruled = np.array([rules_features(understand(q).kind) for q in questions])
        named = np.array([name_features(q) for q in questions])
        text = TEXT_WEIGHT * self.tfidf.transform(questions)
        return hstack([csr_matrix(embeddings), text, csr_matrix(ruled), csr_matrix(named)]).tocsr()


def fitted(x, y) -> LogisticRegression:
    return LogisticRegression(C=C, max_iter=5000, class_weight="balanced").fit(x, y)


def word_rows(items: list[dict]) -> tuple[list[dict], list[str]]:
    """Each word of each question with spans, as the tagger's features and tag."""
    features, tags = [], []
    for item in items:
        tokens = [match.group() for match in words(item["question"])]
        for i, tag in enumerate(item["tags"]):
            features.append(dict.fromkeys(word_features(tokens, item["kind"], i), 1))
            tags.append(tag)
    return features, tags


def held_out_kinds(items: list[dict], vectors: np.ndarray, train: np.ndarray, held: np.ndarray) -> np.ndarray:
    """The kinds of the `held` questions, read by a kind model trained on the `train` ones (indices of `items`)."""
    kinds = np.array([item["kind"] for item in items])
    features = KindFeatures([items[i]["question"] for i in train])
    model = fitted(features([items[i]["question"] for i in train], vectors[train]), kinds[train])
    return model.predict(features([items[i]["question"] for i in held], vectors[held]))


def cross_validated(items: list[dict], vectors: np.ndarray) -> None:
    kinds = np.array([item["kind"] for item in items])
    phrasing = np.array([item["writer"] not in OTHER_SETS for item in items])
    right = np.zeros(len(items), bool)
    for train, held in StratifiedKFold(5, shuffle=True, random_state=0).split(vectors, kinds):
        right[held] = held_out_kinds(items, vectors, train, held) == kinds[held]
    print(f"kind, 5-fold: {right[phrasing].mean():.3f} of phrasing questions, {right[~phrasing].mean():.3f} of others")


def by_writer(items: list[dict], vectors: np.ndarray) -> None:
    """Kind accuracy on each phrasing writer's questions (p1, p3 to p10, p13 to p15) with the reader trained on
    everyone else's: how it reads a way of asking it has not seen. The fifth round's writers, whose spans are not
    learned, are in training only; the mean is given over the first nine (the figures of earlier rounds) too."""
    writers = np.array([item["writer"] for item in items])
    kinds = np.array([item["kind"] for item in items])
    right = {}
    for writer in (writer for writer in HELD_OUT if writer in writers):
        train, held = np.flatnonzero(writers != writer), np.flatnonzero(writers == writer)
        right[writer] = held_out_kinds(items, vectors, train, held) == kinds[held]
    print(" ".join(f"{writer} {held.mean():.3f}" for writer, held in right.items()))
    first = [right[writer].mean() for writer in HELD_OUT[:9]]
    print(f"kind, each writer held out: mean {np.mean([r.mean() for r in right.values()]):.3f} ({len(right)} writers)")
    print(f"  mean over p1, p3 to p10: {np.mean(first):.3f}")


def write(items: list[dict], vectors: np.ndarray) -> None:
    questions = [item["question"] for item in items]
    features = KindFeatures(questions)
    x = features(questions, vectors)
    kind_model = fitted(x, [item["kind"] for item in items])
    assert tuple(kind_model.classes_) == tuple(sorted(kind.value for kind in KINDS))
    order = [list(kind_model.classes_).index(kind.value) for kind in KINDS]
    grouped = [i for i, item in enumerate(items) if item["group"] is not None]
    group_model = fitted(x[grouped], [items[i]["group"] for i in grouped])
    measured = [i for i, item in enumerate(items) if item["measure"] is not None]
    measure_model = fitted(x[measured], [items[i]["measure"] for i in measured])
    spans = [
        item | {"tags": tags}
        for item in items
        if item["spans"] is not None and (tags := tagged(item["question"], item["spans"])) is not None
    ]
    word_x, word_y = word_rows(spans)
    vectorizer = DictVectorizer().fit(word_x)
    tag_model = LogisticRegression(C=C, max_iter=5000).fit(vectorizer.transform(word_x), word_y)
    np.savez_compressed(
        READER_FILE,
        kinds=np.array([kind.value for kind in KINDS]),
        terms=features.tfidf.get_feature_names_out().astype(str),
        idf=features.tfidf.idf_.astype(np.float32),
        kind_weights=kind_model.coef_[order].T.astype(np.float32),
        kind_bias=kind_model.intercept_[order].astype(np.float32),
        group_weights=group_model.coef_.T.astype(np.float32),
        group_bias=group_model.intercept_.astype(np.float32),
        groups=group_model.classes_.astype(str),
        measure_weights=measure_model.coef_.T.astype(np.float32),
        measure_bias=measure_model.intercept_.astype(np.float32),
        measures=measure_model.classes_.astype(str),
        features=vectorizer.get_feature_names_out().astype(str),
        tag_weights=tag_model.coef_.T.astype(np.float32),
        tag_bias=tag_model.intercept_.astype(np.float32),
        tags=tag_model.classes_.astype(str),
    )
    reader = Reader.load()
    predicted = kind_model.predict(x)
    read = [reader.kind(reader.features(q, understand(q).kind, v)) for q, v in zip(questions, vectors, strict=True)]
    same = np.mean(np.array(read) == predicted)
    print(f"wrote {READER_FILE} ({READER_FILE.stat().st_size:,} bytes): reads as scikit-learn does {same:.3f} of them")
    print(f"  from {len(items)} questions ({len(grouped)} tallies, {len(measured)} measures, {len(spans)} with spans)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cv", action="store_true", help="report five-fold cross-validated kind accuracy first")
    parser.add_argument("--no-write", dest="write", action="store_false")
    parser.add_argument("--hold-out-dev", action="store_true", help="leave the phrasing dev split out of training")
    parser.add_argument("--writers", action="store_true", help="report kind accuracy with each writer held out first")
    parser.add_argument("--no-round5", dest="round5", action="store_false", help="without phrasing_round5.jsonl")
    parser.add_argument("--no-round6", dest="round6", action="store_false", help="without phrasing_round6.jsonl")
    args = parser.parse_args()
    items = pool(args.hold_out_dev, args.round5, args.round6)
    embeddings = RagService(load_config("extractive")).embeddings  # the bundled model, as the product runs it
    vectors = np.array(embeddings.embed_documents([item["question"] for item in items]))
    if args.cv:
        cross_validated(items, vectors)
    if args.writers:
        by_writer(items, vectors)
    if args.write:
        write(items, vectors)


if __name__ == "__main__":
    main()
