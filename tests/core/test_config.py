"""Config: shipped files load, overlays merge, env overrides, unknown keys are named with their file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.core.config import PROJECT_ROOT, Settings, data_dir, load_config
from rag.core.errors import ConfigError

SHIPPED = sorted((PROJECT_ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_config_loads(path):
    settings = load_config(path)
    assert isinstance(settings, Settings)
    assert settings.name == path.stem


def test_overlay_merges_over_default():
    default, extractive = load_config("default"), load_config("extractive")
    assert default.llm.provider == "llamacpp"
    assert extractive.llm.provider == "extractive"
    assert extractive.retrieval.min_score == default.retrieval.min_score
    assert extractive.vectorstore.path == default.vectorstore.path == data_dir() / "index"


def test_environment_overrides_single_values_and_chooses_the_config(monkeypatch):
    monkeypatch.setenv("RAG_VECTORSTORE__PATH", "/tmp/elsewhere")
    monkeypatch.setenv("RAG_RETRIEVAL__K", "7")
    monkeypatch.setenv("RAG_CONFIG", "extractive")
    settings = load_config()
    assert settings.vectorstore.path == Path("/tmp/elsewhere")
    assert settings.retrieval.k == 7
    assert settings.llm.provider == "extractive"


def test_unknown_key_names_key_and_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("retrieval:\n  kk: 3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: unknown key 'retrieval.kk'"):
        load_config(bad)


def test_bad_value_names_key_and_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("retrieval:\n  k: many\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: retrieval.k: "):
        load_config(bad)


def test_unknown_config_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match=r"unknown config 'nope'.*extractive"):
        load_config("nope")


def test_missing_config_file():
    with pytest.raises(ConfigError, match="config file not found"):
        load_config("/no/such/config.yaml")


def test_unknown_provider_lists_the_valid_ones(tmp_path, embeddings):
    from rag.answering.providers import make_provider

    bad = tmp_path / "bad.yaml"
    bad.write_text("llm:\n  provider: gpt5\n")
    with pytest.raises(ConfigError, match=r"unknown provider 'gpt5'; valid: llamacpp, openai, extractive"):
        make_provider(load_config(bad), embeddings)
