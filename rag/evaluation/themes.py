"""`rag eval` on overview questions: do the themes separate papers the way their areas and a hand-made grouping do?

An overview set is JSON Lines of `{"question": ..., "kind": "overview", "split": "dev"|"test", "groups": {label:
[paper_id, ...]}}` (tests/eval/overview_questions.jsonl); `groups`, a grouping made by hand of some of the
topic's papers, is optional. Each question is answered, and its themes compared, over the papers it grouped,
with their stored primary areas, and over the papers it grouped that the hand-made grouping holds, with
that grouping: adjusted Rand index (ARI: 0 for a grouping no better than chance, 1 for the same grouping)
and purity (the share of papers whose theme's most common label is their own). Computed with numpy.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.core.jsonl import read_split

if TYPE_CHECKING:
    from rag.service import RagService

FIGURES = ("papers", "themes", "area_ari", "area_purity", "labelled", "hand_ari", "hand_purity", "answer_ms")


@dataclass(frozen=True)
class OverviewQuestion:
    question: str
    split: str = ""
    groups: dict[str, list[str]] = field(default_factory=dict)


def is_overview_set(path: str | Path) -> bool:
    """True when every question of the file is an overview question (`"kind": "overview"`)."""
    try:
        lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        return bool(lines) and all(json.loads(line).get("kind") == "overview" for line in lines)
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return False  # not an overview set: the usual loader reports what is wrong with it


def load_overview_questions(path: str | Path, split: str = "all") -> list[OverviewQuestion]:
    """The questions of one split ('dev', 'test' or 'all'); a line without a question is an InputError."""
    return read_split(path, split, overview_question, "overview question")


def overview_question(raw: dict) -> OverviewQuestion:
    return OverviewQuestion(str(raw["question"]), raw.get("split", ""), dict(raw.get("groups") or {}))


def adjusted_rand_index(first: list[str], second: list[str]) -> float:
    """The ARI of two labellings of the same items (Hubert and Arabie); 1.0 when both put everything together."""
    pairs = lambda counts: float(sum(n * (n - 1) / 2 for n in counts))  # noqa: E731
    table = Counter(zip(first, second))
    together = pairs(table.values())
    rows, columns = pairs(Counter(first).values()), pairs(Counter(second).values())
    expected = rows * columns / pairs([len(first)]) if len(first) > 1 else 0.0
    most = (rows + columns) / 2
    return 1.0 if most == expected else (together - expected) / (most - expected)


def purity(themes: list[str], labels: list[str]) -> float:
    """The share of items whose theme's most common label is their own label."""
    by_theme: dict[str, Counter[str]] = {}
    for theme, label in zip(themes, labels):
        by_theme.setdefault(theme, Counter())[label] += 1
    return sum(counts.most_common(1)[0][1] for counts in by_theme.values()) / max(len(themes), 1)


def measure(service: RagService, question: OverviewQuestion) -> dict[str, float | int | str | None]:
    """One question's figures (see FIGURES); an answer without themes has only its papers and time."""
    started = time.perf_counter()
    answer = service.answer(question.question)
    row: dict[str, float | int | str | None] = {key: None for key in FIGURES}
    row |= {"question": question.question, "split": question.split, "papers": len(answer.listed)}
    row |= {"answer_ms": round((time.perf_counter() - started) * 1000), "themes": len(answer.themes)}
    if not answer.themes:
        return row
    theme_of = {paper_id: str(n) for n, theme in enumerate(answer.themes) for paper_id in theme.paper_ids}
    area_of = {source.paper_id: source.primary_area for source in answer.sources}
    ids = list(theme_of)
    row["area_ari"] = round(adjusted_rand_index([theme_of[i] for i in ids], [area_of[i] for i in ids]), 3)
    row["area_purity"] = round(purity([theme_of[i] for i in ids], [area_of[i] for i in ids]), 3)
    hand = {paper_id: label for label, papers in question.groups.items() for paper_id in papers}
    labelled = [i for i in ids if i in hand]
    row["labelled"] = len(labelled) if question.groups else None
    if len(labelled) > 1:
        row["hand_ari"] = round(adjusted_rand_index([theme_of[i] for i in labelled], [hand[i] for i in labelled]), 3)
        row["hand_purity"] = round(purity([theme_of[i] for i in labelled], [hand[i] for i in labelled]), 3)
    return row


def overview_report(service: RagService, path: str | Path, split: str = "all") -> dict:
    """Every question's figures and their means (over the questions that have each figure)."""
    rows = [measure(service, question) for question in load_overview_questions(path, split)]
    means = {}
    for key in FIGURES:
        values = [float(v) for row in rows if isinstance(v := row[key], int | float)]
        means[key] = round(float(np.mean(values)), 3) if values else None
    times = sorted(float(row["answer_ms"] or 0) for row in rows)
    means["answer_ms_p50"] = times[(len(times) - 1) // 2]
    return {"questions": str(path), "split": split, "rows": rows, "means": means}


def report_table(report: dict) -> str:
    """The report for people: one line per question, then the means."""
    header = f"{'question':<62}" + "".join(f"{key:>12}" for key in FIGURES)
    cell = lambda value: "—" if value is None else f"{value:g}"  # noqa: E731
    lines = [f"{report['questions']} (split {report['split']}): overview themes", header]
    for row in report["rows"]:
        lines.append(f"{str(row['question'])[:61]:<62}" + "".join(f"{cell(row[key]):>12}" for key in FIGURES))
    lines.append(f"{'mean':<62}" + "".join(f"{cell(report['means'][key]):>12}" for key in FIGURES))
    lines.append(f"answer ms p50: {report['means']['answer_ms_p50']:g}")
    return "\n".join(lines)
