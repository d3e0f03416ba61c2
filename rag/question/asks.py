"""A question's asks: the parts of a question, each answered by its own sentence, and what each wants.

Researchers often ask two things at once ("How does X work, and what benchmark does it introduce?",
"Which dataset does XLand-100B provide and how large is it?"). One best sentence answers one of
them; the other ask's fact sits in another sentence of the same abstract. So a question is split
into its asks, each with the kind of answer it wants (rag/answering/asks.py finds the sentence that holds it).

Splitting is by rule, on the words that join two questions: ", and what/which/how/why …",
"… and how many …", "; what …". A list inside one ask ("how many tasks, transitions and episodes")
stays one ask: a conjunction splits only when a wh-word follows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

# Where a second ask starts: a conjunction followed by a question word, or a question word after a semicolon.
WH = (
    r"(?:what|which|how|why|where|when|who|whom|whose|is|are|does|do|did|can|could"
    r"|(?:on|in|for|to|from|with|by|at|across) (?:which|what|whom|how))"
)
# An aside may stand between the conjunction and the question word ('…, and beyond speech, on which …');
# it stays with the ask it opens.
ASK_BREAK = re.compile(
    rf"(?:,\s*(?:and|but|or)\s+(?=(?:[^,?]{{1,30}},\s*)?{WH}\b)|(?:\s+(?:and|but|or)\s+|;\s*(?:and\s+)?|\?\s+(?:and\s+)?)(?={WH}\b))",
    re.I,
)
# A break whose wh-word is a yes/no auxiliary is an ask only after a comma or a question mark
# ("does it work, and is it fast?"), not in "what the model learns and does" (a verb list).
AUXILIARY = re.compile(r"(?:is|are|does|do|did|can|could)\b", re.I)


class AskKind(StrEnum):
    """What kind of sentence answers an ask."""

    NUMBER = "number"  # how many / how much / what percentage
    COMPARISON = "comparison"  # how much better / compared with earlier work
    DATA = "data"  # which dataset / benchmark / tasks / domains
    NAME = "name"  # which method / model / what is it called
    MECHANISM = "mechanism"  # how does it work / how is it done
    REASON = "reason"  # why
    RESULT = "result"  # does it work / how well
    EXPANSION = "expansion"  # what an acronym stands for
    WHAT = "what"  # anything else: what is X, what does it show


NUMBER_ASK = re.compile(
    r"\b(how (many|much|large|big|long|fast|often|far|small)|what (percentage|fraction|proportion|share|size|number|"
    r"rate|score|accuracy|gain|improvement)|what (\w+ ){1,2}(score|rate|improvement|gain|percentage|accuracy)|"
    r"by how|by what factor|roughly how|how much (better|faster|smaller))\b",
    re.I,
)
COMPARISON_ASK = re.compile(
    r"\b(better|worse|faster|compared?|comparison|than|outperform\w*|versus|vs\.?|against|relative to|"
    r"earlier work|prior work|previous|baselines?|existing (methods|defen[cs]es|approaches))\b",
    re.I,
)
DATA_ASK = re.compile(
    r"\b(datasets?|data ?sets?|benchmarks?|tasks|domains|applications|modalities|environments?|settings|"
    r"evaluated|tested|experiments?)\b",
    re.I,
)
NAME_ASK = re.compile(
    r"\b(which|what|name)\s+(\S+\s+){0,2}(method|framework|model|agent|approach|system|algorithm|technique|tool|"
    r"architecture|network|library|suite|metric|loss|attack|defen[cs]e|module|scoring rule|"
    r"objective)s?\b|\b(called|named|stand for|acronym)\b|^\s*(is|are) there\b",
    re.I,
)
# What an acronym of the ask ("CLuST", "CoLeG", "UMAP": two capitals or more) stands for.
# ("What is SemSI short for", not "why do static methods fall short for quantum networks")
EXPANSION_ASK = re.compile(
    r"\b(?:stands?|stood) for\b|\b(?<!fall )(?<!falls )(?<!fell )short for\b|\babbreviat\w*|\bacronym\b", re.I
)
ACRONYM_WORD = re.compile(r"\b[A-Za-z]*[A-Z][a-z0-9]*[A-Z][\w]*\b")
# A reason: "why …", also after a clause ("In 3D scene synthesis, why use …"), or what motivates a choice
# ("What observation motivates increasing dataset granularity?").
REASON_ASK = re.compile(r"(^|[,;:]\s*)(and )?why\b|\bmotivat\w*", re.I)
RESULT_ASK = re.compile(
    r"^\s*(does|do|did|is|are|can|how well|how good|how effective|what results?)\b|"
    r"^\s*what (do|does|did) (\w+ ){0,3}(find|conclude|show|reveal|demonstrate)\b",
    re.I,
)

# What a one-ask question wants (`Wants`): a number, a name, a result.
HOW_MUCH = re.compile(
    r"\b(how (many|much|large|big|long|fast|often|far|small)|what (percentage|fraction|proportion|share|size|number)|"
    r"by how|how much (better|faster|smaller))\b",
    re.IGNORECASE,
)
WHICH_NAME = re.compile(
    r"\b(which|what|name)\b.{0,40}?\b(method|framework|model|agent|approach|system|algorithm|technique|benchmark|"
    r"dataset|data set|paper|tool|architecture|network|library|suite|called|named|metric|loss|attack|defen[cs]e|"
    r"objective)s?\b",
    re.IGNORECASE,
)
RESULT_QUESTION = re.compile(
    r"\b(does|do|did|how well|how good|what results?|outperform|better|improve|effective)\b", re.I
)


@dataclass(frozen=True)
class Ask:
    """One part of a question: its words, the kind of answer it wants, and whether it asks how much."""

    text: str
    kind: AskKind
    how_much: bool  # it asks for an amount ("how many", "what percentage"): the numbers are the answer
    figure: bool  # it says "how much": a comparison then wants the figure, not only that it is better
    expands: tuple[str, ...] = ()  # an expansion's acronyms: the sentence that spells one out answers it

    @classmethod
    def of(cls, text: str) -> Ask:
        kind = ask_kind(text)
        expands = tuple(ACRONYM_WORD.findall(text)) if kind is AskKind.EXPANSION else ()
        return cls(text, kind, bool(HOW_MUCH.search(text)), "how much" in text.lower(), expands)


@dataclass(frozen=True)
class Wants:
    """What kind of sentence a question wants, scoring every sentence of its sources: a number ("how
    many"), a name ("which method"), a result ("does it work"), or, for a one-ask "how/why" question, a
    mechanism or a reason; for a one-ask "what does CLuST stand for?", the acronyms it asks to spell out."""

    number: bool
    name: bool
    result: bool
    how_or_why: Ask | None
    expands: tuple[str, ...] = ()

    @classmethod
    def of(cls, question: str, asks: list[Ask]) -> Wants:
        expands = asks[0].expands if len(asks) == 1 else ()
        number, name = bool(HOW_MUCH.search(question)), not expands and bool(WHICH_NAME.search(question))
        result = not (number or name or expands) and bool(RESULT_QUESTION.match(question.strip()))
        how = asks[0] if len(asks) == 1 and asks[0].kind in (AskKind.MECHANISM, AskKind.REASON) else None
        return cls(number, name, result, how, expands)

    @property
    def why(self) -> bool:
        """It asks why: a one-ask "why …?" or "what motivates …?"."""
        return self.how_or_why is not None and self.how_or_why.kind is AskKind.REASON


def ask_kind(text: str) -> AskKind:
    """The kind of answer an ask wants, by its words: the first rule that fits."""
    lowered = text.lower().strip()
    if EXPANSION_ASK.search(text) and ACRONYM_WORD.search(text):
        return AskKind.EXPANSION
    if re.search(r"\bhow much (better|faster|higher|lower|more)\b", lowered) or (
        NUMBER_ASK.search(text) and COMPARISON_ASK.search(text)
    ):
        return AskKind.COMPARISON
    if NUMBER_ASK.search(text):
        return AskKind.NUMBER
    if REASON_ASK.search(lowered):
        return AskKind.REASON
    if re.match(r"(how|in what way|by what means)\b", lowered) and not re.match(r"how (well|good|effective)", lowered):
        return AskKind.MECHANISM
    if re.match(r"(which|what|on which|in which|on what|across which|for which)\b", lowered) and DATA_ASK.search(text):
        return AskKind.DATA
    if NAME_ASK.search(text):
        return AskKind.NAME
    if COMPARISON_ASK.search(text) and RESULT_ASK.search(text):
        return AskKind.COMPARISON
    if RESULT_ASK.search(text):
        return AskKind.RESULT
    return AskKind.WHAT


def split_asks(question: str) -> list[Ask]:
    """The question's asks in the order asked; one ask when it asks one thing."""
    parts, start = [], 0
    for match in ASK_BREAK.finditer(question):
        joined_by_comma = match.group(0).lstrip()[:1] in ",;?"
        if AUXILIARY.match(question, match.end()) and not joined_by_comma:
            continue
        head = question[start : match.start()].strip(" ,;")
        if len(re.findall(r"\w+", head)) >= 2:  # 'what and how …' is one ask with two wh-words
            parts.append(head)
            start = match.end()
    parts.append(question[start:].strip(" ,;"))
    return [Ask.of(part) for part in parts if part]
