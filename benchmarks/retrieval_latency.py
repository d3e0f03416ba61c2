"""Retrieval latency over an index, per question, as wall-clock and as this process's CPU time.

    RAG_VECTORSTORE__PATH=/tmp/rag-eval/ours python benchmarks/retrieval_latency.py [--mode hybrid] [--repeat 3]
    XDG_DATA_HOME=/work/fulldata python benchmarks/retrieval_latency.py --repeat 3   # an index `rag ingest` built

Wall-clock time is what a user waits; on a shared machine it includes time spent waiting for a
core, so the CPU time of the process is printed beside it (with one thread, `--threads 1`, the
two match on an idle machine). Also printed: the cost of the per-question freshness check of
the BM25 index, and of rebuilding it from the papers collection (`--rebuild`).
Target from issue 18: hybrid p50 <= 20 ms over the full list (11,669 papers), on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(len(ordered) * percent / 100 + 0.5) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=ROOT / "tests" / "eval" / "full_questions.jsonl")
    parser.add_argument("--config", default="extractive")
    parser.add_argument("--mode", default=None, help="override retrieval.mode")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1, help="passes over the questions")
    parser.add_argument("--threads", type=int, default=None, help="embedding threads (default: embedding.threads)")
    parser.add_argument("--rebuild", action="store_true", help="also time a rebuild of the BM25 index")
    args = parser.parse_args()

    from rag.core.config import with_overrides
    from rag.core.filters import Filters
    from rag.evaluation.questions import load_questions
    from rag.service import RagService

    embedding = {"threads": args.threads} if args.threads else {}
    config = with_overrides(args.config, retrieval={"mode": args.mode} if args.mode else {}, embedding=embedding)
    service = RagService(config)
    questions = [q.question for q in load_questions(args.questions)]
    service.retrieve("warm-up question about diffusion models", args.k, Filters())

    rebuild = None
    if args.rebuild:
        started = time.perf_counter()
        service.lexical.mark_stale()
        (service.lexical.folder / "current.json").unlink(missing_ok=True)
        service.lexical.current()
        rebuild = time.perf_counter() - started
    checks = []
    for _ in range(200):
        started = time.perf_counter()
        with service.reading() as state:  # what each question does first: has the index changed?
            service.lexical.current(state)
        checks.append((time.perf_counter() - started) * 1000)
    embed_wall = []
    for question in questions[:50]:
        started = time.perf_counter()
        service.embeddings.embed_query(question)
        embed_wall.append((time.perf_counter() - started) * 1000)

    wall, cpu = [], []
    for _ in range(args.repeat):
        for question in questions:
            started, started_cpu = time.perf_counter(), time.process_time()
            service.retrieve(question, args.k, Filters())
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
    print(
        f"{len(wall)} retrievals, mode {config.retrieval.mode}, k={args.k}, {service.index.paper_count():,} papers, "
        f"embedding {config.embedding.backend}, threads {config.embedding.threads or 'all cores'}"
    )
    p50 = statistics.median(wall)
    print(f"wall ms: p50 {p50:.1f}  p95 {percentile(wall, 95):.1f}  max {max(wall):.1f}  (target p50 <= 20 ms)")
    print(f"CPU ms:  p50 {statistics.median(cpu):.1f}  p95 {percentile(cpu, 95):.1f}")
    print(f"question embedding alone, wall ms: p50 {statistics.median(embed_wall):.1f}")
    print(f"index freshness check per question: p50 {statistics.median(checks):.2f} ms")
    if rebuild is not None:
        print(f"BM25 rebuild from the papers collection: {rebuild:.1f} s")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
