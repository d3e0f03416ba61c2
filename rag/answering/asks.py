"""The sentence that answers an ask: what kind of answer a sentence holds, scored for each ask of a question.

A question is split into its asks where it is read (rag/question/asks.py); each ask gets the sentence of
the cited paper that answers it best (`EvidencePicker.for_each_ask`): scored by the learned ranker
(ask_ranker.py; `hand_ask_score` under `answer.ask_scorer: weights`), a different sentence for each ask
(`best_assignment`).
"""

from __future__ import annotations

import itertools
import math
import re

from rag.answering.ask_ranker import FEATURES
from rag.core.config import AnswerConfig
from rag.question.asks import Ask, AskKind, Wants
from rag.text.naming import name_parts
from rag.text.words import GENERIC, NAME

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


def held_by(ask: Ask, sentence: str, introduces: bool, proposes: bool = False, named: str = "") -> int:
    """+1 when the sentence holds the kind of answer the ask wants, -1 when it lacks it, 0 when the kind tells
    nothing (a 'what' ask). A name is held by the sentence that introduces its paper's method, unless
    the question names the paper (`named`); a mechanism or a reason is not held by the sentence that
    says what the paper proposes."""
    if ask.kind is AskKind.WHAT:
        return 0
    if ask.kind is AskKind.EXPANSION:
        return 1 if spells_out(sentence, ask.expands) else -1
    if ask.kind is AskKind.NAME and named:  # "what objective does RxnFlow train with": another name (GFlowNets),
        # which the sentence introducing the paper lacks when it gives none but the paper's own
        return 1 if gives_name(sentence, besides=named) else -1 if introduces else 0
    if ask.kind is AskKind.NAME:  # the paper's own method, or another name it gives (GPT-4o, MMTD-Set)
        return 1 if introduces or gives_name(sentence) else 0
    if proposes and ask.kind in (AskKind.MECHANISM, AskKind.REASON):
        return -1  # 'how does X work' is answered by how it works, not by 'we propose X'
    if ask.kind is AskKind.MECHANISM and EVALUATION.search(sentence):
        return -1  # nor by 'we demonstrate the effectiveness of our method on …'
    if ask.kind is AskKind.COMPARISON and not NUMBER.search(sentence) and ask.figure:
        return -1  # 'how much better' wants the figure
    return 1 if HOLDS[ask.kind].search(sentence) else -1


def wanted(wants: Wants, sentence: str, introduces: bool, proposes: bool, named: str = "") -> int:
    """+1 for each kind of answer wanted that the sentence holds, -1 for each it lacks. `named`: its
    paper's name when the question gives it; then the name wanted is another ("what objective does
    RxnFlow train with": GFlowNets), not the sentence that introduces the paper."""
    kind = 0
    if wants.expands:
        kind += 1 if spells_out(sentence, wants.expands) else -1
    if wants.number:
        kind += 1 if NUMBER.search(sentence) else -1
    if wants.name and named:
        kind += 1 if gives_name(sentence, besides=named) else 0
    elif wants.name:
        kind += 1 if introduces else -1
    if wants.result and RESULT_WORDS.search(sentence):
        kind += 1
    if wants.how_or_why:  # a mechanism or a reason, not the sentence that says what the paper proposes
        kind += held_by(wants.how_or_why, sentence, introduces, proposes)
    return kind


def spells_out(sentence: str, acronyms: tuple[str, ...]) -> bool:
    """Whether the sentence says what one of the acronyms stands for: the words before it in brackets
    ("Context Length Generalizability (CoLeG)"), or "CLuST stands for …"."""
    spelled = (rf"\w\W+\(\s*{re.escape(a)}s?\s*[),;]|\b{re.escape(a)},? (?:stands|short) for" for a in acronyms)
    return any(re.search(pattern, sentence) for pattern in spelled)


def gives_name(sentence: str, besides: str = "") -> bool:
    """Whether the sentence names something (GFlowNets, MMTD-Set, GPT-4o), not only a field's acronym (LMs),
    nor only the paper's own name `besides`."""
    return any(match.group(0) not in GENERIC for match in NAME.finditer(without_name(sentence, besides)))


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
