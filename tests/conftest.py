"""Shared fixtures: the real bundled embedding model, real Chroma indexes in temporary folders."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rag.core.config import PROJECT_ROOT, Settings, with_overrides
from rag.service import RagService

SEED_FILE = PROJECT_ROOT / "seeds" / "iclr2025_seeds.jsonl"  # the shipped seeds: 19 records of the ICLR 2025 list
# The same 19 abstracts in the seed text format (a list title, then abstracts without titles): its loader's tests.
SEED_TEXT = PROJECT_ROOT / "tests" / "fixtures" / "seed_abstracts.txt"


def find_full_list() -> Path:
    """The ICLR 2025 list: $RAG_TEST_FULL_LIST when set, else `shared/corpus/iclr2025.jsonl.gz` in the
    nearest folder above the project that holds it (a git worktree sits deeper than the main checkout,
    whose parent holds `shared/`). When none does, the main checkout's place, for the skip message."""
    import os

    if os.environ.get("RAG_TEST_FULL_LIST"):
        return Path(os.environ["RAG_TEST_FULL_LIST"])
    relative = Path("shared", "corpus", "iclr2025.jsonl.gz")
    found = (folder / relative for folder in PROJECT_ROOT.parents if (folder / relative).exists())
    return next(found, PROJECT_ROOT.parent / relative)


FULL_LIST = find_full_list()  # read at import, before the fixture below clears RAG_* variables


@pytest.fixture(autouse=True)
def _no_rag_environment(monkeypatch):
    """Tests choose their config explicitly; a developer's RAG_* variables must not leak in."""
    import os

    for name in list(os.environ):
        if name.startswith("RAG_"):
            monkeypatch.delenv(name)


def user_environment(home: Path) -> dict[str, str]:
    """The environment of a new user whose per-user data folder is `home/data`: the default index
    starts empty there, while the ONNX export built once by this test run is reused. The `rag`
    command of the running interpreter comes first on PATH."""
    import os
    import sys

    from rag.core.config import data_dir

    env = {name: value for name, value in os.environ.items() if not name.startswith("RAG_")}
    env["RAG_EMBEDDING__ONNX_CACHE"] = str(data_dir() / "models")
    env["XDG_DATA_HOME"] = str(home / "data")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def fresh_python(script: str, index: Path, config: str = "extractive") -> str:
    """`script` run by a new interpreter as a user's script runs, with `config` and `index` from the environment:
    its standard output (a failure shows its standard error)."""
    import subprocess
    import sys

    from rag.core.config import PROJECT_ROOT

    env = {**user_environment(PROJECT_ROOT), "RAG_CONFIG": config, "RAG_VECTORSTORE__PATH": str(index)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def settings_for(index_dir: Path, config: str = "extractive", **sections) -> Settings:
    """A shipped config with its index moved to `index_dir` and any sections overridden."""
    vectorstore = {"path": str(index_dir), **sections.pop("vectorstore", {})}
    return with_overrides(config, vectorstore=vectorstore, **sections)


@pytest.fixture(scope="session")
def embeddings():
    from rag.core.config import EmbeddingConfig
    from rag.index.embeddings import make_embeddings

    return make_embeddings(EmbeddingConfig())


@pytest.fixture
def make_service(tmp_path, embeddings):
    """Build services over fresh indexes in tmp_path, sharing the one loaded embedding model."""

    def build(config: str = "extractive", index: str = "index", **sections) -> RagService:
        return RagService(settings_for(tmp_path / index, config, **sections), embeddings=embeddings)

    return build


@pytest.fixture(scope="session")
def seeded(tmp_path_factory, embeddings) -> RagService:
    """One extractive service over the ingested seed file, shared by read-only tests."""
    service = RagService(settings_for(tmp_path_factory.mktemp("seeded")), embeddings=embeddings)
    service.ingest([SEED_FILE])
    return service


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """llama.cpp's own OpenAI-compatible server (`python -m llama_cpp.server`) serving the bundled
    GGUF on a free loopback port; started once, always stopped."""
    from benchmarks.harness.servers import LlamaServer
    from rag.answering.providers import bundled_gguf

    with LlamaServer(bundled_gguf(), tmp_path_factory.mktemp("llama-server") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real Chroma server on loopback: the one at $RAG_TEST_CHROMA_PORT (.ci/run may start it), else
    `chroma run` on a free port, started once and always stopped. Yields (host, port)."""
    import os

    from benchmarks.harness.servers import HOST, ChromaServer

    if os.environ.get("RAG_TEST_CHROMA_PORT"):
        server = ChromaServer(Path(), Path(), port=int(os.environ["RAG_TEST_CHROMA_PORT"]))
        server.wait_until_alive()  # started just before pytest: it may still be starting
        yield HOST, server.port
        return
    folder = tmp_path_factory.mktemp("chroma-server")
    with ChromaServer(folder / "data", folder / "server.log") as server:
        yield HOST, server.port


@pytest.fixture(scope="session")
def full_list_sample(tmp_path_factory) -> Path:
    """The first 300 records of the real ICLR 2025 list, as a JSONL file."""
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    path = tmp_path_factory.mktemp("corpus") / "sample.jsonl"
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as source, path.open("w", encoding="utf-8") as out:
        for _, line in zip(range(300), source):
            out.write(line)
    return path


@pytest.fixture(scope="session")
def sample_service(tmp_path_factory, embeddings, full_list_sample) -> RagService:
    """One extractive service over the 300-record sample of the full list, shared by read-only tests."""
    service = RagService(settings_for(tmp_path_factory.mktemp("sample")), embeddings=embeddings)
    service.ingest([full_list_sample])
    return service


def seed_abstracts() -> list[str]:
    import re

    return re.split(r"\n\s*\n", SEED_TEXT.read_text(encoding="utf-8").strip())[1:]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


MOE = r"mixture[- ]of[- ]experts|\bMoE\b"


@pytest.fixture(scope="session")
def moe_sample(tmp_path_factory) -> Path:
    """A small slice of the real list for questions about many papers: every Oral paper and 8 Poster
    papers that mention mixture-of-experts, and 40 other Oral, Poster or Reject papers."""
    import re

    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    moe, posters, others = [], 0, []
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            about = re.search(MOE, f"{record['title']} {record['abstract']}", re.IGNORECASE)
            if about and record["status"] == "Oral":
                moe.append(record)
            elif about and record["status"] == "Poster" and posters < 8:
                moe.append(record)
                posters += 1
            elif not about and record["status"] in ("Oral", "Poster", "Reject") and len(others) < 40:
                others.append(record)
    return write_jsonl(tmp_path_factory.mktemp("moe") / "moe.jsonl", moe + others)


@pytest.fixture(scope="session")
def moe_index(tmp_path_factory, embeddings, moe_sample) -> Path:
    folder = tmp_path_factory.mktemp("moe-index") / "index"
    RagService(settings_for(folder), embeddings=embeddings).ingest([moe_sample])
    return folder
