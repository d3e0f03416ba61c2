"""Overview answers, timed: how long "what are the main approaches to X?" takes, whole, after a warm-up.

    python benchmarks/overview.py --index /tmp/full-overview                 # the questions of the overview set
    python benchmarks/overview.py --index ... --runs 3 --split dev
    python benchmarks/overview.py --index ... --config smollm2 --split dev   # with the bundled model's sentences

Each question of tests/eval/overview_questions.jsonl is answered `--runs` times with the extractive config
(or `--config smollm2`: the bundled model writes a sentence per theme, kept when checked)
(a list question asked first loads the model and the index, and is not counted); printed: each
question's median, its papers and themes, and the median (p50) and p95 over all the timed answers. The
target (issue 30): p50 <= 2 s on the full list, on a 2-core machine. The load average is printed before
and after: other processes slow every answer.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from machine import load_line  # benchmarks/machine.py, beside this script

from rag.core.config import with_overrides
from rag.evaluation.themes import load_overview_questions
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent
WARM_UP = "Which papers are about reinforcement learning?"  # a list answer: loads what every answer needs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder (the full list, for the target)")
    parser.add_argument("--questions", type=Path, default=ROOT / "tests" / "eval" / "overview_questions.jsonl")
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--config", default="extractive", help="extractive, or smollm2: the bundled model writes")
    parser.add_argument(
        "--runs", type=int, default=1, help="timed answers per question (repeats reuse cached sentence vectors)"
    )
    args = parser.parse_args()
    store = {"mode": "persistent", "path": str(args.index)}
    service = RagService(with_overrides(args.config, vectorstore=store))
    questions = load_overview_questions(args.questions, args.split)
    print(f"load average before: {load_line()}; index: {service.stats()['papers']} papers")
    service.answer(WARM_UP)  # the model, the index, BM25 loaded; no overview's sentences embedded yet
    timed = []
    for question in questions:
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            answer = service.answer(question.question)
            times.append(time.perf_counter() - started)
        timed += times
        print(
            f"{statistics.median(times):6.2f} s  {len(answer.listed):3} papers {len(answer.themes):2} themes "
            f"{sum(bool(theme.summary) for theme in answer.themes):2} model sentences  "
            f"{question.question}"
        )
    timed.sort()
    p95 = timed[max(0, -(-len(timed) * 95 // 100) - 1)]
    print(f"overview answer: p50 {statistics.median(timed):.2f} s, p95 {p95:.2f} s over {len(timed)} answers")
    print(f"load average after: {load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
