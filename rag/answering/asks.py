"""A question's asks: the parts of a question, each answered by its own sentence.

Researchers often ask two things at once ("How does X work, and what benchmark does it introduce?",
"Which dataset does XLand-100B provide and how large is it?"). One best sentence answers one of
them; the other ask's fact sits in another sentence of the same abstract. So a question is split
into its asks, each with the kind of answer it wants, and each ask gets the sentence of the cited
paper that answers it best (`EvidencePicker.for_each_ask`): scored by `hand_ask_score` (or the learned
ranker, ask_ranker.py), a different sentence for each ask (`best_assignment`).

Splitting is by rule, on the words that join two questions: ", and what/which/how/why …",
"… and how many …", "; what …". A list inside one ask ("how many tasks, transitions and episodes")
stays one ask: a conjunction splits only when a wh-word follows it.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from enum import StrEnum

from rag.answering.ask_ranker import FEATURES
from rag.core.config import AnswerConfig
from rag.retrieval.naming import name_parts
from rag.retrieval.words import GENERIC, NAME

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
RESULT_WORDS = re.compile(
    r"\b(outperform\w*|improv\w*|achiev\w*|state-of-the-art|surpass\w*|better|reduc\w*|faster|gains?|"
    r"speed-?up|accura\w*|superior|significantly|consistently)\b|%",
    re.IGNORECASE,
)

# What a sentence of each kind holds. A number, not the digits of a name (XLand-100B).
NUMBER = re.compile(
    r"(?<![\w.-])\d[\d,]*(?:\.\d+)?|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"fifty|hundreds?|thousands?|millions?|billions?|dozens?|half|double|twice|threefold|tenfold)\b",
    re.I,
)
COMPARISON = re.compile(
    r"\b(outperform\w*|surpass\w*|better|superior|state-of-the-art|improv\w*|gains?|higher|lower|faster|"
    r"compared|than|relative|beyond|exceed\w*|beat\w*)\b|%",
    re.I,
)
# A name of a dataset or benchmark: a word with inner capitals or digits (GEOM-DRUGS, QM9-2014,
# CrossDocked2020), or the words that say one is used.
DATA = re.compile(
    r"\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|\b(datasets?|benchmarks?|experiments? (on|across|with)|evaluat\w* (on|across)|"
    r"across (\w+ ){0,3}(tasks|domains|applications|environments|modalities)|image|music|text|speech|vision|"
    r"language|medical|robotic\w*)\b"
)
MECHANISM = re.compile(
    r"\b(by|via|using|uses?|through|employ\w*|leverag\w*|incorporat\w*|based on|consists?|comprises?|"
    r"formulat\w*|recast\w*|minimi[sz]\w*|maximi[sz]\w*|optimi[sz]\w*|clusters?|samples?|assembl\w*|"
    r"predicts?|derive\w*|integrat\w*|modif\w*|encod\w*|decod\w*|align\w*|enforc\w*|replac\w*|"
    r"specifically|first|then|subsequently|which (\w+ ){0,2}(enables?|allows?))\b",
    re.I,
)
REASON = re.compile(
    r"\b(because|since|due to|as a (result|consequence)|thereby|thus|therefore|explain\w*|caus\w*|"
    r"assum\w*|shown to|leads? to|enabl\w*|allow\w*|so that|in order to|improve transfer)\b",
    re.I,
)
RESULT = re.compile(
    r"\b(outperform\w*|improv\w*|achiev\w*|state-of-the-art|surpass\w*|better|reduc\w*|faster|gains?|"
    r"speed-?up|accura\w*|superior|significantly|consistently|demonstrat\w*|show\w*|effective\w*|find\w*|reveal\w*|"
    r"conclu\w*)\b|%",
    re.I,
)
# A sentence that reports how a method was evaluated, not how it works.
EVALUATION = re.compile(
    r"^\W*(?:(?:extensive |comprehensive )?"
    r"(?:experiments?|experimental results|empirical results|evaluations?|results)\b"
    r"|we (?:\w+ )?(?:demonstrate|show|validate|verify|confirm) (?:the )?(?:effectiveness|efficacy|superiority)\b)",
    re.I,
)
# "Code is available at https://…": it answers no ask but 'where is the code'.
CODE_LINK = re.compile(r"https?://|\b(code|data|checkpoints?)\b.{0,40}\b(available|released|open-sourced?)\b", re.I)
HOLDS = {
    AskKind.NUMBER: NUMBER,
    AskKind.COMPARISON: COMPARISON,
    AskKind.DATA: DATA,
    AskKind.MECHANISM: MECHANISM,
    AskKind.REASON: REASON,
    AskKind.RESULT: RESULT,
}


@dataclass(frozen=True)
class Ask:
    """One part of a question: its words, and the kind of answer it wants."""

    text: str
    kind: AskKind

    def held_by(self, sentence: str, introduces: bool, proposes: bool = False, named: str = "") -> int:
        """+1 when the sentence holds this kind of answer, -1 when it lacks it, 0 when the kind tells
        nothing (a 'what' ask). A name is held by the sentence that introduces its paper's method, unless
        the question names the paper (`named`); a mechanism or a reason is not held by the sentence that
        says what the paper proposes."""
        if self.kind is AskKind.WHAT:
            return 0
        if self.kind is AskKind.NAME and named:  # "what objective does RxnFlow train with": another name (GFlowNets),
            # which the sentence introducing the paper lacks when it gives none but the paper's own
            return 1 if gives_name(sentence, besides=named) else -1 if introduces else 0
        if self.kind is AskKind.NAME:  # the paper's own method, or another name it gives (GPT-4o, MMTD-Set)
            return 1 if introduces or gives_name(sentence) else 0
        if proposes and self.kind in (AskKind.MECHANISM, AskKind.REASON):
            return -1  # 'how does X work' is answered by how it works, not by 'we propose X'
        if self.kind is AskKind.MECHANISM and EVALUATION.search(sentence):
            return -1  # nor by 'we demonstrate the effectiveness of our method on …'
        pattern = HOLDS[self.kind]
        if self.kind is AskKind.COMPARISON and not NUMBER.search(sentence) and "how much" in self.text.lower():
            return -1  # 'how much better' wants the figure
        return 1 if pattern.search(sentence) else -1


@dataclass(frozen=True)
class Wants:
    """What kind of sentence a question wants, scoring every sentence of its sources: a number ("how
    many"), a name ("which method"), a result ("does it work"), or, for a one-ask "how/why" question, a
    mechanism or a reason."""

    number: bool
    name: bool
    result: bool
    how_or_why: Ask | None

    @classmethod
    def of(cls, question: str) -> Wants:
        number, name = bool(HOW_MUCH.search(question)), bool(WHICH_NAME.search(question))
        result = not (number or name) and bool(RESULT_QUESTION.match(question.strip()))
        asks = split_asks(question)
        how = asks[0] if len(asks) == 1 and asks[0].kind in (AskKind.MECHANISM, AskKind.REASON) else None
        return cls(number, name, result, how)

    def kind(self, sentence: str, introduces: bool, proposes: bool, named: str = "") -> int:
        """+1 for each kind of answer wanted that the sentence holds, -1 for each it lacks. `named`: its
        paper's name when the question gives it; then the name wanted is another ("what objective does
        RxnFlow train with": GFlowNets), not the sentence that introduces the paper."""
        kind = 0
        if self.number:
            kind += 1 if NUMBER.search(sentence) else -1
        if self.name and named:
            kind += 1 if gives_name(sentence, besides=named) else 0
        elif self.name:
            kind += 1 if introduces else -1
        if self.result and RESULT_WORDS.search(sentence):
            kind += 1
        if self.how_or_why:  # a mechanism or a reason, not the sentence that says what the paper proposes
            kind += self.how_or_why.held_by(sentence, introduces, proposes)
        return kind


def gives_name(sentence: str, besides: str = "") -> bool:
    """Whether the sentence names something (GFlowNets, MMTD-Set, GPT-4o), not only a field's acronym (LMs),
    nor only the paper's own name `besides`."""
    return any(match.group(0) not in GENERIC for match in NAME.finditer(without_name(sentence, besides)))


def ask_kind(text: str) -> AskKind:
    """The kind of answer an ask wants, by its words: the first rule that fits."""
    lowered = text.lower().strip()
    if re.search(r"\bhow much (better|faster|higher|lower|more)\b", lowered) or (
        NUMBER_ASK.search(text) and COMPARISON_ASK.search(text)
    ):
        return AskKind.COMPARISON
    if NUMBER_ASK.search(text):
        return AskKind.NUMBER
    if lowered.startswith("why") or re.match(r"(and )?why\b", lowered):
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
    return [Ask(part, ask_kind(part)) for part in parts if part]


def hand_ask_score(features: list[float], config: AnswerConfig) -> float:
    """How well a sentence answers one ask, by hand weights: its similarity to the ask and (a quarter) to
    the whole question, the ask's telling words it holds, the kind of answer the ask wants, not background."""
    values = dict(zip(FEATURES, features))
    return (
        values["ask_cosine"]
        + 0.25 * values["question_cosine"]
        + config.word_weight * values["ask_words"]
        + config.ask_kind_bonus * values["holds_kind"]
        - config.background_penalty * max(values["background"], values["code_link"])
    )


def best_assignment(scores: list[list[float]], top: int = 4) -> list[int]:
    """One sentence per ask, each a different one (when the paper has enough), whose scores add up
    highest; among each ask's `top` best. Two asks that one sentence answers are still given two
    sentences: the second is the next best for one of them, which costs words but never the fact."""
    shortlists = [sorted(range(len(row)), key=lambda i: -row[i])[:top] for row in scores]
    best: tuple[float, tuple[int, ...]] = (-math.inf, tuple(row[0] for row in shortlists))
    for choice in itertools.product(*shortlists):
        if len(set(choice)) == len(choice):
            total = sum(scores[a][i] for a, i in enumerate(choice))
            best = max(best, (total, choice))
    return list(best[1])


def without_name(text: str, *names: str) -> str:
    """The text with the paper's name (either part of 'Long Form (ACR)') said as 'it': the name picks the
    paper, and left in, it draws an ask to the sentence that introduces the paper whatever was asked."""
    parts = (part for name in names for part in name_parts(name))
    for part in sorted(parts, key=len, reverse=True):
        if part:
            text = re.sub(re.escape(part), "it", text, flags=re.IGNORECASE)
    return text
