"""Does an answer state the facts it must? The matching rule behind the answer facts.

Every answerable evaluation question carries `facts`: the 1-3 short strings (a name, a number, a key
phrase, copied from the gold abstract) that a correct answer must contain. The answer evaluation
counts a question as answered only when its answer contains every fact, so the rule must forgive
differences of form that do not change what is said and nothing else:

- case, accents, and compatibility forms of characters ('Nyström' = 'nystrom', 'ﬁ' = 'fi');
- punctuation and spacing: words are compared as a sequence, so 'tau-leaping' = 'tau leaping',
  'MMTD-Set' = 'MMTD Set', '1.2M' = '1.2 M', '34.8%' = '34.8';
- a hyphen between letters may also be dropped: 'non-parametric' = 'nonparametric';
- thousands separators: '50,000' = '50000';
- small numbers written as words: 'seven LLMs' = '7 LLMs';
- the plural of a fact's last word: 'line annotation' is found in 'line annotations'.

A fact must match whole words, and numbers keep their decimal point: '1.2' does not match '12' or
'1.25', '71' does not match '571', and 'BE' does not match 'because'.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
HYPHEN_IN_WORD = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011](?=[^\W\d_])")
# A token is a number (decimal points kept) or a run of letters; everything else separates tokens.
TOKEN = re.compile(r"\d+(?:\.\d+)*|[^\W\d_]+")


def normalize(text: str, *, join_hyphenated: bool = False) -> str:
    """`text` as lowercase words and numbers separated by single spaces (the rules above).

    With `join_hyphenated`, words joined by a hyphen become one word ('non-parametric' ->
    'nonparametric') instead of two."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(char for char in text if not unicodedata.combining(char)).casefold()
    text = THOUSANDS_SEPARATOR.sub("", text)
    if join_hyphenated:
        text = HYPHEN_IN_WORD.sub("", text)
    return " ".join(NUMBER_WORDS.get(token, token) for token in TOKEN.findall(text))


def contains_fact(text: str, fact: str) -> bool:
    """Whether `text` states `fact`, by the matching rule of this module."""
    if not normalize(fact):
        raise ValueError(f"a fact needs at least one word or number: {fact!r}")
    return any(
        _pattern(normalize(fact, join_hyphenated=joined)).search(normalize(text, join_hyphenated=joined))
        for joined in (False, True)
    )


def missing_facts(text: str, facts: Sequence[str]) -> list[str]:
    """The facts that `text` does not state, in their given order."""
    return [fact for fact in facts if not contains_fact(text, fact)]


def _pattern(normalized_fact: str) -> re.Pattern[str]:
    """Whole words of the fact; a last word of letters may take a plural ending."""
    plural = "(?:s|es)?" if normalized_fact[-1].isalpha() else ""
    return re.compile(rf"(?<!\S){re.escape(normalized_fact)}{plural}(?!\S)")
