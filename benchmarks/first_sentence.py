"""Time to the first checked sentence, on a warm service over the seed index.

A stream shows a sentence only once it is checked against the sources it cites (issue 28, item 3),
so what a reader waits for is the first checked sentence, not the model's first token. For each
answerable seed question (the dev split by default) it measures, through `RagService.stream_answer`:
  - first: question asked -> the first piece of text (a checked sentence);
  - full: question asked -> the final `Answer`;
and counts answers the model wrote alone, the model's sentences followed by the abstract's best one,
and the extractive answer standing for the model's.

    python benchmarks/first_sentence.py                        # the smollm2 (bundled model) and extractive configs
    python benchmarks/first_sentence.py --config smollm2 --split all --per-question

The index is built from the bundled seeds in a temporary folder unless --index names one. Each config
answers one question first, not counted (model load, caches). Targets: p50 <= 1.5 s with the bundled
model, <= 0.5 s extractive, on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from machine import load_line

from rag.core.config import with_overrides
from rag.core.types import Answer
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "tests" / "eval" / "seed_questions.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--config", action="append", help="config name or path (repeatable; default: smollm2 and extractive)"
    )
    parser.add_argument("--questions", default=str(QUESTIONS), help="JSON Lines with question and gold")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--index", help="an existing index folder (default: seeds ingested into a temp folder)")
    parser.add_argument("--per-question", action="store_true", help="print one row per question")
    args = parser.parse_args()

    lines = Path(args.questions).read_text(encoding="utf-8").splitlines()
    questions = [q for q in map(json.loads, filter(str.strip, lines)) if q["gold"]]
    questions = [q["question"] for q in questions if args.split in ("all", q["split"])]
    print(f"load before: {load_line()}")
    with tempfile.TemporaryDirectory() as scratch:
        index = args.index or str(Path(scratch) / "index")
        for config in args.config or ["smollm2", "extractive"]:
            service = RagService(with_overrides(config, vectorstore={"path": index}))
            service.ensure_index()
            service.answer(questions[0])  # first call: the model loads, caches fill
            rows = [measure(service, question) for question in questions]
            if args.per_question:
                for row in rows:
                    print(f"  {row['first']:6.2f} {row['full']:6.2f}  {row['by']:<22} {row['question'][:70]}")
            summary(service.config.name, rows)
    print(f"load after: {load_line()}")
    return 0


def measure(service: RagService, question: str) -> dict:
    started = time.perf_counter()
    first = None
    for piece in service.stream_answer(question):
        if isinstance(piece, Answer):
            answer = piece
        elif first is None:
            first = time.perf_counter() - started
    full = time.perf_counter() - started
    if answer.refused:
        by = "refused"
    elif answer.answered_by == "model":
        by = "model + abstract's sentence" if answer.replaced else "model"
    else:
        by = f"{answer.answered_by}{' (for the model)' if answer.replaced else ''}"
    return {"question": question, "first": full if first is None else first, "full": full, "by": by}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(name: str, rows: list[dict]) -> None:
    kinds = {kind: sum(row["by"] == kind for row in rows) for kind in dict.fromkeys(row["by"] for row in rows)}
    # Lists and refusals use no model and take milliseconds: the lookups alone say what a model answer costs.
    lookups = [row for row in rows if row["by"] not in ("list", "count", "compare", "refused")]
    print(f"{name}: {', '.join(f'{k}: {n}' for k, n in kinds.items())}; load {load_line()}")
    for label, chosen in ((f"all {len(rows)} questions", rows), (f"the {len(lookups)} lookups", lookups)):
        firsts, fulls = [row["first"] for row in chosen], [row["full"] for row in chosen]
        print(
            f"  {label}: first checked sentence p50 {statistics.median(firsts):.2f} s, "
            f"p90 {percentile(firsts, 0.9):.2f} s; full answer p50 {statistics.median(fulls):.2f} s, "
            f"p90 {percentile(fulls, 0.9):.2f} s"
        )


if __name__ == "__main__":
    raise SystemExit(main())
