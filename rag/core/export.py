"""Citations to take away: papers as BibTeX, CSV or Markdown (issue 15, item 4).

`export(papers, fmt)` writes any list of `Source`s; `Answer.export(fmt)` writes an answer's papers
(`answer_papers`). Titles, authors, statuses and areas come from the corpus and are untrusted, so
every format escapes them with its own rules and nothing in them can add structure:

- BibTeX: LaTeX's special characters become text commands, braces included (`\\textbraceleft{}`, not
  `\\{`: BibTeX counts braces without regard to backslashes, so an escaped brace could still close a
  field early). Titles are first turned into plain text (`$\\tau$` -> τ, a stray brace or `\\input{…}`
  kept as written), so no LaTeX from the corpus (`\\input`, `\\write18`) reaches a document as a
  command. The key and the URL are built only from characters known to be safe.
- CSV: the `csv` module quotes; a cell starting with `=`, `+`, `-`, `@`, tab or CR gets a leading `'`
  so spreadsheets read it as text, not a formula (OWASP, "CSV Injection").
- Markdown: Markdown and HTML punctuation is backslash-escaped (CommonMark escapes), so a title can't
  open a link, an image, a tag or emphasis; the only link is ours, to OpenReview.

An empty list exports as an empty string for BibTeX and Markdown, and as the header row alone for
CSV (so a script reading the columns still finds them).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import parse_qs, urlparse

from rag.core.errors import InputError
from rag.core.markup import plain_text

if TYPE_CHECKING:  # types only: rag.core.types imports this module for `Answer.export`
    from rag.core.types import Answer, Source

ExportFormat = Literal["bib", "csv", "md"]

Format = ExportFormat
FORMATS: tuple[str, ...] = get_args(Format)

BOOKTITLE = "The Thirteenth International Conference on Learning Representations"
YEAR = "2025"
OPENREVIEW_HOSTS = {"openreview.net", "www.openreview.net"}
OPENREVIEW_ID = re.compile(r"[A-Za-z0-9_-]+")
MADE_UP_ID_PREFIX = "seed-"  # rag.ingest.papers.SEED_ID_PREFIX: ids ingest derives from seed text, not OpenReview's
# Decisions under which a paper is not in the proceedings: cited as a submission (@misc), not @inproceedings.
NOT_ACCEPTED = {"reject", "rejected", "withdrawn", "desk rejected", "desk reject"}

# LaTeX's special characters as text commands. Every replacement's braces are balanced, and
# str.translate replaces in one pass, so nothing is escaped twice.
BIBTEX_ESCAPES = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "{": r"\textbraceleft{}",
        "}": r"\textbraceright{}",
        "%": r"\%",
        "#": r"\#",
        "&": r"\&",
        "$": r"\$",
        "_": r"\_",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
    }
)
# BibTeX splits the author field on the word "and": a name holding it is braced to stay one name.
AND = re.compile(r"\sand\s", re.IGNORECASE)
KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_:-]")

CSV_COLUMNS = ("paper_id", "title", "authors", "status", "primary_area", "url", "cited_as")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

# Characters that can start Markdown or HTML structure anywhere in a line; CommonMark lets any
# ASCII punctuation be backslash-escaped, and an escaped character is always literal text.
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~&$\"])")


def export(papers: list[Source], fmt: Format, cited_as: Mapping[str, int] | None = None) -> str:
    """`papers` as one document in `fmt` ("bib", "csv" or "md"). `cited_as` maps a paper id to
    the `[n]` an answer cites it by, for the CSV column and the Markdown list."""
    return writer(fmt)(papers, cited_as or {})


def writer(fmt: str) -> Callable[[list[Source], Mapping[str, int]], str]:
    writers = {"bib": bibtex, "csv": csv_table, "md": markdown}
    if fmt not in writers:
        raise InputError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return writers[fmt]


def answer_papers(answer: Answer) -> list[Source]:
    """The papers an answer is about: its `listed` papers (a list or count answer) when it has any,
    else the sources its text cites, in order of first citation; none for a refusal."""
    if answer.refused:
        return []
    listed = getattr(answer, "listed", None)  # the field list and count answers carry, where they exist
    if listed:
        return list(listed)
    by_id = {source.paper_id: source for source in answer.sources}
    return [by_id[paper_id] for paper_id in answer.cited]


def citation_numbers(answer: Answer) -> dict[str, int]:
    """Paper id -> the `[n]` the answer's text first cites it by."""
    numbers: dict[str, int] = {}
    for number, source in enumerate(answer.sources, start=1):
        if source.paper_id in answer.cited:
            numbers.setdefault(source.paper_id, number)
    return numbers


def export_answer(answer: Answer, fmt: Format) -> str:
    return export(answer_papers(answer), fmt, citation_numbers(answer))


# -- what every format shows of a paper ---------------------------------------------------------------


def one_line(text: str) -> str:
    """Whitespace runs, newlines included, as one space: no format gets a line break from the corpus."""
    return " ".join(str(text).split())


