"""Hostile and careless input (issue 19): a bad file, line, value or request gets a clear one-line
answer and costs no good data, and a locked app shows nothing before login.

Every fixture is written here by its test (made-up abstracts, nothing real committed). The `rag`
command runs as a real subprocess on a real index; the app is served from this process on loopback.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from pathlib import Path

import httpx
import pytest
from clirun import rag
from conftest import settings_for, write_jsonl
from terminal import readable

from benchmarks.harness.loadgen import HOST
from benchmarks.harness.servers import free_port
from rag.core.errors import InputError
from rag.service import RagService

pytestmark = pytest.mark.slow

POISON_URL = "javascript:alert(document.domain)"
API_DESCRIPTION = "Answer a question from the indexed abstracts"  # the /ask docstring the API info carries
LOGIN = ("reader", "s3cret")


def paper(name: str, number: int) -> dict:
    """A made-up record with its own abstract (no two alike, so none is a duplicate)."""
    return {
        "id": f"{name}{number}",
        "title": f"Made-up paper {name} {number}",
        "abstract": f"We study problem {number} of list {name}: graph networks for molecule property prediction.",
    }


def papers(name: str, count: int) -> list[dict]:
    return [paper(name, number) for number in range(count)]


def line(record: dict) -> bytes:
    return json.dumps(record).encode() + b"\n"


def stored_ids(index: Path, embeddings) -> set[str]:
    return set(RagService(settings_for(index), embeddings=embeddings).index.all_paper_ids())


def stderr_lines(result) -> list[str]:
    return result.stderr.strip().splitlines()


def assert_clean_failure(result, skipped: int) -> None:
    """Exit 1, one warning line per skipped line or file, then one error line; no traceback."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    *warnings, last = stderr_lines(result)
    assert len(warnings) == skipped and all(warning.startswith("warning: ") for warning in warnings)
    assert last == f"error: skipped {skipped} bad lines or files (warnings above)"


# -- 1. a huge abstract, and Chroma's batch limit ----------------------------------------------------


@pytest.mark.parametrize(
    "limit, env",
    [("ingest.max_record_bytes", {}), ("ingest.max_abstract_chars", {"RAG_INGEST__MAX_RECORD_BYTES": "20000000"})],
    ids=["line-limit", "abstract-limit"],
)
def test_a_5mb_abstract_is_skipped_at_once_and_the_good_records_kept(tmp_path, embeddings, limit, env):
    good = papers("g", 6)
    huge = {"id": "huge", "title": "Huge", "abstract": "word " * 1_000_000}
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"".join([*map(line, good[:3]), line(huge), *map(line, good[3:])]))
    # Before the fix this ran for minutes (228 s, 1.4 GB) and then lost everything: the timeout is the test.
    result = rag("ingest", "--quiet", str(big), index=tmp_path / "index", timeout=120, **env)
    assert_clean_failure(result, skipped=1)
    assert re.fullmatch(rf"warning: {re.escape(str(big))}:4: .* the limit is {limit} = [\d,]+", stderr_lines(result)[0])
    assert stored_ids(tmp_path / "index", embeddings) == {record["id"] for record in good}


def test_no_chroma_write_exceeds_the_batch_limit_the_client_reports(tmp_path):
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag.core.config import VectorstoreConfig
    from rag.index.store import PaperIndex, open_client

    client = open_client(VectorstoreConfig(path=tmp_path / "index"))
    # A fake embedding for speed: this is about how the store writes, and real ingests are tested elsewhere.
    index = PaperIndex(client, "batch-limit", DeterministicFakeEmbedding(size=8), "here")
    count = client.get_max_batch_size() + 10
    index.add_chunks(
        [Document(id=f"c{i}", page_content=f"chunk {i}", metadata={"paper_id": "p"}) for i in range(count)]
    )
    assert index.chunk_count() == count


# -- 2. bad lines and unreadable files ---------------------------------------------------------------

BAD_LINES = {  # a line of a JSONL file -> what the warning for it says
    "not-json": (b"{not json\n", "Expecting property name"),
    "not-utf8": (b'{"id": "latin1", "abstract": "caf\xe9 au lait"}\n', "not UTF-8 text (byte 0xe9 at column 34)"),
    "no-abstract": (line({"id": "empty", "title": "No abstract"}), "record has no 'abstract'"),
    "abstract-not-text": (line({"id": "number", "abstract": 42}), "'abstract' is not text"),
    "not-an-object": (b"[1, 2, 3]\n", "line is not a JSON object"),
    "long-abstract": (line({"id": "long", "abstract": "word " * 6000}), "ingest.max_abstract_chars = 10,000"),
    "long-line": (line({"id": "wide", "title": "x" * 300_000, "abstract": "Fine."}), "ingest.max_record_bytes"),
    "duplicate-id": (line({"id": "m0", "abstract": "Another text under a taken id."}), "duplicate id 'm0'"),
}


