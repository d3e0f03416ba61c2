"""Three-way retrieval comparison on one question set: our retrieval, BM25 alone, and the textbook
LangChain pipeline (see textbook.py), side by side, per split.

    python benchmarks/eval_full.py                       # full ICLR list, indexes cached in /tmp/rag-eval
    python benchmarks/eval_full.py --corpus seeds/iclr2025_seeds.jsonl \\
        --questions tests/eval/seed_questions.jsonl --cache /tmp/rag-eval-seed

Indexes are built on first use into --cache (ingest is resumable: rerun after an interruption)
and reused afterwards. Latency is retrieval only, after one warm-up question; the load average
is printed because other processes on the machine slow every figure down.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rag.core.config import with_overrides
from rag.evaluation.questions import Outcome, ServiceSystem, evaluate, load_questions, metrics_table
from rag.ingest.papers import load_papers
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent


FULL_LIST = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"


class TextbookSystem:
    """The textbook pipeline as an evaluation system: ranks only, no refusal rule."""

    def __init__(self, baseline):
        self.baseline = baseline
        self.name = baseline.name

    def search(self, question: str, k: int) -> Outcome:
        return Outcome(self.baseline.search(question, k))


def service_in_mode(config: str, index: Path, mode: str) -> RagService:
    return RagService(with_overrides(config, vectorstore={"path": str(index)}, retrieval={"mode": mode}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=FULL_LIST)
    parser.add_argument("--questions", type=Path, default=ROOT / "tests" / "eval" / "full_questions.jsonl")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rag-eval"), help="where the indexes are kept")
    parser.add_argument("--config", default="extractive", help="our config (retrieval settings)")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--splits", default="dev,test,all")
    parser.add_argument("--modes", default="hybrid,dense,bm25", help="our retrieval modes to run")
    parser.add_argument("--ingest", action="store_true", help="bring our index in step with --corpus first")
    parser.add_argument("--no-textbook", action="store_true", help="skip the textbook baseline")
    parser.add_argument("--json", type=Path, help="also write every report here")
    args = parser.parse_args()

    index = args.cache / "ours"
    services = {mode: service_in_mode(args.config, index, mode) for mode in args.modes.split(",")}
    first = next(iter(services.values()))
    if first.index.paper_count() == 0 or args.ingest:
        print(f"building our index in {index} ...", file=sys.stderr)
        print(first.ingest([args.corpus], progress=True).summary(), file=sys.stderr)
    systems = []
    for mode, service in services.items():
        service.embeddings = first.embeddings  # one model in memory
        label = {"bm25": "BM25 alone"}.get(mode, f"ours ({mode})")
        systems.append(ServiceSystem(service, name=label))
    if not args.no_textbook:
        from textbook import TextbookBaseline

        baseline = TextbookBaseline(args.cache / "textbook")
        if baseline.paper_count() < sum(1 for _ in load_papers([args.corpus])):
            print(f"building the textbook index in {args.cache / 'textbook'} ...", file=sys.stderr)
            baseline.build(args.corpus, log=lambda line: print(line, file=sys.stderr))
        systems.append(TextbookSystem(baseline))

    for system in systems:  # load models and indexes before anything is timed
        system.search("warm-up question about diffusion models", args.k)
    load_before = os.getloadavg()
    questions = load_questions(args.questions)
    everything = [evaluate(system, questions, args.k, label=args.questions.name) for system in systems]
    reports = {split: [report.subset(split) for report in everything] for split in args.splits.split(",")}
    load_after = os.getloadavg()
    for split_reports in reports.values():
        print(metrics_table(split_reports), end="\n\n")
    print(
        f"load average (1/5/15 min) before: {' '.join(f'{x:.1f}' for x in load_before)}, "
        f"after: {' '.join(f'{x:.1f}' for x in load_after)} on {os.cpu_count()} CPUs; "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    if args.json:
        dump = {split: [r.to_dict() for r in split_reports] for split, split_reports in reports.items()}
        args.json.write_text(json.dumps({"load": [load_before, load_after], "reports": dump}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
