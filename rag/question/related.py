"""Whether a question asks for the papers related to one: "Which papers are most similar to RxnFlow?", "papers
related to <title>", "more papers like X", or an abstract pasted in ("related to my abstract: …").
"""

from __future__ import annotations

import re

# "Which papers are most similar to RxnFlow?", "papers related to <title>", "more papers like X".
RELATED_QUESTION = re.compile(
    r"^\W*(?:(?:which|what|find|show|list|give)\s+(?:me\s+)?(?:the\s+)?(?:other\s+)?)?"
    r"(?:(?:[\w-]+\s+){0,2}?(?:papers?|works?|submissions?|ones)\s+(?:are\s+|is\s+)?(?:the\s+)?"
    r"(?:most\s+|more\s+|closely\s+)?(?:similar|related|closest|close)\s+(?:to|with)"
    r"|(?:more\s+)?(?:papers?|works?)\s+like)\s+(?P<subject>.+?)[\s?.!]*$",
    re.IGNORECASE | re.DOTALL,
)
MY_ABSTRACT = re.compile(r"^(?:my|this|the\s+following)\s+abstract\s*[:,-]?\s*", re.IGNORECASE)
ABSTRACT_WORDS = 30  # a subject this long is an abstract pasted in, not a paper's name


def related_question(question: str) -> str | None:
    """What a "papers similar to X" question names as X, or None for any other question."""
    match = RELATED_QUESTION.match(question.strip())
    return match["subject"].strip(" \"'“”") if match else None


def pasted_abstract(subject: str) -> str | None:
    """The abstract a question pastes in ("related to my abstract: …", or a long text), else None."""
    rest = MY_ABSTRACT.sub("", subject, count=1)
    return rest if rest != subject or len(subject.split()) >= ABSTRACT_WORDS else None
