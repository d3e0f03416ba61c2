"""A conversation's focus: the papers being discussed, and whether a follow-up asks about them.

The focus after a turn is the papers its answer cited (a `Turn` may carry them; a client that sends
only text gets them remembered or recovered, see `FocusMemory`). A follow-up that refers back to them (a
pronoun, "the paper", "that method", "the first one", or a question with no topic of its own, like
"What benchmark?") is answered from them alone: retrieved with a paper filter, its evidence picked for
the follow-up itself, not for "last question + this one", which only found the last answer again. A
follow-up that names something the papers in focus don't hold searches anew.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.core.errors import InputError, ModelError
from rag.core.filters import Filters
from rag.core.text import EVIDENCE_STOPWORDS
from rag.core.types import Answer, Source
from rag.question.filter_words import AUTHOR, SAID_STATUS
from rag.question.followup import Rewriter, Standalone
from rag.question.pointing import PLACES, POINTER, pointed, without_pointers
from rag.text.naming import paper_name

Search = Callable[[str, int, Filters], list[Source]]

# Words that point back at what was just discussed.
REFERS_BACK = re.compile(
    r"\b(it|its|itself|they|their|theirs|them|themselves|this|these|those|that|"
    r"the (?:paper|papers|work|study|method|approach|model|framework|authors|system|technique|algorithm|agent|"
    r"ones?))\b",
    re.IGNORECASE,
)  # and a place: "the first one", "#4", "the last two" (pointing.POINTER)
# The words of a question that ask for a kind of fact rather than name a topic: "What benchmark did
# they use?" has no topic of its own, "How are molecules generated?" has.
ASKING_WORDS = frozenset(
    "benchmark benchmarks dataset datasets data result results evaluate evaluated evaluation evaluations "
    "experiment experiments experimental code available outperform outperforms baseline baselines perform "
    "performs performance accuracy limitation limitations contribution contributions main idea key task tasks "
    "metric metrics compare compared comparison train trained training achieve achieves achieved improve "
    "improves improvement improvements name named called test tested setting settings show showed find found "
    "findings propose proposed introduce introduced present presented else another more other exactly kind "
    "kinds type types number many much tell know explain details detail run ran runs conduct conducted "
    "apply applied work works wrote write written authored author authors paper papers similar related like "
    "closest close differ differs difference differences read first start begin one ones anything something next "
    "along lines "
    # a stored field's words: "what's its status?", "which area was it submitted to?", "is their code public?"
    "status decision accepted rejected withdrawn oral spotlight poster area primary track submitted github "
    "public release released share behind".split()
)
# A question looking for papers ("Which paper shows that ...", "any other work on ...") asks anew.
SEEKS_PAPERS = re.compile(r"\b(which|what|any|other|another)\s+(papers?|works?|studies|study)\b", re.IGNORECASE)
# A name the question gives: a word with a capital or digit after its first letter (RxnFlow, GPT-4o, R3D2).
NAME = re.compile(r"\b[A-Za-z][A-Za-z0-9]*[A-Z0-9][\w-]*")
# A follow-up that opens by going back past the last answer: "Going back to the first list - …", "Back to the
# jailbreak ones: …", "In the grokking list, …", "From your very first answer, …", "back to grokking: …". What
# it names says which answer: a place among the answers that listed papers, or the words of the question that
# answer was given to.
BACK = r"(?:(?:going|go|coming|come|returning)\s+)?back"
GOES_BACK = re.compile(
    rf"^\W*(?:(?:ok|okay|so|now|and)\W+)*(?:(?:(?P<back>{BACK})\s+to|in|from|of)\s+(?:the|that|those|your|my)\s+"
    r"(?P<named>(?:[\w-]+\s+){0,5}?)(?:lists?|ones|papers|answer|results)\b\W*"
    rf"|(?P<back_to>{BACK})\s+to\s+(?:the\s+)?(?P<topic>(?:[\w-]+\s+){{0,3}}?[\w-]+)\s*[:—–]\s*)",
    re.IGNORECASE,
)  # and "back to grokking: …", "going back to the orals — …"
# An answer that numbers its papers, one a line: a list ("1. RxnFlow [1] …"), a reading list.
NUMBERED = re.compile(r"^\s*2\. ", re.MULTILINE)
# A follow-up that sets a paper in focus beside another: "how does it compare to X?", "X vs this one".
COMPARES = re.compile(
    r"\b(?:compared?|compares|comparison|vs\.?|versus|differ(?:s|ent|ence)?|stack\s+up|better\s+than)\b", re.I
)
EARLIER = {
    "earlier": -1,
    "previous": -1,
    "other": -1,
    "original": 1,
}  # the latest list before the last answer; the first


@dataclass(frozen=True)
class Turn:
    """One exchange of a conversation: the question, the answer's text and the papers it cited (the
    focus it leaves; empty when not known, e.g. a client sent only text)."""

    question: str
    answer: str
    papers: tuple[str, ...] = ()

    @classmethod
    def of(cls, answer: Answer) -> Turn:
        """An answer as a turn of the conversation's history, with the papers it leaves in focus."""
        return cls(answer.question, answer.text, tuple(answer.numbered))


