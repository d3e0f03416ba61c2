"""Loaders: the seed text format, JSONL (plain and gzip), CSV, and their bad inputs."""

from __future__ import annotations

import gzip

import pytest
from conftest import SEED_FILE, SEED_TEXT, seed_abstracts, write_jsonl

from rag.core.errors import InputError
from rag.ingest.papers import load_papers


def test_seed_text_gives_19_papers_with_content_ids_and_labels():
    papers = list(load_papers([SEED_TEXT]))
    assert len(papers) == 19
    assert len({paper.paper_id for paper in papers}) == 19
    assert all(paper.paper_id.startswith("seed-") for paper in papers)
    assert papers[1].title.startswith("We present _Jump Your Steps_ (JYS)")  # a readable label
    assert papers[0].source == str(SEED_TEXT)


def test_the_shipped_seeds_are_the_same_19_abstracts_with_their_titles_and_authors():
    papers = list(load_papers([SEED_FILE]))
    assert [paper.abstract for paper in papers] == [paper.abstract for paper in load_papers([SEED_TEXT])]
    assert all(paper.has_own_id and paper.title and paper.authors and paper.url for paper in papers)
    assert (
        papers[4].title == "Generative Flows on Synthetic Pathway for Drug Design"
        and papers[4].paper_id == "pB1XSj2y4X"
    )


def test_editing_one_seed_abstract_changes_only_its_id(tmp_path):
    text = SEED_TEXT.read_text(encoding="utf-8")
    edited = tmp_path / "edited.txt"
    edited.write_text(text.replace("Jump Your Steps", "Jump Our Steps"), encoding="utf-8")
    before = [paper.paper_id for paper in load_papers([SEED_TEXT])]
    after = [paper.paper_id for paper in load_papers([edited])]
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert changed == [1]


def test_whitespace_does_not_change_a_seed_id(tmp_path):
    loose = tmp_path / "loose.txt"
    abstract = seed_abstracts()[0]
    loose.write_text("Title\n\n" + abstract.replace(". ", ".  \n", 3) + "\n", encoding="utf-8")
    [original] = [p for p in load_papers([SEED_TEXT]) if p.abstract == abstract]
    [reloaded] = list(load_papers([loose]))
    assert reloaded.paper_id == original.paper_id


def test_jsonl_and_gzip_records_keep_their_ids_and_fields(tmp_path):
    record = {
        "id": "abc123",
        "title": "A  Title",
        "abstract": "We study things. Code: https://github.com/org/repo.",
        "authors": ["B Author", "A Author"],
        "status": "Poster",
        "openreview_url": "https://openreview.net/forum?id=abc123",
        "primary_area": "optimization",
    }
    plain = write_jsonl(tmp_path / "list.jsonl", [record])
    zipped = tmp_path / "list.jsonl.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, zipped):
        [paper] = list(load_papers([path]))
        assert paper.paper_id == "abc123"
        assert paper.title == "A Title"
        assert paper.authors == ("B Author", "A Author")
        assert paper.url.endswith("id=abc123")
        assert paper.github == ("https://github.com/org/repo",)
        assert paper.metadata()["has_code"] is True


def test_csv_records(tmp_path):
    path = tmp_path / "list.csv"
    path.write_text('id,title,abstract,authors\nx1,T,"An abstract, with a comma.",A; B\n', encoding="utf-8")
    [paper] = list(load_papers([path]))
    assert (paper.paper_id, paper.abstract, paper.authors) == ("x1", "An abstract, with a comma.", ("A", "B"))


def test_bad_jsonl_lines_are_reported_with_line_numbers_and_the_rest_loaded(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        '{"id": "a", "abstract": "Good one."}\nnot json\n{"id": "b"}\n{"id": "c", "abstract": "Good two."}\n'
    )
    problems = []
    papers = list(load_papers([path], on_problem=problems.append))
    assert [paper.paper_id for paper in papers] == ["a", "c"]
    assert [(problem.line, "abstract" in problem.reason) for problem in problems] == [(2, False), (3, True)]
    assert str(problems[0]).startswith(f"{path}:2:")
    with pytest.raises(InputError, match=r"mixed.jsonl:2"):
        list(load_papers([path], strict=True))


def _file(directory, name, data: bytes | None):
    path = directory / name
    if data is not None:
        path.write_bytes(data)
    return path


UNUSABLE = {
    "missing": (lambda d: _file(d, "missing.jsonl", None), "no such file"),
    "empty": (lambda d: _file(d, "empty.jsonl", b""), "holds no abstracts"),
    "not-utf8": (lambda d: _file(d, "latin1.txt", "T\n\nCaf\xe9 abstract.".encode("latin-1")), "not UTF-8"),
    "empty-directory": (lambda d: (d / "sub").mkdir() or d / "sub", "holds no paper files"),
    "unknown-type": (lambda d: _file(d, "notes.md", b"x"), "unknown file type"),
}


@pytest.mark.parametrize("case", UNUSABLE)
def test_unusable_files_are_one_line_input_errors(tmp_path, case):
    make, message = UNUSABLE[case]
    with pytest.raises(InputError, match=message) as caught:
        list(load_papers([make(tmp_path)], strict=True))
    assert "\n" not in str(caught.value)
