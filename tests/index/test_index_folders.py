"""Index folders that are not ours to write (issue 39, items 7 and 8): each command says so in one line
and nothing in the folder changes.

7. A read-only index folder (a lab mounts one read-only for its replicas) answers questions: Chroma 1.x
   writes to its database whenever it opens a folder (`PersistentClient` records a write lock and checks
   its migrations; chroma-core/chroma#1438 asks for a read-only client), so it is read from a private copy
   taken at open; `ingest` says in one line that it can't write there. Before: `attempt to write a
   readonly database` and `'RustBindingsAPI' object has no attribute 'bindings'` tracebacks. Tests run as
   root, whom file modes don't stop, so the command runs as `nobody` (`setpriv`); as another user, it runs as that user.
8. A folder holding another application's Chroma collections and no index of ours is refused, as a
   folder of other files is. Before: answered, and added three collections and a BM25 folder to it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from clirun import rag
from conftest import settings_for, write_jsonl

from rag.service import RagService

COMMANDS = {"stats": ("stats",), "ask": ("ask", "Which paper sketches graph kernels?"), "ingest": ("ingest", "--quiet")}


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder`, with a hash of each file's bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        for path in sorted(folder.rglob("*"))
    }


def one_error_line(result) -> str:
    """The one line a refused command prints (exit 1, nothing on stdout, no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1 and result.stdout == "", (result.stdout, result.stderr)
    [line] = result.stderr.strip().splitlines()
    return line


# -- 8. another application's Chroma folder -----------------------------------------------------------

MAKE_NOTES = """
import sys, chromadb
client = chromadb.PersistentClient(path=sys.argv[1])
client.create_collection("my_notes").add(ids=["n1"], documents=["Buy milk."], embeddings=[[1.0, 0.0, 0.0]])
"""


@pytest.fixture(scope="module")
def notes_folder(tmp_path_factory) -> Path:
    """A Chroma folder made by another application: one collection, `my_notes`, and nothing of ours."""
    folder = tmp_path_factory.mktemp("notes") / "chroma"
    subprocess.run([sys.executable, "-c", MAKE_NOTES, str(folder)], check=True, timeout=120)
    return folder


@pytest.mark.parametrize("command", COMMANDS)
def test_another_applications_chroma_folder_is_refused_and_left_as_it_was(notes_folder, command):
    before = snapshot(notes_folder)
    line = one_error_line(rag(*COMMANDS[command], index=notes_folder))
    assert line.startswith(f"error: the index path {notes_folder} holds other files and no index"), line
    assert "my_notes" in line
    assert snapshot(notes_folder) == before


# -- 7. a read-only index -----------------------------------------------------------------------------

RECORDS = [
    {"id": f"ro{n}", "title": f"Made-up paper {n}", "abstract": f"We sketch graph kernels of kind {n} on molecules."}
    for n in range(3)
]


def run_as_another_user(*args, index: Path, home: Path):
    """`rag ARGS` as a user who can't write to `index`: `nobody` when the tests run as root (root writes
    through any file mode), else this user. Extractive answers; the model export is read from `home`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("RAG_")}
    env |= {"RAG_CONFIG": "extractive", "RAG_VECTORSTORE__PATH": str(index), "HOME": str(home)}
    env |= {"XDG_DATA_HOME": str(home / "data"), "RAG_EMBEDDING__ONNX_CACHE": str(home / "models")}
    become = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.getuid() == 0 else []
    command = [*become, sys.executable, "-m", "rag.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=home)


@pytest.fixture(scope="module")
def read_only_index(embeddings):
    """An index of three papers, BM25 built, in a folder and files made read-only; beside it a home for the
    other user (the model's export copied there). Made under /tmp, which `nobody` can reach."""
    if os.getuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no way to run the command as a user file modes stop")
    from rag.core.config import EmbeddingConfig

    home = Path(tempfile.mkdtemp(prefix="rag-read-only-", dir="/tmp"))
    try:
        index = home / "index"
        service = RagService(settings_for(index), embeddings=embeddings)
        service.ingest([write_jsonl(home / "list.jsonl", RECORDS)])
        assert service.retrieve("graph kernels", k=3)  # builds the BM25 index beside it: a complete index
        shutil.copytree(EmbeddingConfig().onnx_cache, home / "models")
        for path in [home, *home.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IROTH | stat.S_IWOTH | (stat.S_IXOTH if path.is_dir() else 0))
        for path in [index, *index.rglob("*")]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        yield index, home
    finally:
        for path in home.rglob("*"):
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(home)


def test_a_read_only_index_answers_questions_from_a_copy_and_is_left_as_it_was(read_only_index):
    index, home = read_only_index
    before = snapshot(index)
    asked = run_as_another_user("ask", "Which paper sketches graph kernels?", index=index, home=home)
    assert asked.returncode == 0 and "Traceback" not in asked.stderr, asked.stderr
    assert "Made-up paper" in asked.stdout and "[1]" in asked.stdout, asked.stdout
    stats = run_as_another_user("stats", index=index, home=home)
    assert stats.returncode == 0 and "papers: 3" in stats.stdout, (stats.stdout, stats.stderr)
    assert f"at {index} (read-only to this user: read from a copy at " in stats.stdout
    assert snapshot(index) == before


def test_ingest_into_a_read_only_index_is_one_line_saying_why_and_what_to_do(read_only_index):
    index, home = read_only_index
    before = snapshot(index)
    line = one_error_line(run_as_another_user(*COMMANDS["ingest"], index=index, home=home))
    assert line.startswith(f"error: the index at {index} is read-only to this user: ingest can't write"), line
    assert "--index PATH" in line
    assert snapshot(index) == before
