"""Time to embed one question, per embedding backend: what each question pays before retrieval.

Each backend embeds every seed question alone (as a question is), `--repeat` passes, after one
warm-up call; the backends take turns question by question, so both see the same load.

    python benchmarks/embed_question.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from rag.core.config import EmbeddingConfig
from rag.index.embeddings import make_embeddings

QUESTIONS = Path(__file__).resolve().parent.parent / "tests" / "eval" / "seed_questions.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="onnx-int8,onnx", help="comma-separated embedding.backend values")
    parser.add_argument("--repeat", type=int, default=3, help="passes over the questions")
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line]
    models = {backend: make_embeddings(EmbeddingConfig(backend=backend)) for backend in args.backends.split(",")}
    timings: dict[str, list[float]] = {backend: [] for backend in models}
    for model in models.values():
        model.embed_query("warm up")
    for _ in range(args.repeat):
        for question in questions:
            for backend, model in models.items():
                start = time.perf_counter()
                model.embed_query(question)
                timings[backend].append((time.perf_counter() - start) * 1000)
    for backend, times in timings.items():
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{backend:10} median {statistics.median(times):5.1f} ms, p90 {p90:5.1f} ms ({len(times)} questions)")


if __name__ == "__main__":
    main()
