"""Train the sentence-for-an-ask ranker (rag/answering/ask_ranker.py) on the dev splits, measure it on groups held
out, and write it.

    python benchmarks/ask_ranker.py --index /tmp/fullidx tests/eval/seed_questions.jsonl \
        tests/eval/asks_questions.jsonl tests/eval/blind_questions.jsonl

For each answerable dev question with facts, the product retrieves and scores its candidate sentences
(`EvidencePicker.candidates`) as `rag --config extractive ask` does, takes the paper of the best sentence,
splits the question into its asks (one group of facts per ask: the question's `asks`, else all its
facts as one ask; a question whose asks and groups don't pair is skipped) and labels each sentence of
that paper for each ask: positive when it holds one of the ask's facts. Asks whose paper holds none
of their facts teach nothing and are left out.

A logistic regression (scikit-learn, balanced classes, C=0.1: of 0.1, 0.3, 1, 3 and 10 the best held-out top-1
when chosen on the seed and asks sets, 0.860 against 0.825 to 0.842) over `FEATURES`. Each group of dev questions
(a blind writer, or another file) is held out in turn, the ranker trained on the others: printed are the share of
the group's asks of questions of two or more asks whose top sentence holds a fact, by the hand weights
(`hand_ask_score`) and learned, and those questions answered through `RagService.answer` both ways: fact recall,
every ask answered and the median answer length. The test split is never read. Then the ranker is fitted on all
and written to `rag/answering/ask_ranker.json` (a few hundred bytes), unless `--dry-run`.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.answering.ask_ranker import FEATURES, RANKER_FILE, AskRanker
from rag.answering.asks import hand_ask_score
from rag.answering.evidence import ranked
from rag.core.config import with_overrides
from rag.core.filters import Filters
from rag.evaluation.questions import Question, ServiceSystem, evaluate, question_of
from rag.question.question import lookup
from rag.service import RagService
from rag.text.facts import contains_fact
from rag.text.naming import mentions, paper_name

Asks = list[tuple[list[list[float]], list[bool]]]  # for each ask: its sentences' features and which hold a fact


def dev_questions(files: list[str]) -> list[tuple[str, Question]]:
    """Every dev question with facts, each with its group: the blind writer, or the file's set."""
    rows = []
    for name in files:
        for line in Path(name).read_text(encoding="utf-8").splitlines():
            raw = json.loads(line)
            if raw.get("split") == "dev" and raw.get("facts") and raw.get("gold"):
                rows.append((raw.get("writer") or Path(name).name.split("_")[0], question_of(raw)))
    return rows


def labelled_asks(service: RagService, question: Question) -> Asks:
    """For each ask of the question whose paper holds one of its facts: its sentences' features and labels."""
    picker = service.picker
    sources = service.retrieve(question.question, service.config.retrieval.k, Filters())
    asked = lookup(question.question)
    candidates = picker.candidates(asked, sources)
    if not candidates:
        return []
    best = ranked(candidates, picker.answer)[0].number
    name = paper_name(sources[best - 1])
    named = name if mentions(question.question, name) else ""
    own = [c for c in candidates if c.number == best]
    asks = list(asked.asks)
    groups = question.fact_groups if len(asks) > 1 else (question.facts,)
    if len(groups) != len(asks):
        return []
    rows = []
    for facts, features in zip(groups, picker.ask_features(asks, own, named)):
        labels = [any(contains_fact(c.sentence, fact) for fact in facts) for c in own]
        if any(labels):
            rows.append((features, labels))
    return rows


def top_hits(rows: Asks, score) -> float:
    """The share of asks whose best-scored sentence holds one of its facts."""
    return float(np.mean([labels[int(np.argmax([score(f) for f in features]))] for features, labels in rows]))


def answered(service: RagService, questions: list[Question]) -> tuple[float, float, int]:
    """Fact recall and every ask answered, as `rag eval --answers` counts them, and the median answer length."""
    report = evaluate(ServiceSystem(service, answers=True), questions, service.config.retrieval.k)
    figures = report.metrics()
    length = int(np.median([len(row.text or "") for row in report.rows]))
    return float(figures["fact_recall"] or 0), float(figures["every_ask_answered"] or 0), length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", help="question files whose dev split trains the ranker")
    parser.add_argument("--index", required=True, help="an index holding the files' gold papers")
    parser.add_argument("--dry-run", action="store_true", help="report only; don't write the file")
    args = parser.parse_args()

    store = {"path": args.index}
    hand = with_overrides("extractive", vectorstore=store, answer={"ask_scorer": "weights"})
    service = RagService(hand)
    learned = RagService(with_overrides("extractive", vectorstore=store, answer={"ask_scorer": "learned"}))
    questions = dev_questions(args.files)
    rows = [(group, question, labelled_asks(service, question)) for group, question in questions]
    print(f"{sum(len(asks) for *_, asks in rows)} asks of {len(rows)} dev questions")
    for held in sorted({group for group, *_ in rows}, key=lambda group: (not group.startswith("w"), group)):
        model = fit([ask for group, _, asks in rows if group != held for ask in asks])
        several = [q for group, q, _ in rows if group == held and len(q.asks) > 1]
        out = [ask for group, q, asks in rows if group == held and len(q.asks) > 1 for ask in asks]
        if not out:
            continue
        ranker = AskRanker(tuple(model.coef_[0]), float(model.intercept_[0]))
        learned.picker._ranker = ranker
        by_hand, by_ranker = answered(service, several), answered(learned, several)
        print(
            f"held out {held} ({len(several)} questions, {len(out)} asks): top-1 holds a fact, hand -> learned "
            f"{top_hits(out, lambda f: hand_ask_score(f, hand.answer)):.3f} -> {top_hits(out, ranker.score):.3f}; "
            "fact recall, every ask answered, median length: "
            + " -> ".join(f"{facts:.3f}, {asks:.3f}, {length}" for facts, asks, length in (by_hand, by_ranker))
        )
    model = fit([ask for *_, asks in rows for ask in asks])
    weights = model.coef_[0].round(4).tolist()
    print("weights:", dict(zip(FEATURES, weights)), "bias:", round(float(model.intercept_[0]), 4))
    if not args.dry_run:
        trained = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC on the dev splits of " + ", ".join(
            Path(name).name for name in args.files
        )
        data = {"features": list(FEATURES), "weights": weights, "bias": round(float(model.intercept_[0]), 4)}
        RANKER_FILE.write_text(json.dumps(data | {"trained": trained}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RANKER_FILE}")


def fit(rows: Asks):
    from sklearn.linear_model import LogisticRegression

    features = [f for fs, _ in rows for f in fs]
    labels = [label for _, ls in rows for label in ls]
    return LogisticRegression(class_weight="balanced", C=0.1, max_iter=1000).fit(features, labels)


if __name__ == "__main__":
    main()
