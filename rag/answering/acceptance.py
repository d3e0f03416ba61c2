"""Whether a model's answer stands: what it must say (the key tokens and the news of the best
evidence sentence), and why it is set aside for the extractive answer when it doesn't."""

from __future__ import annotations

from dataclasses import dataclass

from rag.answering.evidence import Evidence, repeats
from rag.core.types import SentenceCheck, Source
from rag.question.asks import Ask
from rag.question.question import Question
from rag.text.naming import ACRONYM, mentions, paper_name
from rag.text.words import DIGITS, GENERIC, NAME, content_stems


def key_tokens(question: Question, evidence: list[Evidence], sources: list[Source]) -> list[str]:
    """What an answer must say to answer, none of it already in the question: the best sentence's
    numbers for a "how many" question; otherwise the paper's name (its short form; never a whole
    title) and up to two other names the best sentence gives (a dataset, a measure: 'MMTD-Set'). For a
    question of several asks answered one sentence each, those of each ask (`ask_key_tokens`)."""
    if not evidence:
        return []
    asks = question.asks
    if 1 < len(asks) == len(evidence):  # one sentence per ask: the answer must say what each ask asks for
        return list(dict.fromkeys(t for tokens in ask_key_tokens(asks, evidence, sources) for t in tokens))
    return said_tokens(question.text, question.wants.number, evidence, sources)


def said_tokens(question: str, how_much: bool, evidence: list[Evidence], sources: list[Source]) -> list[str]:
    """What an answer to one ask must say (`key_tokens`): the numbers it asks for when it asks `how_much`."""
    best = evidence[0]
    if how_much:
        tokens = asked_numbers(question, [item.sentence for item in evidence])
    else:
        name = paper_name(sources[best.number - 1])
        short = ACRONYM.search(name)
        tokens = [short.group(1) if short else name] if name and not name.startswith("“") else []
        tokens += [m.group(0) for m in NAME.finditer(best.sentence) if m.group(0) not in GENERIC][:2]
    asked = question.lower()
    return [token for token in dict.fromkeys(tokens) if token.lower() not in asked and not mentions(question, token)]


def ask_key_tokens(asks: tuple[Ask, ...], evidence: list[Evidence], sources: list[Source]) -> list[list[str]]:
    """For each ask, answered by the evidence sentence in its place, what the answer must say for it. A number it
    asks for may stand in another ask's sentence: 'how many building blocks' of "How many reaction templates
    does RxnFlow use, and how many building blocks?" is in the sentence that gives both."""
    return [
        said_tokens(ask.text, ask.how_much, [item, *(e for e in evidence if e is not item)], sources)
        for ask, item in zip(asks, evidence)
    ]


def left_out(
    question: Question, evidence: list[Evidence], sources: list[Source], checks: list[SentenceCheck]
) -> list[Evidence]:
    """The evidence sentences to add after a model's answer that falls short, in the order asked: for a
    question of several asks answered one sentence each, for each ask whose key tokens it leaves out, the
    sentence that holds them (the ask's own, or another ask's that gives its number too); otherwise, or
    when none of its sentences was shown, every evidence sentence. Those it says already are left out
    (quoting one again would repeat it)."""
    said = " ".join(check.text for check in checks)
    asks = question.asks
    missed = []
    if checks and 1 < len(asks) == len(evidence):
        for item, tokens in zip(evidence, ask_key_tokens(asks, evidence, sources)):
            lacking = [token.lower() for token in tokens if token.lower() not in said.lower()]
            if lacking:
                holders = (e for e in (item, *evidence) if all(token in e.sentence.lower() for token in lacking))
                missed.append(next(holders, item))
    return not_said(list(dict.fromkeys(missed or evidence)), checks)


def not_said(evidence: list[Evidence], checks: list[SentenceCheck]) -> list[Evidence]:
    """The evidence sentences the checked sentences don't say already (quoting one again would repeat it)."""
    said = " ".join(check.text for check in checks)
    return [item for item in evidence if not repeats(item.sentence, said)]


