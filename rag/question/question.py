"""A question read once: what the answer pipeline reads of it, as fields.

The conversation makes a follow-up self-contained (`Standalone`, followup.py), `understand` reads its kind
and the filters it states (understand.py), and `read` reads the rest from the text that is answered: its
asks and what each wants (asks.py), whether it asks about several papers, for an amount, for the code. Nothing
after this stage reads the question's words for these again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rag.core.filters import Filters
from rag.core.types import Answer, Kind
from rag.question.asks import HOW_MUCH, Ask, Wants, split_asks
from rag.question.focus import own_words
from rag.question.followup import Standalone
from rag.question.understand import Understood
from rag.text.naming import names_in

# "Which papers …", not "what do the ablation studies examine".
ABOUT_SEVERAL = re.compile(
    r"\b(which|what|any|are there|list|show me)\b(?!\s+(?:do|does|did)\b).{0,30}"
    r"\b(papers|works|methods|approaches|studies)\b",
    re.I,
)
TWO_ASKS = re.compile(r"\band\s+(what|which|how|why|where|when|on which|in which|for which|to what)\b", re.I)
ASKS_FOR_CODE = re.compile(
    r"\b(code|github|repository|repo|implementation|website|link|url|available|released?)\b", re.I
)

# The stored fields a question asks of the papers it points to: "who wrote the first one?", "is the last one an
# oral?", "which of the first five got accepted?", "what area is the second one in?".
ASKS_FIELD = {
    "status": re.compile(
        r"\b(?:accepted|rejected|withdrawn|orals?|spotlights?|posters?|status|decision)\b"
        r"|\b(?:gets?|got)\s+(?:it\s+)?in\b|\b(?:make|makes|made)\s+it\b",  # "did it get in?", "did they make it?"
        re.I,
    ),
    "primary_area": re.compile(r"\b(?:primary\s+area|(?:which|what)\s+(?:primary\s+)?(?:area|track))\b", re.I),
    "authors": re.compile(  # not "what do the authors argue": that is the abstract's
        r"\bwho\s+(?:wrote|authored|(?:are|were|is|was)\s+(?:the\s+)?(?:first\s+)?authors?)\b"
        r"|\b(?:authors?\s+(?:of|list)|(?:written|authored)\s+by)\b"
        r"|\bwhose\s+(?:paper|work|submission|is\s+(?:it|this|that))\b|\bwho(?:['’]s|\s+(?:is|are|was|were))\s+behind\b",
        re.I,
    ),
    "code": re.compile(  # "which of these release code?", "does it have code?": a GitHub link in the abstract
        r"\b(?:release[sd]?|share[sd]?|have|has|link(?:s|ed)?\s+to|provide[sd]?|open[- ]sourced?)\s+"
        r"(?:their\s+|the\s+|its\s+|any\s+|public\s+)?(?:code|github)\b|\bcode\s+(?:available|released|public|out)\b",
        re.I,
    ),
}

# The words of a question about a named paper's fields that ask nothing else ("Was RxnFlow accepted at ICLR?").
FIELD_WORDS = frozenset(
    "accepted rejected withdrawn oral orals spotlight spotlights poster posters status area primary track "
    "authors author iclr 2025 conference venue".split()
)

# A number a question may look up ("26%", "20.9%", "1.2 million", "50,000"): with a decimal point, a
# percent sign, a thousands separator or a scale word, or three digits or more; not "2" or "3D".
LOOKED_UP_NUMBER = re.compile(
    r"(?<![\w.])(?:\d+\.\d+|\d{1,3}(?:,\d{3})+|\d{3,}|\d+(?=\s?%|\s(?:million|billion|thousand)\b))"
    r"(?:\s?%|\s(?:million|billion|thousand)\b)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Question:
    """A question as the answerers take it: made self-contained, understood, its asks read, with the filters
    it is answered under."""

    asked: str  # as asked (cleaned): what the answer says it answers
    standalone: Standalone  # made self-contained with the conversation: the papers in focus, what was said
    understood: Understood  # its kind, the filters it states, the text searched and answered
    asks: tuple[Ask, ...]  # in the order asked; one when it asks one thing
    wants: Wants  # the kind of sentence that answers it: a number, a name, a result, how or why
    opens_with_amount: bool  # "how many …?" first: its number is the answer, and leads it
    several: bool  # about several papers ("which papers …"): each one's best sentence
    two_asks: bool  # "…, and what …": room for a sentence more
    code_asked: bool  # the code, a repository or a link asked for
    numbers: tuple[str, ...]  # the numbers it looks up ("What is the 20.9% figure about?")
    filters: Filters  # those applied: each given by the user, else the one its words state (unless dropped)
    stated: tuple[str, ...]  # the filters its words state that apply, in words ("status: Oral")
    fields: tuple[str, ...] = ()  # the stored fields it asks of the papers in focus or of one it names

    @property
    def text(self) -> str:
        """What is searched and answered: self-contained, without the words that state filters."""
        return self.understood.text

    @property
    def kind(self) -> Kind:
        return self.understood.kind

    @property
    def focus(self) -> tuple[str, ...]:
        """The papers a follow-up about them is answered from; empty when it searches anew."""
        return self.standalone.focus

    @property
    def said(self) -> str:
        """What the conversation's answers said, for a follow-up."""
        return self.standalone.said

    def stamped(self, answer: Answer, config: str) -> Answer:
        """The answer with what every answer says of its question: as asked, as answered, under which config
        and filters (applied, and those read from its words), and the papers in focus."""
        return replace(
            answer,
            question=self.asked,
            standalone_question=self.standalone.question,
            config=config,
            filters=self.filters.to_json(),
            understood=list(self.stated),
            focus=list(self.focus),
        )


