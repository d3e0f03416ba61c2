"""How much of its topic a list or count holds when the topic is a term ("optimal transport", "neural ODEs"):
recall against a gold set derived from the words, on the phrasing set's list and count questions (issue 41).

    python benchmarks/term_recall.py --index /tmp/fullidx --split test
    python benchmarks/term_recall.py --index /tmp/fullidx --split dev --json /tmp/terms.json

A question counts when its labelled topic is a term of at most three words. Its gold set is every record of
the full list whose title or abstract holds the term (case aside, a hyphen or a space alike, a plural "s"
allowed) and that its labelled filters admit (status, area, an author's name in the author list); a question
with a code filter is left out (the list stores no code field). The answer
is `RagService.answer` as a user asks it; recall is the share of the gold set it lists, and "within the
cap" the same over at most `questions.list_cap` gold papers (a list shows at most that many). A term also
names papers that only mention it, so the gold set is generous and recall a floor.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from pathlib import Path

from rag.core.config import with_overrides
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent
PHRASINGS = ROOT / "tests" / "eval" / "phrasing_questions.jsonl"
CORPUS = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"
TERM_WORDS = 3


def term_pattern(term: str) -> re.Pattern:
    """The term as words in any case, a hyphen or a space between them, a plural "s" allowed at the end."""
    words = [re.escape(word) for word in re.split(r"[\s-]+", term.strip()) if word]
    return re.compile(r"\b" + r"[\s-]".join(words) + r"s?\b", re.IGNORECASE)


def admitted(record: dict, filters: dict) -> bool:
    """Whether the labelled filters admit the record (has_code, which the list does not store, is not read)."""
    authors = " ".join(record.get("authors") or []).lower()
    return (
        (not filters.get("status") or record["status"] in filters["status"])
        and (not filters.get("area") or record["primary_area"] in filters["area"])
        and all(name.lower() in authors for name in filters.get("author") or [])
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index of the full list")
    parser.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", type=Path, help="also write every row here")
    args = parser.parse_args()
    with gzip.open(args.corpus, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    items = [json.loads(line) for line in PHRASINGS.read_text().splitlines() if line.strip()]
    items = [
        item
        for item in items
        if (args.split == "all" or item["split"] == args.split)
        and item["kind"] in ("list", "count")
        and not item.get("history")
        and item.get("topic")
        and len(item["topic"].split()) <= TERM_WORDS
        and "has_code" not in (item.get("filters") or {})  # the list stores no code field to derive gold from
    ]
    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    cap = service.config.questions.list_cap
    rows = []
    for item in items:
        pattern = term_pattern(item["topic"])
        gold = {
            r["id"]
            for r in records
            if admitted(r, item.get("filters") or {}) and pattern.search(f"{r['title']} {r['abstract']}")
        }
        if not gold:
            continue
        listed = {source.paper_id for source in service.answer(item["question"]).listed}
        found = len(listed & gold)
        rows.append(
            {
                "question": item["question"],
                "term": item["topic"],
                "gold": len(gold),
                "listed": len(listed),
                "recall": found / len(gold),
                "within_cap": found / min(len(gold), cap),
                "precision": found / len(listed) if listed else 0.0,
            }
        )
        print(f"{found:3d} of {len(gold):3d} gold, {len(listed):3d} listed | {item['question']}")
    for key in ("recall", "within_cap", "precision"):
        print(f"{key}: mean {statistics.mean(row[key] for row in rows):.3f} over {len(rows)} questions")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
