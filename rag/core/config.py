"""The one typed settings tree, and `load_config`, which reads it from YAML and the environment.

The tree's sections are declared in rag/core/config_papers.py (fetch, embedding, chunking, ingest,
vectorstore, retrieval) and rag/core/config_answers.py (llm, answer, questions, ui), and importable
from here too. Their field defaults are the shipped values, each with its description. `configs/default.yaml`
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
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from rag.core.config_answers import AnswerConfig, LLMConfig, ProviderName, QuestionsConfig, UIConfig
from rag.core.config_papers import (
    BUNDLED_EMBEDDING,
    ChunkingConfig,
    EmbeddingConfig,
    FetchConfig,
    IngestConfig,
    K,
    RequestK,
    RetrievalConfig,
    Section,
    StageConfig,
    VectorstoreConfig,
    checked_k,
    data_dir,
)
from rag.core.errors import ConfigError

# What `from rag.core.config import ...` gives, the sections declared beside it included.
__all__ = [
    "BUNDLED_EMBEDDING",
    "BUNDLED_SEEDS",
    "CONFIG_DIRS",
    "ENV_PREFIX",
    "K",
    "PROJECT_ROOT",
    "AnswerConfig",
    "ChunkingConfig",
    "EmbeddingConfig",
    "FetchConfig",
    "IngestConfig",
    "LLMConfig",
    "ProviderName",
    "QuestionsConfig",
    "RequestK",
    "RetrievalConfig",
    "Section",
    "Settings",
    "StageConfig",
    "UIConfig",
    "VectorstoreConfig",
    "check_environment",
    "checked_k",
    "config_names",
    "data_dir",
    "load_config",
    "served_by",
    "with_overrides",
]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIRS = (Path("configs"), PROJECT_ROOT / "configs")
BUNDLED_SEEDS = PROJECT_ROOT / "seeds"
ENV_PREFIX = "RAG_"


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


def served_by(config: Settings, server: Settings) -> Settings:
    """`config` as a server started with `server` answers with it (a request naming a config, `model` on
    /v1): the server's index (its store, and where a Chroma server's BM25 cache is) and its serving
    settings, whatever `config` says; the rest (the model, retrieval, answers) is `config`'s."""
    retrieval = config.retrieval.model_copy(update={"lexical_cache": server.retrieval.lexical_cache})
    return config.model_copy(update={"vectorstore": server.vectorstore, "ui": server.ui, "retrieval": retrieval})


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
