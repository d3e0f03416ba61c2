"""Questions answered by counting stored metadata: which field to group by, how many groups, the topic.

"Which research areas have the most oral papers?" groups the Oral papers by primary area; "how many
spotlight papers per area?" too; "which authors have the most accepted papers on diffusion?" groups by
author the accepted papers found on "diffusion"; "how many papers were withdrawn?" names no group and
no topic: a plain count. The filters (oral, accepted, an area, an author) are understood by
rag/question/understand.py, as for every question; this module reads what is left: the group, how
many groups were asked for ("top 5"), whether the fewest come first, and the topic. Rules, like
understand.py; "how many papers on diffusion?" (a count with a topic and no group) stays a count of the
papers a list draws (rag/answering/lists.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.question.understand import Understood

# "How many papers / accepted RL papers / orals ...", not "how many templates does RxnFlow use" (a lookup).
PLURAL = r"(?:papers|works(?!\s+(?:best|better|well|worse))|submissions|articles|ones|orals|spotlights|posters)"
SEVERAL = rf"(?:[\w-]+\s+){{0,4}}?{PLURAL}\b"
COUNT = re.compile(rf"^\W*(?:how\s+many|(?:what\s+is\s+)?the\s+number\s+of|count\s+(?:the\s+)?)\s+{SEVERAL}", re.I)

# Words that name a stored field to group by -> (the stored key, the field in words).
GROUPS = {
    r"(?:research\s+|primary\s+|subject\s+)?(?:areas?|tracks?)": ("primary_area", "primary area"),
    r"authors?|researchers?|people": ("authors", "author"),
    r"status(?:es)?|decisions?|outcomes?|venues?": ("status", "status"),
}
GROUP = "|".join(f"(?:{words})" for words in GROUPS)
MOST = r"(?:the\s+)?(?:most|fewest|least|largest\s+number\s+of|highest\s+number\s+of|smallest\s+number\s+of)"
NUMBER_WORDS = {"three": 3, "five": 5, "ten": 10, "twenty": 20}
TOP_N = r"(?P<n>\d{1,3}|three|five|ten|twenty)"
COUNTED_N = TOP_N.replace("?P<n>", "?P<m>")  # the same, where a pattern has two places for it
SHOW = r"(?:list|show|name|give)\s+(?:me\s+)?(?:the\s+)?"
# "Which areas have the most …", "what authors wrote the most …", "the 5 authors with the most …".
ASKS = re.compile(
    rf"^\W*(?:(?:which|what)\s+(?:are\s+the\s+)?|{SHOW})(?:{TOP_N}\s+)?"
    rf"(?P<group>{GROUP})\s+(?:\w+\s+){{0,2}}?{MOST}\b",
    re.IGNORECASE,
)
WHO = re.compile(rf"^\W*who\s+(?:has|have|had|wrote|authored|published|got)\s+{MOST}\b", re.IGNORECASE)
# "… per area", "by status", "for each area", "across areas", "broken down by author".
PER = re.compile(
    rf"\s*\b(?:(?:broken\s+down|split|grouped)\s+)?(?:per|by|for\s+each|in\s+each|of\s+each|across(?:\s+the)?|each)"
    rf"\s+(?P<group>{GROUP})\b",
    re.IGNORECASE,
)
TOP = re.compile(
    rf"\b(?:the\s+)?(?:top\s+(?:{TOP_N}\s+)?|(?:{COUNTED_N}\s+)?most\s+prolific\s+)(?P<group>{GROUP})\b"
    rf"(?:\s+(?:by|with)\s+(?:{MOST}|(?:the\s+)?number\s+of))?",
    re.IGNORECASE,
)
FEWEST = re.compile(r"\b(?:fewest|least|smallest)\b", re.IGNORECASE)
# What a topic follows: "papers on diffusion", "papers that propose new optimizers".
TOPIC_AFTER = re.compile(
    r"\b(?:on|about|regarding|concerning|related\s+to|dealing\s+with|(?:that\s+|which\s+)?(?:stud(?:y|ies)|use|uses|"
    r"propose|proposes|introduce|introduces|address|addresses|tackle|tackles))\s+(?P<topic>.+)$",
    re.IGNORECASE,
)
LEAD = re.compile(
    rf"^\W*(?:how\s+many|(?:what\s+is\s+)?(?:the\s+)?number\s+of|count\s+(?:the\s+)?|{MOST}|(?:with|have|has)\s+{MOST}|"
    rf"(?:what|which)\s+(?:are|is)\s+(?:the\s+)?|{SHOW})\s*",
    re.IGNORECASE,
)
# Words that say nothing about a topic: "how many papers were there in total at ICLR 2025?"
FILLER = re.compile(
    r"\b(?:are|were|was|is|there|have|has|had|got|been|do|does|did|the|a|an|in|at|of|to|total|overall|all|"
    r"altogether|ICLR|2025|conference|index|indexed|stored|submitted|this|year|with|and|by|get|gets|"
    r"breakdown|distribution|number|count|counts|share)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Tally:
    """What a counting question asks: the stored field grouped by (None: a plain count), in words, how many
    groups it asks for (None: not said), whether the fewest come first, the topic ("" for all papers), and
    whether it asks for shares."""

    field: str | None
    group: str
    top: int | None
    fewest: bool
    topic: str
    share: bool = False  # asked as a share ("what fraction of …", "acceptance rate per area"): shares, not counts


def tally_of(understood: Understood) -> Tally | None:
    """The count a question asks for over the stored metadata, or None when it asks something else.

    Read from `understood.text`, the question without the filter words understand.py took out."""
    text = understood.text
    about_papers = re.search(rf"\b{PLURAL}|\bhow\s+many\b|\bprolific\b", understood.question, re.IGNORECASE)
    found = about_papers and (ASKS.search(text) or WHO.search(text) or TOP.search(text) or PER.search(text))
    if not found:
        if not COUNT.search(understood.question):
            return None
        return None if _topic(text) else Tally(None, "", None, False, "")
    words = found.groupdict().get("group")
    field, group = next(
        (stored for pattern, stored in GROUPS.items() if words and re.fullmatch(pattern, words, re.IGNORECASE)),
        ("authors", "author"),  # "who has the most …"
    )
    top = _number(found.groupdict().get("n") or found.groupdict().get("m"))
    rest = text[: found.start()] + " " + text[found.end() :]
    for pattern in (PER, TOP):  # a second phrase naming the group ("which areas … per area")
        rest = pattern.sub(" ", rest)
    return Tally(field, group, top, bool(FEWEST.search(found.group())), _topic(rest))


def told_tally(text: str, field: str | None, topic: str) -> Tally:
    """The tally a question asks for when the learned reader (learned.py) read its kind, the field it groups by
    (None: a plain count) and its topic: how many groups it asks for and whether the fewest come first are
    read here, as numbers and words of `text`."""
    group = next((words for stored, words in GROUPS.values() if stored == field), "")
    n = re.search(rf"\b(?:top|first|the)\s+{TOP_N}\b", text, re.IGNORECASE)
    return Tally(field, group, _number(n["n"] if n else None), bool(FEWEST.search(text)), topic)


def _number(said: str | None) -> int | None:
    """How many groups a question asks for, said in digits or a word ("5", "five"); None when not said."""
    return int(NUMBER_WORDS.get(said.lower(), 0) or said) if said else None


def _topic(text: str) -> str:
    """The topic words left once the counting words are cut: after "on"/"about"/"that propose", and the
    words before "papers" ("how many diffusion papers")."""
    text = LEAD.sub("", text.strip())
    noun = re.search(rf"\b{PLURAL}", text, re.IGNORECASE)
    before, after = (text[: noun.start()], text[noun.end() :]) if noun else ("", text)
    about = TOPIC_AFTER.search(after)
    words = f"{before} {about['topic'] if about else ''}".split()
    while words and FILLER.fullmatch(words[0].strip("?.!,")):
        words.pop(0)
    while words and (FILLER.fullmatch(words[-1].strip("?.!,")) or not words[-1].strip("?.!,")):
        words.pop()
    return " ".join(words).strip(" ?.!,")
