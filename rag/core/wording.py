"""A number and the words that go with it agree, wherever a count is put in words: "1 paper", "2 papers",
"1 primary area", "3 statuses", "there is 1 paper with status: Spotlight"; and how a refusal opens."""

from __future__ import annotations

import re

PAPERS = re.compile(r"\bpapers\b")


def plural(noun: str, number: int) -> str:
    """The noun for `number` of it: 'author' for 1, 'authors' for 2, 'statuses' for 3."""
    if number == 1:
        return noun
    return f"{noun}es" if noun.endswith("s") else f"{noun}s"


def counted(number: int, noun: str, more: str = "") -> str:
    """'1 paper', '12 primary areas', '1,200 papers'; `more` comes between ('3 more authors')."""
    return f"{number:,} {more}{plural(noun, number)}"


def papers_of(number: int, what: str) -> str:
    """`number` before `what`, a description of papers in the plural ('papers with status: Oral', 'accepted
    papers (status: …)'), whose first 'papers' is made singular for 1: '1 paper with status: Oral'."""
    return f"{number:,} {PAPERS.sub('paper', what, count=1) if number == 1 else what}"


def verb(number: int, singular: str, plural_form: str) -> str:
    """The verb that agrees with `number` as a subject: verb(1, 'is', 'are') is 'is'."""
    return singular if number == 1 else plural_form


def scope(filter_labels: list[str]) -> str:
    """The papers a question was put to, in words: 'the papers with status: Oral; has_code: yes', or 'the
    index' when no filter narrowed it (`filter_labels`: `Filters.labels()`)."""
    return "the papers with " + "; ".join(filter_labels) if filter_labels else "the index"


# How every refusal opens (rag/answering: pipeline.refusal_text, lists, related, tally). A conversation's history
# holds only the answers' text, and a refused turn's question is never joined to the next (rag/question/followup.py).
REFUSAL_OPENINGS = (
    "The indexed abstracts don't answer",
    "No indexed abstract",
    "No indexed paper is",
    "No paper is about",
    "The stored papers have no",
)


def is_refusal(answer_text: str) -> bool:
    """Whether an answer's text is one of the refusals this tool writes."""
    return answer_text.lstrip().startswith(REFUSAL_OPENINGS)
