"""Measure retrieval (and optionally answers) against a question set with known gold papers.

A question set is JSON Lines: `{"question": ..., "gold": [paper_id, ...], "split": "dev"|"test",
"kind": ...}`; an empty gold list means the abstracts cannot answer it and the system should
refuse. Over answerable questions: hit@1, recall@k (share of the gold papers in the top k), MRR
(over the top k); over unanswerable ones: the share refused; over answerable ones: the share
wrongly refused; with answers: fact recall (share of answerable questions whose answer contains
every one of the question's `facts`, see rag/text/facts.py), citation precision (cited papers that are
gold), the share of answer sentences their cited source supports, and who answered (the model, or
the extractive answer). Retrieval and answers are timed per question; percentiles are reported.

Any ranking system can be measured: something with `name` and `search(question, k)` returning
an `Outcome`. `ServiceSystem` wraps a `RagService`; benchmarks/ adds the baselines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rag.answering.refusal import refusal
from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.jsonl import read_split
from rag.question.question import lookup
from rag.text.facts import missing_facts

if TYPE_CHECKING:
    from rag.service import RagService


@dataclass(frozen=True)
class Question:
    question: str
    gold: tuple[str, ...]
    split: str = ""
    kind: str = ""
    facts: tuple[str, ...] = ()  # what a correct answer must say
    asks: tuple[tuple[str, ...], ...] = ()  # the facts grouped by the part of the question that asks for them
    # A conversation's earlier questions, oldest first: each is answered in turn, and `question` is
    # asked as the follow-up with those answers as its history (tests/eval/conversation_questions.jsonl).
    history: tuple[str, ...] = ()

    @property
    def fact_groups(self) -> tuple[tuple[str, ...], ...]:
        """The facts of each ask; a question without `asks` asks for all its facts at once."""
        return self.asks or ((self.facts,) if self.facts else ())

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


@dataclass(frozen=True)
class Outcome:
    """What a system did with one question: papers best first, whether it refused, and what it cited."""

    ranked: list[str]
    refused: bool | None = None  # None: the system has no refusal rule
    cited: list[str] | None = None  # None: no answer was generated
    answer_ms: float | None = None
    text: str | None = None
    checked: tuple[bool, ...] = ()  # per answer sentence: supported by what it cites
    answered_by: str = ""


class System(Protocol):
    name: str

    def search(self, question: str, k: int) -> Outcome: ...


class Conversing(System, Protocol):
    """A system that can also answer a follow-up, after answering the conversation's earlier questions."""

    def converse(self, history: Sequence[str], question: str, k: int) -> Outcome: ...


@dataclass
class Row:
    """One question's result, for the JSON report and for finding misses."""

    question: str
    gold: list[str]
    kind: str
    split: str
    ranked: list[str]
    refused: bool | None
    retrieval_ms: float
    cited: list[str] | None = None
    answer_ms: float | None = None
    text: str | None = None
    facts: list[str] = field(default_factory=list)
    missing_facts: list[str] = field(default_factory=list)
    checked: list[bool] = field(default_factory=list)
    answered_by: str = ""
    asks: list[list[str]] = field(default_factory=list)  # the facts of each ask

    def asks_answered(self) -> list[bool]:
        """For each ask: whether the answer holds all its facts (a refusal answers none)."""
        return [not self.refused and not set(facts) & set(self.missing_facts) for facts in self.asks]

    def rank(self) -> int | None:
        """1-based rank of the first gold paper, or None when none is in the list."""
        return next((i for i, pid in enumerate(self.ranked, start=1) if pid in self.gold), None)


