"""What a question gets back: ranked sources and a cited answer."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from rag.core.export import ExportFormat, export_answer
from rag.core.markers import cited_numbers
from rag.core.markup import inert_links
from rag.core.tables import Table
from rag.core.text import safe_links as safe_links  # the link check, where it lives
from rag.core.text import safe_url as safe_url

PASSAGE_GAP = " … "  # between passages of one abstract that are not next to each other


class Kind(StrEnum):
    """What a question asks for, and so which answerer answers it (rag/answering/kinds.py). A StrEnum: it is
    its name in JSON, in `--json`, /v1 and MCP, and equal to it ("tally" == Kind.TALLY)."""

    LOOKUP = "lookup"  # a fact from an abstract or two: the answer pipeline's (rag/answering/pipeline.py)
    LIST = "list"  # the papers on a topic
    COUNT = "count"  # how many papers on a topic
    COMPARE = "compare"  # two named papers side by side
    OVERVIEW = "overview"  # a field's papers grouped into themes
    TALLY = "tally"  # papers counted per group of a stored field ("which areas have the most orals?")
    RELATED = "related"  # the papers most like a paper
    READING_LIST = "reading_list"  # a topic's papers to read, most central first


# The kinds whose answer lists papers (`Answer.listed`).
LISTING = frozenset({Kind.LIST, Kind.COUNT, Kind.OVERVIEW, Kind.TALLY, Kind.READING_LIST})


@dataclass(frozen=True)
class Span:
    """Where a passage sits in its abstract (character offsets) and the cosine of its best chunk."""

    start: int
    end: int
    score: float


@dataclass(frozen=True)
class Passage:
    """One passage of an abstract, as retrieval found it; `span` is None for text given whole (no chunks)."""

    text: str
    span: Span | None = None


@dataclass(frozen=True)
class Match:
    """Why a paper ranked: its rank in each ranking, its BM25 and fused scores, relevance, coverage.

    A paper whose chunks vanished since BM25 was built knows only its coverage (the rest None).
    """

    ranks: dict[str, int] = field(default_factory=dict)  # ranking name ("dense", "bm25") -> 1-based rank
    bm25: float | None = None
    fused: float | None = None
    relevance: float | None = None  # the fused score over the best possible, 0..1 (see Source.relevance)
    coverage: float = 0.0  # the share of the question's words the paper holds (rag.index.lexical)

    def to_dict(self) -> dict[str, Any]:
        """The flat form `--json` shows: `<ranking>_rank` keys, then the scores that are known."""
        scores = {"bm25": self.bm25, "fused": self.fused, "relevance": self.relevance}
        return {
            **{f"{name}_rank": rank for name, rank in self.ranks.items()},
            **{name: value for name, value in scores.items() if value is not None},
            "coverage": self.coverage,
        }


@dataclass(frozen=True)
class Source:
    """One retrieved paper: its best passage(s) and how well they matched the question."""

    paper_id: str
    title: str
    passages: tuple[Passage, ...]  # in abstract order; overlapping chunks already merged
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)  # the stored paper's fields (see below)
    match: Match = field(default_factory=Match)  # all unknown (None) for a source not made by retrieval

    @classmethod
    def from_text(
        cls, paper_id: str, title: str, text: str, score: float = 0.0, metadata: dict[str, Any] | None = None
    ) -> Source:
        """A source holding `text` (a whole abstract, say) as its one passage, with no span or match."""
        return cls(paper_id, title, (Passage(text),), score, dict(metadata or {}))

    @property
    def text(self) -> str:
        """The passages joined, in abstract order, with " … " between them: what the APIs show as `passage`."""
        return PASSAGE_GAP.join(passage.text for passage in self.passages)

    def with_passages(self, passages: Iterable[Passage]) -> Source:
        """This source holding these passages instead (e.g. trimmed to fit a prompt)."""
        return replace(self, passages=tuple(passages))

    # The stored paper's fields (rag.ingest.papers.Paper.metadata), read here and nowhere by key.

    @property
    def status(self) -> str:
        return str(self.metadata.get("status") or "")

    @property
    def primary_area(self) -> str:
        return str(self.metadata.get("primary_area") or "")

    @property
    def authors(self) -> list[str]:
        return [name for name in str(self.metadata.get("authors") or "").split("; ") if name]

    @property
    def url(self) -> str:
        return str(self.metadata.get("url") or "")

    @property
    def github(self) -> list[str]:
        return str(self.metadata.get("github") or "").split()

    @property
    def relevance(self) -> float:
        """How well the paper ranked for the question, 0..1: what people are shown, as a percentage.

        Papers are ranked by reciprocal rank fusion of the embedding and the BM25 rankings, and this
        is that fused score over the best possible (1.0: first in both). `score`, the cosine of the
        best passage, is no display: a paper BM25 ranked high can sit at a cosine below the next
        paper's, or below zero. This one follows the ranking (except where MMR reorders it, which
        is why lists are sorted by it), and it still says when even the top paper is a weak match.
        """
        return float(self.match.relevance or 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The source as `rag ask --json` shows it: the joined text, and the spans and match inside
        `metadata` (under "passages" and "match"), as before passages were typed."""
        spans = [asdict(passage.span) for passage in self.passages if passage.span]
        return {
            "paper_id": self.paper_id,
            "title": self.title,
            "text": self.text,
            "score": self.score,
            "metadata": {
                **self.metadata,
                **({"passages": spans} if spans else {}),
                "match": self.match.to_dict(),
            },
        }

    def to_payload(self) -> dict[str, Any]:
        """The paper as every API shows it (the app's /ask, /v1, MCP): flat JSON, lists for links and authors."""
        return {
            "paper_id": self.paper_id,
            "title": self.title,
            "score": self.score,
            "relevance": self.relevance,
            "status": self.status,
            "primary_area": self.primary_area,
            "authors": self.authors,
            "url": self.url,
            "github": self.github,
            "passage": self.text,
        }


