"""The evidence as an answer quotes it: each sentence tidied to stand first, after the sentence before it
when it points back at that one ("It leverages …"), its paper named once, cited; and the same sentences as
the model is given them (evidence.py picks them)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.core.markers import attach_marker
from rag.core.markup import plain_text
from rag.core.types import Passage, Source
from rag.text.naming import mentions, paper_name
from rag.text.words import source_sentences

if TYPE_CHECKING:
    from rag.answering.evidence import Evidence
    from rag.question.question import Question

LIST_ITEM = re.compile(r"^\(?(\d{1,2}|[ivx]{1,4})\)\s+")  # 334 of the list's sentences open so
LEADING_LINK = re.compile(
    r"^(however|moreover|furthermore|additionally|in addition|specifically|notably|importantly|"
    r"in particular|consequently|therefore|thus|finally|to this end|then|first(ly)?|second(ly)?|next|meanwhile|"
    r"more precisely|most notably|remarkably|in doing so|as a consequence|to achieve this|"
    r"to (address|overcome|bridge|fill|tackle|solve|mitigate) (this|these)( \w+)?|"
    r"(recognizing|motivated by|building on|based on) (this|these)( \w+)?|"
    r"in this (paper|work|study)|here|overall|as a result|besides|also),\s+",
    re.IGNORECASE,
)

# A sentence that opens by pointing back at the one before it ("It leverages clustering …", "This pattern
# highlights …") can't be read alone; not "This paper …" or "It is known that …". (A link such as "To this end,"
# is dropped when the sentence is quoted: `tidy`.)
POINTS_BACK = re.compile(
    r"^(?!(this|these) (paper|work|study|article|survey)s?\b)(?!it (is|was|remains) \w+ (to|that)\b)"
    r"(it|its|this|these|they|their|such)\b",
    re.I,
)


# The steps of a method told stage by stage: "In the first stage, …", "In the second stage, …", "Finally, …".
ORDINAL = r"(first|second|third|fourth|fifth|final|last)"
STEP = re.compile(rf"^(in the {ORDINAL} (stage|step|phase)\b|{ORDINAL}(ly)?,|then,|next,)", re.I)
FIRST_STEP = re.compile(r"^(in the first (stage|step|phase)\b|first(ly)?,)", re.I)
LATER_STEP = re.compile(
    r"^(in the (second|third|fourth|fifth|final|last) (stage|step|phase)\b|(second|third|fourth)(ly)?,)", re.I
)


def with_sentence_before(question: Question, evidence: list[Evidence], sources: list[Source]) -> list[Evidence]:
    """The evidence, its first sentence that points back at the one before it (`POINTS_BACK`) with that one as
    its `before`: "It leverages clustering …" reads after "We propose POTEC, a two-stage algorithm". One such
    sentence at most, so an answer is at most one sentence longer. Not when the evidence holds the sentence
    before already or that one points back too, nor when the sentence names its paper ("This enables RxnFlow
    to …"), nor for a "how many" question, whose number is the answer. A sentence that points back at one the
    evidence holds reads after it (`in_reading_order`)."""
    if question.opens_with_amount:
        return evidence
    evidence = in_reading_order(evidence, sources)
    held = {(item.number, item.sentence) for item in evidence}
    for place, item in enumerate(evidence):
        before = pointed_at(item, sources)
        if not before or (item.number, before) in held:
            continue
        if not mentions(item.sentence, paper_name(sources[item.number - 1])):
            return [*evidence[:place], replace(item, before=before), *evidence[place + 1 :]]
    return evidence


def in_reading_order(evidence: list[Evidence], sources: list[Source]) -> list[Evidence]:
    """The evidence, each sentence that points back at another it holds right after that one: moved there when
    that one is quoted earlier; when later, that one is taken from there to be its `before` ("This theoretically
    guarantees our effectiveness" led, and "We mathematically prove that CMI …" came third). The lead stays the
    lead. Not when that one points back too."""
    for place, item in enumerate(evidence):
        before = pointed_at(item, sources)
        quoted = next((i for i, e in enumerate(evidence) if (e.number, e.sentence) == (item.number, before)), None)
        if not before or quoted is None or quoted == place - 1:
            continue
        if quoted > place:
            rest = [e for i, e in enumerate(evidence) if i != quoted]
            return in_reading_order([*rest[:place], replace(item, before=before), *rest[place + 1 :]], sources)
        rest = [e for i, e in enumerate(evidence) if i != place]
        return in_reading_order([*rest[: quoted + 1], item, *rest[quoted + 1 :]], sources)
    return evidence


def pointed_at(item: Evidence, sources: list[Source]) -> str:
    """The sentence before the evidence sentence in its abstract, when the sentence points back at it
    (`POINTS_BACK`: "It leverages …") and that one doesn't point back too ("These systems …" before "This is
    …": no better alone); "" otherwise."""
    sentences = source_sentences(sources[item.number - 1])
    at = sentences.index(item.sentence) if item.sentence in sentences else 0
    if not at or not POINTS_BACK.match(tidy(item.sentence)) or POINTS_BACK.match(tidy(sentences[at - 1])):
        return ""
    return sentences[at - 1]


def with_earlier_steps(evidence: list[Evidence], sources: list[Source], most: int) -> list[Evidence]:
    """For a "how does X work" question: the evidence, or when a sentence of it is a later step of a method told
    stage by stage ("In the third stage, we align …"), the steps up to that one in the abstract's order first
    ("In the first stage, we train a Mask-VAE … In the second stage, we leverage an improved Diffusion Transformer
    …"), `most` sentences in all: the first steps and that one. Each step keeps that sentence's score."""
    step = next((item for item in evidence if LATER_STEP.match(item.sentence)), None)
    sentences = source_sentences(sources[step.number - 1]) if step else []
    if step is None or step.sentence not in sentences:
        return evidence
    at = start = sentences.index(step.sentence)
    while start > 0 and STEP.match(sentences[start - 1]) and not FIRST_STEP.match(sentences[start]):
        start -= 1
    if not FIRST_STEP.match(sentences[start]):
        return evidence
    chain = sentences[start : at + 1]
    chain = chain if len(chain) <= most else [*chain[: most - 1], chain[-1]]
    steps = [replace(step, sentence=sentence) for sentence in chain]
    return [*steps, *(item for item in evidence if item.sentence not in chain)][:most]


def tidy(sentence: str) -> str:
    """A quoted sentence fit to stand first: its LaTeX and Markdown read as text ('26\\%' as 26%),
    no leading 'However,' and the like, nor the number of a list it was an item of ('2) ', '(ii) ')."""
    sentence = LEADING_LINK.sub("", LIST_ITEM.sub("", plain_text(sentence).strip()))
    return sentence[:1].upper() + sentence[1:] if sentence else sentence


def extractive_answer(question: str, evidence: list[Evidence], sources: list[Source], shown: str = "") -> str:
    """The evidence sentences, best first, tidied and cited, each after the sentence it points back at
    (`Evidence.before`); each paper named once when the question, the sentences and what the answer has
    `shown` before them (a model's sentences) don't name it already."""
    named: set[int] = set()
    parts = []
    for item in evidence:
        said = quoted(item)
        if item.number not in named:
            said[0] = with_name(said[0], sources[item.number - 1], f"{question} {shown} {' '.join(said)}")
        named.add(item.number)
        parts += [attach_marker(sentence, [item.number]) for sentence in said]
    return " ".join(parts)


def quoted(item: Evidence) -> list[str]:
    """The evidence sentence as an answer quotes it, tidied, after the sentence it points back at when it does."""
    return [tidy(item.before), plain_text(item.sentence)] if item.before else [tidy(item.sentence)]


def with_name(sentence: str, source: Source, context: str) -> str:
    """The sentence after the name of the paper it quotes ("RxnFlow: We use 71 reaction templates …"), so that
    its "we" is somebody; as it is when the `context` it is read in (the question, the answer so far, the
    sentence itself) names the paper already, or the paper has no name (a seed abstract's stand-in title)."""
    name = paper_name(source)
    if not name or mentions(context, name):
        return sentence
    return f"{name[:1].upper() if name[1:2].islower() else name[:1]}{name[1:]}: {sentence}"


def evidence_sources(evidence: list[Evidence], sources: list[Source]) -> list[Source]:
    """What the model is given: each source that holds evidence, with only its evidence sentences (each after
    its `before`) rendered as they read (a model copies `$50,000$` badly), in the order the evidence ranks
    them. `renumbered` maps the model's `[n]` back."""
    order = list(dict.fromkeys(item.number for item in evidence))
    return [
        sources[number - 1].with_passages(
            [Passage(" ".join(plain_text(f"{e.before} {e.sentence}".strip()) for e in evidence if e.number == number))]
        )
        for number in order
    ]