def test_every_bad_line_is_reported_with_file_and_line_and_every_good_record_kept(tmp_path, embeddings):
    good_file = write_jsonl(tmp_path / "good50.jsonl", papers("g", 50))
    mixed = tmp_path / "mixed.jsonl"
    good_lines = papers("m", len(BAD_LINES) + 1)
    # good, bad, good, bad, ... so each bad line sits between records that must survive it
    parts = [line(good_lines[0])]
    for (bad, _), record in zip(BAD_LINES.values(), good_lines[1:]):
        parts += [bad, line(record)]
    mixed.write_bytes(b"".join(parts))

    result = rag("ingest", "--quiet", str(good_file), str(mixed), index=tmp_path / "index")
    assert_clean_failure(result, skipped=len(BAD_LINES))
    warnings = stderr_lines(result)[:-1]
    for number, (case, (_, reason)) in enumerate(BAD_LINES.items()):
        expected = f"warning: {mixed}:{2 * number + 2}: "
        assert any(w.startswith(expected) and reason in w for w in warnings), (case, expected, warnings)
    assert stored_ids(tmp_path / "index", embeddings) == {r["id"] for r in papers("g", 50) + good_lines}

    strict = rag("ingest", "--quiet", "--strict", str(mixed), index=tmp_path / "strict")
    assert strict.returncode == 1 and "Traceback" not in strict.stderr
    [message] = stderr_lines(strict)
    assert message.startswith(f"error: {mixed}:2: {BAD_LINES['not-json'][1]}")


def truncated_gzip(path: Path) -> tuple[Path, set[str]]:
    """A .jsonl.gz cut off two thirds in, and the ids of the complete lines still decompressible."""
    data = gzip.compress(b"".join(line(record) for record in papers("z", 200)))
    cut = data[: len(data) * 2 // 3]
    path.write_bytes(cut)
    readable = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
    return path, {json.loads(text)["id"] for text in readable.split(b"\n")[:-1]}


def binary_file(path: Path) -> tuple[Path, set[str]]:
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40)
    return path, set()


def seed_text_with_a_bad_block(path: Path) -> tuple[Path, set[str]]:
    blocks = [b"Made-up list", b"First made-up abstract about robots.", b"Second \xff broken.", b"Third about cats."]
    path.write_bytes(b"\n\n".join(blocks) + b"\n")
    from rag.ingest.papers import load_papers

    return path, {p.paper_id for p in load_papers([path]) if "broken" not in p.abstract}


UNREADABLE = {  # a damaged file -> (how to make it, what its warning says)
    "truncated-gzip": (lambda d: truncated_gzip(d / "cut.jsonl.gz"), "Compressed file ended before the end-of-stream"),
    "binary": (lambda d: binary_file(d / "image.jsonl"), "binary data, not a text file; skipped"),
    "seed-text-not-utf8": (lambda d: seed_text_with_a_bad_block(d / "seeds.txt"), ":5: not UTF-8 text"),
}


@pytest.mark.parametrize("case", UNREADABLE)
def test_a_damaged_file_is_reported_and_the_other_files_and_its_readable_records_kept(tmp_path, embeddings, case):
    make, reason = UNREADABLE[case]
    damaged, readable = make(tmp_path)
    good_file = write_jsonl(tmp_path / "good50.jsonl", papers("g", 50))
    result = rag("ingest", "--quiet", str(damaged), str(good_file), index=tmp_path / "index")
    assert_clean_failure(result, skipped=1)
    assert stderr_lines(result)[0].startswith(f"warning: {damaged}") and reason in stderr_lines(result)[0]
    assert stored_ids(tmp_path / "index", embeddings) == readable | {r["id"] for r in papers("g", 50)}
    if case == "truncated-gzip":
        assert len(readable) > 20  # the damage is two thirds in: there was something to keep


# -- 4. values from the command line and the environment ---------------------------------------------


