"""Could another weighting of the evidence score answer better? The sentence choice, and its ceiling.

    python benchmarks/evidence.py --index /path/to/index tests/eval/researcher_questions.jsonl --split test

Each question goes through the product as `rag --config extractive eval --answers` takes it: its kind
read, then for a lookup retrieval, refusal and every candidate sentence's score parts, computed once.
The extractive answer is then built under each weighting of a grid around the defaults
(`answer.word_weight`, `kind_bonus`, `novelty_weight`, `proposal_bonus`, `background_penalty`,
`rank_penalty`, `evidence_margin`, `other_paper_margin`). List, count and compare questions are answered
once, as the product does; their answers don't depend on these weights.

Printed: fact recall and citation precision under the defaults (the same as `rag eval --answers`), under
the best single weighting for each (chosen on the questions given: a ceiling, not a setting), and the
share of answerable questions for which some three candidate sentences hold every fact (what a perfect
choice of sentences could reach with these passages).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from rag.answering.evidence import EvidencePicker, ranked
from rag.answering.quoting import extractive_answer
from rag.answering.refusal import refusal
from rag.core.config import with_overrides
from rag.core.types import Answer
from rag.question.followup import Standalone
from rag.question.question import read
from rag.service import RagService
from rag.text.facts import contains_fact, missing_facts

GRID = {  # around the weights before and after docs/answers.md's fourth round; the defaults are scored apart
    "word_weight": (0.25, 0.5, 1.0),
    "kind_bonus": (0.0, 0.15, 0.3),
    "novelty_weight": (0.0, 0.2, 0.4),
    "proposal_bonus": (0.0, 0.1, 0.2),
    "background_penalty": (0.0, 0.2, 0.4),
    "rank_penalty": (0.0, 0.05, 0.2, 0.4),
    "evidence_margin": (0.15, 0.3),
    "other_paper_margin": (0.0, 0.03, 0.15),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("questions", type=Path, help="a question set of tests/eval/ (with facts)")
    parser.add_argument("--index", type=Path, required=True, help="the index folder the set is asked of")
    parser.add_argument("--split", default="test", choices=["dev", "test", "all"])
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    rows = [row for row in rows if args.split == "all" or row.get("split") == args.split]
    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    prepared = [prepare(service, row) for row in rows]

    lines = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]
    results = [(line, score(service, prepared, line)) for line in lines]
    default = score(service, prepared, {})
    print(f"{args.questions.name} ({args.split}, {len(rows)} questions), fact recall / citation precision:")
    print(f"  defaults:                       {default[0]:.3f} / {default[1]:.3f}")
    for name, index in (("fact recall", 0), ("citation precision", 1)):
        line, best = max(results, key=lambda result: (result[1][index], result[1][1 - index]))
        print(f"  best line for {name + ':':20} {best[0]:.3f} / {best[1]:.3f}  {line}")
    answerable = [item for item in prepared if item["facts"] and item.get("candidates") is not None]
    reachable = sum(within_three(item) for item in answerable)
    print(f"  some three candidate sentences hold every fact: {reachable}/{len(answerable)} lookup questions")
    return 0


def prepare(service: RagService, row: dict) -> dict:
    """What the answer is built from, computed once: a fixed answer for a list, count or compare
    question or a refusal; else the sources and the candidate sentences' score parts."""
    item = {"question": row["question"], "gold": row.get("gold") or [], "facts": row.get("facts") or []}
    understood = service.understand(row["question"])
    sources = service.retrieve(understood.text)
    asked = read(Standalone(row["question"]), understood)
    if understood.kind != "lookup" or refusal(asked, sources, service.config.retrieval):
        answer = service.answer(row["question"])
        return item | {"fixed": (answer.refused, answer.text, answer.cited)}
    candidates = service.picker.candidates(asked, sources)
    return item | {"asked": asked, "sources": sources, "candidates": candidates}


def score(service: RagService, prepared: list[dict], line: dict) -> tuple[float, float]:
    """Fact recall and citation precision of the extractive answers under one weighting."""
    config = with_overrides("extractive", answer=line)
    picker = EvidencePicker(service.embeddings, config.answer, config.retrieval)
    facts_found, precision = [], []
    for item in prepared:
        refused, text, cited = item.get("fixed") or answered(picker, item)
        if not item["gold"]:
            continue
        if item["facts"]:
            facts_found.append(not refused and not missing_facts(text, item["facts"]))
        if cited and not refused:
            precision.append(len(set(cited) & set(item["gold"])) / len(cited))
    return sum(facts_found) / len(facts_found), sum(precision) / len(precision)


def answered(picker: EvidencePicker, item: dict) -> tuple[bool, str, list[str]]:
    asked, sources = item["asked"], item["sources"]
    evidence = picker.chosen(asked, ranked(item["candidates"], picker.answer), sources)
    if not evidence:
        return True, "", []
    text = extractive_answer(asked.text, evidence, sources)
    return False, text, Answer(asked.text, text, sources).cited


def within_three(item: dict) -> bool:
    """Whether some three candidate sentences (or fewer) hold every fact between them."""
    holding = [frozenset(fact for fact in item["facts"] if contains_fact(c.sentence, fact)) for c in item["candidates"]]
    useful = {facts for facts in holding if facts}
    return any(
        frozenset().union(*chosen) == frozenset(item["facts"])
        for size in (1, 2, 3)
        for chosen in itertools.combinations(useful, size)
    )


if __name__ == "__main__":
    raise SystemExit(main())