def asked_numbers(question: str, sentences: list[str]) -> list[str]:
    """The numbers that count what the question asks about ('71' of '71 reaction templates' for 'how many
    templates'), judged by the words just after each: those of the first sentence that has one; when none
    has, all the first sentence's numbers. Not a number the question says ('2' of "the 2B student …
    beats Qwen-VL-Chat-7B by what average gain?"): that one is asked about, not asked for."""
    asked = content_stems(question)
    found = [
        [
            (number, " ".join(sentence[m.end() :].split()[:3]))
            for m in DIGITS.finditer(sentence)
            if (number := m.group(0).rstrip(",")) not in question
        ]
        for sentence in sentences
    ]
    for numbers in found:
        if counting := [number for number, after in numbers if content_stems(after) & asked]:
            return counting
    return [number for number, _ in found[0]]


def news(question: Question, evidence: list[Evidence]) -> set[str]:
    """The best sentence's content words (stems) that the question lacks, with those of the sentence it points
    back at ("We propose POTEC, a two-stage algorithm. It leverages …"): what it tells the asker.
    Empty for a "how many" question, whose asked numbers (its key tokens) are the whole answer. For a
    question of several asks answered one sentence each, the news of each sentence for its ask."""
    asks = question.asks
    if 1 < len(asks) == len(evidence):  # one sentence per ask: the news of each, but a number's
        each = (one_ask_news(ask.text, ask.how_much, [item]) for ask, item in zip(asks, evidence))
        return set().union(*each) - content_stems(question.text)
    return one_ask_news(question.text, question.wants.number, evidence)


def one_ask_news(question: str, how_much: bool, evidence: list[Evidence]) -> set[str]:
    """The news of the best sentence for one ask (`news`); none when it asks `how_much`."""
    if not evidence or how_much:
        return set()
    best = evidence[0]  # with the sentence it points back at, when it does: the two read as one
    return content_stems(f"{best.before} {best.sentence}") - content_stems(question)


@dataclass(frozen=True)
class Shortfall:
    """What a model's checked answer lacks: `reason` in the pipeline's terms (Answer.replaced, for
    JSON and logs), `words` for a reader who doesn't know the pipeline (Answer.shortfall)."""

    reason: str
    words: str


def set_aside(checks: list[SentenceCheck], key: list[str], told: set[str], keep: float) -> str | None:
    """Why a model's checked answer can't stand alone, or None when it can; see `shortfall`."""
    lacking = shortfall(checks, key, told, keep)
    return lacking.reason if lacking else None


def shortfall(checks: list[SentenceCheck], key: list[str], told: set[str], keep: float) -> Shortfall | None:
    """What a model's checked answer lacks (the evidence sentences it doesn't say then follow it, or
    the extractive answer stands for it), or None when it can stand.

    It lacks something when none of its sentences is supported by what it cites, when its supported
    sentences leave out a key token of the evidence (the number or name the question asks for), or
    when they keep less than `keep` of `told`, the best sentence's news (a supported sentence can
    still restate the question instead of answering it).
    """
    supported = " ".join(check.text for check in checks if check.supported)
    if not supported:
        return Shortfall(
            "no sentence of the model's answer is supported by the abstract it cites",
            "no sentence the model wrote was backed by the abstract it cited",
        )
    missing = [token for token in key if token.lower() not in supported.lower()]
    if missing:
        numbers = [token for token in missing if DIGITS.fullmatch(token)]
        if not numbers:
            what = "the name the question asks for"
        elif len(numbers) == len(missing):
            what = "the number asked for" if len(numbers) == 1 else "the numbers asked for"
        else:
            what = "the number and name asked for"
        return Shortfall(
            f"the model's answer left out {', '.join(missing)}",
            f"the model's answer left out {what} ({', '.join(missing)})",
        )
    kept = told & content_stems(supported)
    if told and len(kept) < keep * len(told):
        return Shortfall(
            f"the model's answer kept {len(kept)} of the {len(told)} words the best sentence adds to the question",
            "the model's answer left out most of what the abstract's best sentence says",
        )
    return None
