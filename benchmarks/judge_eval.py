"""Lists and counts over the whole conference, measured on the blind writers' judged topics, one split at a time.

    python -m benchmarks.judge_eval --index /tmp/fullidx --split dev         # per topic, then the means
    python -m benchmarks.judge_eval --index /tmp/fullidx --split test --quiet
    python -m benchmarks.judge_eval --index /tmp/fullidx --split dev --questions tests/eval/list_questions.jsonl

Each question is asked as a user asks it (`RagService.answer`, the extractive config), with `questions.membership`
'judged' (every candidate judged, the default) and, as the baseline of the same run, 'ranked' (the line over the
top `questions.list_cap` of one search, the default before); the papers each answer lists (every one, not the
first page) are compared with the writer's gold set: recall, precision, and the count's error relative to the gold
set's size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks.train_judge import topics
from rag.core.config import with_overrides
from rag.core.types import Kind
from rag.service import RagService


def scores(listed: set[str], gold: set[str]) -> tuple[float, float, float]:
    hit = len(listed & gold)
    recall = hit / len(gold) if gold else 1.0
    precision = hit / len(listed) if listed else (1.0 if not gold else 0.0)
    return recall, precision, abs(len(listed) - len(gold)) / max(len(gold), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder holding the full list")
    parser.add_argument("--split", required=True, choices=["train", "dev", "test"])
    parser.add_argument("--quiet", action="store_true", help="the means only")
    parser.add_argument(
        "--questions", type=Path, help="another file of list and count questions with gold sets (list_questions.jsonl)"
    )
    args = parser.parse_args()
    ranked = RagService(
        with_overrides("extractive", vectorstore={"path": str(args.index)}, questions={"membership": "ranked"})
    )
    judged = RagService(
        with_overrides("extractive", vectorstore={"path": str(args.index)}, questions={"membership": "judged"})
    )
    for service in (ranked, judged):
        service.answer("warm up: which papers study grokking?")
    rows, seconds = [], []
    for topic in questions(args.questions, args.split) if args.questions else topics(args.split):
        gold = set(topic["gold"])
        before = scores({source.paper_id for source in ranked.answer(topic["question"]).listed}, gold)
        start = time.perf_counter()
        answer = judged.answer(topic["question"])
        seconds.append(time.perf_counter() - start)
        now = scores({source.paper_id for source in answer.listed}, gold)
        rows.append((before, now, answer.kind == Kind(topic["kind"]), filters_right(answer, topic)))
        if not args.quiet:
            figures = f"before R {before[0]:.2f} P {before[1]:.2f} err {before[2]:.2f}"
            figures += f" | now R {now[0]:.2f} P {now[1]:.2f} err {now[2]:.2f} listed {answer.count}"
            print(f"{topic['question'][:70]:70s} gold {len(gold):3d} | {figures}")
    for label, at in (("before (top of one search)", 0), ("now (every paper judged)", 1)):
        recall, precision, error = (statistics.mean(row[at][i] for row in rows) for i in range(3))
        within = sum(row[at][2] <= 0.10 for row in rows)
        print(f"{label:28s} recall {recall:.3f} precision {precision:.3f} count error {error:.3f}; "
              f"counts within 10%: {within} of {len(rows)}")  # fmt: skip
    p90 = sorted(seconds)[int(0.9 * len(seconds))]
    print(f"kind right {sum(row[2] for row in rows)} of {len(rows)}; filters right {sum(row[3] for row in rows)}; "
          f"answer p50 {statistics.median(seconds):.2f} s, p90 {p90:.2f} s")  # fmt: skip


def questions(path: Path, split: str) -> list[dict]:
    """The list and count questions of one split of another file of the same shape."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if row.get("split") == split and row.get("kind") in ("list", "count")]


def filters_right(answer, topic: dict) -> bool:
    said = {key: sorted(value) if isinstance(value, list) else value for key, value in answer.filters.items()}
    gold = {key: sorted(value) if isinstance(value, list) else value for key, value in topic["filters"].items()}
    gold = {key: value for key, value in gold.items() if value}
    return said == gold


if __name__ == "__main__":
    main()