History = Sequence[Turn | tuple[str, str] | Sequence[str]]


def as_turns(history: History | None) -> list[Turn]:
    """The history as Turns; plain (question, answer) pairs, as every interface has sent them, still work."""
    if isinstance(history, str) or not isinstance(history or [], Sequence):
        raise InputError(f"the history is not a list of (question, answer) pairs: got {type(history).__name__}")
    turns = []
    for number, turn in enumerate(history or [], start=1):
        if isinstance(turn, Turn):
            turns.append(turn)
            continue
        if isinstance(turn, str) or not isinstance(turn, Sequence) or len(turn) not in (2, 3):
            raise InputError(f"turn {number} of the history is not a (question, answer) pair")
        question, answer, *papers = turn
        if not isinstance(question, str) or not isinstance(answer, str):
            raise InputError(f"turn {number} of the history is not a (question, answer) pair of texts")
        ids: object = papers[0] if papers else ()
        if isinstance(ids, str) or not isinstance(ids, Sequence) or not all(isinstance(pid, str) for pid in ids):
            raise InputError(f"turn {number} of the history: its third item is not a list of paper ids")
        turns.append(Turn(question, answer, tuple(ids)))
    return turns


def pairs(turns: Sequence[Turn]) -> list[tuple[str, str]]:
    """The turns as (question, answer) pairs, as a model's rewrite prompt takes them."""
    return [(turn.question, turn.answer) for turn in turns]


def own_words(question: str) -> set[str]:
    """The question's words that could name a topic (neither function words nor asking words)."""
    words = re.findall(r"[a-z0-9][a-z0-9\-]{2,}", question.lower())
    return {word for word in words if word not in EVIDENCE_STOPWORDS and word not in ASKING_WORDS}


def refers_back(question: str) -> bool:
    """Whether the question points back at the conversation: a word that does (`points_back`), or no topic
    of its own."""
    return points_back(question) or not own_words(question)


def points_back(question: str) -> bool:
    """Whether a word of the question points back: a pronoun, "the paper", a place ("#4", "the last two")."""
    return bool(REFERS_BACK.search(question) or POINTER.search(question))


def gone_back(question: str, turns: Sequence[Turn], listed: Callable[[int], bool]) -> tuple[int, str] | None:
    """Where a follow-up that goes back past the last answer goes (`GOES_BACK`): the number of turns up to the
    one it names, and the question without the words that name it; None when it names none of them.
    `listed(n)`: whether the n-th turn's answer cited several papers (a list, for "the first list")."""
    match = GOES_BACK.search(question)
    named = (match["named"] or match["topic"] or "").lower().split() if match else []
    if match is None or not (named or match["back"] or match["back_to"]) or len(turns) < 2:
        return None
    rest = question[match.end() :]
    rest = rest[:1].upper() + rest[1:]
    place = next((PLACES.get(word) or EARLIER.get(word) for word in named if word in PLACES or word in EARLIER), None)
    if place is not None:  # among the answers before the last that cited several papers
        lists = [end for end in range(1, len(turns)) if listed(end)]
        index = place - 1 if place > 0 else place
        return (lists[index], rest) if -len(lists) <= index < len(lists) else None
    words = {word[:6] for word in own_words(" ".join(named))}
    shared = [len(stems_in(words, turn.question)) for turn in turns]
    best = max(range(len(turns) - 1), key=lambda number: shared[number])
    return (best + 1, rest) if shared[best] > shared[-1] else None


def narrowed(question: str, focus: tuple[str, ...]) -> tuple[str, ...]:
    """The papers "the second one", "the last two" or "#4" point to (pointing.py), when the focus holds
    several; else the focus."""
    places = pointed(question, len(focus))
    return tuple(focus[place] for place in places) if places else focus


def asks_anew(question: str, focused: list[Source], found: list[Source]) -> bool:
    """Whether a follow-up turns to another topic than the papers in focus (`focused`, as retrieved for
    it), given what an unrestricted search of it finds (`found`, best first). The words that point by place
    ("the second one") are no topic."""
    points = points_back(question)
    if points and COMPARES.search(question):
        return False  # "how does it compare to NExT-Mol?": the paper in focus beside the one it names
    # The words of a filter name no topic: "which of them were spotlights?", "and the ones by Quanquan Gu?"
    question = AUTHOR.sub(" ", SAID_STATUS.sub(" ", without_pointers(question)))
    if not own_words(question):
        return False  # "What benchmark did they use?": about the papers in focus
    if not points or SEEKS_PAPERS.search(question):
        return True  # its own topic, and no word pointing back (a "that" of "which paper shows that" is none)
    top = found[0] if found else None
    ids = {source.paper_id for source in focused}
    if top is None or top.paper_id in ids:
        return False
    told = " ".join(f"{source.title} {source.text}" for source in focused).lower()
    other = f"{top.title} {top.text}".lower()
    if any(name.lower() not in told and name.lower() in other for name in NAME.findall(question)):
        return True  # it names something of another paper: "And what does FakeShield detect?"
    # Its own words: searched anew when the papers in focus hold under half of them and another holds more.
    asked = {word[:6] for word in own_words(question)}
    held, held_elsewhere = stems_in(asked, told), stems_in(asked, other)
    return 2 * len(held) < len(asked) and len(held_elsewhere) > len(held)