@pytest.mark.parametrize(
    "k, message",
    [
        ("-3", "greater than or equal to 1"),
        ("0", "greater than or equal to 1"),
        ("100000", "less than or equal to 50"),
        ("many", "valid integer"),
    ],
)
def test_k_outside_the_bounds_of_retrieval_k_is_refused(tmp_path, k, message):
    result = rag("ask", "-k", k, "Which paper plays Hanabi?", index=tmp_path / "index")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert re.search(
        rf"error: argument -k: k = {k}: input should be .*{message}.* \(the bounds of retrieval\.k\)$",
        result.stderr.strip(),
    )


def test_k_from_python_is_held_to_the_same_bounds(seeded):
    with pytest.raises(InputError, match=r"k = 0: .*greater than or equal to 1"):
        seeded.retrieve("graph networks", k=0)


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("RAG_RETRIEVAL__K", "-3", "environment variable RAG_RETRIEVAL__K: retrieval.k: Input should be greater"),
        ("RAG_RETRIVAL__K", "3", "environment variable RAG_RETRIVAL__K: unknown section 'retrival' (valid: embedding"),
        ("RAG_FOO__BAR", "1", "environment variable RAG_FOO__BAR: unknown section 'foo'"),
        ("RAG_RETRIEVAL__KK", "3", "environment variable RAG_RETRIEVAL__KK: unknown key 'retrieval.kk' (valid: mode"),
    ],
)
def test_a_bad_environment_variable_is_named(tmp_path, variable, value, message):
    result = rag("stats", index=tmp_path / "index", **{variable: value})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert stderr_lines(result) == [stderr_lines(result)[0]] and stderr_lines(result)[0].startswith(f"error: {message}")


# -- issue 31, item 1: the index path is checked; a command that only reads writes nothing -----------
# (a block of its own: other work on issue 31 adds tests at the end of this file)


