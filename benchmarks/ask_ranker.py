"""Train the sentence-for-an-ask ranker (rag/answering/ask_ranker.py) on the dev splits, and write it.

    python benchmarks/ask_ranker.py --index /tmp/asks-idx \
        tests/eval/seed_questions.jsonl tests/eval/asks_questions.jsonl

For each answerable dev question with facts, the product retrieves and scores its candidate sentences
(`EvidencePicker.candidates`) as `rag --config extractive ask` does, takes the paper of the best sentence,
splits the question into its asks (one group of facts per ask: the question's `asks`, else all its
facts as one ask; a question whose asks and groups don't pair is skipped) and labels each sentence of
that paper for each ask: positive when it holds one of the ask's facts. Asks whose paper holds none
of their facts teach nothing and are left out.

A logistic regression (scikit-learn, balanced classes, C=0.1: of 0.1, 0.3, 1, 3 and 10 the best held-out top-1
when chosen, 0.860 against 0.825 to 0.842) over `FEATURES` is cross-validated by question
(GroupKFold): printed is the share of held-out asks whose top sentence holds a fact, for the learned
scores and for the hand weights (`hand_ask_score`). Then it is fitted on all and written to
`rag/answering/ask_ranker.json` (a few hundred bytes), unless `--dry-run`.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import UTC, datetime

import numpy as np

from rag.answering.ask_ranker import FEATURES, RANKER_FILE
from rag.answering.asks import hand_ask_score
from rag.answering.evidence import ranked
from rag.core.config import with_overrides
from rag.core.filters import Filters
from rag.evaluation.questions import load_questions
from rag.question.question import lookup
from rag.service import RagService
from rag.text.facts import contains_fact
from rag.text.naming import mentions, paper_name


def labelled_asks(service: RagService, files: list[str]) -> list[tuple[int, list[list[float]], list[bool]]]:
    """(question number, features of each sentence, whether it holds the ask's fact) for each dev ask."""
    picker = service.picker
    rows = []
    questions = [q for name in files for q in load_questions(name, "dev") if q.facts]
    for number, question in enumerate(questions):
        sources = service.retrieve(question.question, service.config.retrieval.k, Filters())
        asked = lookup(question.question)
        candidates = picker.candidates(asked, sources)
        if not candidates:
            continue
        best = ranked(candidates, picker.answer)[0].number
        name = paper_name(sources[best - 1])
        named = name if mentions(question.question, name) else ""
        own = [c for c in candidates if c.number == best]
        sentences = [c.sentence for c in own]
        asks = list(asked.asks)
        groups = question.fact_groups if len(asks) > 1 else (question.facts,)
        if len(groups) != len(asks):
            continue
        for facts, features in zip(groups, picker.ask_features(asks, own, named)):
            labels = [any(contains_fact(s, fact) for fact in facts) for s in sentences]
            if not any(labels):
                continue
            rows.append((number, features, labels))
    return rows


def top_hits(rows, score) -> float:
    """The share of asks whose best-scored sentence holds one of its facts."""
    hits = [labels[int(np.argmax([score(f) for f in features]))] for _, features, labels in rows]
    return sum(hits) / len(hits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="question files whose dev split trains the ranker")
    parser.add_argument("--index", required=True, help="an index holding the files' gold papers")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--dry-run", action="store_true", help="report only; don't write the file")
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    config = with_overrides("extractive", vectorstore={"path": args.index})
    rows = labelled_asks(RagService(config), args.files)
    groups = np.array([number for number, _, _ in rows])
    learned, hand = [], []
    by_question = defaultdict(list)
    for i, (number, _, _) in enumerate(rows):
        by_question[number].append(i)
    for train, test in GroupKFold(n_splits=args.folds).split(rows, groups=groups):
        model = fit([rows[i] for i in train], LogisticRegression)
        held_out = [rows[i] for i in test]
        learned.append(
            top_hits(held_out, lambda f, model=model: float(model.decision_function([f])[0])) * len(held_out)
        )
        hand.append(top_hits(held_out, lambda f: hand_ask_score(f, config.answer)) * len(held_out))
    print(f"{len(rows)} asks of {len(by_question)} dev questions, {sum(len(f) for _, f, _ in rows)} sentences")
    learned_share, hand_share = sum(learned) / len(rows), sum(hand) / len(rows)
    print(f"held-out top-1 holds the fact: learned {learned_share:.3f}, hand weights {hand_share:.3f}")
    model = fit(rows, LogisticRegression)
    weights = dict(zip(FEATURES, model.coef_[0].round(4).tolist()))
    print("weights:", weights, "bias:", round(float(model.intercept_[0]), 4))
    if not args.dry_run:
        RANKER_FILE.write_text(
            json.dumps(
                {
                    "features": list(FEATURES),
                    "weights": model.coef_[0].round(4).tolist(),
                    "bias": round(float(model.intercept_[0]), 4),
                    "trained": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC on the dev splits of "
                    + ", ".join(args.files)
                    + f"; {len(rows)} asks; held-out top-1 learned {sum(learned) / len(rows):.3f}, "
                    f"hand {sum(hand) / len(rows):.3f}",
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        print(f"wrote {RANKER_FILE}")


def fit(rows, model_class):
    features = [f for _, fs, _ in rows for f in fs]
    labels = [label for _, _, ls in rows for label in ls]
    return model_class(class_weight="balanced", C=0.1, max_iter=1000).fit(features, labels)


if __name__ == "__main__":
    main()
