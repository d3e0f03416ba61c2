"""Whether a model's answer stands: what it must say (the key tokens and the news of the best
evidence sentence), and why it is set aside for the extractive answer when it doesn't."""

from __future__ import annotations

from rag.answering.evidence import HOW_MUCH, Evidence
from rag.core.types import SentenceCheck, Source
from rag.retrieval.naming import ACRONYM, mentions, paper_name
from rag.retrieval.words import DIGITS, GENERIC, NAME, content_stems


def key_tokens(question: str, evidence: list[Evidence], sources: list[Source]) -> list[str]:
    """What an answer must say to answer, none of it already in the question: the best sentence's
    numbers for a "how many" question; otherwise the paper's name (its short form; never a whole
    title) and up to two other names the best sentence gives (a dataset, a measure: 'MMTD-Set')."""
    if not evidence:
        return []
    best = evidence[0]
    if HOW_MUCH.search(question):
        tokens = asked_numbers(question, best.sentence)
    else:
        name = paper_name(sources[best.number - 1])
        short = ACRONYM.search(name)
        tokens = [short.group(1) if short else name] if name and not name.startswith("“") else []
        tokens += [m.group(0) for m in NAME.finditer(best.sentence) if m.group(0) not in GENERIC][:2]
    asked = question.lower()
    return [token for token in dict.fromkeys(tokens) if token.lower() not in asked and not mentions(question, token)]


def asked_numbers(question: str, sentence: str) -> list[str]:
    """The numbers of a sentence that count what the question asks about ('71' of '71 reaction
    templates' for 'how many templates'), judged by the words just after each; all when none tells."""
    asked = content_stems(question)
    numbers = [(m.group(0).rstrip(","), " ".join(sentence[m.end() :].split()[:3])) for m in DIGITS.finditer(sentence)]
    counting = [number for number, after in numbers if content_stems(after) & asked]
    return counting or [number for number, _ in numbers]


def news(question: str, evidence: list[Evidence]) -> set[str]:
    """The best sentence's content words (stems) that the question lacks: what it tells the asker.
    Empty for a "how many" question, whose asked numbers (its key tokens) are the whole answer."""
    if not evidence or HOW_MUCH.search(question):
        return set()
    return content_stems(evidence[0].sentence) - content_stems(question)


def set_aside(checks: list[SentenceCheck], key: list[str], told: set[str], keep: float) -> str | None:
    """Why a model's checked answer can't stand (the extractive one does instead), or None when it can.

    It can't when none of its sentences is supported by what it cites, when its supported sentences
    leave out a key token of the evidence (the number or name the question asks for), or when they
    keep less than `keep` of `told`, the best sentence's news (a supported sentence can still
    restate the question instead of answering it).
    """
    supported = " ".join(check.text for check in checks if check.supported)
    if not supported:
        return "no sentence of the model's answer is supported by the abstract it cites"
    missing = [token for token in key if token.lower() not in supported.lower()]
    if missing:
        return f"the model's answer left out {', '.join(missing)}"
    kept = told & content_stems(supported)
    if told and len(kept) < keep * len(told):
        return f"the model's answer kept {len(kept)} of the {len(told)} words the best sentence adds to the question"
    return None
