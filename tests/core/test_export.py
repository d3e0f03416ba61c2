"""Citations to take away (rag/core/export.py): BibTeX, CSV and Markdown of an answer's papers, read
back by independent parsers (bibtexparser, the csv module, markdown-it), with poisoned titles and
authors that must stay text in every format."""

from __future__ import annotations

import csv
import io
import re
from html import unescape

import bibtexparser
import pytest
from bibtexparser.middlewares import SeparateCoAuthors
from markdown_it import MarkdownIt
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

from rag.core.errors import InputError
from rag.core.export import CSV_COLUMNS, export
from rag.core.markup import plain_text
from rag.core.types import Answer, Source

FIELD_INJECTION = "Evil}, author = {X}, note={"
FORMULA = '=HYPERLINK("http://x","click")'
HTML = "<img src=x onerror=alert(1)> and <script>alert(2)</script>"
LINK = "[a](javascript:x) ![t](http://127.0.0.1:9/t.png) **bold** `code` | a | b |"
SPECIALS = "100% of #1 & $5 a_b ~x^2 back\\slash"


def paper(paper_id: str, title: str, **metadata) -> Source:
    return Source.from_text(paper_id, title, "An abstract.", 0.5, metadata)


POISONED = [
    paper(
        "AbCdE12345",
        FIELD_INJECTION,
        authors="Ann Smith; Rand and Dunn; =cmd|' /C calc'!A0",
        status="Poster",
        primary_area="-2+3",
        url="https://openreview.net/forum?id=AbCdE12345",
    ),
    paper("Formula001", FORMULA, authors="@SUM(A1:A9); +1", status="Oral", url="javascript:alert(1)"),
    paper("Html000001", HTML, status="Spotlight", primary_area="\tTabbed"),
    paper("Link000001", LINK, url="https://openreview.net/pdf?id=Link000001"),
    paper("Special001", SPECIALS, status="Reject"),
]


def latex_text(value: str) -> str:
    """A BibTeX field's text as LaTeX typesets it: pylatexenc, taught the text symbols it lacks."""
    symbols = {"textbraceleft": "{", "textbraceright": "}", "textless": "<", "textgreater": ">", "textbar": "|"}
    symbols["textasciicircum"] = "^"
    context = get_default_latex_context_db()
    context.add_context_category(
        "text-symbols", prepend=True, macros=[MacroTextSpec(name, text) for name, text in symbols.items()]
    )
    return LatexNodes2Text(latex_context=context).latex_to_text(value)


def parse_bibtex(text: str):
    library = bibtexparser.parse_string(text, append_middleware=[SeparateCoAuthors()])
    assert library.failed_blocks == []  # no duplicate field or key, nothing unparsable
    return library.entries


def test_bibtex_keeps_every_poisoned_value_inside_its_own_field():
    entries = parse_bibtex(export(POISONED, "bib"))
    assert [entry.key for entry in entries] == [f"iclr2025_{source.paper_id}" for source in POISONED]
    for entry, source in zip(entries, POISONED):
        # The whole title, and only it, is the title: as it reads (`**bold**` as bold), as the CLI shows it.
        assert latex_text(entry["title"]) == plain_text(source.title)
        assert entry["year"] == "2025"
        expected_fields = {"title", "year", "booktitle" if entry.entry_type == "inproceedings" else "howpublished"}
        assert expected_fields <= set(entry.fields_dict) <= expected_fields | {"author", "url", "note"}
    first = entries[0]
    assert latex_text(first["title"]) == FIELD_INJECTION
    assert first.entry_type == "inproceedings"
    assert first["booktitle"] == "The Thirteenth International Conference on Learning Representations"
    assert first["url"] == "https://openreview.net/forum?id=AbCdE12345"
    assert first["note"] == "OpenReview id AbCdE12345; Poster"
    # Three authors, as stored: a name holding " and " stays one name.
    assert [latex_text(name) for name in first["author"]] == ["Ann Smith", "Rand and Dunn", "=cmd|' /C calc'!A0"]
    # A javascript: link is no URL; the id still gives the OpenReview page. A pdf link gives its forum.
    assert entries[1]["url"] == "https://openreview.net/forum?id=Formula001"
    assert entries[3]["url"] == "https://openreview.net/forum?id=Link000001"


def test_bibtex_braces_balance_whatever_the_title():
    text = export(POISONED, "bib")
    for entry in text.strip().split("\n\n"):
        depth = 0
        for char in entry:  # BibTeX's own count: a backslash does not escape a brace
            depth += {"{": 1, "}": -1}.get(char, 0)
            assert depth >= 0
        assert depth == 0
    assert "\\input" not in export([paper("x", "\\input{/etc/passwd} $\\tau$")], "bib")


# Issue 31: braces that pair with nothing and a macro that reads a file were dropped with the words
# around them (the first title came out as "Robust models with data"); the second is also a formula.
BRACE_TITLES = [r"Robust } models {with \input{/etc/passwd} data", r"=SUM(A1) } keeps \input{x} {words"]