def stems_in(stems: set[str], text: str) -> set[str]:
    """Which of the 6-letter word stems the text holds."""
    return stems & {word[:6] for word in re.findall(r"[a-z0-9][a-z0-9\-]{2,}", text.lower())}


def held_to_focus(
    question: str, turns: Sequence[Turn], focus: tuple[str, ...], search: Search, rewriter: Callable[[], Rewriter]
) -> Standalone | None:
    """The follow-up answered from the papers in focus; the question alone when it turns to a new topic;
    None when nothing is in focus (the follow-up rule's to make self-contained).

    Its question stays the follow-up itself, so the evidence is picked for what it asks now; a configured
    model may rewrite it (for retrieval and the picker), and the paper filter still holds it to the focus.
    """
    if not focus:
        return None
    if not refers_back(question):
        return Standalone(question)
    pointed_to = narrowed(question, focus)
    # A place in a numbered list is what the reader sees: held to those papers whatever it asks. "The second
    # one" of an answer that cites in prose is the second paper it cited; if what it asks is another's of
    # those papers, the user counted otherwise: held to all of them.
    numbered = pointed_to != focus and NUMBERED.search(turns[-1].answer)
    found = [] if numbered else search(question, 3, Filters())
    for held in dict.fromkeys([pointed_to] if numbered else [pointed_to, focus]):
        focused = search(question, len(held), Filters(papers=held))
        if not focused:
            return None  # the papers in focus are no longer in the index
        if numbered or not asks_anew(question, focused, found):
            focus = held
            break
    else:
        return Standalone(question)
    question = by_name(question, focused) if len(focus) == 1 else question
    try:
        rewritten = rewriter().rewrite(question, pairs(turns))
    except ModelError as err:
        return Standalone(question, model_failure=str(err), focus=focus)
    return Standalone(rewritten or question, focus=focus)


def by_name(question: str, focused: list[Source]) -> str:
    """A follow-up that points to one paper by its place, with the paper's name in its place: "How does the
    second one work?" -> "How does Fast and Slow Generating work?", so its words are no search for "second"."""
    name = paper_name(focused[0]) or f"“{focused[0].title}”"
    return POINTER.sub(name, question, count=1)


class FocusMemory:
    """The papers each recent answer cited, by its whole conversation: the focus a client that sends only text
    left. A conversation's focus is its own: two conversations whose answers read the same (a sentence two
    abstracts share) are told apart by the turns before.

    `cited_again(turns)` recovers what the last of the turns cited when its answer is not remembered
    (given by another process, or long ago): the service reads the answer's [n] markers against the
    sources its question finds again.
    """

    KEPT = 2048  # answers remembered: a few hundred conversations' worth

    def __init__(self, cited_again: Callable[[list[Turn]], tuple[str, ...]]):
        self.cited_again = cited_again
        self.cited: OrderedDict[tuple[str, ...], tuple[str, ...]] = OrderedDict()
        self.lock = threading.Lock()

    def remember(self, turns: list[Turn], cited: Sequence[str]) -> None:
        """The papers the last of the turns (its answer given here) cited."""
        key = conversation_key(turns)
        with self.lock:
            self.cited[key] = tuple(cited)
            self.cited.move_to_end(key)
            while len(self.cited) > self.KEPT:
                self.cited.popitem(last=False)

    def focus_of(self, turns: list[Turn]) -> tuple[str, ...]:
        """The papers the conversation is about after its last turn: those its answer cited; when it cited
        none (a refusal) and its question referred back, those of the turn before (up to 3 turns back)."""
        for end in range(len(turns), max(len(turns) - 3, 0), -1):
            papers = self.cited_in(turns[:end])
            if papers or not refers_back(turns[end - 1].question):
                return papers
        return ()

    def cited_in(self, turns: list[Turn]) -> tuple[str, ...]:
        """The papers the last of the turns cited: carried by the turn, remembered, or recovered."""
        last = turns[-1]
        if last.papers:
            return last.papers
        with self.lock:
            remembered = self.cited.get(conversation_key(turns))
        if remembered is not None:
            return remembered
        return self.cited_again(turns)


def conversation_key(turns: list[Turn]) -> tuple[str, ...]:
    """A conversation by every question and answer it holds, spacing aside (as a client sends them back)."""
    return tuple(" ".join(text.split()) for turn in turns for text in (turn.question, turn.answer))