@dataclass
class Report:
    """Metrics of one system over one question set."""

    system: str
    questions: str
    split: str
    k: int
    rows: list[Row] = field(default_factory=list)
    missing_gold: list[str] = field(default_factory=list)

    def metrics(self) -> dict[str, float | int | None]:
        answerable = [row for row in self.rows if row.gold]
        unanswerable = [row for row in self.rows if not row.gold]
        ranks = [row.rank() for row in answerable]
        recall = [len(set(row.ranked[: self.k]) & set(row.gold)) / len(row.gold) for row in answerable]
        times = sorted(row.retrieval_ms for row in self.rows)
        refusals = [row.refused for row in self.rows if row.refused is not None]
        answered = [(row.cited, row.gold) for row in answerable if row.cited and not row.refused]
        answer_times = sorted(row.answer_ms for row in self.rows if row.answer_ms is not None)
        texts = [row for row in answerable if row.text is not None]
        with_facts = [row for row in texts if row.facts]
        checked = [ok for row in texts if not row.refused for ok in row.checked]
        replies = [row for row in texts if not row.refused]
        several_asks = [row for row in with_facts if len(row.asks) > 1]
        return {
            "questions": len(self.rows),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            "hit@1": _mean([rank == 1 for rank in ranks]),
            f"recall@{self.k}": _mean(recall),
            "mrr": _mean([1 / rank if rank else 0.0 for rank in ranks]),
            "refused_unanswerable": _mean([bool(row.refused) for row in unanswerable]) if refusals else None,
            "false_refusals": _mean([bool(row.refused) for row in answerable]) if refusals else None,
            "citation_precision": _mean([len(set(cited) & set(gold)) / len(cited) for cited, gold in answered])
            if any(row.cited is not None for row in self.rows)
            else None,
            "answers_with_citations": len(answered),
            "cited_first_gold": _mean([bool(row.cited and row.cited[0] in row.gold) for row in texts])
            if texts
            else None,
            "fact_recall": _mean([not row.refused and not row.missing_facts for row in with_facts])
            if with_facts
            else None,
            "ask_recall": _mean([ok for row in with_facts for ok in row.asks_answered()]) if with_facts else None,
            "every_ask_answered": _mean([all(row.asks_answered()) for row in several_asks]) if several_asks else None,
            "several_asks": len(several_asks),
            "supported_sentences": _mean(checked) if checked else None,
            "answered_by_model": _mean([row.answered_by == "model" for row in replies]) if replies else None,
            "retrieval_ms_p50": _percentile(times, 50),
            "retrieval_ms_p95": _percentile(times, 95),
            "answer_ms_p50": _percentile(answer_times, 50),
            "answer_ms_p95": _percentile(answer_times, 95),
        }

    def by_kind(self) -> dict[str, dict[str, float | int | None]]:
        """Fact recall, ask recall and citation precision of each kind of question, for the answers."""
        kinds = sorted({row.kind for row in self.rows if row.facts and row.text is not None})
        table = {}
        for kind in kinds:
            metrics = Report(self.system, self.questions, self.split, self.k, [r for r in self.rows if r.kind == kind])
            figures = metrics.metrics()
            table[kind] = {
                key: figures[key] for key in ("answerable", "fact_recall", "ask_recall", "citation_precision")
            }
        return table

    def fact_misses(self) -> list[Row]:
        """Answerable questions whose answer lacks one of the facts it should state."""
        return [row for row in self.rows if row.facts and row.text is not None and (row.refused or row.missing_facts)]

    def misses(self) -> list[Row]:
        """Answerable questions whose first gold paper is not ranked first, and wrong refusal calls."""
        return [
            row
            for row in self.rows
            if (row.gold and (row.rank() != 1 or row.refused)) or (not row.gold and row.refused is False)
        ]

    def subset(self, split: str) -> Report:
        """The same report restricted to one split ('all' keeps every row)."""
        rows = self.rows if split == "all" else [row for row in self.rows if row.split == split]
        return Report(self.system, self.questions, split, self.k, rows, self.missing_gold)

    def to_dict(self) -> dict:
        return {
            "system": self.system,
            "questions": self.questions,
            "split": self.split,
            "k": self.k,
            "metrics": self.metrics(),
            "by_kind": self.by_kind(),
            "missing_gold": self.missing_gold,
            "rows": [{**asdict(row), "rank": row.rank()} for row in self.rows],
        }


def load_questions(path: str | Path, split: str = "all") -> list[Question]:
    """The questions of one split ('dev', 'test' or 'all'); a malformed line is an InputError."""
    return read_split(path, split, question_of, "question")


def question_of(raw: dict) -> Question:
    question = Question(
        str(raw["question"]),
        tuple(raw.get("gold") or ()),
        raw.get("split", ""),
        raw.get("kind", ""),
        tuple(raw.get("facts") or ()),
        tuple(tuple(facts) for facts in raw.get("asks") or ()),
        tuple(str(earlier) for earlier in raw.get("history") or ()),
    )
    if not question.question.strip():
        raise ValueError("the question is empty")
    return question


def evaluate(
    system: System,
    questions: Sequence[Question],
    k: int,
    label: str = "",
    split: str = "all",
    on_progress: Callable[[int], None] | None = None,
) -> Report:
    """Run every question through `system` and collect the rows of a `Report`."""
    report = Report(system.name, label, split, k)
    for question in questions:
        started = time.perf_counter()
        if question.history:
            if not hasattr(system, "converse"):
                raise InputError(f"{system.name} can't hold a conversation; {label or 'the set'} has follow-ups")
            outcome = system.converse(question.history, question.question, k)
        else:
            outcome = system.search(question.question, k)
        elapsed = (time.perf_counter() - started) * 1000 - (outcome.answer_ms or 0.0)
        report.rows.append(
            Row(
                question.question,
                list(question.gold),
                question.kind,
                question.split,
                outcome.ranked[:k],
                outcome.refused,
                round(elapsed, 2),
                outcome.cited,
                outcome.answer_ms,
                outcome.text,
                list(question.facts),
                missing_facts(outcome.text, question.facts) if outcome.text is not None else [],
                list(outcome.checked),
                outcome.answered_by,
                [list(facts) for facts in question.fact_groups],
            )
        )
        if on_progress:
            on_progress(1)
    return report


