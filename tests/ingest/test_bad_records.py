"""A bad record costs only itself (issue 39, item 3): a field of the wrong type (a number, true/false, a
list, an object, lists in lists) or text holding a lone surrogate (JSON's "\\udc80") is reported with its
file and line, and every good record of the same run is stored, the seeds ingested beside it included.

Before: `"authors": 42` ended the ingest with `TypeError: 'int' object is not iterable`, a surrogate with
`TypeError: TextInputSequence must be str` (the tokenizer) or `UnicodeEncodeError` (`content_hash`), and
nothing of the run was stored. Each case is a real ingest into a real Chroma folder with the bundled
embedding model (its vectors remembered across cases: every case embeds the same seeds).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import rag
from conftest import SEED_FILE, settings_for, write_jsonl

from rag.ingest.papers import load_papers
from rag.service import RagService

SEED_IDS = {record.paper_id for record in load_papers([SEED_FILE])}
ABSTRACT = "We propose a made-up method: tensor sketches of {} for streaming graph kernels on molecules."


def record(name: str, **fields) -> dict:
    """A made-up record with an abstract of its own, some of its fields replaced."""
    base = {"id": name, "title": f"Made-up paper {name}", "abstract": ABSTRACT.format(name), "authors": ["Ada Example"]}
    return {**base, **fields}


GOOD = [record("good-before"), record("good-after")]

WRONG = {  # a value no field of a record may hold
    "number": 42,
    "fraction": 1.5,
    "true": True,
    "false": False,
    "list": ["one", "two"],
    "object": {"text": "words"},
    "nested": [[["words"]]],
    "low-surrogate": "Graph \udc80 kernels",
    "high-surrogate": "\ud800",
}
TEXT_FIELDS = ("abstract", "title", "status", "primary_area", "url", "openreview_url", "id", "paper_id")
WRONG_AUTHORS = {  # a list of names is right: these are not
    "number": 42,
    "true": True,
    "object": {"name": "Ada"},
    "a name that is a number": ["Ada Example", 7],
    "a name that is null": ["Ada Example", None],
    "a name that is a list": [["Ada", "Example"]],
    "lists in lists": [[[["Ada"]]]],
    "a surrogate in a name": ["Ada \udc80 Example"],
    "a surrogate in the string": "Ada \ud800 Example; Ben Placeholder",
}


def hostile_cases():
    for field in TEXT_FIELDS:
        for name, value in WRONG.items():
            if field in ("id", "paper_id") and name == "number":
                continue  # a whole number is an id (ACCEPTED below)
            yield pytest.param(field, value, id=f"{field}-{name}")
    for name, value in WRONG_AUTHORS.items():
        yield pytest.param("authors", value, id=f"authors-{name}")


LABEL = "We propose a made-up method: tensor sketches of hostile for streaming graph …"  # from the abstract
ACCEPTED = {  # case -> (the record, its id as stored, the field stored and its value)
    "null-title": (record("hostile", title=None), "hostile", "title", LABEL),
    "null-authors": (record("hostile", authors=None), "hostile", "authors", ""),
    "null-status": (record("hostile", status=None), "hostile", "status", ""),
    "null-url": (record("hostile", url=None, openreview_url=None), "hostile", "url", ""),
    "number-id": (record("hostile", id=4217), "4217", "title", "Made-up paper hostile"),
    "authors-string": (
        record("hostile", authors="Ada Example; Ben Placeholder"),
        "hostile",
        "authors",
        "Ada Example; Ben Placeholder",
    ),
    "venue-number": (record("hostile", venue=42), "hostile", "title", "Made-up paper hostile"),  # not read
    "keywords-surrogate": (record("hostile", keywords=["\udc80"]), "hostile", "title", "Made-up paper hostile"),
}


@pytest.fixture(scope="module")
def remembered(embeddings):
    """The bundled model, its vectors remembered: every case embeds the seeds and the good records again."""
    from rag.index.embeddings import CachedEmbeddings

    return CachedEmbeddings(embeddings)


def ingest_beside_the_seeds(folder: Path, embeddings, lines: list[dict]):
    """`lines` as one JSONL file, ingested in one run after the seeds (one batch): (report, stored papers)."""
    file = write_jsonl(folder / "list.jsonl", lines)
    service = RagService(settings_for(folder / "index"), embeddings=embeddings)
    report = service.ingest([SEED_FILE, file])
    return file, report, {pid: meta for pid, _, meta in service.index.iter_papers()}


@pytest.mark.parametrize("field, value", list(hostile_cases()))
def test_a_record_with_a_bad_field_is_reported_and_the_rest_of_the_run_stored(tmp_path, remembered, field, value):
    bad = record("hostile", **{field: value})
    file, report, stored = ingest_beside_the_seeds(tmp_path, remembered, [GOOD[0], bad, GOOD[1]])
    assert set(stored) == SEED_IDS | {"good-before", "good-after"}
    [problem] = report.problems
    assert (problem.path, problem.line) == (str(file), 2)
    assert problem.reason.startswith(f"'{field}' is not ") and "\n" not in problem.reason, problem.reason


@pytest.mark.parametrize("case", ACCEPTED)
def test_null_and_unread_fields_and_a_whole_number_id_cost_nothing(tmp_path, remembered, case):
    kept, stored_id, field, value = ACCEPTED[case]
    _, report, stored = ingest_beside_the_seeds(tmp_path, remembered, [GOOD[0], kept, GOOD[1]])
    assert report.problems == []
    assert set(stored) == SEED_IDS | {"good-before", "good-after", stored_id}
    assert stored[stored_id][field] == value


NESTED_TOO_DEEP = b'{"id": "deep", "abstract": "Deep.", "authors": ' + b"[" * 60_000 + b"]" * 60_000 + b"}\n"

OTHER_FILES = {  # name -> (file name, its bytes, the line reported, what it says), good rows around the bad one
    "jsonl-nested-60000-deep": ("list.jsonl", NESTED_TOO_DEEP, 2, "nested too deeply"),
    "jsonl-id-of-5000-digits": (
        "list.jsonl",
        b'{"id": ' + b"7" * 5000 + b', "abstract": "Long id."}\n',
        2,
        "integer string conversion",
    ),
    "csv-row-without-abstract": ("list.csv", b"bad-row,Short row\n", 3, "record has no 'abstract'"),
    "csv-surrogate-as-utf8-bytes": ("list.csv", b'bad-row,T,"A \xed\xb2\x80 b",Ada\n', 3, "not UTF-8 text"),
    "txt-surrogate-as-utf8-bytes": ("list.txt", b"An abstract \xed\xa0\x80 broken.\n\n", 3, "not UTF-8 text"),
}


def other_file(folder: Path, case: str) -> Path:
    name, bad, _, _ = OTHER_FILES[case]
    good = [ABSTRACT.format("good-before"), ABSTRACT.format("good-after")]
    if name.endswith(".jsonl"):
        lines = [json.dumps(GOOD[0]).encode() + b"\n", bad, json.dumps(GOOD[1]).encode() + b"\n"]
    elif name.endswith(".csv"):
        lines = [
            b"id,title,abstract,authors\n",
            f"good-before,T,{good[0]},Ada\n".encode(),
            bad,
            f"good-after,T,{good[1]},Ada\n".encode(),
        ]
    else:  # the seed text format: a list title, then abstracts with blank lines between
        lines = [b"Made-up list\n\n", bad, good[0].encode() + b"\n\n" + good[1].encode() + b"\n"]
    path = folder / name
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("case", OTHER_FILES)
def test_a_bad_row_of_any_format_costs_only_itself(tmp_path, remembered, case):
    path = other_file(tmp_path, case)
    _, _, line, says = OTHER_FILES[case]
    service = RagService(settings_for(tmp_path / "index"), embeddings=remembered)
    report = service.ingest([SEED_FILE, path])
    [problem] = report.problems
    assert (problem.path, problem.line) == (str(path), line) and says in problem.reason, problem
    abstracts = {abstract for _, abstract, _ in service.index.iter_papers()}
    assert {ABSTRACT.format("good-before"), ABSTRACT.format("good-after")} <= abstracts
    assert SEED_IDS <= set(service.index.all_paper_ids()) and len(abstracts) == len(SEED_IDS) + 2


@pytest.mark.slow
def test_the_command_reports_each_bad_record_in_one_line_and_stores_every_good_one(tmp_path, embeddings):
    """The issue's case through `rag ingest`: the seeds and a list whose bad records sit among good ones."""
    cases = [
        ("authors", 42),
        ("authors", True),
        ("title", "\udc80"),
        ("abstract", "Graph \udc80 kernels"),
        ("status", ["Oral"]),
        ("id", {"forum": "x"}),
        ("primary_area", 3.5),
        ("authors", [["Ada"]]),
    ]
    bad = [record(f"bad-{n}", **{field: value}) for n, (field, value) in enumerate(cases)]
    good = [record(f"good-{n}") for n in range(len(bad) + 1)]
    lines = [good[0]] + [line for pair in zip(bad, good[1:]) for line in pair]
    file = write_jsonl(tmp_path / "list.jsonl", lines)
    result = rag("ingest", "--quiet", str(SEED_FILE), str(file), index=tmp_path / "index")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    *warnings, last = result.stderr.strip().splitlines()
    for number, (warning, (field, _)) in enumerate(zip(warnings, cases)):
        assert warning.startswith(f"warning: {file}:{2 * number + 2}: '{field}' is not "), warning
    assert len(warnings) == len(bad) and last == f"error: skipped {len(bad)} bad lines or files (warnings above)"
    stored = RagService(settings_for(tmp_path / "index"), embeddings=embeddings).index.all_paper_ids()
    assert set(stored) == SEED_IDS | {record["id"] for record in good}