def unusable_index_paths(tmp_path) -> dict[str, tuple[str, str]]:
    """name -> (RAG_VECTORSTORE__PATH, what the one error line says)."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not an index")
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "thesis.tex").write_text("\\section{Results}")
    return {
        "root": ("/", "the index path / holds other files and no index"),
        "empty": ("", "environment variable RAG_VECTORSTORE__PATH: vectorstore.path: empty"),
        "proc": ("/proc/self", "the index path /proc/self holds other files and no index"),
        "under proc": ("/proc/self/index", "cannot make the index folder /proc/self/index"),
        "a file": (str(a_file), f"the index path {a_file} is not a folder"),
        "a folder of other files": (str(documents), f"the index path {documents} holds other files and no index"),
    }


@pytest.mark.parametrize("command", [("stats",), ("ask", "Which paper plays Hanabi?"), ("ingest", "--quiet")])
@pytest.mark.parametrize("case", ["root", "empty", "proc", "under proc", "a file", "a folder of other files"])
def test_an_index_path_that_cannot_hold_an_index_is_one_line_and_nothing_is_made(tmp_path, command, case):
    path, message = unusable_index_paths(tmp_path)[case]
    before = {entry.name for entry in tmp_path.rglob("*")}
    at_root = set(os.listdir("/"))
    result = rag(*command, index=path)
    made_at_root = remove_index_files_made_at_root(at_root)
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert stderr_lines(result) == [stderr_lines(result)[0]] and stderr_lines(result)[0].startswith(f"error: {message}")
    assert not made_at_root and {entry.name for entry in tmp_path.rglob("*")} == before


def remove_index_files_made_at_root(before: set[str]) -> list[str]:
    """What the bug made at / (Chroma's database and segment folders, a BM25 cache), removed so a failed
    run leaves nothing behind; only names Chroma and the BM25 cache use are touched."""
    import shutil

    index_file = re.compile(r"chroma\.sqlite3|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|.*-bm25")
    made = sorted(name for name in set(os.listdir("/")) - before if index_file.fullmatch(name))
    for name in made:
        shutil.rmtree(f"/{name}") if os.path.isdir(f"/{name}") else os.unlink(f"/{name}")
    return made


def test_stats_on_a_folder_without_an_index_says_so_and_makes_nothing(tmp_path):
    result = rag("stats", index=tmp_path / "index")
    assert result.returncode == 0, result.stderr
    assert "papers: 0" in result.stdout and "(none yet: rag ingest makes it)" in result.stdout
    assert not (tmp_path / "index").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert rag("stats", index=empty).returncode == 0 and not any(empty.iterdir())


# -- 3 and 5. the app: nothing before login, no uploads, slowed guessing, clean API answers -----------


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory, embeddings) -> RagService:
    """An index of made-up papers, one of them with a `javascript:` link."""
    folder = tmp_path_factory.mktemp("poisoned")
    records = [*papers("p", 5), {**paper("poison", 0), "url": POISON_URL, "abstract": POISONED_ABSTRACT}]
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([write_jsonl(folder / "list.jsonl", records)])
    return service


POISONED_ABSTRACT = "We propose tensor sketching for streaming graph kernels over molecule libraries."
POISONED_QUESTION = "Which paper proposes tensor sketching for streaming graph kernels?"


def serve(service: RagService, auth=None):
    """The app over `service` on a free loopback port: (its URL, Gradio's FastAPI app), then closed."""
    from ui.app import build_app, launch

    demo = build_app(service)
    url = launch(demo, HOST, free_port(), auth=auth, block=False)
    yield url, demo.app
    demo.close()


def serve_with_api(service: RagService, auth=None):
    """`rag serve`'s app (the page mounted beside the /v1 API) on a free loopback port, then stopped."""
    import threading

    import uvicorn
    from starlette.routing import Mount

    from ui.serve import build_server

    app, port = build_server(service, auth=auth), free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.1)
    yield f"http://{HOST}:{port}/", next(route.app for route in app.routes if isinstance(route, Mount))
    server.should_exit = True
    thread.join(30)


@pytest.fixture(scope="module", params=["rag ui", "rag serve"])
def locked(poisoned, request):
    """The chat page with a login, as each command serves it."""
    yield from (serve if request.param == "rag ui" else serve_with_api)(poisoned, auth=LOGIN)


@pytest.fixture(scope="module")
def open_app(poisoned):
    yield from serve(poisoned)


# Before login, only these answer with anything but 401 (None: whatever the route does, e.g. 404 for a
# made-up asset name); uploads are refused with 403 whatever the login.
BEFORE_LOGIN = {
    ("GET", "/"): 200,
    ("HEAD", "/"): 200,
    ("GET", "/?view=api"): 200,  # the API page is the login page until then
    ("POST", "/login"): 422,  # an empty form
    ("POST", "/login/"): 422,
    ("GET", "/logout"): 302,
    ("GET", "/gradio_api/startup-events"): 200,
    ("GET", "/theme.css"): 200,
    ("GET", "/gradio_api/theme.css"): 200,
    ("GET", "/favicon.ico"): None,
    ("GET", "/manifest.json"): None,
    ("GET", "/robots.txt"): None,
    ("GET", "/pwa_icon"): None,
    ("GET", "/pwa_icon/{size}"): None,
    ("GET", "/assets/{path}"): None,
    ("GET", "/static/{path}"): None,
    ("GET", "/svelte/{path}"): None,
    ("POST", "/gradio_api/upload"): 403,
    ("GET", "/gradio_api/upload_progress"): 403,
    ("POST", "/gradio_api/process_recording"): 403,
}
NOT_IN_SCHEMA = [("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/redoc"), ("GET", "/?view=api")]


def every_route(app) -> list[tuple[str, str]]:
    """(method, path) of every route the running app has, from its own OpenAPI schema (read in-process:
    the schema's URL is itself locked), plus the documentation URLs FastAPI and Gradio could add."""
    routes = [(method.upper(), path) for path, ops in app.openapi()["paths"].items() for method in ops]
    return sorted(set(routes)) + NOT_IN_SCHEMA


def test_every_route_answers_a_client_without_login_with_the_login_page_or_401(locked):
    url, app = locked
    routes = every_route(app)
    assert len(routes) > 60  # Gradio's whole API, not a handful
    seen = {}
    with httpx.Client(base_url=url.rstrip("/"), timeout=30) as client:
        for method, path in routes:
            concrete = re.sub(r"\{[^}]+\}", "x", path)
            reply = client.request(method, concrete)
            seen[(method, path)] = reply.status_code
            expected = BEFORE_LOGIN.get((method, path), 401)
            assert expected is None or reply.status_code == expected, (method, path, reply.status_code)
            assert API_DESCRIPTION not in reply.text and POISONED_ABSTRACT[:40] not in reply.text, (method, path)
    refused = [route for route, status in seen.items() if status == 401]
    assert ("GET", "/gradio_api/info") in refused and ("GET", "/gradio_api/openapi.json") in refused
    assert ("GET", "/openapi.json") in refused and ("POST", "/gradio_api/call/{api_name}") in refused


def test_the_login_page_carries_no_api_description_and_the_logged_in_page_does(locked):
    url, _ = locked
    with httpx.Client(base_url=url.rstrip("/"), timeout=30) as client:
        page = client.get("/").text
        assert "auth_required" in page and "window.gradio_api_info = null;" in page
        assert API_DESCRIPTION not in page and "primary_area" not in page
        assert client.post("/login", data=dict(zip(("username", "password"), LOGIN))).status_code == 200
        assert API_DESCRIPTION in client.get("/").text  # the check above could fail
        assert API_DESCRIPTION in client.get("/gradio_api/info").text


def test_failed_logins_slow_down_per_client_address(locked):
    import time

    wrong = {"username": LOGIN[0], "password": "guess"}
    right = dict(zip(("username", "password"), LOGIN))
    url, _ = locked
    with httpx.Client(base_url=url.rstrip("/"), timeout=30) as guesser:
        statuses = [guesser.post("/login", data=wrong).status_code for _ in range(8)]
        assert statuses[:5] == [400] * 5 and statuses[5:] == [429] * 3
        refused = guesser.post("/login", data=right)
        assert refused.status_code == 429 and "too many failed logins" in refused.text
        # another address (127.0.0.2 is loopback too) is not held back by this one's guesses
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=url.rstrip("/"), transport=other, timeout=30) as neighbour:
            assert neighbour.post("/login", data=right).status_code == 200
        time.sleep(float(refused.headers["retry-after"]))
        assert guesser.post("/login", data=right).status_code == 200
        assert guesser.post("/login", data=wrong).status_code == 400  # a success starts the count again


