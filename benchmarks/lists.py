"""Questions about many papers, measured: filters read from words, list precision and recall, count error.

    python benchmarks/lists.py --index /path/to/full-list/index            # both splits, per question
    python benchmarks/lists.py --index ... --split dev --lines 0.8,0.9,1.0  # where to draw the line
    python benchmarks/lists.py --index ... --split test --ceiling           # could any one line count right?

The index must hold the full ICLR 2025 list (`rag ingest ../shared/corpus/iclr2025.jsonl.gz`, extractive
config). Questions: tests/eval/list_questions.jsonl (gold sets built by hand, see tests/eval/README.md).
"No filter invented" is checked on the lookup questions of full_questions.jsonl and
researcher_questions.jsonl of the same split. Latency is the whole answer, after one warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from rag.answering.lists import list_answer, topic_rankings
from rag.core.config import with_overrides
from rag.core.filters import Filters
from rag.question.understand import topic_of, understand
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "tests" / "eval"


def read(path: Path, split: str) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if split in ("all", row.get("split"))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder holding the full list")
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--lines", default="", help="list_min_evidence values to compare (default: the config's)")
    parser.add_argument("--quiet", action="store_true", help="only the summary, not each question")
    parser.add_argument(
        "--literal", action="store_true", help="the baseline: questions taken literally (k=5), the papers cited count"
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="the count questions under each of 550 lines: the best one line for the split itself, and per question",
    )
    args = parser.parse_args()

    questions = read(EVAL / "list_questions.jsonl", args.split)
    if args.ceiling:
        return ceiling(args, [q for q in questions if q["kind"] == "count"])
    lookups = [
        row for name in ("full_questions.jsonl", "researcher_questions.jsonl") for row in read(EVAL / name, args.split)
    ]
    print(f"load average {os.getloadavg()[0]:.2f}; {len(questions)} list/count/compare questions ({args.split})")
    filters_right = sum(understand(q["question"]).filters == Filters.of(**q["filters"]) for q in questions)
    stated = [q for q in questions if q["filters"]]
    stated_right = sum(understand(q["question"]).filters == Filters.of(**q["filters"]) for q in stated)
    invented = [row["question"] for row in lookups if not understand(row["question"]).filters.empty]
    kinds_right = sum(understand(q["question"]).kind == q["kind"] for q in questions)
    print(f"filters understood exactly: {stated_right}/{len(stated)} questions that state one")
    print(f"no filter invented: {len(lookups) - len(invented)}/{len(lookups)} lookup questions {invented or ''}")
    print(f"all filters right (stated or none): {filters_right}/{len(questions)}")
    print(f"kind right: {kinds_right}/{len(questions)}")

    lines = [float(x) for x in args.lines.split(",") if x] or [None]
    for line in lines:
        measure(args, questions, line)
    return 0


def measure(args: argparse.Namespace, questions: list[dict], line: float | None) -> None:
    overrides = {"vectorstore": {"path": str(args.index)}}
    if line is not None:
        overrides["questions"] = {"list_min_evidence": line}
    service = RagService(with_overrides("extractive", **overrides))
    service.answer(questions[0]["question"])  # warm-up: models and indexes loaded
    precisions, recalls, counts_within, seconds = [], [], [], []
    for question in questions:
        started = time.perf_counter()
        answer = service.answer(question["question"], understand=not args.literal)
        seconds.append(time.perf_counter() - started)
        gold = set(question["gold"])
        shown = {source.paper_id for source in answer.listed}
        if question["kind"] == "compare" or args.literal:
            shown = set(answer.cited)
        precision = len(shown & gold) / len(shown) if shown else 0.0
        recall = len(shown & gold) / len(gold)
        if question["kind"] != "compare":
            precisions.append(precision)
            recalls.append(recall)
        within = None
        if question["kind"] == "count":
            counted = len(shown) if args.literal else answer.count or 0
            within = abs(counted - len(gold)) <= 0.2 * len(gold)
            counts_within.append(within)
        if not args.quiet:
            print(
                f"  {question['split']:4} {question['kind']:7} gold {len(gold):2} shown {len(shown):2} "
                f"P {precision:.2f} R {recall:.2f}"
                + ("" if within is None else f" count {'ok' if within else 'off'}")
                + f" {seconds[-1] * 1000:5.0f} ms  {question['question'][:70]}"
            )
    setting = service.config.questions.list_min_evidence
    print(
        f"line {setting:.2f}: list precision {statistics.mean(precisions):.3f}, recall {statistics.mean(recalls):.3f}"
        f" ({len(precisions)} list/count questions); counts within 20%: {sum(counts_within)}/{len(counts_within)};"
        f" answer p50 {statistics.median(seconds) * 1000:.0f} ms, max {max(seconds) * 1000:.0f} ms"
    )


def ceiling(args: argparse.Namespace, questions: list[dict]) -> int:
    """Counts under every line of a grid (list_min_evidence × list_relative_evidence × list_relative_bm25),
    from the same rankings the answer uses: how many questions the best single line, picked on this
    split itself, counts within 20%, and how many lines fit each question."""
    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    grid = [
        {"list_min_evidence": low, "list_relative_evidence": relative / 100, "list_relative_bm25": bm25 / 10}
        for low in (0.7, 0.8, 0.9, 1.0, 1.1)
        for relative in range(50, 101, 5)
        for bm25 in range(10)
    ]
    settings = [with_overrides("extractive", questions=line) for line in grid]
    within = []  # per question: for each line, whether its count is within 20%
    for question in questions:
        asked = service.understand(question["question"])
        topic = asked.topic or topic_of(asked)
        applied = asked.applied(Filters(), frozenset())
        rankings = topic_rankings(topic, applied, service.retrieve, service.config)
        gold = len(question["gold"])
        counts = [
            list_answer(topic, asked.kind, applied, rankings, config, question="").count or 0 for config in settings
        ]
        within.append([abs(count - gold) <= 0.2 * gold for count in counts])
        print(
            f"  gold {gold:3} counted {min(counts)}–{max(counts)}; lines that fit {sum(within[-1]):3}/{len(grid)}"
            f"  {question['question'][:70]}"
        )
    best = max(range(len(grid)), key=lambda line: sum(row[line] for row in within))
    right = sum(row[best] for row in within)
    print(f"best single line on this split: {grid[best]}: {right}/{len(within)} counts within 20%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
