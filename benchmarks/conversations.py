"""Five-turn conversations written by blind writers, asked turn by turn as `rag.answer` is asked with its history.

    python -m benchmarks.conversations --index /tmp/fullidx --split dev      # each turn, then the share right
    python -m benchmarks.conversations --index /tmp/fullidx --split test --quiet

Conversations: tests/eval/conversations_{dev,test}.jsonl (tests/eval/README.md). A turn is right when its answer
holds what its writer said a right answer holds: a look-up, follow-up or compare cites every gold paper and holds
every fact (case aside, as `rag eval` counts facts); a stored field cites the paper and states the stored value
(the decision, every author, the area, or for code a GitHub link or its absence); related papers are listed, the
paper in focus not among them (a place, "the first one", is the order the answer listed in, which the writer could
not know); a list lists at least half of the gold papers.
"""

from __future__ import annotations

import argparse
import html
import json
import re
from collections import Counter
from pathlib import Path

from rag.core.config import with_overrides
from rag.service import RagService
from rag.text.facts import contains_fact

EVAL = Path(__file__).resolve().parent.parent / "tests" / "eval"


def right(turn: dict, answer) -> bool:
    kind, text, gold = turn["kind"], answer.text, set(turn["gold"])
    cited = set(answer.cited) | {source.paper_id for source in answer.listed}
    if kind in ("lookup", "followup", "compare"):
        return gold <= cited and all(contains_fact(text, fact) for fact in turn.get("facts", []))
    if kind == "field":
        value = turn["value"]
        if isinstance(value, dict):  # a field over a list's papers
            return all(_states(turn["field"], v, text) for v in value.values()) and set(value) <= cited
        return gold <= cited and _states(turn["field"], value, text)
    if kind == "related":
        related = [source.paper_id for source in answer.sources[1:]]
        placed = re.search(r"\b(?:first|second|third|last)\b", turn["question"], re.IGNORECASE)  # the reader's order
        excluded = set() if placed else set(turn["not"])
        return answer.kind == "related" and not answer.refused and not excluded & set(related)
    if kind == "list":
        return len(gold & cited) >= len(gold) / 2
    raise ValueError(f"unknown turn kind {kind}")


def _states(field: str, value, text: str) -> bool:
    if field == "code":
        return ("github.com" in text) if value else ("no code link" in text or "github.com" not in text)
    if field == "authors":
        return all(name in text for name in value)
    return html.unescape(str(value)) in html.unescape(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder holding the full list")
    parser.add_argument("--split", required=True, choices=["dev", "test"])
    parser.add_argument("--quiet", action="store_true", help="the shares only")
    args = parser.parse_args()
    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    path = EVAL / f"conversations_{args.split}.jsonl"
    totals, rights = Counter(), Counter()
    for conversation in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
        history = []
        for turn in conversation["turns"]:
            answer = service.answer(turn["question"], history=history)
            history.append((turn["question"], answer.text))
            ok = right(turn, answer)
            totals[turn["kind"]] += 1
            rights[turn["kind"]] += ok
            if not args.quiet:
                shown = answer.text.replace("\n", " ")[:110]
                mark = "ok " if ok else "NO "
                print(f"{mark}{conversation['id']} {turn['kind']:8s} {turn['question'][:60]:60s} | {shown}")
    for kind in sorted(totals):
        print(f"{kind:9s} {rights[kind]:3d} of {totals[kind]:3d}")
    print(f"all       {sum(rights.values()):3d} of {sum(totals.values()):3d} turns right "
          f"({sum(rights.values()) / sum(totals.values()):.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