def test_uploads_are_refused_and_nothing_is_stored(open_app):
    url, app = open_app
    folder = Path(app.uploaded_file_dir)
    before = set(folder.rglob("*")) if folder.exists() else set()
    payload = b"MZ" + b"\x00" * (1 << 20)
    reply = httpx.post(f"{url}gradio_api/upload", files={"files": ("tool.exe", payload)}, timeout=30)
    assert reply.status_code == 403 and reply.json() == {"detail": "this app takes no uploads"}
    after = set(folder.rglob("*")) if folder.exists() else set()
    assert after == before


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"data": [POISONED_QUESTION]}, 422, '"data" must hold 5 values (question, history, status, primary_area, exp'),
        ({"data": POISONED_QUESTION}, 422, 'a JSON object with a "data" list'),
        ("not json", 422, "the body is not JSON"),
        ({"data": [42, None, None, None, None]}, 200, "/ask question: Input should be a valid string"),
        ({"data": [POISONED_QUESTION, "history", None, None, None]}, 200, "/ask history: Input should be a valid list"),
        ({"data": [POISONED_QUESTION, None, None, None, "pdf"]}, 200, "/ask export: Input should be 'bib', 'csv' or"),
    ],
)
def test_a_malformed_api_call_gets_a_clear_answer_and_logs_no_traceback(open_app, capfd, body, status, message):
    url, _ = open_app
    content = body if isinstance(body, str) else json.dumps(body)
    headers = {"Content-Type": "application/json"}
    reply = httpx.post(f"{url}gradio_api/call/ask", content=content, headers=headers, timeout=30)
    assert reply.status_code == status
    if status == 200:  # well-formed but wrong values: the event ends with the message, as a gr.Error
        events = httpx.get(f"{url}gradio_api/call/ask/{reply.json()['event_id']}", timeout=120).text
        assert "event: error" in events and message in events
    else:
        assert message in reply.json()["detail"]
    assert "Traceback" not in "".join(capfd.readouterr())


