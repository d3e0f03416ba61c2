"""Answer latency of the bundled model per llama.cpp thread count, on a busy CPU or an idle one.

Two services over one seed index, one per `llm.n_threads` value, answer the same answerable seed
questions in turn (question 1 by each, then question 2 by each, ...), so both see the same load.
`--busy N` starts N processes that each keep one core busy for the whole run (what a concurrent
ingest or a second request does to a laptop); `--busy 0` measures an idle machine.

    python benchmarks/threads.py --busy 1 --threads 1,2
    python benchmarks/threads.py --busy 0 --threads 1,2 --limit 20
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path

from rag.core.config import with_overrides
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent


QUESTIONS = ROOT / "tests" / "eval" / "seed_questions.jsonl"


def spin() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default="1,2", help="llm.n_threads values to compare")
    parser.add_argument("--busy", type=int, default=1, help="processes keeping one core busy each")
    parser.add_argument("--limit", type=int, default=20, help="questions (answerable seed questions, file order)")
    args = parser.parse_args()
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    questions = [q["question"] for q in questions if q["gold"]][: args.limit]
    counts = [int(n) for n in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        services = {}
        for n in counts:
            config = with_overrides("smollm2", vectorstore={"path": folder}, llm={"n_threads": n})
            services[n] = RagService(config)
        services[counts[0]].ensure_index()
        for service in services.values():
            service.answer(questions[0])  # load the model; not counted
        busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
        for process in busy:
            process.start()
        times: dict[int, list[float]] = {n: [] for n in counts}
        try:
            for question in questions:
                for n, service in services.items():
                    started = time.perf_counter()
                    service.answer(question)
                    times[n].append(time.perf_counter() - started)
        finally:
            for process in busy:
                process.terminate()
    print(
        f"{len(questions)} seed questions, {args.busy} busy processes, {os.cpu_count()} cores, "
        f"load average before the end {os.getloadavg()[0]:.1f}"
    )
    print(f"{'n_threads':>10} {'p50 s':>7} {'p90 s':>7} {'max s':>7}")
    for n, values in times.items():
        values.sort()
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{n:>10} {statistics.median(values):>7.2f} {p90:>7.2f} {values[-1]:>7.2f}")


if __name__ == "__main__":
    main()
