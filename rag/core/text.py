"""Stop words (the words dropped before matching a question's words against a paper or a sentence),
what makes a string from outside not text, and a question cleaned where it comes in."""

from __future__ import annotations

import re

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
    "both e g eg ie etc those them he she his her only while per try get".split()
)

# BM25 retrieval (rag/index/lexical.py) also drops the verbs and adjectives of research writing, which
# every abstract has: matching "propose" or "novel" would rank papers by how they are written.
SEARCH_STOPWORDS = STOPWORDS | frozenset(
    "whose might must over under between within without based study studies approaches methods propose "
    "proposed proposes present presents introduce introduced introduces show shows shown novel existing "
    "ways like well here whether kind kinds type types tries tried trying make makes made help helps gets "
    "able need needs exist exists specific particular certain various".split()
)

# Evidence scoring and follow-up questions (content_stems in rag/retrieval/words.py) also drop these.
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
