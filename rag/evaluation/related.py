"""Measure related papers against hand-labelled sets: `rag eval tests/eval/related_questions.jsonl`.

A related set is a JSON line `{"paper": id, "title": ..., "related": [id, ...], "split": "dev"|"test"}`:
the papers a person judged genuinely related to `paper` (tests/eval/README.md says how they were
labelled). Over the sets: precision at k (the share of the first k related papers that are labelled
related, k = 5 by default), recall at k (the share of the labelled papers among the first k) and MRR
(the first labelled paper's reciprocal rank). Any ranking is measured: a function from a paper id and k to
ranked ids; `ranked_by` makes one of a service and a method (rag/retrieval/related.py's METHODS).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag.answering.related import find_related
from rag.core.errors import InputError
from rag.core.jsonl import read_split
from rag.retrieval.related import Method

if TYPE_CHECKING:
    from rag.service import RagService

Ranking = Callable[[str, int], list[str]]


@dataclass(frozen=True)
class RelatedSet:
    paper: str
    related: tuple[str, ...]
    split: str = ""
    title: str = ""
    unrelated: tuple[str, ...] = ()  # judged and found not related; any other paper was not judged


def is_related_file(path: str | Path) -> bool:
    """Whether a question file holds related sets (its first line has `paper` and `related`)."""
    try:
        with Path(path).open(encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), "")
        raw = json.loads(first)
    except (OSError, UnicodeDecodeError, ValueError):
        return False  # load_questions names what is wrong with it
    return isinstance(raw, dict) and "paper" in raw and "related" in raw


def load_related_sets(path: str | Path, split: str = "all") -> list[RelatedSet]:
    """The related sets of one split ('dev', 'test' or 'all'); a malformed line is an InputError."""
    return read_split(path, split, related_set, "related set")


def related_set(raw: dict) -> RelatedSet:
    related, unrelated = tuple(map(str, raw["related"])), tuple(map(str, raw.get("unrelated", ())))
    return RelatedSet(str(raw["paper"]), related, raw.get("split", ""), raw.get("title", ""), unrelated)


def held_by(service: RagService, sets: Sequence[RelatedSet], label: str) -> list[RelatedSet]:
    """The sets whose paper the service's index holds; when it holds none, an InputError saying what to ingest."""
    service.ensure_index()
    held = service.index.stored_hashes([labelled.paper for labelled in sets])
    if not held:
        raise InputError(
            f"none of the papers of {label} is in the index; ingest their list first "
            "(benchmarks/related.py writes and ingests the sample they were judged over)"
        )
    return [labelled for labelled in sets if labelled.paper in held]


def ranked_by(service: RagService, method: Method = "fused") -> Ranking:
    """A service's related papers, ranked by `method`, as ids."""
    return lambda paper, k: [p.source.paper_id for p in find_related(service, paper, k=k, method=method).papers]


def measure(ranking: Ranking, sets: Sequence[RelatedSet], k: int = 5) -> dict:
    """Precision, recall at k and MRR of `ranking` over `sets`, with each set's ranked ids and the time taken."""
    rows, precision, recall, reciprocal, times, unjudged = [], [], [], [], [], 0
    for labelled in sets:
        started = time.perf_counter()
        ranked = ranking(labelled.paper, k)[:k]
        times.append((time.perf_counter() - started) * 1000)
        hits = [paper for paper in ranked if paper in labelled.related]
        unjudged += sum(paper not in labelled.related and paper not in labelled.unrelated for paper in ranked)
        precision.append(len(hits) / k)
        recall.append(len(hits) / len(labelled.related) if labelled.related else 0.0)
        first = next((rank for rank, paper in enumerate(ranked, start=1) if paper in labelled.related), None)
        reciprocal.append(1 / first if first else 0.0)
        rows.append({"paper": labelled.paper, "split": labelled.split, "ranked": ranked, "hits": hits})
    times.sort()
    return {
        "sets": len(sets),
        "k": k,
        f"precision@{k}": _mean(precision),
        f"recall@{k}": _mean(recall),
        "mrr": _mean(reciprocal),
        "ms_p50": round(times[len(times) // 2], 1) if times else None,
        "unjudged": unjudged,  # of the papers ranked in the first k, those nobody judged (counted as not related)
        "rows": rows,
    }


def related_table(label: str, split: str, results: dict[str, dict]) -> str:
    """The figures of one or more rankings (name -> `measure`'s result) side by side, for people."""
    first = next(iter(results.values()))
    k = first["k"]
    lines = [f"{label} (split {split}): {first['sets']} related sets; k={k}"]
    lines.append("metric".ljust(16) + "".join(name.rjust(12) for name in results))
    figures = (f"precision@{k}", "{:.3f}"), (f"recall@{k}", "{:.3f}"), ("mrr", "{:.3f}"), ("ms_p50", "{:.0f}")
    for key, form in (*figures, ("unjudged", "{}")):
        lines.append(key.ljust(16) + "".join(form.format(result[key]).rjust(12) for result in results.values()))
    return "\n".join(lines)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0
