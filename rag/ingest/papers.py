"""The loaders that read paper records (`rag.core.papers.PaperRecord`) from files.

One loader per format, chosen by file name through `LOADERS`. Loaders stream: they yield records
one at a time, so a list of any length is read in flat memory, and no line is read whole past
`ingest.max_record_bytes`. A bad line is reported as a `LoadProblem` (file and line) and skipped;
a file that can't be read on (truncated archive, binary) is reported and the other files are read;
records read before a problem are kept. `strict=True` turns the first problem into an `InputError`.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from rag.core.config import IngestConfig
from rag.core.errors import InputError, first_line, first_problem
from rag.core.papers import SEED_ID_PREFIX, PaperRecord, content_hash
from rag.core.text import not_text

PROPOSAL = re.compile(r"\b(?:we|this (?:paper|work))\s+(?:propose|present|introduce|develop)s?\b", re.IGNORECASE)
GITHUB_URL = re.compile(r"https?://(?:www\.)?github\.com/[\w.-]+(?:/[\w.-]+)?", re.IGNORECASE)


@dataclass(frozen=True)
class LoadProblem:
    """A line or file that could not be read, reported without stopping the others."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"


BINARY_SNIFF = 8192  # a NUL byte in a file's first bytes: binary data, not a list of papers
SKIP_PIECE = 1 << 20


def _kind(value: object) -> str:
    """What a JSON value is, in words: "a number", "a list", ..."""
    kinds = ((bool, "true or false"), ((int, float), "a number"), ((list, tuple), "a list"), (dict, "an object"))
    return next((kind for types, kind in kinds if isinstance(value, types)), type(value).__name__)


def _text(value: object, what: str = "text") -> str | None:
    """A field's text as given (None when absent or null); anything else, or text that is not Unicode (a
    lone surrogate, JSON's "\\udc80"), is refused: it would fail later in the tokenizer or the index."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise PydanticCustomError("not_text", "is not {what}: it is {kind}", {"what": what, "kind": _kind(value)})
    if problem := not_text(value):
        raise PydanticCustomError("not_unicode", "{problem}", {"problem": problem})
    return value


def _identifier(value: object) -> str | None:
    """An id: text, or a whole number (written as text); never true/false, a fraction, a list."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value, "text or a whole number")


def _names(value: object) -> tuple[str, ...]:
    """Authors: a list of names, or one string with `;` or `|` between names; null or absent: none."""
    if value is None:
        return ()
    if isinstance(value, list):
        for number, name in enumerate(value, 1):
            if not isinstance(name, str):
                reason = {"number": number, "kind": _kind(name)}
                raise PydanticCustomError("not_name", "is not a list of names: name {number} is {kind}", reason)
        names = [_text(name) or "" for name in value]
    else:
        names = re.split(r"[;|]", _text(value, "a list of names or text") or "")
    return tuple(name.strip() for name in names if name.strip())


Text = Annotated[str | None, PlainValidator(_text)]