def asked_fields(text: str, focus: bool) -> tuple[str, ...]:
    """The stored fields the question asks (`ASKS_FIELD`): of the papers in focus, or of a paper it names when
    it asks nothing else ("Who wrote RxnFlow?", "Is SANA an oral?"; not "How does SANA handle rejected
    samples?")."""
    fields = tuple(name for name, asks in ASKS_FIELD.items() if asks.search(text))
    if focus or not fields:
        return fields
    names = names_in(text)
    return fields if names and not own_words(text) - own_words(" ".join(names)) - FIELD_WORDS else ()


def read(
    standalone: Standalone,
    understood: Understood | None = None,
    asked: str = "",
    given: Filters | None = None,
    dropped: frozenset[str] = frozenset(),
) -> Question:
    """The question read once: `understood` (its kind and the filters its words state) or, when questions
    are taken literally, the standalone text as a look-up; `asked` as typed (default: the standalone text).
    The filters `given` by the user win over those its words state; those on a field `dropped` don't apply."""
    understood = understood or Understood.literal(standalone.question)
    given = given or Filters()
    text = understood.text
    asks = split_asks(text)
    return Question(
        asked=asked or standalone.question,
        standalone=standalone,
        understood=understood,
        asks=tuple(asks),
        wants=Wants.of(text, asks),
        opens_with_amount=bool(HOW_MUCH.match(text.strip())),
        several=bool(ABOUT_SEVERAL.search(text)),
        two_asks=bool(TWO_ASKS.search(text)),
        code_asked=bool(ASKS_FOR_CODE.search(text)),
        numbers=tuple(LOOKED_UP_NUMBER.findall(text)),
        filters=understood.applied(given, dropped),
        stated=tuple(understood.in_use(given, dropped).labels()),
        fields=asked_fields(standalone.question, bool(standalone.focus)),  # with its filter words
    )


def lookup(text: str) -> Question:
    """A question read on its own, as a look-up (no conversation, no kind): for a caller with a text only."""
    return read(Standalone(text))