def test_links_that_are_not_http_are_dropped_from_the_api_and_the_cli(open_app, poisoned, monkeypatch, capsys):
    from gradio_client import Client

    answer = Client(open_app[0], verbose=False).predict(POISONED_QUESTION, api_name="/ask")
    [source] = [s for s in answer["sources"] if s["paper_id"] == "poison0"]
    assert source["url"] == "" and "javascript:" not in json.dumps(answer)

    from rag import cli

    monkeypatch.setenv("RAG_CONFIG", "extractive")
    monkeypatch.setenv("RAG_VECTORSTORE__PATH", str(poisoned.config.vectorstore.path))
    assert cli.main(["ask", "--json", POISONED_QUESTION]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "poison0" in [s["paper_id"] for s in printed["sources"]] and "javascript:" not in json.dumps(printed)


@pytest.mark.parametrize("fmt", ["bib", "csv", "md"])
def test_exports_link_to_openreview_only(open_app, poisoned, monkeypatch, capsys, fmt):
    """The poisoned paper's `javascript:` link reaches no export: its link is built from its id."""
    from gradio_client import Client

    from rag import cli

    answer = Client(open_app[0], verbose=False).predict(POISONED_QUESTION, None, None, None, fmt, api_name="/ask")
    monkeypatch.setenv("RAG_CONFIG", "extractive")
    monkeypatch.setenv("RAG_VECTORSTORE__PATH", str(poisoned.config.vectorstore.path))
    assert cli.main(["ask", "--export", fmt, POISONED_QUESTION]) == 0
    printed = capsys.readouterr().out
    assert answer["cited"][0] == "poison0" and printed == answer["export"]
    assert "https://openreview.net/forum?id=poison0" in printed and "javascript:" not in printed


def test_the_logged_in_chat_still_works_through_the_gate(locked):
    from gradio_client import Client

    answer = Client(locked[0], auth=LOGIN, verbose=False).predict(POISONED_QUESTION, api_name="/ask")
    assert answer["sources"][0]["paper_id"] == "poison0"


# -- issue 31: hostile input on the newer surfaces (/v1, MCP, /ask, rag fetch, exports) --------------
# Exports: tests/core/test_export.py; rag fetch: tests/ingest/test_fetch.py.

LONE = "Which paper proposes tensor sketching \ud800 for kernels?"  # JSON sends it as "\ud800"
NOT_TEXT = re.compile(r"is not valid text: character \d+ is a lone surrogate \(U\+D[89A-F][0-9A-F]{2}\)")
ODD_IDS = ["brace{1}", "}close", "slash/2", "per%20cent"]  # each must be readable as a paper:// URI
TOO_MANY = [f"Status {number}" for number in range(40_000)]
FILTER_LIMIT = "filter status: 40,000 values; the limit is 100 values a filter"


@pytest.fixture(scope="module")
def odd(tmp_path_factory, embeddings) -> RagService:
    """The poisoned papers' kind of index, plus papers whose ids hold URI and template characters."""
    folder = tmp_path_factory.mktemp("issue31")
    records = [*papers("p", 5), {**paper("poison", 0), "abstract": POISONED_ABSTRACT}]
    records += [{**paper("odd", n), "id": odd_id} for n, odd_id in enumerate(ODD_IDS)]
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    service.ingest([write_jsonl(folder / "list.jsonl", records)])
    return service


@pytest.fixture(scope="module")
def api(odd):
    """`rag serve`'s app over `odd` on loopback: its base URL."""
    for url, _ in serve_with_api(odd):
        yield url.rstrip("/")


def post_json(url: str, body: dict) -> httpx.Response:
    """`body` as JSON with Python's own encoder, which writes a lone surrogate as "\\ud800" (httpx's can't)."""
    return httpx.post(url, content=json.dumps(body), headers={"Content-Type": "application/json"}, timeout=120)


def openai_error(reply: httpx.Response, status: int) -> dict:
    """The body of an error in OpenAI's shape, as docs/api.md describes it."""
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert set(reply.json()) == {"error"} and set(error) == {"message", "type", "param", "code"}
    return error


def ask_messages(question: str, history: list[tuple[str, str]] = ()) -> list[dict]:
    turns = [{"role": role, "content": text} for pair in history for role, text in zip(("user", "assistant"), pair)]
    return [*turns, {"role": "user", "content": question}]


def mcp_session(index: Path, session, raw: bool = False):
    """Run `session` against `rag mcp` over `index`: with the MCP SDK's client, or (raw) with a function
    that writes one JSON-RPC request as a line and returns the reply, as a client in another language would."""
    import asyncio
    import os
    import subprocess
    import sys

    env = {**os.environ, "RAG_CONFIG": "extractive", "RAG_VECTORSTORE__PATH": str(index)}
    command = [sys.executable, "-m", "rag.cli", "mcp"]
    if raw:
        from mcp.types import LATEST_PROTOCOL_VERSION

        with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True) as server:

            def call(method: str, params: dict, number: int | None = None) -> dict | None:
                message = {"jsonrpc": "2.0", "method": method, "params": params}
                server.stdin.write(json.dumps({**message, **({"id": number} if number else {})}) + "\n")
                server.stdin.flush()
                if number is None:
                    return None
                # Long enough for any answer; without a reply a client would wait forever (the bug).
                assert readable(server.stdout, 300), f"no reply to request {number}"
                return json.loads(server.stdout.readline())

            hello = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw"}}
            assert "result" in call("initialize", {**hello, "clientInfo": {"name": "raw", "version": "0"}}, 1)
            call("notifications/initialized", {})
            try:
                return session(call)
            finally:
                server.stdin.close()
                server.wait(60)
    from mcp import Client, StdioServerParameters, stdio_client

    async def run():
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        async with Client(stdio_client(params), read_timeout_seconds=300) as client:
            return await session(client)

    return asyncio.run(run())


