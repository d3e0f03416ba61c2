"""Query latency and retrieval quality per embedding backend and retrieval mode, side by side.

    # the full list: indexes built by benchmarks/ingest.py --keep (or `rag ingest`), one per backend
    python benchmarks/query.py --index onnx-int8=/tmp/rag-full-int8 --index torch=/tmp/rag-full-torch
    # the seed abstracts: small indexes built on the spot in a temporary folder
    python benchmarks/query.py --corpus seeds/iclr2025_seeds.jsonl \\
        --questions tests/eval/seed_questions.jsonl --backends torch,onnx-int8

Every question of the set goes through `RagService.retrieve` (after one warm-up question, which
loads the model and the BM25 index); hit@1, recall@k and MRR come from rag.evaluation.questions, latency is
per question, p50 and p95. An index folder with no papers is filled from --corpus first (resumable).
Other processes slow latency down: the load average is printed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from machine import load_line  # benchmarks/machine.py, beside this script

from rag.core.config import with_overrides
from rag.evaluation.questions import ServiceSystem, evaluate, load_questions, metrics_table
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", action="append", default=[], help="BACKEND=FOLDER (repeatable)")
    parser.add_argument("--backends", default="", help="with --corpus and no --index: backends to build indexes for")
    parser.add_argument("--corpus", type=Path, help="papers to ingest into an index folder that is empty")
    parser.add_argument("--questions", type=Path, default=ROOT / "tests" / "eval" / "full_questions.jsonl")
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--modes", default="dense,hybrid", help="retrieval modes to measure")
    parser.add_argument("--config", default="extractive")
    parser.add_argument("-k", type=int, default=5)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="rag-query-"))
    indexes = dict(item.split("=", 1) for item in args.index)
    for backend in filter(None, args.backends.split(",")):
        indexes.setdefault(backend, str(scratch / backend))
    if not indexes:
        parser.error("give --index BACKEND=FOLDER, or --corpus with --backends")
    questions = load_questions(args.questions, args.split)
    print(f"load average before: {load_line()}", flush=True)
    reports = []
    for backend, folder in indexes.items():
        for mode in args.modes.split(","):
            service = service_for(args.config, backend, Path(folder), mode)
            if service.index.paper_count() == 0:
                if not args.corpus:
                    raise SystemExit(f"{folder} holds no {backend} index; give --corpus to build it")
                service.ingest([args.corpus], progress=True)
            service.retrieve("warm-up question about neural networks")
            reports.append(
                evaluate(
                    ServiceSystem(service, name=f"{backend} {mode}"),
                    questions,
                    args.k,
                    label=args.questions.name,
                    split=args.split,
                )
            )
            print(f"  {backend} {mode}: done ({service.index.paper_count()} papers)", flush=True)
    print(f"load average after: {load_line()}\n")
    print(metrics_table(reports))
    return 0


def service_for(config: str, backend: str, folder: Path, mode: str) -> RagService:
    embedding = {"backend": backend, "onnx_cache": str(ROOT / ".rag" / "models")}
    return RagService(
        with_overrides(config, vectorstore={"path": str(folder)}, embedding=embedding, retrieval={"mode": mode})
    )


if __name__ == "__main__":
    sys.exit(main())
