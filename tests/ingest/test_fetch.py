"""`rag fetch`: the real openreview-py client against a hand-written API v2 server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import user_environment

from benchmarks.harness.openreview_server import FixtureServer, OpenReviewFixture
from rag.core.config import FetchConfig, data_dir
from rag.core.errors import FetchError
from rag.ingest.fetch import Venue, fetch_venue, resolve_venue
from rag.ingest.papers import load_papers

VENUE = "ICLR.cc/2025/Conference"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def with_abstract(fixture: OpenReviewFixture) -> list[dict]:
    return sorted((n for n in fixture.notes.values() if "abstract" in n["content"]), key=lambda n: n["id"])


def rag(*args: str, url: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "RAG_CONFIG": "extractive", "RAG_FETCH__OPENREVIEW_URL": url, **env}
    return subprocess.run(
        [sys.executable, "-m", "rag.cli", *args], capture_output=True, text=True, timeout=timeout, env=environment
    )


@pytest.fixture(autouse=True)
def _no_openreview_account(monkeypatch):
    """Each test says whether it logs in; a developer's own OpenReview login must not leak in."""
    for name in ("OPENREVIEW_USERNAME", "OPENREVIEW_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with FixtureServer(OpenReviewFixture(throttle_on={2})) as running:
        yield running


def test_fetch_writes_every_note_with_an_abstract_in_the_ingest_format(server, tmp_path):
    out = tmp_path / "iclr.jsonl"
    report = fetch_venue(VENUE, out, FetchConfig(openreview_url=server.url))
    records = read_jsonl(out)
    expected = with_abstract(server.fixture)
    assert [r["id"] for r in records] == [n["id"] for n in expected]
    assert report.written == len(expected) and not list(tmp_path.glob("*.part"))
    assert report.problems == ["F6fixNoAbs: no abstract; skipped"]
    by_id = {r["id"]: r for r in records}
    assert {key: by_id[key]["status"] for key in by_id} == {
        "A1fixOral0": "Oral",
        "B2fixTeX00": "Poster",
        "C3fixWdrw0": "Withdrawn",
        "D4fixRejc0": "Reject",
        "E5fixPend0": "Submitted",
        "G7fixDesk0": "Desk Rejected",
        "H8fixSpot0": "Spotlight",
    }
    assert by_id["B2fixTeX00"]["title"] == "Sparse $\\mathcal{O}(n \\log n)$ Routing & Mixing of <tokens> – a Fixture"
    for note in expected:
        record, content = by_id[note["id"]], note["content"]
        assert record["authors"] == content["authors"]["value"]
        assert record["venue"] == content["venue"]["value"]
        assert record["primary_area"] == content["primary_area"]["value"]
        assert record["openreview_url"] == f"https://openreview.net/forum?id={note['forum']}"
    # What ingest reads from the file: every record, its status, url and the GitHub link in an abstract.
    papers = {paper.paper_id: paper for paper in load_papers([out], strict=True)}
    assert papers.keys() == by_id.keys()
    assert papers["H8fixSpot0"].github == ("https://github.com/example/spotlight-fixture",)
    assert papers["C3fixWdrw0"].url.endswith("C3fixWdrw0") and papers["C3fixWdrw0"].status == "Withdrawn"


def test_a_malformed_note_is_reported_and_the_rest_written(server, tmp_path):
    good = server.fixture.notes["A1fixOral0"]
    server.fixture.notes["B3fixBad00"] = {
        **good,
        "id": "B3fixBad00",
        "content": {**good["content"], "title": {"value": 42}},
    }
    out = tmp_path / "x.jsonl"
    report = fetch_venue(VENUE, out, FetchConfig(openreview_url=server.url))
    assert "B3fixBad00: title, abstract or authors of an unexpected type; skipped" in report.problems
    ids = [r["id"] for r in read_jsonl(out)]
    assert "B3fixBad00" not in ids and len(ids) == len(with_abstract(server.fixture)) - 1


def test_a_venue_without_submissions_is_one_line_and_writes_nothing(server, tmp_path):
    server.fixture.notes.clear()
    with pytest.raises(FetchError, match="no public submissions at http://127.0.0.1:.*API v1"):
        fetch_venue(VENUE, tmp_path / "x.jsonl", FetchConfig(openreview_url=server.url))
    assert not list(tmp_path.iterdir())


def test_pages_follow_ids_and_a_429_is_retried_after_its_retry_after(server, tmp_path):
    fetch_venue(VENUE, tmp_path / "x.jsonl", FetchConfig(openreview_url=server.url, page_size=1000))
    requests = server.fixture.notes_requests()
    assert [r.status for r in requests].count(429) == 1
    throttled = next(i for i, r in enumerate(requests) if r.status == 429)
    retry = requests[throttled + 1]
    assert retry.query == requests[throttled].query  # the same page asked again
    assert retry.at - requests[throttled].at >= server.fixture.retry_after
    ids = sorted(server.fixture.notes)
    pages = [ids[i : i + server.fixture.page_cap] for i in range(0, len(ids), server.fixture.page_cap)]
    answered = [r.query.get("after") for r in requests if r.status == 200]
    assert answered == [None] + [page[-1] for page in pages]  # ends with an empty page after the last id


def test_a_killed_fetch_continues_where_it_stopped_without_duplicates(tmp_path):
    out = tmp_path / "iclr.jsonl"
    part = tmp_path / "iclr.jsonl.ICLR.cc-2025-Conference.part"
    fixture = OpenReviewFixture(hang_on=3)  # the third page hangs: the first two are written
    with FixtureServer(fixture) as server:
        environment = {**os.environ, "RAG_FETCH__OPENREVIEW_URL": server.url}
        command = [sys.executable, "-m", "rag.cli", "fetch", "iclr2025", "--out", str(out), "--quiet"]
        process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while len(fixture.notes_requests()) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)  # the request is in flight: the pages before it are on disk
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        fixture.release.set()
        first_two_pages = sorted(fixture.notes)[: 2 * fixture.page_cap]
        kept = [r["id"] for r in read_jsonl(part)]
        assert kept == [n["id"] for n in with_abstract(fixture) if n["id"] in first_two_pages]
        assert not out.exists()
        with part.open("a", encoding="utf-8") as file:
            file.write('{"id": "H8fixSpot0", "title": "cut sho')  # as if killed in the middle of a line

        fixture.hang_on = None
        again = rag("fetch", "iclr2025", "--out", str(out), "--quiet", url=server.url)
        assert again.returncode == 0, again.stderr
        ids = [r["id"] for r in read_jsonl(out)]
        assert ids == [n["id"] for n in with_abstract(fixture)] and len(set(ids)) == len(ids)
        resumed_at = fixture.notes_requests()[3].query.get("after")
        assert resumed_at == kept[-1]  # continued after the last kept id, not from the start
        assert f"({len(kept)} kept from the stopped fetch)" in again.stdout
        assert not part.exists()


@pytest.mark.parametrize(
    "venue, message",
    [
        ("Nowhere.cc/2025/Conference", "error: Nowhere.cc/2025/Conference: no such venue at http://127.0.0.1:"),
        ("ICLR.cc/2023/Conference", "error: ICLR.cc/2023/Conference is on OpenReview's API v1"),
    ],
)
def test_a_venue_that_cannot_be_fetched_is_one_line_and_keeps_the_old_file(server, tmp_path, venue, message):
    out = tmp_path / "kept.jsonl"
    out.write_text('{"id": "x", "abstract": "kept"}\n', encoding="utf-8")
    result = rag("fetch", "openreview", venue, "--out", str(out), url=server.url)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(message) and len(result.stderr.strip().splitlines()) == 1
    assert out.read_text(encoding="utf-8") == '{"id": "x", "abstract": "kept"}\n'


def test_no_server_is_one_line(tmp_path):
    from benchmarks.harness.servers import free_port

    url = f"http://127.0.0.1:{free_port()}"
    result = rag("fetch", "iclr2025", "--out", str(tmp_path / "x.jsonl"), url=url)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().startswith(f"error: cannot reach OpenReview at {url}")


def test_a_200_character_venue_id_is_fetched_into_files_of_bounded_names(server, tmp_path):
    """Issue 31: the stopped-fetch file was named after the whole venue id, an OSError past 255 bytes."""
    long_venue = "ICLR.cc/2025/" + "Conference-Track-" * 11  # 200 characters, the same submissions
    assert len(long_venue) == 200
    server.fixture.groups[long_venue] = {**server.fixture.groups[VENUE], "id": long_venue}
    home = tmp_path / "home"
    environment = {**user_environment(home), "RAG_CONFIG": "extractive", "RAG_FETCH__OPENREVIEW_URL": server.url}
    for out in (["--out", str(tmp_path / "long.jsonl")], []):  # a file given, and the default one
        result = subprocess.run(
            [sys.executable, "-m", "rag.cli", "fetch", "openreview", long_venue, "--quiet", *out],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    [default] = (home / "data" / "abstract-rag" / "fetched").iterdir()
    assert default.name.startswith("ICLR.cc-2025-Conference-Track-") and len(default.name) < 80
    for written in (tmp_path / "long.jsonl", default):
        assert [r["id"] for r in read_jsonl(written)] == [n["id"] for n in with_abstract(server.fixture)]


def test_an_out_file_in_a_missing_folder_is_one_line_and_makes_no_folders(server, tmp_path):
    missing = tmp_path / "missing" / "dir"
    result = rag("fetch", "iclr2025", "--out", str(missing / "x.jsonl"), url=server.url)
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {missing}: no such folder (the output's folder must exist)"
    assert not (tmp_path / "missing").exists() and not server.fixture.seen  # refused before asking


def test_a_missing_extra_names_the_install_command(server, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "openreview.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    paths = os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])
    result = rag("fetch", "iclr2025", "--out", str(tmp_path / "x.jsonl"), url=server.url, PYTHONPATH=paths)
    assert result.returncode == 1
    assert result.stderr.strip() == 'error: rag fetch needs the OpenReview client: pip install -e ".[openreview]"'


def test_credentials_come_only_from_the_environment_and_only_when_given(server, tmp_path):
    config = FetchConfig(openreview_url=server.url)
    fetch_venue(VENUE, tmp_path / "public.jsonl", config)
    assert {request.authorization for request in server.fixture.seen} == {None}

    server.fixture.seen.clear()
    user, password = server.fixture.account
    logged_in = rag("fetch", "iclr2025", "--out", str(tmp_path / "x.jsonl"), url=server.url,
                    OPENREVIEW_USERNAME=user, OPENREVIEW_PASSWORD=password)  # fmt: skip
    assert logged_in.returncode == 0, logged_in.stderr
    assert {r.authorization for r in server.fixture.notes_requests()} == {f"Bearer {server.fixture.token}"}

    wrong = rag("fetch", "iclr2025", "--out", str(tmp_path / "y.jsonl"), url=server.url,
                OPENREVIEW_USERNAME=user, OPENREVIEW_PASSWORD="wrong")  # fmt: skip
    assert wrong.returncode == 1
    assert wrong.stderr.strip() == f"error: OpenReview at {server.url} refused: Invalid username or password"


def test_half_given_credentials_are_refused(server, tmp_path):
    result = rag("fetch", "iclr2025", "--out", str(tmp_path / "x.jsonl"), url=server.url, OPENREVIEW_USERNAME="me")
    assert result.returncode == 1
    assert "set both OPENREVIEW_USERNAME and OPENREVIEW_PASSWORD" in result.stderr


@pytest.mark.parametrize(
    "venueid, venue, status",
    [
        ("NeurIPS.cc/2024/Conference", "NeurIPS 2024 poster", "Poster"),
        ("NeurIPS.cc/2024/Conference", "NeurIPS 2024 oral", "Oral"),
        ("NeurIPS.cc/2024/Conference", "NeurIPS 2024", "Accept"),
        ("NeurIPS.cc/2024/Conference/Rejected_Submission", "Submitted to NeurIPS 2024", "Reject"),
        ("Elsewhere/2025", "Elsewhere 2025", "Elsewhere 2025"),
    ],
)
def test_status_reads_other_venues_spelling(venueid, venue, status):
    assert Venue.from_group("NeurIPS.cc/2024/Conference", {}).status(venueid, venue) == status


def test_without_out_it_writes_into_the_fetch_folder_of_a_new_user(server, tmp_path):
    environment = {**user_environment(tmp_path), "RAG_CONFIG": "extractive", "RAG_FETCH__OPENREVIEW_URL": server.url}
    result = subprocess.run(
        [sys.executable, "-m", "rag.cli", "fetch", "iclr2025", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = tmp_path / "data" / "abstract-rag" / "fetched" / "ICLR.cc-2025-Conference.jsonl"
    assert len(read_jsonl(written)) == len(with_abstract(server.fixture))


def test_shortcut_and_default_output():
    from rag.ingest.fetch import default_output

    assert resolve_venue("ICLR2025") == VENUE and resolve_venue("COLM/2024/Conference") == "COLM/2024/Conference"
    assert default_output(VENUE, FetchConfig()) == data_dir() / "fetched" / "ICLR.cc-2025-Conference.jsonl"


@pytest.mark.slow
def test_a_changed_decision_or_abstract_updates_exactly_that_paper(server, tmp_path, make_service):
    from rag.core.filters import Filters

    out, config, service = tmp_path / "iclr.jsonl", FetchConfig(openreview_url=server.url), make_service()
    fetch_venue(VENUE, out, config)
    first = service.ingest([out])
    assert first.added == len(with_abstract(server.fixture))
    question = "Which paper is about waiting for decisions?"
    assert [s.paper_id for s in service.retrieve(question, k=1, filters=Filters(status=("Poster",)))] != ["E5fixPend0"]

    server.fixture.set_content("E5fixPend0", venueid=VENUE, venue="ICLR 2025 Poster")
    fetch_venue(VENUE, out, config)
    second = service.ingest([out])
    assert (second.added, second.updated, second.unchanged) == (0, 1, first.added - 1)
    assert second.chunks_added == 0  # a new decision embeds nothing again
    assert service.index.stored_metadata(["E5fixPend0"])["E5fixPend0"]["status"] == "Poster"
    for mode in ("dense", "bm25"):  # the chunks' metadata and the BM25 index both follow
        retriever = make_service(index="index", retrieval={"mode": mode})
        found = retriever.retrieve(question, k=1, filters=Filters(status=("Poster",)))
        assert [s.paper_id for s in found] == ["E5fixPend0"]

    edited = "An edited fixture abstract: lemonade stands become auctions with sealed bids and sour losers."
    server.fixture.set_content("D4fixRejc0", abstract=edited)
    fetch_venue(VENUE, out, config)
    third = service.ingest([out])
    assert (third.added, third.updated, third.unchanged) == (0, 1, first.added - 1)
    assert third.chunks_added >= 1 and third.papers == first.papers and third.chunks == first.chunks
    assert service.retrieve("lemonade auctions with sealed bids", k=1)[0].paper_id == "D4fixRejc0"


@pytest.mark.slow
def test_fetch_ingest_from_the_command_line_then_refresh(server, tmp_path):
    """The issue's "done when": fetch into the index, one decision changes, fetch again."""
    out, index = tmp_path / "x.jsonl", tmp_path / "index"
    first = rag("fetch", "iclr2025", "--out", str(out), "--ingest", url=server.url, RAG_VECTORSTORE__PATH=str(index))
    assert first.returncode == 0, first.stderr
    papers = len(with_abstract(server.fixture))
    assert f"{papers} added, 0 updated" in first.stdout
    assert "warning: F6fixNoAbs: no abstract; skipped" in first.stderr
    server.fixture.set_content("A1fixOral0", venueid=f"{VENUE}/Withdrawn_Submission", venue="Withdrawn")
    again = rag("fetch", "iclr2025", "--out", str(out), "--ingest", url=server.url, RAG_VECTORSTORE__PATH=str(index))
    assert again.returncode == 0, again.stderr
    assert f"0 added, 1 updated, {papers - 1} unchanged" in again.stdout