@dataclass(frozen=True)
class SentenceCheck:
    """One sentence of an answer, the sources it cites, and whether a cited source supports it."""

    text: str
    cited: tuple[int, ...]
    supported: bool
    score: float


@dataclass(frozen=True)
class Quote:
    """A sentence of a paper's abstract, quoted as it stands, with the `[n]` that cites the paper."""

    paper_id: str
    number: int
    sentence: str


@dataclass(frozen=True)
class Theme:
    """One theme of an overview answer: papers that do alike, named by the words that set them apart."""

    name: str
    words: tuple[str, ...]  # the distinctive words, most distinctive first (class-based TF-IDF)
    paper_ids: tuple[str, ...]  # most typical first
    quotes: tuple[Quote, ...]  # two or three sentences of its most typical papers
    summary: str = ""  # a configured model's sentence about them, with [n] markers, kept only when checked

    @property
    def size(self) -> int:
        return len(self.paper_ids)


@dataclass(frozen=True)
class Answer:
    """A cited answer. `[n]` in `text` refers to `sources[n - 1]`."""

    question: str
    text: str
    sources: list[Source]
    refused: bool = False
    fallback: str | None = None  # why the model could not answer (it failed), when it couldn't
    # Who wrote `text`: "model", or "extractive" (the evidence sentences themselves); "" for a refusal.
    answered_by: str = ""
    # Why the abstract's best sentence follows the model's sentences (or, with answered_by "extractive",
    # stands for them): in the pipeline's terms ("the model's answer left out 71"), and in plain words.
    replaced: str | None = None
    shortfall: str | None = None
    refusal_reason: str | None = None  # a refusal's figures (evidence against threshold), for --json and details
    checks: list[SentenceCheck] = field(default_factory=list)
    standalone_question: str = ""
    config: str = ""
    kind: Kind = Kind.LOOKUP  # what the question asked for

    filters: dict[str, Any] = field(default_factory=dict)  # applied: explicit ones, else those understood
    understood: list[str] = field(default_factory=list)  # filters read from the question's words, in words
    count: int | None = None  # list and count: how many papers passed the line; tally: how many were counted
    line: str | None = None  # list and count: how the line for "about the topic" was drawn
    focus: list[str] = field(default_factory=list)  # a follow-up's papers in focus, answered from (paper ids)
    table: Table | None = None  # tally: the papers counted per group of a stored field (rag/core/tables.py)
    themes: list[Theme] = field(default_factory=list)  # overview: the papers grouped by what they do, largest first

    @property
    def listed(self) -> list[Source]:
        """The papers a list or count answer lists, an overview groups, or a tally drew on its topic (all its
        sources); else empty."""
        return list(self.sources) if self.kind in LISTING and not self.refused else []

    @property
    def cited(self) -> list[str]:
        """Paper ids the text cites, in order of first citation."""
        return [self.sources[n - 1].paper_id for n in cited_numbers(self.text, len(self.sources))]

    @property
    def numbered(self) -> list[str]:
        """The papers it cites as a reader sees them numbered, which a follow-up's "the second one" counts:
        all it cites, in order; of related papers, the related ones (the paper they are like is [1], unnumbered)."""
        return self.cited[1:] if self.kind == Kind.RELATED and not self.refused else self.cited

    def provenance(self, model: str = "") -> str | None:
        """Who wrote the text, in words for readers who don't know the pipeline (the page and the CLI);
        None for a refusal or when unknown. `replaced` keeps the pipeline's own reason, for JSON.

        `model` names the model (e.g. 'llamacpp:SmolLM2-135M-Instruct') when it wrote the answer.
        """
        if self.refused:
            return None
        by_model = f"Written by the language model{f' ({model})' if model else ''} and checked against the abstracts"
        if self.fallback:
            if self.answered_by == "model":
                return f"{by_model} until it failed ({self.fallback}); the rest is quoted from the abstracts."
            return f"The language model failed ({self.fallback}); quoted from the abstracts."
        if self.answered_by == "model":
            if self.replaced:
                lacking = self.shortfall or "the model's answer left out what the abstract says"
                return f"{by_model}; {lacking}, so the abstract's own words follow."
            return f"{by_model}."
        if self.answered_by == "extractive":
            return f"Quoted from the abstracts: {self.shortfall}." if self.shortfall else "Quoted from the abstracts."
        if self.answered_by in ("list", "compare", "related"):
            return "Each line quotes the abstract it cites."
        if self.answered_by == "tally":
            return "Counted from the papers' stored metadata (status, primary area, authors)."
        if self.answered_by == "metadata":  # papers' stored fields, or the papers filters admit (focused, filtered)
            return "Listed from the papers' stored metadata (status, primary area, authors); nothing is quoted."
        if self.answered_by == "overview":
            grouped = "Themes grouped by what the papers' sentences say they do; each quote is cited"
            if any(theme.summary for theme in self.themes):
                by = f"the language model{f' ({model})' if model else ''}"
                return (
                    f"{grouped}; a theme's first sentence is written by {by} and checked against the quotes it cites."
                )
            return f"{grouped}."
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "sources": [source.to_dict() for source in self.sources],
            "cited": self.cited,
        }

    def to_payload(self) -> dict[str, Any]:
        """The answer as the APIs return it (the app's /ask, the `rag` field of /v1 answers, MCP's `ask`)."""
        return {
            "question": self.question,
            "text": inert_links(self.text),  # a client may render it as Markdown or HTML
            "cited": self.cited,
            "refused": self.refused,
            "fallback": self.fallback,
            "answered_by": self.answered_by,
            "replaced": self.replaced,
            "shortfall": self.shortfall,
            "refusal_reason": self.refusal_reason,
            "sources": [{"number": n, **source.to_payload()} for n, source in enumerate(self.sources, start=1)],
            "standalone_question": self.standalone_question,
            "config": self.config,
            "kind": self.kind,
            "filters": self.filters,
            "understood": self.understood,
            "count": self.count,
            "line": self.line,
            "focus": self.focus,
            "table": self.table.to_dict() if self.table else None,
            "themes": [{**asdict(theme), "size": theme.size} for theme in self.themes],
        }

    def export(self, fmt: ExportFormat) -> str:
        """The answer's papers as "bib" (BibTeX), "csv" or "md" (Markdown), escaped for the format: its
        listed papers (list and count answers), else the sources it cites, in citation order. A refusal
        exports none: "" for BibTeX and Markdown, the header row for CSV. See rag/core/export.py."""
        return export_answer(self, fmt)


def by_relevance(sources: list[Source]) -> list[tuple[int, Source]]:
    """(number, source) pairs, best first: how every list shows sources. `[n]` keeps meaning `sources[n - 1]`."""
    return sorted(enumerate(sources, start=1), key=lambda pair: -pair[1].relevance)