# Item 2: a lone surrogate gets one clear error on every interface.


def test_a_lone_surrogate_is_refused_on_the_command_line(odd):
    index = odd.config.vectorstore.path
    for args in (["ask", "Which paper plays caf\udce9?"], ["ask", "--status", "Or\udce9", POISONED_QUESTION]):
        result = rag(*args, index=index)  # the surrogate escape goes out as the byte 0xE9, not UTF-8
        assert result.returncode == 1 and "Traceback" not in result.stderr
        [message] = stderr_lines(result)
        assert message.startswith("error: ") and NOT_TEXT.search(message), message


@pytest.mark.parametrize("path", ["/v1/retrieve", "/v1/chat/completions", "/v1/chat/completions stream"])
def test_a_lone_surrogate_is_a_400_on_the_api(api, path):
    body = {"question": LONE} if path == "/v1/retrieve" else {"messages": ask_messages(LONE)}
    if path.endswith("stream"):
        path, body["stream"] = path.split()[0], True
    error = openai_error(post_json(api + path, body), 400)
    assert NOT_TEXT.search(error["message"]) and error["type"] == "invalid_request_error"


def test_a_lone_surrogate_in_the_model_name_is_named_in_a_404(api):
    reply = post_json(f"{api}/v1/chat/completions", {"model": "x\ud800", "messages": ask_messages("x")})
    error = openai_error(reply, 404)  # before: a 500, the message quoting it could not be encoded
    assert error["code"] == "model_not_found" and error["message"] == "The model 'x\\ud800' does not exist"


def test_a_lone_surrogate_is_a_reason_on_the_apps_ask(api):
    reply = post_json(f"{api}/gradio_api/call/ask", {"data": [LONE, None, None, None, None]})
    events = httpx.get(f"{api}/gradio_api/call/ask/{reply.json()['event_id']}", timeout=120).text
    assert "event: error" in events
    assert NOT_TEXT.search(json.loads(events.split("data: ", 1)[1].splitlines()[0])["error"])


def test_a_lone_surrogate_gets_a_reply_over_mcp(odd):
    """The MCP SDK's JSON parser refused the line and dropped the request: no reply, a client waiting forever."""

    def session(call):
        ask = call("tools/call", {"name": "ask", "arguments": {"question": LONE}}, 2)
        search = call("tools/call", {"name": "search_papers", "arguments": {"question": LONE}}, 3)
        garbled = {"question": "x", "filters": {"status": ["\udcff"]}}
        status = call("tools/call", {"name": "search_papers", "arguments": garbled}, 4)
        return ask, search, status

    for reply in mcp_session(odd.config.vectorstore.path, session, raw=True):
        assert reply["result"]["isError"] is True
        assert NOT_TEXT.search(reply["result"]["content"][0]["text"])


# Items 3, 5 and 8: filter sizes, strict types and plain validation errors, over the API and MCP.


@pytest.mark.parametrize(
    "path, body, param, says",
    [
        ("/v1/retrieve", {"question": POISONED_QUESTION, "k": "5"}, "k", "k: Input should be a valid integer"),
        ("/v1/retrieve", {"question": POISONED_QUESTION, "k": True}, "k", "k: Input should be a valid integer"),
        ("/v1/retrieve", {"question": "x", "filters": {"has_code": "yes"}}, "filters.has_code", "valid boolean"),
        ("/v1/chat/completions", {"messages": ask_messages("x"), "stream": "yes"}, "stream", "valid boolean"),
        ("/v1/chat/completions", {"messages": ask_messages("x"), "k": "5"}, "k", "valid integer"),
        ("/v1/retrieve", {"question": "x", "filters": {"status": TOO_MANY}}, None, FILTER_LIMIT),
        ("/v1/chat/completions", {"messages": ask_messages("x"), "filters": {"status": TOO_MANY}}, None, FILTER_LIMIT),
    ],
    ids=["k-text", "k-bool", "has_code-text", "stream-text", "chat-k-text", "40k-filter", "chat-40k-filter"],
)
def test_loose_types_and_huge_filters_are_400_naming_the_field_or_limit(api, path, body, param, says):
    error = openai_error(httpx.post(api + path, json=body, timeout=120), 400)
    assert error["param"] == param and says in error["message"]


