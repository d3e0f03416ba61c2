"""`rag eval` on counting questions (tests/eval/count_questions.jsonl): is every figure exact?

A line is `{"question", "split", "kind": "tally", "count": {"by", "filters", "top", "fewest", "topic"}}`:
what the question asks, written by hand (the field grouped by, or null for a plain count; the filters it
states, as list_questions.jsonl writes them; the top N it asks for). The expected figures are not
in the file: they are counted here, when the set runs, directly over the metadata the index stores (the
Chroma papers collection, read paper by paper, filtered in plain Python), so they hold for any index. A
question with a topic is counted over the papers its answer drew for the topic (what draws them is the
list answer's line, measured in docs/evaluation.md); this checks the counting, and that every drawn
paper passes the filters.

A question is exact when the answer is a count by the expected field with the expected filters, its
total is the direct count, every row is the direct count of its group, the rows are in order, and no
group left out of the table has more papers than its last row.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.core.errors import InputError
from rag.core.jsonl import SPLITS
from rag.core.types import Kind
from rag.evaluation.questions import _percentile

if TYPE_CHECKING:
    from rag.core.types import Answer
    from rag.service import RagService

TABLE_ROWS = 25  # as rag/answering/tally.py shows, when no top N is asked for


@dataclass
class CountRow:
    question: str
    split: str
    exact: bool
    problems: list[str]
    ms: float


@dataclass
class CountReport:
    questions: str
    split: str
    rows: list[CountRow] = field(default_factory=list)

    def metrics(self) -> dict[str, Any]:
        times = sorted(row.ms for row in self.rows)
        exact = sum(row.exact for row in self.rows)
        return {
            "questions": len(self.rows),
            "exact": exact,
            "exact_match": round(exact / len(self.rows), 4) if self.rows else None,
            "answer_ms_p50": _percentile(times, 50),
            "answer_ms_p95": _percentile(times, 95),
        }

    def to_dict(self) -> dict[str, Any]:
        rows = [vars(row) for row in self.rows]
        return {"questions": self.questions, "split": self.split, "metrics": self.metrics(), "rows": rows}

    def table(self, misses: bool = False) -> str:
        """The figures for people; with `misses`, each inexact question and what was off."""
        m = self.metrics()
        lines = [
            f"{self.questions} (split {self.split}): {m['questions']} counting questions",
            f"exact match          {m['exact_match']:.3f} ({m['exact']}/{m['questions']})",
            f"answer ms p50        {m['answer_ms_p50']:.0f}",
            f"answer ms p95        {m['answer_ms_p95']:.0f}",
        ]
        if misses:
            missed = [row for row in self.rows if not row.exact]
            lines += [f"  {row.split:4} {row.question[:80]}: {'; '.join(row.problems)}" for row in missed]
        return "\n".join(lines)


def is_count_set(path: str | Path) -> bool:
    """Whether a question file is a set of counting questions (its first line has a `count` spec)."""
    try:
        with Path(path).open(encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), "")
        return "count" in json.loads(first)
    except (OSError, ValueError, UnicodeDecodeError, TypeError):
        return False  # load_questions reports what is wrong with it


def evaluate_counts(service: RagService, path: str | Path, split: str = "all") -> CountReport:
    """Answer every counting question of one split and check its figures against a direct count."""
    if split not in SPLITS:
        raise InputError(f"unknown split '{split}'; valid: {', '.join(SPLITS)}")
    try:
        items = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read counting questions from {path}: {err}") from None
    items = [item for item in items if split in ("all", item.get("split"))]
    if not items:
        raise InputError(f"{path} holds no questions in the '{split}' split")
    service.ensure_index()
    papers = [metadata for _, _, metadata in service.index.iter_papers()]
    report = CountReport(str(path), split)
    for item in items:
        started = time.perf_counter()
        answer = service.answer(item["question"])
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        problems = check(answer, item["count"], papers)
        report.rows.append(CountRow(item["question"], item.get("split", ""), not problems, problems, elapsed))
    return report


def check(answer: Answer, spec: dict[str, Any], papers: list[dict[str, Any]]) -> list[str]:
    """What is off in a count's answer, against a direct count over `papers` (empty when it is exact)."""
    table = answer.table
    if answer.kind != Kind.TALLY or table is None:
        return [f"not counted (kind {answer.kind})"]
    by = spec.get("by") or "status"
    problems = [] if table.field == by else [f"grouped by {table.field}, not {by}"]
    if answer.filters != spec.get("filters", {}):
        problems.append(f"filters {answer.filters}, not {spec.get('filters', {})}")
    drawn = {source.paper_id for source in answer.sources}
    topic = spec.get("topic")
    counted = [p for p in papers if admits(spec.get("filters", {}), p) and (not topic or p["paper_id"] in drawn)]
    if topic and len(counted) != len(drawn):
        problems.append(f"{len(drawn) - len(counted)} drawn papers fail the filters")
    if table.counted != len(counted):
        problems.append(f"counted {table.counted}, directly {len(counted)}")
    groups: Counter[str] = Counter()
    for paper in counted:
        value = str(paper.get(by) or "")
        # A paper counts once per group: two authors of one paper who share a name are one author's paper.
        groups.update(set(filter(None, value.split("; ") if by == "authors" else [value.replace("&amp;", "&")])))
    expected = sorted(groups.items(), key=lambda item: (item[1] if spec.get("fewest") else -item[1], item[0]))
    rows = list(table.rows)
    if rows != expected[: spec.get("top") or TABLE_ROWS]:
        wrong = [f"{name}: {number} (directly {groups[name]})" for name, number in rows if groups[name] != number]
        problems.append("rows differ from the direct count" + (f": {', '.join(wrong[:3])}" if wrong else " in order"))
    return problems


def admits(filters: dict[str, Any], paper: dict[str, Any]) -> bool:
    """Whether a stored paper passes a question's filters, matched in plain Python."""
    if filters.get("status") and paper.get("status") not in filters["status"]:
        return False
    if filters.get("primary_area") and paper.get("primary_area") not in filters["primary_area"]:
        return False
    said = str(filters.get("author", "")).casefold()
    if said and said not in [name.strip().casefold() for name in str(paper.get("authors", "")).split(";")]:
        return False  # the exact name, case aside: the figure the product's person match is checked against
    return "has_code" not in filters or bool(paper.get("has_code")) == filters["has_code"]
