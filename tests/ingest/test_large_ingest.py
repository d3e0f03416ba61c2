"""An ingest larger than one Chroma call takes, on top of a small index with its map: the README's next step after
the quick start (the 19 seeds, their map built, then the ICLR 2025 list), and a map that falls behind its index."""

from __future__ import annotations

import gzip
import itertools
import time

import pytest
from clirun import rag
from conftest import FULL_LIST, SEED_FILE, settings_for

from rag.answering.paper_map import read_map
from rag.index.paper_map import NEIGHBOURS, MapStore
from rag.service import RagService

# Records of the real list: more than Chroma's largest batch on disk (5,461) and, each new paper asking for its
# NEIGHBOURS nearest placed ones, more than SQLite's 32,766 variables in one query (3,277 papers did it).
LARGE = 6_800
HALF = LARGE // 2
SQLITE_VARIABLES = 32_766


def records_of_the_list(path, lines):
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as source, path.open("w", encoding="utf-8") as out:
        for line in itertools.islice(source, *lines):
            out.write(line)
    return path


@pytest.fixture(scope="module")
def large_list(tmp_path_factory):
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    folder = tmp_path_factory.mktemp("large")
    return [
        records_of_the_list(folder / name, lines) for name, lines in (("a.jsonl", (HALF,)), ("b.jsonl", (HALF, LARGE)))
    ]


def fast_service(folder):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    # A fake embedding for speed (the bundled model takes about 15 minutes for these records on 2 cores): this is
    # about how many entries go to Chroma at once, and ingests with the real model are tested elsewhere.
    return RagService(settings_for(folder), embeddings=DeterministicFakeEmbedding(size=64))


@pytest.mark.slow
def test_a_large_list_on_top_of_the_seeds_and_their_map_is_stored_and_laid_out_afresh(tmp_path, large_list):
    """The README's next step: many more papers than the map holds are laid out with them, not placed among
    the few (which would keep the seeds' themes for the whole list)."""
    service = fast_service(tmp_path / "index")
    assert service.ingest([SEED_FILE]).map.startswith("map: 19 papers laid out")
    started = time.perf_counter()
    report = service.ingest(large_list)
    seconds = time.perf_counter() - started
    limit = service.index.max_batch_size
    assert report.added > limit, (report.added, limit)
    assert report.map.startswith(f"map: {19 + report.added:,} papers laid out in "), report.map
    found = read_map(service)
    assert found.placed == len(found.points) == found.indexed == report.papers == 19 + report.added
    again = service.ingest(large_list)
    assert (again.added, again.updated, again.unchanged) == (0, 0, report.added)
    assert again.map.startswith("map: 0 placed, 0 removed"), again.map
    print(f"{report.added:,} papers on top of 19 in {seconds:.0f} s: {report.summary()}")


@pytest.mark.slow
def test_as_many_new_papers_as_the_map_holds_are_placed_among_them_in_queries_chroma_takes(tmp_path, large_list):
    service = fast_service(tmp_path / "index")
    first, second = large_list
    assert service.ingest([first]).map.startswith(f"map: {HALF:,} papers laid out")
    report = service.ingest([second])
    assert report.added * NEIGHBOURS > SQLITE_VARIABLES, report.added
    assert report.map.startswith(f"map: {report.added:,} placed, 0 removed, {HALF:,} left in place"), report.map
    found = read_map(service)
    assert found.placed == len(found.points) == found.indexed == report.papers


def test_rag_map_says_when_its_map_covers_fewer_papers_than_the_index_and_how_to_fix_it(make_service):
    service = make_service()
    service.ingest([SEED_FILE])
    index = service.config.vectorstore.path
    MapStore(service.index).remove(["pCj2sLNoJq", "p9OsTj0nMP"])  # as left by an ingest whose map step failed
    done = rag("map", index=index)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("17 papers placed; ")
    [warning] = done.stderr.splitlines()
    assert warning == (
        f"warning: the map is out of date: it places 17 papers, the index at {index} holds 19; "
        "`rag map --rebuild` lays it out again (or run `rag ingest` again to place the new ones)"
    )
    done = rag("ingest", "--quiet", str(SEED_FILE), index=index)  # places the two again, moving no other paper
    assert done.returncode == 0 and "map: 2 placed, 0 removed, 17 left in place" in done.stdout, done.stdout
    done = rag("map", index=index)
    assert done.stdout.startswith("19 papers placed; ") and done.stderr == ""