@pytest.mark.parametrize("title", BRACE_TITLES)
def test_a_title_with_stray_braces_and_a_file_macro_keeps_its_words_in_every_format(title):
    source = paper("Braces0001", title, url="https://openreview.net/forum?id=Braces0001")
    assert plain_text(title) == title  # as the CLI and the page show it
    bib = export([source], "bib")
    [entry] = parse_bibtex(bib)
    assert latex_text(entry["title"]) == title
    title_field = bib.split("\n")[1]
    assert title_field.count(r"\textbraceleft{}") == title.count("{")  # both braces the same way
    assert title_field.count(r"\textbraceright{}") == title.count("}")
    [row] = csv.DictReader(io.StringIO(export([source], "csv")))
    assert row["title"] == ("'" + title if title.startswith("=") else title)
    html = MarkdownIt("commonmark").render(export([source], "md"))
    assert unescape(re.sub(r"<[^>]+>", "", html)).strip() == f"{title}. Braces0001"


def test_a_rejected_paper_is_a_submission_not_a_proceedings_paper():
    [entry] = parse_bibtex(export([POISONED[4]], "bib"))
    assert entry.entry_type == "misc" and "booktitle" not in entry.fields_dict
    assert entry["howpublished"].startswith("Submitted to The Thirteenth International Conference")
    assert entry["note"].endswith("; Reject")


def test_bibtex_keys_are_valid_and_unique():
    papers = [paper("seed-4d87622f2bfb39e2", "A"), paper("a b{c}", "B"), paper("abc", "C"), paper("", "D")]
    entries = parse_bibtex(export(papers, "bib"))
    keys = [entry.key for entry in entries]
    assert keys == ["iclr2025_seed-4d87622f2bfb39e2", "iclr2025_abc", "iclr2025_abc_2", "iclr2025"]
    assert all(re.fullmatch(r"[A-Za-z0-9_:-]+", key) for key in keys)
    # A seed abstract's id is made up by ingest: it is no OpenReview id, so there is no link.
    assert "url" not in entries[0].fields_dict


def test_csv_cells_that_could_be_formulas_are_neutralised():
    text = export(POISONED, "csv", cited_as={"Formula001": 1, "AbCdE12345": 2})
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == len(POISONED)
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
    assert rows[0]["title"] == FIELD_INJECTION and rows[0]["cited_as"] == "[2]"
    assert rows[0]["authors"] == "Ann Smith; Rand and Dunn; =cmd|' /C calc'!A0" and rows[0]["primary_area"] == "'-2+3"
    assert rows[1]["title"] == "'" + FORMULA and rows[1]["authors"] == "'@SUM(A1:A9); +1"
    assert rows[1]["url"] == "https://openreview.net/forum?id=Formula001" and rows[1]["cited_as"] == "[1]"
    assert rows[2]["primary_area"] == "Tabbed"  # whitespace at the ends is no content: one line, trimmed
    assert rows[2]["title"] == HTML and rows[4]["status"] == "Reject" and rows[4]["cited_as"] == ""


def test_markdown_shows_poisoned_titles_as_text_with_only_our_links():
    text = export(POISONED, "md", cited_as={"Html000001": 1})
    assert len(text.splitlines()) == len(POISONED)
    html = MarkdownIt("commonmark").render(text)  # raw HTML allowed, as many renderers do
    assert not re.search(r"<(img|script)\b", html)
    assert "<strong>" not in html and "<code>" not in html and "<table" not in html
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(href.startswith("https://openreview.net/forum?id=") for href in hrefs)
    items = re.findall(r"<li>(.*?)</li>", html, re.DOTALL)
    assert len(items) == len(POISONED)
    shown = [unescape(re.sub(r"<[^>]+>", "", item)) for item in items]
    for item, source in zip(shown, POISONED):
        assert item.startswith(plain_text(source.title) + ".")  # the title as it reads, as text
    assert "cited as [1]" in shown[2]


def test_an_answer_exports_its_cited_papers_in_citation_order_or_its_listed_papers():
    a, b, c = (paper(f"Paper0000{n}", f"Paper {n}", url=f"https://openreview.net/forum?id=Paper0000{n}") for n in "abc")
    answer = Answer("q", "First [3], then [1]; again [3].", [a, b, c])
    assert [entry.key for entry in parse_bibtex(answer.export("bib"))] == ["iclr2025_Paper0000c", "iclr2025_Paper0000a"]
    rows = list(csv.DictReader(io.StringIO(answer.export("csv"))))
    assert [(row["paper_id"], row["cited_as"]) for row in rows] == [("Paper0000c", "[3]"), ("Paper0000a", "[1]")]
    listed = Answer("q", "2 papers match:\n1. Paper b [1]\n2. Paper a [2]", [b, a], kind="list")
    rows = list(csv.DictReader(io.StringIO(listed.export("csv"))))
    assert [row["paper_id"] for row in rows] == ["Paper0000b", "Paper0000a"]
    assert Answer("q", "[2]", [a, b]).export("md").startswith("1. [Paper b]")


def test_a_refusal_exports_no_papers():
    refused = Answer("q", "The indexed abstracts don't answer this question.", POISONED, refused=True)
    assert refused.export("bib") == "" and refused.export("md") == ""
    assert refused.export("csv") == ",".join(CSV_COLUMNS) + "\r\n"
    with pytest.raises(InputError, match="unknown export format 'pdf'"):
        refused.export("pdf")
