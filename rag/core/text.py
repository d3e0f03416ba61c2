"""Stop words (the words dropped before matching a question's words against a paper or a sentence),
what makes a string from outside not text, a question cleaned where it comes in, and the two checks on
what goes out: a link (`safe_url`, `safe_links`) and a text shown on a terminal (`terminal_text`)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlparse

from rag.core.errors import InputError

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# A lone surrogate: half of a UTF-16 pair (JSON's "\\ud800"), or a byte of the command line that was not
# UTF-8 (Python keeps it as U+DC80..U+DCFF). No encoder writes one and no tokenizer takes one.
SURROGATE = re.compile("[\ud800-\udfff]")

# English function words (from Lucene's list, as in bm25s), question words, and the words of research
# writing that every abstract uses: matching "which" or "paper" says nothing about which paper is meant.
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with what which how why when where who whom does do did can could would "
    "should may has have had been being we our us you your i me my its from than so also any some all "
    "each other more most about via using use used uses paper papers work approach method new way one two "
    "both e g eg ie etc those them he she his her only while per try get now please tell".split()
)

# BM25 retrieval (rag/index/lexical.py) also drops the verbs and adjectives of research writing, which
# every abstract has: matching "propose" or "novel" would rank papers by how they are written.
SEARCH_STOPWORDS = STOPWORDS | frozenset(
    "whose might must over under between within without based study studies approaches methods propose "
    "proposed proposes present presents introduce introduced introduces show shows shown novel existing "
    "ways like well here whether kind kinds type types tries tried trying make makes made help helps gets "
    "able need needs exist exists specific particular certain various "
    "acronym acronyms abbreviation abbreviations abbreviated stand stands stood".split()
)

# Evidence scoring and follow-up questions (content_stems in rag/text/words.py) also drop these.
# The two additions are kept as each place had them: making them one would change rankings or answers,
# which needs an evaluation run first (docs/evaluation.md, docs/answers.md).
EVIDENCE_STOPWORDS = STOPWORDS | frozenset("after doing itself just much same through very were model models".split())


def not_text(text: str) -> str | None:
    """Why `text` is not Unicode text ("holds a lone surrogate ..."), or None when it is."""
    found = SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"is not valid text: character {found.start() + 1} is a lone surrogate (U+{ord(found.group()):04X}), "
        "a byte that is not UTF-8 or half of a \\u escape pair"
    )


def clean_question(question: str | None, limit: int, what: str = "the question") -> str:
    """The question without control characters; an empty, over-long (past `limit` characters) or garbled
    (not Unicode text) question is an InputError, whose message names the text as `what`. Garbled text is
    refused, not repaired: a question with a character replaced is not the one asked (ingest refuses it too)."""
    if question is not None and not isinstance(question, str):
        raise InputError(f"{what} is not text: got {type(question).__name__} {question!r:.40}")
    question = CONTROL_CHARS.sub(" ", question or "").strip()
    if not question:
        raise InputError(f"{what} is empty")
    if problem := not_text(question):
        raise InputError(f"{what} {problem}")
    if len(question) > limit:
        raise InputError(
            f"{what} is {len(question):,} characters long; the limit is {limit:,} (answer.max_question_chars)"
        )
    return question


def safe_url(url: str) -> str | None:
    """The URL if it is an absolute http(s) link, else None (no javascript:, data:, relative paths)."""
    url = (url or "").strip()
    parsed = urlparse(url)
    return url if parsed.scheme in ("http", "https") and parsed.netloc else None


def safe_links(metadata: dict[str, Any]) -> dict[str, Any]:
    """Stored metadata with only http(s) links (`url`, the `github` list): what every output may show. The
    index reads every stored paper through it (rag/index/store.py), so no output sees a link as stored."""
    shown = dict(metadata)
    if "url" in shown:
        shown["url"] = safe_url(str(shown["url"])) or ""
    if "github" in shown:
        shown["github"] = " ".join(url for url in str(shown["github"]).split() if safe_url(url))
    return shown


# What a terminal acts on instead of showing: an escape sequence, whole (CSI "ESC [ ... final", 8-bit CSI
# U+009B too; a string "ESC ] ... BEL" or "... ESC \\" (OSC, DCS, PM, APC, SOS) ended on its line; any other
# "ESC X"), the C0 controls but newline and tab, DEL and the C1 controls, and the bidi overrides and isolates
# (U+202A..U+202E, U+2066..U+2069), which reorder the characters after them on the screen.
TERMINAL_CONTROL = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
# The characters of TERMINAL_CONTROL that JSON writes as they are (it escapes C0 itself).
JSON_RAW_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """`text` as a terminal may be given it: plain characters, newlines and tabs, nothing it would act on
    (TERMINAL_CONTROL dropped). Every line the `rag` command writes passes through it (rag/cli.py)."""
    return TERMINAL_CONTROL.sub("", text)


def terminal_json(value: Any, indent: int | None = 2) -> str:
    """`value` as JSON (UTF-8 text kept readable), with the characters `terminal_text` would drop written as
    \\u escapes: the same JSON to a parser, and nothing a terminal acts on, so no data is lost on the way."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return JSON_RAW_CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
