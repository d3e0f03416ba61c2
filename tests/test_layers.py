"""Imports run down the stages (docs/architecture.md): import-linter's layers contract in pyproject.toml holds;
and every module of rag/ and ui/ reads in one sitting (STYLE.md, 9)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT


def test_imports_run_down_the_stages():
    # The venv's own `lint-imports`, beside this Python, else the one on PATH.
    script = Path(sys.executable).with_name("lint-imports")
    command = str(script) if script.exists() else shutil.which("lint-imports")
    assert command, "lint-imports is missing: pip install -e '.[test]'"
    done = subprocess.run([command, "--no-cache"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def test_modules_and_functions_stay_small():
    """No module of rag/ or ui/ over 400 lines, no function (or method) over 60, its docstring included:
    one that grows past that holds two things, and is split by concept."""
    too_long = []
    for path in sorted([*(PROJECT_ROOT / "rag").rglob("*.py"), *(PROJECT_ROOT / "ui").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(PROJECT_ROOT)
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            too_long.append(f"{where}: {lines} lines (the limit is {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    limit = f"the limit is {MAX_FUNCTION_LINES}"
                    too_long.append(f"{where}:{node.lineno} {node.name}: {length} lines ({limit})")
    assert not too_long, "\n".join(too_long)


def test_benchmarks_import_no_test_helper():
    """Benchmarks import the package and benchmarks/ modules (benchmarks/harness/, shared with the tests),
    never a module of tests/ (nor put tests/ on sys.path to reach one)."""
    helpers = {path.stem for path in (PROJECT_ROOT / "tests").glob("*.py")}
    reaching = []
    for path in sorted((PROJECT_ROOT / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            reaching += [f"{path.relative_to(PROJECT_ROOT)}: {name}" for name in names if name.split(".")[0] in helpers]
    assert not reaching, "\n".join(reaching)


PATTERN_METHODS = {"search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
QUESTION_NAMES = {"question", "asked", "query"}
# The question stage's readers of a text: called by the question stage, and by the service where a question
# comes in (rag/service.py reads it once); every other stage reads the fields they fill.
READERS = {
    "understand",
    "understand_question",
    "split_asks",
    "ask_kind",
    "tally_of",
    "related_question",
    "pasted_abstract",
    "topic_of",
    "alternatives",
    "asks_for_overview",
    "overview_topic",
    "asks_about_evaluation",
}


def _read_text(node: ast.Call) -> str | None:
    """What a call reads the words of a question with, if it does: a pattern applied to a variable
    holding the question (`PATTERN.search(question)`, `re.match(p, asked)`), or a reader of the question stage."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in READERS or (name == "of" and isinstance(func, ast.Attribute) and ast.unparse(func.value) == "Wants"):
        return ast.unparse(node)
    pattern = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)  # PATTERN.search, re.search
    if name in PATTERN_METHODS and pattern and (func.value.id == "re" or func.value.id.isupper()):
        for argument in node.args[:2]:
            if isinstance(argument, ast.Name) and argument.id in QUESTION_NAMES:
                return ast.unparse(node)
    return None


def test_a_question_is_read_by_the_question_stage_only():
    """Only rag/question/ reads a question's words for what it asks (its kind, filters, topic, asks, the
    numbers it looks up); the service calls it where a question comes in. The stages after it read the
    `Question`'s and `Understood`'s fields, so a reading is written once, where the reader is tested."""
    reading = []
    for path in sorted([*(PROJECT_ROOT / "rag").rglob("*.py"), *(PROJECT_ROOT / "ui").rglob("*.py")]):
        where = path.relative_to(PROJECT_ROOT)
        if where.parts[:2] == ("rag", "question") or where == Path("rag/service.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call) and (call := _read_text(node)):
                reading.append(f"{where}:{node.lineno}: {call[:100]}")
    assert not reading, "\n".join(reading)