class ServiceSystem:
    """Our retrieval as configured; with `answers`, each question is also answered and citations kept."""

    def __init__(self, service: RagService, answers: bool = False, name: str | None = None):
        self.service = service
        self.answers = answers
        self.name = name or f"ours ({service.config.retrieval.mode})"
        self._filters = Filters()
        self._refusal = refusal  # the answer's own rule: a paper the question names is not refused

    def search(self, question: str, k: int) -> Outcome:
        sources = self.service.retrieve(question, k, self._filters)
        refused = self._refusal(lookup(question), sources, self.service.config.retrieval) is not None
        ranked = [source.paper_id for source in sources]
        if not self.answers:
            return Outcome(ranked, refused)
        started = time.perf_counter()
        answer = self.service.answer(question, k=k)
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        checked = tuple(check.supported for check in answer.checks)
        return Outcome(ranked, answer.refused, answer.cited, elapsed, answer.text, checked, answer.answered_by)

    def converse(self, history: Sequence[str], question: str, k: int) -> Outcome:
        """The follow-up `question` answered after each of `history`, whose answers are its history as
        text, as a chat client sends it (the papers in focus are the service's to recover); always
        answered, since the follow-up rests on the answers before it."""
        turns: list[tuple[str, str]] = []
        for earlier in history:
            turns.append((earlier, self.service.answer(earlier, history=list(turns), k=k).text))
        started = time.perf_counter()
        answer = self.service.answer(question, history=turns, k=k)
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        checked = tuple(check.supported for check in answer.checks)
        ranked = [source.paper_id for source in answer.sources]
        return Outcome(ranked, answer.refused, answer.cited, elapsed, answer.text, checked, answer.answered_by)

    def missing(self, questions: Iterable[Question]) -> list[str]:
        """Gold papers the index does not hold: an index without them can't be measured."""
        self.service.ensure_index()
        gold = sorted({pid for question in questions for pid in question.gold})
        present = self.service.index.stored_hashes(gold)
        return [pid for pid in gold if pid not in present]


def metrics_table(reports: list[Report]) -> str:
    """The metrics of one or more systems side by side, for people."""
    metrics = [report.metrics() for report in reports]
    k = reports[0].k
    lines = [
        ("hit@1", "hit@1", "{:.3f}"),
        (f"recall@{k}", f"recall@{k}", "{:.3f}"),
        (f"MRR@{k}", "mrr", "{:.3f}"),
        ("unanswerable refused", "refused_unanswerable", "{:.3f}"),
        ("false refusals", "false_refusals", "{:.3f}"),
        ("fact recall", "fact_recall", "{:.3f}"),
        ("ask recall", "ask_recall", "{:.3f}"),
        ("every ask answered", "every_ask_answered", "{:.3f}"),
        ("citation precision", "citation_precision", "{:.3f}"),
        ("right paper cited first", "cited_first_gold", "{:.3f}"),
        ("supported sentences", "supported_sentences", "{:.3f}"),
        ("answered by the model", "answered_by_model", "{:.3f}"),
        ("retrieval ms p50", "retrieval_ms_p50", "{:.1f}"),
        ("retrieval ms p95", "retrieval_ms_p95", "{:.1f}"),
        ("answer ms p50", "answer_ms_p50", "{:.0f}"),
        ("answer ms p95", "answer_ms_p95", "{:.0f}"),
    ]
    first = metrics[0]
    header = (
        f"{reports[0].questions} (split {reports[0].split}): {first['questions']} questions, "
        f"{first['answerable']} answerable, {first['unanswerable']} unanswerable; k={k}"
    )
    width = max(len(label) for label, _, _ in lines) + 2
    columns = [max(len(report.system), 8) + 2 for report in reports]
    out = [header, "metric".ljust(width) + "".join(r.system.rjust(w) for r, w in zip(reports, columns))]
    for label, key, form in lines:
        values = [m.get(key) for m in metrics]
        if all(value is None for value in values):
            continue
        cells = ["—" if value is None else form.format(value) for value in values]
        out.append(label.ljust(width) + "".join(cell.rjust(w) for cell, w in zip(cells, columns)))
    return "\n".join(out + kind_lines(reports[0]))


def kind_lines(report: Report) -> list[str]:
    """Per kind of question, the answers' figures (first system only): fact recall, ask recall, citations."""
    table = report.by_kind()
    if not table:
        return []
    width = max(len(kind) for kind in table) + 2
    lines = ["by kind".ljust(width) + "  n   facts   asks  cited"]
    for kind, figures in table.items():
        cells = [
            "—" if figures[key] is None else f"{figures[key]:.3f}"
            for key in ("fact_recall", "ask_recall", "citation_precision")
        ]
        lines.append(kind.ljust(width) + f"{figures['answerable']:>3}  " + "  ".join(cells))
    return lines


def _mean(values: Sequence[float | bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _percentile(sorted_values: Sequence[float], percent: float) -> float | None:
    """Nearest-rank percentile."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * percent // 100))
    return round(sorted_values[int(rank) - 1], 2)
