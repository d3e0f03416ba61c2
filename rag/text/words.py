"""The words and sentences of the sources that naming and answering read: content stems, numbers and names.

Shared by naming (rag/text/naming.py, which the refusal rule uses) and, in rag/answering/, the sentence
scoring (evidence.py), acceptance (acceptance.py), citation checks (citations.py) and prompts (prompts.py),
so none of those calls another for a text helper.
"""

from __future__ import annotations

import re

from rag.core.markers import split_sentences
from rag.core.text import EVIDENCE_STOPWORDS
from rag.core.types import Source

DIGITS = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
# A name: a word with a capital after its first letter or a digit beside letters (RxnFlow, GPT-4, R3D2, JYS).
NAME = re.compile(r"\b[A-Za-z][a-z]*[A-Z][\w-]*\b|\b[A-Z]{2,}[\w-]*\b|\b[A-Za-z]+-?\d[\w-]*\b")
MARKUP = re.compile(r"[_*$\\]")
# The words right after a number, up to three, as far as a punctuation mark: what it counts.
COUNTED_WORDS = re.compile(r"(?:[ \t]+[A-Za-z][\w-]*){1,3}")
SCALE = frozenset("hundred thousand million billion trillion".split())
# Acronyms of a field, not of one paper's method: never a paper's name.
GENERIC = frozenset(
    "AI ML NLP CV RL MARL LLM LLMs MLLM MLLMs VLM VLMs LM LMs GNN GNNs CNN CNNs DNN DNNs SOTA OOD MIA MIAs ASR "
    "GPT IFDL ICL RLHF QA VQA".split()
)
# "semantic sensitive information (SemSI)": an acronym a text defines, after the words it stands for.
QUOTES = "\"'“”‘’"
DEFINED = re.compile(rf"((?:[{QUOTES}]?[\w-]+[{QUOTES}]?\s+){{1,8}})\(([A-Za-z][\w-]*[A-Z][\w-]*)\)")
UNQUOTED = str.maketrans("", "", QUOTES)


def acronyms(text: str) -> dict[str, str]:
    """The acronyms a text defines, each with the words it stands for, those whose initials spell its
    capitals: 'the conditional mutual information (CMI)' gives {'CMI': 'conditional mutual information'},
    'a novel "bright ending" (BE)' {'BE': 'bright ending'}."""
    found = {}
    for match in DEFINED.finditer(MARKUP.sub("", text)):
        words = [word for word in re.split(r"[\s-]+", match.group(1).translate(UNQUOTED)) if word]  # "- (II)": none
        acronym = match.group(2)
        letters = re.sub(r"[^A-Z]", "", acronym)
        spelled = words[-len(letters) :]
        if len(spelled) == len(letters) > 1 and "".join(word[0] for word in spelled).upper() == letters:
            found[acronym] = " ".join(spelled)
    return found


def spelled_out(sentence: str, defined: dict[str, str]) -> str:
    """The sentence, followed by what each acronym it uses stands for ('CMI is a special case of …
    conditional mutual information'): the words it holds, when an abstract defines a term once and then
    abbreviates it. Not in a compound: "LoRA-Pro" is not "LoRA"."""
    used = [
        words
        for acronym, words in defined.items()
        if re.search(rf"(?<![\w-]){re.escape(acronym)}s?(?![\w-])", sentence)
    ]
    return " ".join([sentence, *used])


def content_stems(text: str) -> set[str]:
    """The first six letters of each meaningful word of four letters or more, so that 'evaluate'
    and 'evaluated' or 'dataset' and 'datasets' compare equal."""
    words = re.findall(r"[a-z0-9][a-z0-9\-]{3,}", text.lower())
    return {word[:6] for word in words if word not in EVIDENCE_STOPWORDS}


def counted(text: str, number: re.Match) -> set[str]:
    """What a number of `text` (a DIGITS match) counts: the stems of the words right after it, past a scale
    word ('reaction templates' of '71 reaction templates', 'building blocks' of '1.2 million building blocks'),
    a plural's 's' and a long word's end ignored. Empty when it tells nothing: no word follows it ('71%',
    '15x', '(71)'), a stopword does ('20 of 24 tasks'), or the number ends a name ('GPT-4 models')."""
    if text[number.start() - 1 : number.start()] == "-":
        return set()
    words = COUNTED_WORDS.match(text, number.end())
    lowered = words.group(0).lower().split() if words else []
    while lowered and lowered[0] in SCALE:
        lowered.pop(0)
    if not lowered or lowered[0] in EVIDENCE_STOPWORDS:
        return set()
    singular = (word[:-1] if word.endswith("s") and not word.endswith("ss") else word for word in lowered)
    return {word[:5] for word in singular if word not in EVIDENCE_STOPWORDS and word not in SCALE}


def source_sentences(source: Source) -> list[str]:
    """A source's sentences, passage by passage, in abstract order."""
    return [sentence for part in source.passages for sentence in split_sentences(part.text)]
