"""The front doors as a new user meets them, each in a fresh process: the package-level functions,
the CLI in a pipe and from another folder, and the default index location."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import user_environment

from rag.core.config import PROJECT_ROOT

pytestmark = pytest.mark.slow

QUESTIONS = (
    "How many reaction templates does RxnFlow use?",
    "What is the bright ending anomaly?",
    "Which agent plays Hanabi?",
)


def python(code: str, env: dict[str, str], cwd=PROJECT_ROOT, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )


def rag(*args: str, env: dict[str, str], cwd=PROJECT_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag.cli", *args], capture_output=True, text=True, env=env, cwd=cwd)


@pytest.fixture
def seeded_user(tmp_path) -> dict[str, str]:
    """A user's environment whose default index already holds the seeds (the README's first command)."""
    env = user_environment(tmp_path)
    result = rag("ingest", "--quiet", env=env)
    assert result.returncode == 0, result.stderr
    return env


@pytest.mark.parametrize("config", ["default", "smollm2"])
def test_answer_works_for_every_call_in_a_fresh_process_and_prints_nothing_to_stderr(seeded_user, config):
    """Three `rag.answer` calls with the default config (no model) and with the bundled model's."""
    environment = seeded_user if config == "default" else {**seeded_user, "RAG_CONFIG": config}
    result = python(
        f"""
        import json, rag
        answers = [rag.answer(q) for q in {QUESTIONS!r}]
        print(json.dumps([[a.refused, a.fallback, len(a.sources), a.config] for a in answers]))
        """,
        environment,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout) == [[False, None, 5, config]] * 3


def test_any_mix_of_configs_calls_and_threads_gives_what_the_service_gives(seeded_user, tmp_path):
    result = python(
        f"""
        import json, threading
        import rag
        from rag.core.config import load_config
        from rag.core.types import Answer
        from rag.service import RagService

        questions = {QUESTIONS!r}
        settings = load_config("extractive")
        by_config = {{
            "name": rag.answer(questions[0], config="extractive").to_dict(),
            "path": rag.answer(questions[0], config="configs/extractive.yaml").to_dict(),
            "settings": rag.answer(questions[0], config=settings).to_dict(),
        }}
        *pieces, final = rag.stream_answer(questions[1], config="extractive")
        sources = rag.retrieve(questions[2], config="extractive")
        fewer = rag.retrieve(questions[2], k=2, config="extractive")

        threaded = {{}}
        def ask(n):
            threaded[n] = rag.answer(questions[n % 3], config="extractive").to_dict()
        threads = [threading.Thread(target=ask, args=(n,)) for n in range(6)]
        for thread in threads: thread.start()
        for thread in threads: thread.join()

        direct = RagService(settings)
        ids = lambda sources: [s.paper_id for s in sources]
        print(json.dumps({{
            "by_config": by_config,
            "same_service": rag.get_service("extractive") is rag.get_service(settings),
            "stream": [all(isinstance(p, str) for p in pieces), isinstance(final, Answer), final.to_dict()],
            "retrieve": [len(sources), len(fewer), ids(sources) == ids(direct.retrieve(questions[2]))],
            "threaded": [threaded[n] for n in range(6)],
            "direct": [direct.answer(q).to_dict() for q in questions],
        }}))
        """,
        {**seeded_user, "RAG_CONFIG": "extractive"},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    direct = out["direct"]
    assert out["by_config"]["name"] == out["by_config"]["path"] == out["by_config"]["settings"] == direct[0]
    assert out["same_service"] is True
    assert out["stream"][:2] == [True, True] and out["stream"][2] == direct[1]
    assert out["retrieve"] == [5, 2, True]  # retrieval.k by default, a per-call k, the service's ranking
    assert out["threaded"] == [direct[n % 3] for n in range(6)]


def test_a_second_service_in_the_process_sees_what_the_first_ingested(seeded_user, tmp_path):
    """Two configs over one index in one process: an ingest through one must not break the other."""
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps(
            {
                "id": "extra-1",
                "title": "Origami crease patterns from diffusion models",
                "abstract": (
                    "We generate origami crease patterns with a diffusion model and fold them with a robot arm. "
                    "Our method folds 37 of 40 designs on the first try."
                ),
            }
        )
        + "\n",
        encoding="utf-8",
    )
    result = python(
        f"""
        import rag
        from rag.core.config import with_overrides
        question = "How many origami designs does the robot fold on the first try?"
        other = with_overrides("extractive", retrieval={{"k": 3}})
        before = rag.answer(question, config="extractive")
        rag.get_service(other).ingest([{str(extra)!r}])
        after = rag.answer(question, config="extractive")
        also = rag.answer(question, config=other)
        print(before.refused, after.cited[:1], also.cited[:1])
        """,
        seeded_user,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "['extra-1']", "['extra-1']"]


def test_the_docstring_examples_of_the_package_run(seeded_user):
    result = python("import doctest, rag, sys; sys.exit(doctest.testmod(rag).failed)", seeded_user)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("command", ["rag stats | head -1", 'rag ask "How does RxnFlow work?" | head -1'])
def test_a_closed_pipe_ends_the_command_quietly(seeded_user, command):
    env = {**seeded_user, "RAG_CONFIG": "extractive"}
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT)
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == "", result.stderr


def test_the_index_is_one_per_user_place_whatever_the_working_directory(seeded_user, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here, there = rag("stats", env=seeded_user), rag("stats", env=seeded_user, cwd=elsewhere)
    assert here.returncode == there.returncode == 0, there.stderr
    assert here.stdout == there.stdout and "papers: 19" in there.stdout
    assert f"index: at {tmp_path / 'data' / 'abstract-rag' / 'index'}" in there.stdout
    assert list(elsewhere.iterdir()) == []  # nothing written where the command happened to run


def test_asking_imports_neither_torch_nor_transformers(seeded_user):
    """With the onnx backend the question path runs ONNX Runtime and `tokenizers` only; torch is
    needed once, to build the export (done by the fixture's ingest)."""
    result = python(
        """
        import sys
        from rag.cli import main
        code = main(["--config", "extractive", "ask", "How many reaction templates does RxnFlow use?"])
        print(code, sorted(name for name in ("torch", "transformers") if name in sys.modules))
        """,
        seeded_user,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "0 []"
