"""Reading and writing `[n]` citation markers, and splitting prose into sentences."""

from __future__ import annotations

import re
from collections.abc import Sequence

MARKER = re.compile(r"\s*\[(\d+(?:\s*[,;]\s*\d+)*)\]")
# A citation marker before the end punctuation ends a sentence whatever follows: a paper named by a
# lower-case phrase ("completely back-propagation-free (BP-free): ...") starts the next one.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[“‘])|(?<=\][.!?])\s+|\n+")


# What ends no sentence inside it: a title in curly quotes, as answers name a paper ("“When is Task Vector
# Provably Effective for Model Editing? A …”"), brackets ("(e.g. SGD)", "(We attach the code. …)") and a
# LaTeX group ("library~\footnote{We attach the code. …}").
QUOTED = re.compile(r"“[^“”\n]{1,300}”|\([^()\n]{1,300}\)|\{[^{}\n]{1,300}\}")


def split_sentences(text: str) -> list[str]:
    """Sentences of prose, split at end punctuation followed by a capital or after a citation marker, or at
    line breaks; not inside curly quotes (a title's "?" ends no sentence), brackets or a LaTeX group's braces."""
    masked = QUOTED.sub(lambda quoted: re.sub(r"[.!?\n]", "_", quoted.group(0)), text)  # the same length
    parts, start = [], 0
    for end in SENTENCE_END.finditer(masked):
        parts.append(text[start : end.start()])
        start = end.end()
    parts.append(text[start:])
    return [part.strip() for part in parts if part and part.strip()]


def marker_numbers(text: str) -> list[int]:
    """Every number inside `[n]` / `[n, m]` markers, in order of appearance, repeats included."""
    return [int(n) for group in MARKER.findall(text) for n in re.split(r"[,;]", group)]


def cited_numbers(text: str, source_count: int) -> list[int]:
    """Valid source numbers cited in `text`, each once, in order of first citation."""
    return list(dict.fromkeys(n for n in marker_numbers(text) if 1 <= n <= source_count))


def format_marker(numbers: Sequence[int]) -> str:
    return "".join(f"[{n}]" for n in numbers)


def attach_marker(sentence: str, numbers: Sequence[int]) -> str:
    """Put markers before the sentence's closing punctuation: 'It works [2].'"""
    if not numbers:
        return sentence
    match = re.match(r"(.*?)([.!?]*)$", sentence, re.DOTALL)
    assert match is not None  # both groups may be empty: the pattern matches any string
    body, end = match.groups()
    return f"{body.rstrip()} {format_marker(numbers)}{end}"
