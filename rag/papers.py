"""Paper records and the loaders that read them from files.

One loader per format, chosen by file name through `LOADERS`. Loaders stream: they yield records
one at a time, so a list of any length is read in flat memory. A bad line is reported as a
`LoadProblem` (file and line) and skipped; `strict=True` turns the first one into an `InputError`.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import InputError

PROPOSAL = re.compile(r"\b(?:we|this (?:paper|work))\s+(?:propose|present|introduce|develop)s?\b", re.IGNORECASE)
GITHUB_URL = re.compile(r"https?://(?:www\.)?github\.com/[\w.-]+(?:/[\w.-]+)?", re.IGNORECASE)


@dataclass(frozen=True)
class PaperRecord:
    """One abstract and what is known about its paper."""

    paper_id: str
    title: str
    abstract: str
    authors: tuple[str, ...] = ()
    status: str = ""
    url: str = ""
    primary_area: str = ""
    source: str = ""
    github: tuple[str, ...] = field(default=())

    @property
    def content_hash(self) -> str:
        """Hash of the abstract with whitespace normalised: the same text from two files is one paper."""
        return content_hash(self.abstract)

    @property
    def has_own_id(self) -> bool:
        """False for seed-text papers, whose id is derived from their text."""
        return not self.paper_id.startswith(SEED_ID_PREFIX)

    def metadata(self) -> dict[str, Any]:
        """Flat metadata for the vector store (Chroma takes scalars only)."""
        return {**self.description(), "source": self.source}

    def description(self) -> dict[str, Any]:
        """The metadata that says what the paper is, i.e. all but the file it was read from: when a stored
        paper's differs (a new decision, corrected authors), ingest counts the paper as updated."""
        return {
            "paper_id": self.paper_id,
            "title": self.title,
            "authors": "; ".join(self.authors),
            "status": self.status,
            "url": self.url,
            "primary_area": self.primary_area,
            "github": " ".join(self.github),
            "has_code": bool(self.github),
            "content_hash": self.content_hash,
        }

    def described_by(self, stored: dict[str, Any]) -> bool:
        """True when stored metadata describes this record exactly."""
        return all(stored.get(key) == value for key, value in self.description().items())


@dataclass(frozen=True)
class LoadProblem:
    """A line or file that could not be read, reported without stopping the others."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"


SEED_ID_PREFIX = "seed-"


def content_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def make_record(path: Path, raw: dict[str, Any]) -> PaperRecord:
    """Build a record from a JSON object or CSV row; raises ValueError naming what is wrong."""
    abstract = str(raw.get("abstract") or "").strip()
    if not abstract:
        raise ValueError("record has no 'abstract'")
    paper_id = str(raw.get("paper_id") or raw.get("id") or "").strip() or SEED_ID_PREFIX + content_hash(abstract)
    authors = raw.get("authors") or ()
    if isinstance(authors, str):
        authors = [name.strip() for name in re.split(r"[;|]", authors) if name.strip()]
    return PaperRecord(
        paper_id=paper_id,
        title=" ".join(str(raw.get("title") or "").split()) or _label(abstract),
        abstract=abstract,
        authors=tuple(str(name) for name in authors),
        status=str(raw.get("status") or ""),
        url=str(raw.get("url") or raw.get("openreview_url") or ""),
        primary_area=str(raw.get("primary_area") or ""),
        source=str(path),
        github=tuple(dict.fromkeys(url.rstrip(".") for url in GITHUB_URL.findall(abstract))),
    )


def _label(abstract: str, words: int = 12) -> str:
    """A readable stand-in title for an abstract that has none: what it proposes, else its opening words."""
    proposal = PROPOSAL.search(abstract)
    text = abstract[proposal.start() :] if proposal else abstract
    first = text.split()
    label = " ".join(first[:words]) + (" …" if len(first) > words else "")
    return label[0].upper() + label[1:]


def load_seed_text(path: Path, on_problem: Callable[[LoadProblem], None]) -> Iterator[PaperRecord]:
    """The seed format: a title line for the whole list, then abstracts separated by blank lines."""
    text = _read_text(path)
    blocks = re.split(r"\n\s*\n", text.strip())
    for block in blocks[1:]:
        yield make_record(path, {"abstract": block})


def load_jsonl(path: Path, on_problem: Callable[[LoadProblem], None]) -> Iterator[PaperRecord]:
    """One JSON object a line (optionally gzip-compressed), read as a stream."""
    with _open_text(path) as lines:
        for number, line in enumerate(_decoded(path, lines), start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                if not isinstance(raw, dict):
                    raise ValueError("line is not a JSON object")
                yield make_record(path, raw)
            except ValueError as err:  # json.JSONDecodeError is a ValueError
                on_problem(LoadProblem(str(path), number, _short(err)))


def load_csv(path: Path, on_problem: Callable[[LoadProblem], None]) -> Iterator[PaperRecord]:
    """A CSV file with a header row naming the record's fields."""
    with _open_text(path) as lines:
        reader = csv.DictReader(_decoded(path, lines))
        if reader.fieldnames is None or "abstract" not in reader.fieldnames:
            raise InputError(f"{path}: CSV header has no 'abstract' column")
        for row in reader:
            try:
                yield make_record(path, row)
            except ValueError as err:
                on_problem(LoadProblem(str(path), reader.line_num, _short(err)))


LOADERS: dict[str, Callable[[Path, Callable[[LoadProblem], None]], Iterator[PaperRecord]]] = {
    ".txt": load_seed_text,
    ".jsonl": load_jsonl,
    ".jsonl.gz": load_jsonl,
    ".csv": load_csv,
}


def loader_for(path: Path) -> Callable[[Path, Callable[[LoadProblem], None]], Iterator[PaperRecord]]:
    name = path.name.lower()
    for suffix, loader in sorted(LOADERS.items(), key=lambda item: -len(item[0])):
        if name.endswith(suffix):
            return loader
    raise InputError(f"{path}: unknown file type; expected one of {', '.join(LOADERS)}")


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly, plus the loadable files inside named directories."""
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _loadable(p))
            if not found:
                raise InputError(f"{path}: directory holds no paper files ({', '.join(LOADERS)})")
            files.extend(found)
        elif path.is_file():
            loader_for(path)
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return files


def load_papers(
    paths: Iterable[str | Path], strict: bool = False, on_problem: Callable[[LoadProblem], None] | None = None
) -> Iterator[PaperRecord]:
    """Stream the records of every file; report bad lines to `on_problem`, or raise when `strict`."""

    def report(problem: LoadProblem) -> None:
        if strict:
            raise InputError(str(problem))
        if on_problem is not None:
            on_problem(problem)

    for path in expand_paths(paths):
        count = 0
        for record in loader_for(path)(path, report):
            count += 1
            yield record
        if count == 0:
            raise InputError(f"{path}: file holds no abstracts")


def _loadable(path: Path) -> bool:
    return any(path.name.lower().endswith(suffix) for suffix in LOADERS)


def _open_text(path: Path):
    try:
        return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")
    except OSError as err:
        raise InputError(f"{path}: cannot open: {err.strerror}") from None


def _decoded(path: Path, binary: io.BufferedIOBase) -> Iterator[str]:
    try:
        yield from io.TextIOWrapper(binary, encoding="utf-8", newline="")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except (OSError, EOFError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None


def _short(err: Exception) -> str:
    return str(err).splitlines()[0]
