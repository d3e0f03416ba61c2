"""The stored authors' names a question may say without "by": read once per state of the BM25 index (lexical.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rag.text.terms import terms

COMMON = 1 / 100  # a word of at least this share of the abstracts is a topic's word, not a name's


def sayable_names(authors: Iterable[Any], bm25: Any, papers: int) -> dict[str, str]:
    """Every stored author's name, casefolded, to the name as stored ("sergey levine" -> "Sergey Levine"), but one
    whose every word is a word of many abstracts ("Graph Neural", "Diffusion Models": a record's names never outrank
    a question's topic). `authors`: each paper's stored authors ("A; B"); `bm25`: the index of the abstracts."""
    names = {
        name.casefold(): name
        for stored in authors
        for name in (part.strip() for part in str(stored or "").split(";"))
        if name
    }
    return {said: name for said, name in names.items() if not all(_common(word, bm25, papers) for word in said.split())}


def _common(word: str, bm25: Any, papers: int) -> bool:
    """Whether a word is one of many abstracts' (`COMMON`), once stemmed; a stop word is."""
    stems = terms(word)
    if not stems:
        return True
    column = bm25.vocab_dict.get(stems[0])
    indptr = bm25.scores["indptr"]
    return column is not None and indptr[column + 1] - indptr[column] >= papers * COMMON
