"""Ingestion into a real Chroma: idempotent, incremental, deduplicated, pruned, and safe on bad input."""

from __future__ import annotations

import pytest
from conftest import SEED_FILE, SEED_TEXT, seed_abstracts, write_jsonl

from rag.core.errors import InputError


def test_seeds_ingest_once_and_a_second_run_adds_nothing(make_service):
    service = make_service()
    first = service.ingest([SEED_FILE])
    assert (first.added, first.unchanged, first.papers) == (19, 0, 19)
    assert first.chunks == first.chunks_added > 19
    second = service.ingest([SEED_FILE])
    assert (second.added, second.updated, second.unchanged, second.chunks_added) == (0, 0, 19, 0)
    assert (second.papers, second.chunks) == (19, first.chunks)


def test_changed_text_for_a_known_id_replaces_its_chunks(make_service, tmp_path):
    service = make_service()
    path = write_jsonl(
        tmp_path / "a.jsonl", [{"id": "p1", "title": "Graphs", "abstract": "We study graph neural networks."}]
    )
    service.ingest([path])
    write_jsonl(path, [{"id": "p1", "title": "Graphs", "abstract": "We study protein folding with transformers."}])
    report = service.ingest([path])
    assert (report.added, report.updated, report.papers, report.chunks) == (0, 1, 1, 1)
    [source] = service.retrieve("protein folding", k=3)
    assert "protein folding" in source.text


def test_a_new_status_for_the_same_text_relabels_the_paper_without_embedding_again(make_service, tmp_path):
    from rag.core.filters import Filters

    service = make_service()
    records = [
        {"id": "p1", "title": "Graphs", "abstract": "We study graph neural networks on molecules.", "status": ""},
        {"id": "p2", "title": "Proteins", "abstract": "We fold proteins with transformers.", "status": "Reject"},
    ]
    path = write_jsonl(tmp_path / "a.jsonl", records)
    first = service.ingest([path])
    records[0] = {**records[0], "status": "Poster", "authors": ["Ada Example"]}
    write_jsonl(path, records)
    report = service.ingest([path])
    assert (report.added, report.updated, report.unchanged, report.chunks_added) == (0, 1, 1, 0)
    assert report.chunks == first.chunks
    [source] = service.retrieve("graph neural networks", k=1, filters=Filters(status=("Poster",)))
    assert source.paper_id == "p1" and source.metadata["authors"] == "Ada Example"
    again = service.ingest([path])
    assert (again.updated, again.unchanged) == (0, 2)


def test_prune_removes_papers_missing_from_the_inputs(make_service, tmp_path):
    service = make_service()
    keep = write_jsonl(
        tmp_path / "keep.jsonl", [{"id": f"k{i}", "abstract": f"Kept abstract number {i}."} for i in range(3)]
    )
    drop = write_jsonl(
        tmp_path / "drop.jsonl", [{"id": f"d{i}", "abstract": f"Dropped abstract number {i}."} for i in range(2)]
    )
    service.ingest([keep, drop])
    report = service.ingest([keep], prune=True)
    assert (report.removed, report.unchanged, report.papers, report.chunks) == (2, 3, 3, 3)
    assert sorted(service.index.all_paper_ids()) == ["k0", "k1", "k2"]


def test_an_edited_seed_abstract_is_a_new_paper_and_prune_drops_the_old_one(make_service, tmp_path):
    service = make_service()
    service.ingest([SEED_TEXT])
    edited = tmp_path / "seeds.txt"
    edited.write_text(
        SEED_TEXT.read_text(encoding="utf-8").replace("Jump Your Steps", "Jump Our Steps"), encoding="utf-8"
    )
    report = service.ingest([edited])
    assert (report.added, report.unchanged, report.papers) == (1, 18, 20)
    report = service.ingest([edited], prune=True)
    assert (report.removed, report.papers) == (1, 19)


def test_the_same_abstract_from_two_files_is_one_paper_under_its_real_id(make_service, tmp_path):
    service = make_service()
    abstracts = seed_abstracts()
    listed = write_jsonl(
        tmp_path / "list.jsonl",
        [
            {"id": f"real{i}", "title": f"Paper {i}", "abstract": text, "status": "Poster"}
            for i, text in enumerate(abstracts)
        ],
    )
    service.ingest([SEED_TEXT])
    chunks = service.index.chunk_count()
    report = service.ingest([listed])
    assert (report.added, report.papers, report.chunks) == (19, 19, chunks)
    assert all(pid.startswith("real") for pid in service.index.all_paper_ids())
    again = service.ingest([SEED_TEXT, listed])
    assert (again.added, again.updated, again.papers, again.chunks) == (0, 0, 19, chunks)
    assert service.retrieve("Hanabi card game partners", k=1)[0].title.startswith("Paper")


def test_two_papers_of_their_own_ids_sharing_an_abstract_are_both_kept_and_a_re_ingest_is_a_no_op(
    make_service, tmp_path
):
    """Identity is the id: the full list holds three pairs of distinct submissions with one abstract between them."""
    service = make_service()
    same = "We study one abstract submitted twice under two titles, about tide pools."
    path = write_jsonl(
        tmp_path / "twins.jsonl",
        [
            {"id": "t1", "title": "Tide pools I", "abstract": same},
            {"id": "t2", "title": "Tide pools II", "abstract": same},
        ],
    )
    report = service.ingest([path])
    assert (report.added, report.duplicates, report.papers) == (2, 0, 2)
    assert sorted(service.index.all_paper_ids()) == ["t1", "t2"]
    again = service.ingest([path])
    assert (again.added, again.updated, again.unchanged, again.papers) == (0, 0, 2, 2)


def test_duplicate_ids_with_different_text_keep_the_first_and_strict_stops_without_losing_anything(
    make_service, tmp_path
):
    service = make_service()
    service.ingest([SEED_FILE])
    path = write_jsonl(
        tmp_path / "dups.jsonl",
        [{"id": "x", "abstract": "First version about robots."}, {"id": "x", "abstract": "Second version about cats."}],
    )
    report = service.ingest([path])
    assert report.added == 1 and report.papers == 20
    assert any("duplicate id 'x'" in str(problem) for problem in report.problems)
    with pytest.raises(InputError, match="duplicate id 'x'"):
        make_service(index="strict").ingest([SEED_FILE, path], strict=True)
    assert service.index.paper_count() == 20


def test_a_bad_file_after_good_ones_loses_nothing_already_stored(make_service, tmp_path):
    service = make_service()
    service.ingest([SEED_FILE])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    report = service.ingest([SEED_FILE, empty])
    assert [problem.reason for problem in report.problems] == ["file holds no abstracts"]
    with pytest.raises(InputError, match="holds no abstracts"):
        service.ingest([SEED_FILE, empty], strict=True)
    assert service.index.paper_count() == 19
    assert service.retrieve("reaction templates for molecule generation", k=1)[0].text
