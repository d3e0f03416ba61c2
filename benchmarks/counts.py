"""Counting questions over the stored metadata, timed: the whole answer of each question of
tests/eval/count_questions.jsonl, after one warm-up, over an index you built.

    rag --config extractive --index /tmp/counts ingest sample.jsonl       # e.g. 2,000 records of the list
    python benchmarks/counts.py --index /tmp/counts [--repeat 5]

Prints p50 and p95 of the answer time for the questions without a topic (a count over the stored fields
only) and with one (the topic's papers drawn as a list draws them, then counted), the load average, and
each answer's first line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from machine import load_line

from rag.core.config import with_overrides
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder (extractive config)")
    parser.add_argument("--questions", type=Path, default=ROOT / "tests" / "eval" / "count_questions.jsonl")
    parser.add_argument("--repeat", type=int, default=3, help="passes over the questions")
    args = parser.parse_args()

    items = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    papers = service.stats()["papers"]
    service.answer(items[0]["question"])  # warm-up: the embedding model and the BM25 index loaded
    times: dict[str, list[float]] = {"no topic": [], "topic": []}
    for _ in range(args.repeat):
        for item in items:
            started = time.perf_counter()
            service.answer(item["question"])
            times["topic" if item["count"].get("topic") else "no topic"].append((time.perf_counter() - started) * 1000)
    print(f"{papers:,} papers; {len(items)} questions x {args.repeat}; load average {load_line()}")
    for kind, values in times.items():
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)))]
        print(f"{kind:9} p50 {statistics.median(values):7.1f} ms  p95 {p95:7.1f} ms  ({len(values)} answers)")
    for item in items:
        print(f"  {item['question'][:60]:60} {service.answer(item['question']).text.splitlines()[0][:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