class RecordFields(BaseModel):
    """The fields of a record that ingest reads, as a JSON object or CSV row gives them: every value is
    checked here, once, so a bad one costs its record only (reported with its file and line) and never
    reaches the chunker or the index. Other fields (`venue`, `keywords`, ...) are not read, whatever they hold."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    abstract: Text = None
    paper_id: Annotated[str | None, PlainValidator(_identifier)] = None
    id: Annotated[str | None, PlainValidator(_identifier)] = None
    title: Text = None
    authors: Annotated[tuple[str, ...], PlainValidator(_names)] = ()
    status: Text = None
    primary_area: Text = None
    url: Text = None
    openreview_url: Text = None


def make_record(path: Path, raw: dict[str, Any], line: int = 0, limits: IngestConfig | None = None) -> PaperRecord:
    """Build a record from a JSON object or CSV row; raises ValueError naming what is wrong."""
    limits = limits or IngestConfig()
    try:
        fields = RecordFields.model_validate(raw)
    except ValidationError as err:
        where, what = first_problem(err.errors())
        raise ValueError(f"'{where}' {what}") from None
    abstract = (fields.abstract or "").strip()
    if not abstract:
        raise ValueError("record has no 'abstract'")
    if len(abstract) > limits.max_abstract_chars:
        raise ValueError(
            f"abstract is {len(abstract):,} characters; the limit is ingest.max_abstract_chars = "
            f"{limits.max_abstract_chars:,}"
        )
    paper_id = (fields.paper_id or fields.id or "").strip() or SEED_ID_PREFIX + content_hash(abstract)
    return PaperRecord(
        paper_id=paper_id,
        title=" ".join((fields.title or "").split()) or _label(abstract),
        abstract=abstract,
        authors=fields.authors,
        status=fields.status or "",
        url=fields.url or fields.openreview_url or "",
        primary_area=fields.primary_area or "",
        source=str(path),
        github=tuple(dict.fromkeys(url.rstrip(".") for url in GITHUB_URL.findall(abstract))),
        line=line,
    )


def _label(abstract: str, words: int = 12) -> str:
    """A readable stand-in title for an abstract that has none: what it proposes, else its opening words."""
    proposal = PROPOSAL.search(abstract)
    text = abstract[proposal.start() :] if proposal else abstract
    first = text.split()
    label = " ".join(first[:words]) + (" …" if len(first) > words else "")
    return label[0].upper() + label[1:]


class PaperFile:
    """One input file being read: its lines in bounded memory, and where its problems go.

    A line that is too long or not UTF-8 is reported and skipped; damage that ends the file (a
    truncated archive) is reported once, after the lines before it were read; a binary file is
    reported without reading it. Records read before a problem are kept.
    """

    def __init__(self, path: Path, report: Callable[[LoadProblem], None], limits: IngestConfig):
        self.path, self.report, self.limits = path, report, limits
        self.problems = 0

    def problem(self, line: int, reason: str) -> None:
        self.problems += 1
        self.report(LoadProblem(str(self.path), line, reason))

    def record(self, raw: dict[str, Any], line: int) -> PaperRecord | None:
        """The record of one JSON object or CSV row, or None when it is reported as unusable."""
        try:
            return make_record(self.path, raw, line, self.limits)
        except ValueError as err:
            self.problem(line, first_line(err))
            return None

    def lines(self) -> Iterator[tuple[int, str | None]]:
        """(line number, text with its line ending); text is None for a line reported and skipped."""
        limit = self.limits.max_record_bytes
        number = 0
        try:
            with _open_binary(self.path) as binary:
                if b"\0" in binary.peek(BINARY_SNIFF)[:BINARY_SNIFF]:
                    self.problem(0, "binary data, not a text file; skipped")
                    return
                while raw := binary.readline(limit + 1):
                    number += 1
                    if len(raw) > limit and not raw.endswith(b"\n"):
                        size = len(raw) + _skip_rest_of_line(binary)
                        self.problem(
                            number, f"line is {size:,} bytes; the limit is ingest.max_record_bytes = {limit:,}"
                        )
                        yield number, None
                        continue
                    try:
                        yield number, raw.decode("utf-8")
                    except UnicodeDecodeError as err:
                        self.problem(number, f"not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1})")
                        yield number, None
        except (OSError, EOFError, zlib.error) as err:  # a truncated or corrupt archive, an unreadable file
            reason = getattr(err, "strerror", None) or first_line(err)
            if number:
                self.problem(number + 1, f"cannot read on from here: {reason}; kept the {number:,} lines before")
            else:
                self.problem(0, f"cannot read: {reason}")


def load_seed_text(file: PaperFile) -> Iterator[PaperRecord]:
    """The seed format: a title line for the whole list, then abstracts separated by blank lines."""
    blocks = _blocks(file.lines())
    next(blocks, None)  # the list's title
    for line, text in blocks:
        if text is not None and (record := file.record({"abstract": text}, line)):
            yield record


def _blocks(lines: Iterable[tuple[int, str | None]]) -> Iterator[tuple[int, str | None]]:
    """(first line, text) of each run of non-blank lines; text is None when one of its lines was skipped."""
    parts: list[str] = []
    start, whole = 0, True
    for number, text in lines:
        if text is not None and not text.strip():
            if parts or not whole:
                yield start, "".join(parts) if whole else None
            start, parts, whole = 0, [], True
            continue
        start = start or number
        if text is None:
            whole = False
        else:
            parts.append(text)
    if parts or not whole:
        yield start, "".join(parts) if whole else None


def load_jsonl(file: PaperFile) -> Iterator[PaperRecord]:
    """One JSON object a line (optionally gzip-compressed), read as a stream."""
    for number, line in file.lines():
        if line is None or not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as err:  # json.JSONDecodeError is a ValueError
            file.problem(number, first_line(err))
            continue
        except RecursionError:  # lists in lists, thousands deep: Python's parser gives up
            file.problem(number, "line is JSON nested too deeply to read")
            continue
        if not isinstance(raw, dict):
            file.problem(number, "line is not a JSON object")
        elif record := file.record(raw, number):
            yield record


def load_csv(file: PaperFile) -> Iterator[PaperRecord]:
    """A CSV file with a header row naming the record's fields."""
    last = [0]  # the line the csv reader has read up to: where the row it returns ends

    def text_lines() -> Iterator[str]:
        for number, text in file.lines():
            last[0] = number
            if text is not None:
                yield text

    reader = csv.DictReader(text_lines())
    try:
        fields = reader.fieldnames
    except csv.Error as err:
        fields = None
        file.problem(last[0], first_line(err))
    if fields is None or "abstract" not in fields:
        file.problem(last[0], "CSV header has no 'abstract' column; skipped the file")
        return
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:  # e.g. a field over csv.field_size_limit(): this row only
            file.problem(last[0], first_line(err))
            continue
        if record := file.record(row, last[0]):
            yield record