def title_text(source: Source) -> str:
    """The title as it reads (LaTeX and Markdown emphasis as text), as the CLI shows it."""
    return one_line(plain_text(source.title))


def openreview_id(source: Source) -> str:
    """The paper's OpenReview id: from its OpenReview link, else its own id unless ingest made it up
    from seed text; "" when there is none. Only ids of OpenReview's characters count."""
    url = urlparse(source.url.strip())
    if url.scheme in ("http", "https") and url.hostname in OPENREVIEW_HOSTS:
        found = parse_qs(url.query).get("id", [""])[0]
        if OPENREVIEW_ID.fullmatch(found):
            return found
    if not source.paper_id.startswith(MADE_UP_ID_PREFIX) and OPENREVIEW_ID.fullmatch(source.paper_id):
        return source.paper_id
    return ""


def paper_url(source: Source) -> str:
    """The paper's OpenReview page, built from its id (so no character of it comes from the corpus)."""
    found = openreview_id(source)
    return f"https://openreview.net/forum?id={found}" if found else ""


# -- BibTeX -------------------------------------------------------------------------------------------


def bibtex_text(text: str) -> str:
    """Untrusted text as the value of a braced BibTeX field: LaTeX's specials as text commands."""
    return one_line(text).translate(BIBTEX_ESCAPES)


def bibtex_name(name: str) -> str:
    escaped = bibtex_text(name)
    return f"{{{escaped}}}" if AND.search(f" {escaped} ") else escaped


def bibtex_key(source: Source, taken: set[str]) -> str:
    """`iclr2025_<id>` with only key-safe characters, made unique within the file."""
    base = f"iclr2025_{KEY_UNSAFE.sub('', source.paper_id)}".rstrip("_") or "iclr2025"
    key, count = base, 1
    while key in taken:
        count += 1
        key = f"{base}_{count}"
    taken.add(key)
    return key


def bibtex_entry(source: Source, key: str) -> str:
    found = openreview_id(source)
    accepted = source.status.strip().lower() not in NOT_ACCEPTED
    notes = [f"OpenReview id {found}"] if found else []
    notes += [bibtex_text(source.status)] if source.status else []
    fields = {"title": bibtex_text(title_text(source))}
    # The corpus stores authors in alphabetical order, not the paper's byline order: they are
    # written as stored, so check the byline before relying on the order.
    if source.authors:
        fields["author"] = " and ".join(bibtex_name(name) for name in source.authors)
    if accepted:
        fields["booktitle"] = BOOKTITLE
    else:  # a rejected or withdrawn submission is not in the proceedings
        fields["howpublished"] = f"Submitted to {BOOKTITLE} (ICLR {YEAR})"
    fields["year"] = YEAR
    if url := paper_url(source):
        fields["url"] = url
    if notes:
        fields["note"] = "; ".join(notes)
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields.items())
    return f"@{'inproceedings' if accepted else 'misc'}{{{key},\n{body}\n}}\n"


def bibtex(papers: list[Source], cited_as: Mapping[str, int]) -> str:
    taken: set[str] = set()
    return "\n".join(bibtex_entry(source, bibtex_key(source, taken)) for source in papers)


# -- CSV ----------------------------------------------------------------------------------------------


def csv_cell(value: str) -> str:
    """A cell a spreadsheet shows as text: one line, and a leading `'` before a formula's first character."""
    value = one_line(value)
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def csv_table(papers: list[Source], cited_as: Mapping[str, int]) -> str:
    out = io.StringIO()
    table = csv.writer(out)
    table.writerow(CSV_COLUMNS)
    for source in papers:
        number = cited_as.get(source.paper_id)
        row = (
            source.paper_id,
            title_text(source),
            "; ".join(source.authors),
            source.status,
            source.primary_area,
            paper_url(source),
            f"[{number}]" if number else "",
        )
        table.writerow([csv_cell(value) for value in row])
    return out.getvalue()


# -- Markdown -----------------------------------------------------------------------------------------


def markdown_text(text: str) -> str:
    """Untrusted text as literal Markdown text: one line, every structural character backslash-escaped."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text))


def markdown_item(index: int, source: Source, cited_as: Mapping[str, int]) -> str:
    title = markdown_text(title_text(source))
    url = paper_url(source)
    head = f"[{title}]({url})" if url else title
    details = [", ".join(markdown_text(name) for name in source.authors)] if source.authors else []
    details += [markdown_text(value) for value in (source.status, source.primary_area) if value.strip()]
    details.append(markdown_text(source.paper_id))
    if number := cited_as.get(source.paper_id):
        details.append(f"cited as \\[{number}\\]")
    return f"{index}. {head}. " + " · ".join(detail for detail in details if detail)


def markdown(papers: list[Source], cited_as: Mapping[str, int]) -> str:
    lines = [markdown_item(index, source, cited_as) for index, source in enumerate(papers, start=1)]
    return "".join(line + "\n" for line in lines)
