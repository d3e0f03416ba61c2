"""Train the relevance judge of lists and counts (rag/answering/membership.py) and measure it, per split.

    python -m benchmarks.train_judge --index /tmp/fullidx                 # train on the train split, write judge.json
    python -m benchmarks.train_judge --index /tmp/fullidx --no-write --report dev   # the dev split's figures only

The index must hold the full ICLR 2025 list. Topics: tests/eval/judge_{train,dev,test}.jsonl, one file a split, each
topic's every candidate judged by a blind writer (tests/eval/README.md). A row is a (topic, candidate) pair of the
product's own reading: the question's topic and filters as `understand` reads them, the candidates the retriever
finds for the topic over every paper the filters admit, labelled by the writer's gold set. The judge is a logistic
regression over `FEATURES`, standardised; `judge.json` records the hash of its training file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from rag.answering.membership import CANDIDATES, FEATURES, JUDGE_FILE, features
from rag.core.config import with_overrides
from rag.service import RagService

EVAL = Path(__file__).resolve().parent.parent / "tests" / "eval"
SPLITS = ("train", "dev", "test")


def topics(split: str) -> list[dict]:
    """The topics of one split, from its own file."""
    path = EVAL / f"judge_{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def rows_of(service: RagService, topic: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """The features and labels of a topic's candidates, as the product reads the question; and how many gold
    papers the candidates miss."""
    understood = service.understand(topic["question"])
    alternatives = understood.topic.alternatives if understood.topic else (understood.text,)
    gold = set(topic["gold"])
    xs, ys, found = [], [], set()
    for text in alternatives:
        with service.reading() as state:
            candidates = service.retriever.retrieve(text, CANDIDATES, understood.filters, state)
        xs.append(features(text, candidates))
        ys.append(np.asarray([source.paper_id in gold for source in candidates], dtype=float))
        found |= {source.paper_id for source in candidates}
    return np.vstack(xs), np.concatenate(ys), len(gold - found)


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> dict:
    """The logistic regression, each topic weighing as much as any other (`weight`: 1 / its candidates)."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=1.0, max_iter=2000).fit((x - mean) / scale, y, sample_weight=weight * len(y))
    return {
        "features": list(FEATURES),
        "weights": model.coef_[0].round(6).tolist(),
        "bias": round(float(model.intercept_[0]), 6),
        "mean": mean.round(6).tolist(),
        "scale": scale.round(6).tolist(),
    }


def held_out(data: list[tuple[np.ndarray, np.ndarray, int]]) -> None:
    """Each topic judged by a judge trained on the others: the mean recall, precision and count error of its
    candidates (papers the candidates miss aside)."""
    figures = []
    for i, (x, y, _) in enumerate(data):
        rest = [d for j, d in enumerate(data) if j != i]
        weight = np.concatenate([np.full(len(d[1]), 1 / len(d[1])) for d in rest])
        model = fit(np.vstack([d[0] for d in rest]), np.concatenate([d[1] for d in rest]), weight)
        z = ((x - np.asarray(model["mean"])) / np.asarray(model["scale"])) @ np.asarray(model["weights"])
        kept = 1 / (1 + np.exp(-(z + model["bias"]))) >= 0.5
        hit = float((kept & (y > 0)).sum())
        figures.append((hit / max(y.sum(), 1), hit / max(kept.sum(), 1), abs(kept.sum() - y.sum()) / max(y.sum(), 1)))
    recall, precision, error = np.mean(figures, axis=0)
    print(f"held out one topic at a time: recall {recall:.3f} precision {precision:.3f} count error {error:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder holding the full list")
    parser.add_argument("--no-write", action="store_true", help="report only, keep judge.json")
    parser.add_argument("--cv", action="store_true", help="each training topic held out in turn: its figures")
    args = parser.parse_args()
    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    data = [rows_of(service, topic) for topic in topics("train")]
    x, y = np.vstack([d[0] for d in data]), np.concatenate([d[1] for d in data])
    weight = np.concatenate([np.full(len(d[1]), 1 / len(d[1])) for d in data])
    print(f"train: {len(data)} topics, {len(y):,} candidates, {int(y.sum()):,} on the topic; "
          f"{sum(d[2] for d in data)} gold papers not among the candidates")  # fmt: skip
    if args.cv:
        held_out(data)
    model = fit(x, y, weight)
    train_file = (EVAL / "judge_train.jsonl").read_bytes()
    model["trained_on"] = {"file": "tests/eval/judge_train.jsonl", "sha256": hashlib.sha256(train_file).hexdigest()}
    for name, weight in zip(FEATURES, model["weights"]):
        print(f"  {name:18s} {weight:+.3f}")
    if not args.no_write:
        JUDGE_FILE.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {JUDGE_FILE}")


if __name__ == "__main__":
    main()