LOADERS: dict[str, Callable[[PaperFile], Iterator[PaperRecord]]] = {
    ".txt": load_seed_text,
    ".jsonl": load_jsonl,
    ".jsonl.gz": load_jsonl,
    ".csv": load_csv,
}


def loader_for(path: Path) -> Callable[[PaperFile], Iterator[PaperRecord]]:
    name = path.name.lower()
    for suffix, loader in sorted(LOADERS.items(), key=lambda item: -len(item[0])):
        if name.endswith(suffix):
            return loader
    raise InputError(f"{path}: unknown file type; expected one of {', '.join(LOADERS)}")


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly, plus the loadable files inside named directories.

    A path that does not exist or has no loader is an InputError before anything is read."""
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
    paths: Iterable[str | Path],
    strict: bool = False,
    on_problem: Callable[[LoadProblem], None] | None = None,
    limits: IngestConfig | None = None,
) -> Iterator[PaperRecord]:
    """Stream the records of every file; report bad lines and unreadable files to `on_problem` and go
    on with the rest, or raise an InputError at the first when `strict`."""
    limits = limits or IngestConfig()

    def report(problem: LoadProblem) -> None:
        if strict:
            raise InputError(str(problem))
        if on_problem is not None:
            on_problem(problem)

    for path in expand_paths(paths):
        file, count = PaperFile(path, report, limits), 0
        for record in loader_for(path)(file):
            count += 1
            yield record
        if count == 0 and file.problems == 0:
            file.problem(0, "file holds no abstracts")


def _loadable(path: Path) -> bool:
    return any(path.name.lower().endswith(suffix) for suffix in LOADERS)


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")


def _skip_rest_of_line(binary) -> int:
    """Read past the end of an over-long line in bounded pieces; returns how many bytes were skipped."""
    skipped = 0
    while piece := binary.readline(SKIP_PIECE):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped
