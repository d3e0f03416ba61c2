"""The map of the conference (rag/answering/paper_map.py): built at ingest and stored with the index, new papers
placed among the others without moving them, and shown by `rag map`, `rag.paper_map()` and /v1/map. The page's
map, in Chromium, is tested in test_browser_map.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from clirun import rag
from conftest import SEED_FILE, user_environment, write_jsonl
from test_server import database  # noqa: F401 - a fixture: a database of its own on the shared server

from rag.answering.paper_map import read_map, rebuild_map
from rag.core.config import PROJECT_ROOT
from rag.core.errors import StoreError
from rag.core.filters import Filters

HANABI = "pCj2sLNoJq"  # "A Generalist Hanabi Agent", a seed paper


def places(service) -> dict[str, tuple[float, float, int]]:
    return {point.paper_id: (point.x, point.y, point.theme) for point in read_map(service).points}


def test_ingest_lays_out_the_seeds_and_a_rebuild_gives_the_same_map(make_service):
    service = make_service()
    report = service.ingest([SEED_FILE])
    assert report.map.startswith("map: 19 papers laid out in 6 themes"), report.map
    found = read_map(service)
    assert found.placed == len(found.points) == 19 and len(found.themes) == 6
    assert sum(papers for _, papers in found.theme_sizes()) == 19 and all(found.themes)
    xy = np.asarray([(point.x, point.y) for point in found.points])
    assert np.abs(xy).max() == pytest.approx(1.0) and len({tuple(row) for row in xy}) == 19  # spread, none on another
    before = places(service)
    assert rebuild_map(service).full and places(service) == before  # the same papers, the same map


def test_a_new_paper_lands_beside_its_nearest_and_no_other_paper_moves(make_service, tmp_path):
    service = make_service()
    service.ingest([SEED_FILE])
    before = places(service)
    hanabi = service.paper(HANABI)
    assert hanabi is not None
    twin = {
        "id": "twin-hanabi",
        "title": f"{hanabi['title']}, extended",
        "abstract": f"{hanabi['abstract']} We also release the trained agents.",
        "status": "Poster",
        "primary_area": "reinforcement learning",
    }
    report = service.ingest([SEED_FILE, write_jsonl(tmp_path / "twin.jsonl", [twin])])
    assert report.map.startswith("map: 1 placed, 0 removed, 19 left in place"), report.map
    after = places(service)
    assert {pid: after[pid] for pid in before} == before  # placed without moving the rest
    x, y, theme = after["twin-hanabi"]
    nearest = min(before, key=lambda pid: (before[pid][0] - x) ** 2 + (before[pid][1] - y) ** 2)
    assert nearest == HANABI and theme == before[HANABI][2]

    gone = service.ingest([SEED_FILE], prune=True)  # the twin removed: dropped from the map, the rest stay
    assert gone.map.startswith("map: 0 placed, 1 removed, 19 left in place") and places(service) == before


@pytest.mark.parametrize("papers", [1, 2, 5])
def test_a_tiny_index_gets_a_map_too(make_service, tmp_path, papers):
    records = [json.loads(line) for line in SEED_FILE.read_text(encoding="utf-8").splitlines()[:papers]]
    service = make_service()
    service.ingest([write_jsonl(tmp_path / "few.jsonl", records)])
    found = read_map(service)
    assert found.placed == papers and {point.paper_id for point in found.points} == {r["id"] for r in records}
    assert all(np.isfinite([point.x, point.y]).all() for point in found.points)


def test_the_filters_keep_only_the_papers_they_admit(seeded):
    found = read_map(seeded, Filters(primary_area=("reinforcement learning",)))
    assert found.placed == 19 and {point.paper_id for point in found.points} == {
        "pCj2sLNoJq",
        "p9OsTj0nMP",
        "p01BR4njlY",
    }
    assert {point.primary_area for point in found.points} == {"reinforcement learning"}
    assert [point.paper_id for point in read_map(seeded, Filters(status=("Spotlight",))).points] == ["p4cLtzk4oe"]


def test_rag_map_as_typed(seeded, tmp_path):
    index = seeded.config.vectorstore.path
    done = rag("map", index=index)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "19 papers placed; 6 themes:" and len(lines) == 7
    assert sum(int(line.rsplit("(", 1)[1].split()[0]) for line in lines[1:]) == 19

    page = tmp_path / "map.html"
    done = rag("map", "--json", "--status", "Spotlight", "--html", str(page), "--colour", "area", index=index)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert (payload["papers"], payload["shown"], payload["filters"]) == (19, 1, {"status": ["Spotlight"]})
    assert payload["points"][0]["paper_id"] == "p4cLtzk4oe" and set(payload["points"][0]) >= {
        "x",
        "y",
        "theme",
        "title",
    }
    html = page.read_text(encoding="utf-8")
    assert "scattergl" in html and "Exploring Local Memorization in Diffusion Models" in html
    assert "<script src=" not in html and len(html) > 3_000_000  # plotly.js inside: opens offline

    for args, message in [
        (["--html", ""], "error: --html: empty; give the file to write the map to"),
        (["--html", str(tmp_path / "no" / "such" / "map.html")], "error: cannot write the map to"),
    ]:
        done = rag("map", *args, index=index)
        assert done.returncode == 1 and done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


def test_an_index_without_a_map_says_how_to_build_one_and_rebuild_builds_it(make_service):
    service = make_service()
    service.ingest([SEED_FILE])
    service.client.delete_collection(f"{service.index.name}-map")  # as an index built before maps existed
    with pytest.raises(StoreError, match=r"has no map yet; `rag map --rebuild`"):
        read_map(service)
    assert f"{service.index.name}-map" not in [c.name for c in service.client.list_collections()]  # reads make none
    index = service.config.vectorstore.path
    done = rag("map", index=index)
    assert (
        done.returncode == 1 and done.stderr.count("\n") == 1 and "has no map yet; `rag map --rebuild`" in done.stderr
    )
    done = rag("map", "--rebuild", index=index)
    assert done.returncode == 0 and "map: 19 papers laid out in 6 themes" in done.stderr, done.stderr
    assert done.stdout.startswith("19 papers placed; 6 themes:")


@pytest.mark.slow
def test_the_package_function_in_a_fresh_process(tmp_path):
    code = """
        import json, rag
        from rag.core.filters import Filters
        found = rag.paper_map(config="extractive")
        rl = rag.paper_map(config="extractive", filters=Filters(primary_area=("reinforcement learning",)))
        print(json.dumps([found.placed, len(found.points), len(rl.points), found.themes == rl.themes]))
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=user_environment(tmp_path),
        cwd=PROJECT_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [19, 19, 3, True]  # a fresh user's index: the seeds, mapped at first use


def test_v1_map_through_the_real_app(seeded):
    from fastapi.testclient import TestClient

    from ui.serve import build_server

    app = TestClient(build_server(seeded, api_key="s3cret"))
    key = {"Authorization": "Bearer s3cret"}
    reply = app.get("/v1/map", headers=key)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["object"], body["papers"], body["shown"]) == ("map", 19, 19)
    assert body["points"] == read_map(seeded).to_payload()["points"]
    reply = app.get("/v1/map?primary_area=reinforcement%20learning&status=Poster", headers=key)
    assert reply.status_code == 200 and reply.json()["shown"] == 3
    assert app.get("/v1/map").status_code == 401
    reply = app.get("/v1/map?has_code=maybe", headers=key)
    assert reply.status_code == 400 and "has_code" in reply.json()["error"]["message"], reply.text


@pytest.mark.slow
def test_mcp_paper_map(tmp_path, seeded):
    import asyncio

    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rag.cli", "--config", "extractive", "mcp"],
        env=user_environment(tmp_path),  # a new user's index: the seeds, mapped at first use
        cwd=PROJECT_ROOT,
    )

    async def session() -> tuple:
        async with Client(stdio_client(params), read_timeout_seconds=600) as client:
            themes = await client.call_tool("paper_map", {})
            points = await client.call_tool("paper_map", {"filters": {"status": ["Spotlight"]}, "points": True})
            return themes, points

    themes, points = asyncio.run(session())
    assert not themes.is_error and not points.is_error
    expected = read_map(seeded).to_payload()
    assert themes.structured_content == {key: value for key, value in expected.items() if key != "points"}
    assert [point["paper_id"] for point in points.structured_content["points"]] == ["p4cLtzk4oe"]


@pytest.mark.slow
def test_the_map_through_a_chroma_server_is_the_map_on_disk(chroma_server, database, tmp_path, embeddings, seeded):
    from test_server import server_settings

    from rag.service import RagService

    host, port = chroma_server
    service = RagService(server_settings(tmp_path, host, port, database), embeddings=embeddings)
    assert service.ingest([SEED_FILE]).map.startswith("map: 19 papers laid out in 6 themes")
    over_server, on_disk = read_map(service), read_map(seeded)
    assert over_server.themes == on_disk.themes
    assert sorted(map(vars, over_server.points), key=str) == sorted(map(vars, on_disk.points), key=str)
