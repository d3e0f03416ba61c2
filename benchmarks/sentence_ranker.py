"""Train the ranker of an answering paper's sentences (rag/answering/sentence_ranker.py) on the dev splits, measure it
writer by writer on the blind set, and write it.

    python benchmarks/sentence_ranker.py --index /tmp/fullidx            # the whole list's index

For each dev question with facts (the blind set's and the other sets' named below), the product reads, retrieves
and scores its candidate sentences as `rag --config extractive ask` does; the paper of the best sentence, when it
is a gold paper, gives one row per sentence: its features and whether it holds one of the question's facts.

Measured leaving one blind writer out at a time (trained on everything else, the other sets included): the share
of the held-out writer's facts that a paper's first 1, 2 and 3 sentences hold, by the learned order and by the
hand score; then the held-out writer's questions answered through `RagService.answer` with the hand order
(`answer.sentence_choice: weights`) and with that fold's ranker, at each `answer.sentence_gate` of `LEARNED` (how sure
the ranker must be for a further sentence to join): fact recall against the mean answer length. The test split is
never read. Then the ranker is fitted on all the rows and written to rag/answering/sentence_ranker.json, unless
`--dry-run`.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.answering.evidence import ranked
from rag.answering.refusal import refusal
from rag.answering.sentence_ranker import FEATURES, RANKER_FILE, SentenceRanker, sentence_features
from rag.core.config import with_overrides
from rag.question.followup import Standalone
from rag.question.question import read
from rag.service import RagService
from rag.text.facts import contains_fact, missing_facts

ROOT = Path(__file__).resolve().parent.parent
BLIND = ROOT / "tests" / "eval" / "blind_questions.jsonl"
OTHERS = [ROOT / "tests" / "eval" / f"{name}_questions.jsonl" for name in ("seed", "full", "researcher", "how", "asks")]
LEARNED = [("learned", gate) for gate in (1.0, 0.4, 0.3, 0.2)]  # answer.sentence_gate; 1.0: none joins by the gate
C = 1.0  # 0.1, 0.3 and 1.0 gave the four blind writers' held-out top-2 within 0.004 of each other; 1.0 the best


def dev_questions() -> list[dict]:
    """Every dev question with facts, each with its `group`: the blind writer, or the other set's name."""
    rows = []
    for path in [BLIND, *OTHERS]:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("split") == "dev" and row.get("facts") and row.get("gold"):
                rows.append(row | {"group": row.get("writer") or path.name.split("_")[0]})
    return rows


def labelled(service: RagService, row: dict) -> tuple[np.ndarray, list[list[bool]], list[float]] | None:
    """The features of the answering paper's sentences, which facts each holds, and their hand scores; None when
    the question is not a look-up, is refused, or its best sentence is not a gold paper's."""
    understood = service.understand(row["question"])
    sources = service.retrieve(understood.text)
    asked = read(Standalone(row["question"]), understood)
    if understood.kind != "lookup" or refusal(asked, sources, service.config.retrieval):
        return None
    candidates = service.picker.candidates(asked, sources)
    if not candidates:
        return None
    number = ranked(candidates, service.picker.answer)[0].number
    if sources[number - 1].paper_id not in row["gold"]:
        return None
    own = [c for c in candidates if c.number == number]
    holds = [[contains_fact(c.sentence, fact) for fact in row["facts"]] for c in own]
    return (
        np.asarray(sentence_features(own, service.picker.answer, asked.wants.why)),
        holds,
        [c.score(service.picker.answer) for c in own],
    )


def fit(items: list[tuple[np.ndarray, list[list[bool]], list[float]]]):
    from sklearn.linear_model import LogisticRegression

    features = np.vstack([item[0] for item in items])
    labels = np.concatenate([np.asarray(item[1]).any(axis=1) for item in items])
    return LogisticRegression(C=C, class_weight="balanced", max_iter=3000).fit(features, labels)


def held(holds: list[list[bool]], scores, top: int) -> float:
    """The share of the question's facts the `top` best-scored sentences hold."""
    order = np.argsort(-np.asarray(scores), kind="stable")[:top]
    return float(np.asarray(holds)[order].any(axis=0).mean())


def recall(service: RagService, rows: list[dict], order: str, gate: float = 1.0) -> tuple[float, float]:
    """Fact recall (the share of answers holding every fact, as `rag eval` counts it) and the mean answer length
    (characters) of the rows' answers under `answer.sentence_choice` and `answer.sentence_gate`."""
    service.picker.answer = service.picker.answer.model_copy(update={"sentence_choice": order, "sentence_gate": gate})
    found, lengths = [], []
    for row in rows:
        answer = service.answer(row["question"])
        found.append(not answer.refused and not missing_facts(answer.text, row["facts"]))
        lengths.append(len(answer.text))
    return float(np.mean(found)), float(np.mean(lengths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True, help="an index of the whole list")
    parser.add_argument("--dry-run", action="store_true", help="report only; don't write the file")
    args = parser.parse_args()
    service = RagService(with_overrides("extractive", vectorstore={"path": args.index}))
    rows = dev_questions()
    items = [(row, labelled(service, row)) for row in rows]
    kept = [(row, item) for row, item in items if item is not None]
    print(f"{len(kept)} of {len(rows)} dev questions answered from a gold paper; features {list(FEATURES)}")
    writers = sorted({row["group"] for row in rows}, key=lambda group: (not group.startswith("w"), group))
    for writer in writers:
        model = fit([item for row, item in kept if row["group"] != writer])
        out = [item for row, item in kept if row["group"] == writer]
        tops = []
        for top in (1, 2, 3):
            hand = np.mean([held(holds, scores, top) for _, holds, scores in out])
            learned = np.mean([held(holds, model.decision_function(features), top) for features, holds, _ in out])
            tops.append(f"top-{top} {hand:.3f} -> {learned:.3f}")
        service.picker._sentence_ranker = SentenceRanker(tuple(model.coef_[0]), float(model.intercept_[0]))
        questions = [row for row in rows if row["group"] == writer]
        answers = [recall(service, questions, order, gate) for order, gate in (("weights", 1.0), *LEARNED)]
        print(
            f"held out {writer} ({len(out)} of {len(questions)} questions): facts held, hand -> learned: "
            + ", ".join(tops)
            + "; answers' fact recall (length), hand -> learned with gates "
            + ", ".join(str(gate) for _, gate in LEARNED)
            + ": "
            + " -> ".join(f"{found:.3f} ({length:.0f})" for found, length in answers)
        )
    model = fit([item for _, item in kept])
    weights = model.coef_[0].round(4).tolist()
    print("weights:", dict(zip(FEATURES, weights)), "bias:", round(float(model.intercept_[0]), 4))
    if not args.dry_run:
        trained = (
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {len(kept)} dev questions of {BLIND.name} and "
            + ", ".join(path.name for path in OTHERS)
        )
        data = {"features": list(FEATURES), "weights": weights, "bias": round(float(model.intercept_[0]), 4)}
        RANKER_FILE.write_text(json.dumps(data | {"trained": trained}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RANKER_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
