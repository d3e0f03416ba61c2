"""The terms BM25 and coverage compare: lower-cased, stemmed words without stop words, Greek letters spelled out."""

from __future__ import annotations

import re
import threading
import unicodedata

from rag.core.text import SEARCH_STOPWORDS as STOPWORDS

# Letters and digits only: "_Jump Your Steps_" (Markdown emphasis in abstracts) must give "jump".
TOKEN = re.compile(r"[^\W_]{2,}")
# A Greek letter is its name, as abstracts write it in LaTeX: a question's "ε-VAE" finds "$\epsilon$-VAE".
GREEK = re.compile(r"[\u0370-\u03ff]")
# LaTeX's variant letters are the same letter to a reader: "$\varepsilon$" is "ε".
VARIANT = re.compile(r"\bvar(?=epsilon|phi|theta|pi|rho|sigma|kappa)")


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed word tokens without stop words: what BM25 and coverage compare. Greek
    letters are spelled out ("ε" and "$\\varepsilon$" give "epsilon")."""
    text = VARIANT.sub("", GREEK.sub(greek_name, text.lower()))
    return _stem([token for token in TOKEN.findall(text) if token not in STOPWORDS])


def greek_name(match: re.Match) -> str:
    """ "ε" -> " epsilon " ("GREEK SMALL LETTER EPSILON"; "ϵ" is "GREEK LUNATE EPSILON SYMBOL")."""
    words = unicodedata.name(match.group(0), "").split()
    letter = words[-2] if words[-1:] == ["SYMBOL"] else words[-1] if "LETTER" in words else ""
    return f" {letter.lower()} "


_stemmers = threading.local()  # PyStemmer objects are not safe to share between threads


def _stem(tokens: list[str]) -> list[str]:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import Stemmer

        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return stemmer.stemWords(tokens)
