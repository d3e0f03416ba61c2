"""How well a learned reader could tell a question's kind: a logistic regression (scikit-learn) on the
bundled MiniLM's embedding of the question, trained on tests/eval/phrasing_train.jsonl (writers p3, p4),
its C chosen on the dev split of tests/eval/phrasing_questions.jsonl (p1), then trained on train and dev
and reported once on the test split (p2). Not in the product yet (issue 41); this says what it would gain.

    python benchmarks/kind_reader.py            # dev accuracy per C, then test accuracy per kind

Today's reader, through the product: `python benchmarks/reader.py --index IDX --split all`.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from rag.core.config import load_config
from rag.service import RagService

EVAL = Path(__file__).resolve().parent.parent / "tests" / "eval"
CHOICES = (0.3, 1.0, 3.0, 10.0, 30.0)


def labelled(name: str, split: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in (EVAL / name).read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if split is None or row["split"] == split]


def fitted(vectors: np.ndarray, kinds: list[str], c: float) -> LogisticRegression:
    return LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(vectors, kinds)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    train, dev = labelled("phrasing_train.jsonl"), labelled("phrasing_questions.jsonl", "dev")
    test = labelled("phrasing_questions.jsonl", "test")
    embeddings = RagService(load_config("extractive")).embeddings  # the index's model; no index is opened

    def embedded(rows: list[dict]) -> np.ndarray:
        return np.array(embeddings.embed_documents([row["question"] for row in rows]))

    kinds = lambda rows: [row["kind"] for row in rows]  # noqa: E731
    train_x, dev_x, test_x = embedded(train), embedded(dev), embedded(test)
    accuracy = {c: float(np.mean(fitted(train_x, kinds(train), c).predict(dev_x) == kinds(dev))) for c in CHOICES}
    for c, share in accuracy.items():
        print(f"C={c:g}: dev kind accuracy {share:.3f} ({len(train)} training questions)")
    best = max(accuracy, key=lambda c: accuracy[c])
    model = fitted(np.vstack([train_x, dev_x]), kinds(train) + kinds(dev), best)
    predicted, gold = model.predict(test_x), np.array(kinds(test))
    print(f"test kind accuracy {np.mean(predicted == gold):.3f} (C={best:g}, trained on train and dev)")
    for kind in sorted(set(gold)):
        chosen = gold == kind
        print(f"  {kind:<13} {np.mean(predicted[chosen] == kind):.2f} of {chosen.sum()}")
    confused = Counter((g, p) for g, p in zip(gold, predicted, strict=True) if g != p)
    print("most confused (asked as, read as):", ", ".join(f"{g}->{p} {n}" for (g, p), n in confused.most_common(6)))


if __name__ == "__main__":
    main()