def test_the_openai_sdks_own_requests_still_work(api):
    import openai

    client = openai.OpenAI(base_url=f"{api}/v1", api_key="unused", max_retries=0, timeout=120)
    options = {"temperature": 0.2, "max_tokens": 200, "top_p": 1.0, "stream_options": {"include_usage": True}}
    chunks = list(client.chat.completions.create(model="extractive", messages=ask_messages(POISONED_QUESTION),
                                                 stream=True, **options))  # fmt: skip
    assert chunks[-1].model_extra["rag"]["cited"] == ["poison0"]


def test_mcp_refuses_loose_types_and_huge_filters_in_one_sentence_and_reads_odd_ids(odd):
    async def session(client) -> dict:
        seen = {
            "k-text": await client.call_tool("search_papers", {"question": "x", "k": "5"}),
            "has_code-text": await client.call_tool("ask", {"question": "x", "filters": {"has_code": "yes"}}),
            "40k-filter": await client.call_tool("search_papers", {"question": "x", "filters": {"status": TOO_MANY}}),
            "no-question": await client.call_tool("search_papers", {}),
        }
        for number, odd_id in enumerate(ODD_IDS):
            found = await client.call_tool("search_papers", {"question": paper("odd", number)["abstract"]})
            [uri] = [p["uri"] for p in found.structured_content["papers"] if p["paper_id"] == odd_id]
            seen[odd_id] = json.loads((await client.read_resource(uri)).contents[0].text)["paper_id"]
        return seen

    seen = mcp_session(odd.config.vectorstore.path, session)
    expected = {
        "k-text": "Error executing tool search_papers: k: Input should be a valid integer",
        "has_code-text": "Error executing tool ask: filters.has_code: Input should be a valid boolean",
        "40k-filter": f"Error executing tool search_papers: {FILTER_LIMIT}",
        "no-question": "Error executing tool search_papers: question: Field required",
    }
    for case, message in expected.items():
        assert seen[case].is_error and seen[case].content[0].text == message, (case, seen[case].content[0].text)
    assert [seen[odd_id] for odd_id in ODD_IDS] == ODD_IDS


def test_a_filter_of_40000_values_is_one_line_from_the_command_line(odd):
    options = [part for status in TOO_MANY for part in ("--status", status)]
    result = rag("ask", *options, POISONED_QUESTION, index=odd.config.vectorstore.path)
    assert result.returncode == 1 and stderr_lines(result) == [f"error: {FILTER_LIMIT}"]


# Item 4: every /v1 error in the API's own format.


@pytest.mark.parametrize(
    "method, path, content, status, says",
    [
        ("POST", "/v1/retrieve", b'{"question": "caf\xe9"}', 400, "the body is not UTF-8 text (byte 0xe9 at position"),
        ("POST", "/v1/chat/completions", b"[" * 100_000 + b"]" * 100_000, 400, "nested too deeply"),
        ("POST", "/v1/retrieve", b'{"question": "x",}', 400, "the body is not valid JSON: Expecting property name"),
        ("GET", "/v1/chat/completions", None, 405, "GET is not allowed on /v1/chat/completions; use POST"),
        ("POST", "/v1/models", None, 405, "POST is not allowed on /v1/models; use GET"),
        ("GET", "/v1/completions", None, 404, "no such endpoint: GET /v1/completions"),
    ],
    ids=["not-utf8", "deep", "json-error", "get-chat", "post-models", "unknown-path"],
)
def test_every_v1_error_is_in_the_openai_format(api, method, path, content, status, says):
    headers = {"Content-Type": "application/json"}
    error = openai_error(httpx.request(method, api + path, content=content, headers=headers, timeout=60), status)
    assert says in error["message"] and error["param"] is None  # a position is not a field
    if status == 405:
        assert httpx.request(method, api + path).headers["allow"] == says.rsplit(" ", 1)[1]


# Item 7: the length message names the text that is too long.


@pytest.mark.parametrize(
    "history, says",
    [
        ([("x" * 3001, "An answer.")], "question 1 of the history is 3,001 characters long; the limit is 2,000"),
        (
            # each under the limit, the earlier question and this one joined (1,989 + 1 + 17) over it
            [("Which paper proposes tensor sketching " + "x" * 1950 + "?", "An answer.")],
            "the follow-up rewritten with the conversation is 2,007 characters long; the limit is 2,000",
        ),
    ],
    ids=["earlier-question", "rewritten-follow-up"],
)
def test_a_long_earlier_question_is_named_as_such(api, history, says):
    reply = httpx.post(f"{api}/v1/chat/completions", json={"messages": ask_messages("What do they use?", history)})
    message = openai_error(reply, 400)["message"]
    assert message == f"{says} (answer.max_question_chars)" and "17 characters" not in message
