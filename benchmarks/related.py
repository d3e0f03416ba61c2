"""Related papers, measured: precision at 5 of the fused ranking against plain nearest neighbours on the
embedding and BM25 alone, on the hand-labelled sets of tests/eval/related_questions.jsonl.

    python benchmarks/related.py --index /tmp/full-related             # an index of the full list
    python benchmarks/related.py --index /tmp/related-sample           # builds the sample's index first if needed
    python benchmarks/related.py --index /tmp/related-sample --split dev --rrf 5,10,60 --bm25 0.5,1,2

ms_p50: one call of `find_related` (ranking, and the sentences that tie each paper embedded), after a warm-up.

The labels were judged over the full list and over a topical sample of it (`sample_records`: the papers of
eleven topics, up to 120 each, and 500 others drawn with a fixed seed; 1,413 papers), so the index measured
holds one of them: with a fresh --index folder this script writes the sample and ingests it (extractive
config, about 6 minutes on 2 cores). `unjudged`: papers ranked in a first five that nobody judged (counted
as not related). `--rrf` and `--bm25` try other fusion constants (rag/retrieval/related.py).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
from pathlib import Path

import rag.retrieval.related as related_ranking
from rag.core.config import with_overrides
from rag.evaluation.related import load_related_sets, measure, ranked_by, related_table
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "eval" / "related_questions.jsonl"
FULL_LIST = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"
TOPICS = {
    "molecule": r"molecul\w* (?:generation|design)|drug design|synthesizab",
    "unlearning": r"unlearning",
    "distill_diffusion": (
        r"(?:distill\w*).{0,60}diffusion|diffusion.{0,60}distill|one-step (?:generat|diffusion)|consistency model"
    ),
    "moe": r"mixture[- ]of[- ]experts|\bMoE\b",
    "kvcache": r"KV[- ]cache",
    "speculative": r"speculative decoding",
    "merging": r"model merging|merging models|merge (?:fine-tuned )?models",
    "watermark": r"watermark",
    "protein": r"protein (?:design|structure|language model)",
    "tabular": r"tabular",
    "timeseries": r"time[- ]series forecasting",
    "hanabi": r"zero-shot coordination|ad hoc teamwork|hanabi",
}
PER_TOPIC, OTHERS, SEED = 120, 500, 30


def sample_records(full_list: Path) -> list[dict]:
    """The topical sample the labels were judged over, in the list's order."""
    with gzip.open(full_list, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    picked: dict[str, str] = {}
    taken = dict.fromkeys(TOPICS, 0)
    for row in rows:
        text = f"{row['title']} {row['abstract']}"
        for name, pattern in TOPICS.items():
            if re.search(pattern, text, re.IGNORECASE) and taken[name] < PER_TOPIC and row["id"] not in picked:
                picked[row["id"]] = name
                taken[name] += 1
    random.seed(SEED)
    for row in random.sample([row for row in rows if row["id"] not in picked], OTHERS):
        picked[row["id"]] = "other"
    return [row for row in rows if row["id"] in picked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index of the full list or the topical sample")
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--full-list", type=Path, default=FULL_LIST, help="the ICLR 2025 list the sample is drawn from")
    parser.add_argument("--rrf", default="", help="fusion constants to try, e.g. 5,10,60 (default: the shipped one)")
    parser.add_argument("--bm25", default="", help="BM25 weights in fusion to try, e.g. 0.5,1,2")
    args = parser.parse_args()

    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    if service.stats()["papers"] == 0:
        sample = args.index.with_suffix(".jsonl")
        sample.write_text("".join(json.dumps(row) + "\n" for row in sample_records(args.full_list)), encoding="utf-8")
        print(service.ingest([sample]).summary())
    sets = load_related_sets(LABELS, args.split)
    print(f"load average {os.getloadavg()[0]:.2f}; {service.stats()['papers']} papers in {args.index}")
    ranked_by(service)(sets[0].paper, 5)  # warm-up: the model and the BM25 index loaded, so ms_p50 is a call's
    results = {method: measure(ranked_by(service, method), sets) for method in ("dense", "bm25", "fused")}
    print(related_table(str(LABELS.relative_to(ROOT)), args.split, results))
    for rrf in [int(value) for value in args.rrf.split(",") if value]:
        for weight in [float(value) for value in args.bm25.split(",") if value] or [related_ranking.BM25_WEIGHT]:
            related_ranking.RRF_K, related_ranking.BM25_WEIGHT = rrf, weight
            tried = measure(ranked_by(service, "fused"), sets)
            figures = f"precision@5 {tried['precision@5']:.3f}, mrr {tried['mrr']:.3f}"
            print(f"fused, rrf_k {rrf}, bm25 weight {weight}: {figures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
