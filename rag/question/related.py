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
    r"|(?:more\s+)?(?:papers?|works?)\s+like"
    # a follow-up's: "more like this one", "anything similar to it?", "others like that paper"
    r"|(?:(?:show|give|find)\s+(?:me\s+)?)?(?:more|others?|anything|something)\s+(?:like|similar\s+to)(?=\s+(?:this|that|it|them|these|those|the)\b)"
    r")\s+(?P<subject>.+?)[\s?.!]*$"
    # "anything similar?", "similar work?", "any similar papers?": like the papers in focus
    r"|^\W*(?:(?:are\s+there\s+)?any(?:thing)?\s+|other\s+)?similar(?P<subject_none>\s+(?:papers?|works?|studies))?[\s?.!]*$"
    # "what else should I read like this one?", "other optimizer papers in the same vein?", "… along these lines"
    r"|^\W*(?:what|anything|any|other|more)\b[^?]{0,60}?\b(?:in\s+the\s+same\s+vein|along\s+(?:these|the\s+same)\s+"
    r"lines|on\s+this\s+(?:topic|problem)|like\s+(?:this|that|it)(?:\s+one|\s+paper|\s+work)?)[\s?.!]*$",
    re.IGNORECASE | re.DOTALL,
)
# "X but for web navigation", "like X, but in robotics": the papers like X among those on another topic.
BUT_FOR = re.compile(
    r"[\s,;]*\bbut\s+(?:for|in|on|about|applied\s+to|focused\s+on|restricted\s+to)\s+(?P<topic>[^,;?!.]+)", re.I
)
MY_ABSTRACT = re.compile(r"^(?:my|this|the\s+following)\s+abstract\s*[:,-]?\s*", re.IGNORECASE)
ABSTRACT_WORDS = 30  # a subject this long is an abstract pasted in, not a paper's name


def related_question(question: str) -> str | None:
    """What a "papers similar to X" question names as X, or None for any other question."""
    match = RELATED_QUESTION.match(question.strip())
    if match is None:
        return None
    return match["subject"].strip(" \"'“”") if match["subject"] else "it"  # "anything similar?": the focus


def pasted_abstract(subject: str) -> str | None:
    """The abstract a question pastes in ("related to my abstract: …", or a long text), else None."""
    rest = MY_ABSTRACT.sub("", subject, count=1)
    return rest if rest != subject or len(subject.split()) >= ABSTRACT_WORDS else None


def but_for(question: str, subject: str) -> tuple[str, str]:
    """The paper a related question is like, without what "but for Y" restricts to, and Y ("" when none)."""
    restrict = BUT_FOR.search(question)
    if restrict is None:
        return subject, ""
    return BUT_FOR.sub("", subject).strip(" \"'“”") or subject, restrict["topic"].strip()
