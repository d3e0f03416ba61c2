"""The `rag` command as a user runs it: real subprocesses, a real index in a temporary folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from clirun import rag
from terminal import as_from_a_shell, converse_on_terminal, run_on_terminal

pytestmark = pytest.mark.slow


SOURCES = "\n\nSources, best match first (* cited):\n"
RXNFLOW = "How many reaction templates does RxnFlow use?"


@pytest.fixture(scope="module")
def seeded_index(tmp_path_factory):
    """An index folder holding the seeds, shared by the tests that only ask."""
    index = tmp_path_factory.mktemp("cli") / "index"
    assert rag("ingest", "--quiet", index=index).returncode == 0
    return index


def test_ask_on_a_fresh_index_ingests_the_seeds_and_cites_rxnflow(tmp_path):
    result = rag("ask", RXNFLOW, index=tmp_path / "i")
    assert result.returncode == 0, result.stderr
    assert "[1]" in result.stdout
    first_source = result.stdout.split(SOURCES)[1].splitlines()[0]
    assert first_source.startswith("*[1] Generative Flows on Synthetic Pathway for Drug Design (pB1XSj2y4X)")
    assert first_source.endswith("relevance 100%")  # the seeds cite real titles, not a cut-off first sentence
    again = rag("ingest", index=tmp_path / "i")
    assert again.returncode == 0
    assert again.stdout.startswith("0 added, 0 updated, 19 unchanged")


def test_ask_json_has_the_answer_fields(tmp_path):
    result = rag("ask", "Which paper plays Hanabi with unfamiliar partners?", "--json", "-k", "3", index=tmp_path / "i")
    data = json.loads(result.stdout)
    assert len(data["sources"]) == 3
    assert data["cited"] and data["cited"][0] == data["sources"][0]["paper_id"]
    assert data["refused"] is False and data["fallback"] is None


def answer_and_sources(stdout: str) -> tuple[str, list[str]]:
    head, _, sources = stdout.partition(SOURCES)
    return head, sources.splitlines()


@pytest.mark.parametrize("config", ["extractive", "smollm2"])
def test_piped_ask_prints_the_checked_answer_once_and_no_draft(seeded_index, config):
    from rag.core.markup import plain_text

    checked = json.loads(rag("ask", RXNFLOW, "--json", index=seeded_index, config=config).stdout)
    result = rag("ask", RXNFLOW, index=seeded_index, config=config)
    assert result.returncode == 0, result.stderr
    head, sources = answer_and_sources(result.stdout)
    answer = plain_text(checked["text"])
    assert head.startswith(answer) and result.stdout.count(answer) == 1
    # After the answer, at most the line saying who wrote it: no model draft, no second copy.
    after = head[len(answer) :].splitlines()
    assert not after or (after[0] == "" and all(line.startswith("(") and line.endswith(")") for line in after[1:]))
    assert "\x1b[" not in result.stdout and len(sources) == len(checked["sources"])


def test_sources_are_listed_best_first_by_the_relevance_shown(seeded_index):
    result = rag("ask", "Which agent plays Hanabi with unfamiliar partners?", "-k", "8", index=seeded_index)
    _, sources = answer_and_sources(result.stdout)
    shown = [int(line.rsplit("relevance ", 1)[1].rstrip("%")) for line in sources]
    assert len(shown) == 8 and shown == sorted(shown, reverse=True) and 0 <= shown[-1] <= shown[0] <= 100


def test_a_refusal_says_so_in_words_and_keeps_its_figures_apart(seeded_index):
    plain = rag("ask", "What is the capital of Australia?", index=seeded_index).stdout.strip().splitlines()
    assert len(plain) == 1 and "threshold" not in plain[0]  # figures only for those who ask (issue 66)
    result = rag("ask", "What is the capital of Australia?", "--explain", index=seeded_index)
    text, why = result.stdout.strip().splitlines()
    assert text == plain[0] and text.startswith("The indexed abstracts don't answer this question. The closest papers")
    assert "threshold" not in text and why.startswith("(not answered: ") and "threshold" in why
    data = json.loads(rag("ask", "What is the capital of Australia?", "--json", index=seeded_index).stdout)
    assert data["refused"] and "threshold" in data["refusal_reason"] and "threshold" not in data["text"]


def test_ask_export_prints_only_the_cited_papers(seeded_index):
    import bibtexparser

    cited = json.loads(rag("ask", RXNFLOW, "--json", index=seeded_index).stdout)["cited"]
    result = rag("ask", RXNFLOW, "--export", "bib", index=seeded_index)
    assert result.returncode == 0, result.stderr
    library = bibtexparser.parse_string(result.stdout)  # stdout is the BibTeX and nothing else
    assert library.failed_blocks == [] and len(library.entries) == len(cited) >= 1
    assert [entry.key for entry in library.entries] == [f"iclr2025_{paper_id}" for paper_id in cited]
    assert "Synthetic Pathway for Drug Design" in library.entries[0]["title"] and library.entries[0]["year"] == "2025"
    assert result.stderr.strip() == f"exported {len(cited)} paper{'s' if len(cited) > 1 else ''} as bib"
    refused = rag("ask", "What is the capital of Australia?", "--export", "csv", index=seeded_index)
    header = "paper_id,title,authors,status,primary_area,url,cited_as"
    assert refused.returncode == 0 and refused.stdout.splitlines() == [header]
    assert refused.stderr.startswith("not answered (") and "no papers to export" in refused.stderr
    both = rag("ask", RXNFLOW, "--export", "md", "--json", index=seeded_index)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


@pytest.mark.parametrize("config", ["extractive", "smollm2"])
def test_on_a_terminal_the_answer_streams_once_and_reads_as_piped(seeded_index, config):
    """What streams is the checked answer: printed as it comes, never erased or printed again."""
    environment = {**os.environ, "RAG_CONFIG": config, "RAG_VECTORSTORE__PATH": str(seeded_index)}
    chunks, status = run_on_terminal([sys.executable, "-m", "rag.cli", "ask", RXNFLOW], environment)
    shown = "".join(chunks)
    assert status == 0
    assert "\x1b[" not in shown  # no dimming, no cursor movement, no erasing
    assert shown.count("71 reaction templates") == 1 and SOURCES in shown
    assert shown == rag("ask", RXNFLOW, index=seeded_index, config=config).stdout  # the same lines as piped


def test_chat_holds_a_conversation_typed_at_a_terminal_and_ends_at_ctrl_d(seeded_index):
    """`rag chat` as a person uses it: a question, a follow-up that says "they", a bad line, Ctrl-D."""
    environment = {**os.environ, "RAG_CONFIG": "extractive", "RAG_VECTORSTORE__PATH": str(seeded_index)}
    typed = ["Which agent plays Hanabi with unfamiliar partners?", "What benchmark did they use?", "x" * 3000, "\x03"]
    shown, status = converse_on_terminal([sys.executable, "-m", "rag.cli", "chat"], environment, typed)
    assert status == 0, shown
    assert "\x1b" not in shown  # no colours or cursor movement: plain lines a screen reader reads in order
    _, first, follow_up, bad = shown.split("> ")[:4]
    assert first.startswith(typed[0]) and "R3D2" in first and SOURCES in first
    assert "Hanabi benchmark" in follow_up.split("\n")[1]  # the new fact, from the paper just discussed
    assert "(a follow-up on [1] “A Generalist Hanabi Agent”" in follow_up
    assert "asked as: What benchmark did they use?" in follow_up and "pCj2sLNoJq" in follow_up
    assert "error: the question is 3,000 characters long" in bad  # named, and the conversation goes on
    assert shown.endswith("> ^C\n> \n")  # Ctrl-C: the line dropped, asked again; Ctrl-D: a newline, then the shell's


@pytest.mark.parametrize(
    "args, message",
    [
        (("ask", ""), "error: the question is empty"),
        (("ask", "x" * 5000), "error: the question is 5,000 characters long"),
        (("ingest", "/no/such/file.jsonl"), "error: /no/such/file.jsonl: no such file or directory"),
        (("--config", "nope", "stats"), "error: unknown config 'nope'"),
    ],
)
def test_bad_input_is_one_line_without_traceback(tmp_path, args, message):
    result = rag(*args, index=tmp_path / "i")
    assert result.returncode == 1
    assert result.stderr.strip().startswith(message)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_lines_are_warned_about_and_the_rest_ingested(tmp_path):
    path = tmp_path / "list.jsonl"
    path.write_text('{"id": "a", "abstract": "Fine."}\n{oops\n')
    result = rag("ingest", str(path), "--quiet", index=tmp_path / "i")
    assert result.returncode == 1  # something was skipped
    assert f"warning: {path}:2:" in result.stderr
    assert result.stdout.startswith("1 added")
    strict = rag("ingest", str(path), "--strict", index=tmp_path / "j")
    assert strict.returncode == 1 and f"{path}:2" in strict.stderr


def test_help_loads_no_heavy_library():
    result = subprocess.run([sys.executable, "-m", "rag.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "ingest" in result.stdout
    probe = "import sys, rag.cli; rag.cli.build_parser(); print(sorted(m for m in {} if m in sys.modules))"
    heavy = ("torch", "chromadb", "langchain_core")
    found = subprocess.run([sys.executable, "-c", probe.format(heavy)], capture_output=True, text=True)
    assert found.stdout.strip() == "[]"


def _ingest_process(path, index, batch):
    environment = {
        **os.environ,
        "RAG_CONFIG": "extractive",
        "RAG_VECTORSTORE__PATH": str(index),
        "RAG_INGEST__BATCH_SIZE": str(batch),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "rag.cli", "ingest", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        preexec_fn=as_from_a_shell,  # it is sent Ctrl-C
    )


def _wait_for_progress(process, papers: int) -> None:
    """Read the progress bar until it shows at least `papers` done."""
    seen = b""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        seen += os.read(process.stderr.fileno(), 4096)
        counts = [int(part.split(b"/")[0].split()[-1]) for part in seen.split(b"\r") if b"/300" in part]
        if counts and counts[-1] >= papers:
            return
    raise AssertionError(f"no progress seen: {seen[-300:]!r}")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_an_interrupted_ingest_answers_and_the_next_run_completes_it_exactly(
    tmp_path, full_list_sample, how, sample_service
):
    expected = sample_service.stats()
    process = _ingest_process(full_list_sample, tmp_path / "i", batch=25)
    _wait_for_progress(process, 50)
    process.send_signal(how)
    process.wait(timeout=60)
    if how == signal.SIGINT:
        assert process.returncode == 130
        assert b"run the same command again" in process.stderr.read()
    midway = rag("stats", index=tmp_path / "i")
    papers_midway = int(midway.stdout.split("papers: ")[1].split()[0])
    assert 50 <= papers_midway < 300
    asked = rag("ask", "transformers", "--json", index=tmp_path / "i")
    assert asked.returncode == 0, asked.stderr
    done = rag("ingest", str(full_list_sample), "--quiet", index=tmp_path / "i")
    assert done.returncode == 0, done.stderr
    assert f"index: {expected['papers']} papers, {expected['chunks']} chunks" in done.stdout
    assert done.stdout.startswith(f"{300 - papers_midway} added")
