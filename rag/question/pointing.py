"""Which papers of the last answer a follow-up points to by their place: "the second one", "the 2nd paper",
"#4", "papers 1 and 3", "the first two", "the final two", "the first and third", "the latter", "the top result",
and at the start with no "the": "2nd and 3rd: …", "first one - …".

A place is a number, read exactly (as ids and filters are): the n-th paper the last answer cited, in the order
it cited them, which is the order a reader sees them numbered. `pointed` gives their indexes; the words that
point are no topic (`without_pointers`: "How does the second one work?" asks how it works, not about "second").
"""

from __future__ import annotations

import re

PLACES = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
    "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip
HOW_MANY = {"two": 2, "three": 3, "four": 4, "five": 5, "both": 2}
PLACE = rf"(?:{'|'.join(PLACES)}|\d{{1,2}}(?:st|nd|rd|th)|last|former|latter)"
THING = r"(?:\s+(?:ones?|papers?|works?|methods?|results?|approach(?:es)?|models?|submissions?))?"
NAMED_THING = THING.removeprefix("(?:").removesuffix(")?")  # the same, said: "one", "paper", "result", …
PLACES_SAID = rf"{PLACE}(?:\s*(?:,|and|&)\s*(?:the\s+)?{PLACE})*(?!-)"  # the first and third, 2nd & 4th
POINTER = re.compile(
    rf"\b(?:the\s+)?(?P<end>first|last|top|final)\s+(?P<many>two|three|four|five|\d)\b{THING}"  # the first two
    rf"|\b(?:the|that|this)\s+(?P<place>{PLACES_SAID}){THING}\b"  # the second one, that first one, the 1st and 3rd
    rf"|\b(?:the|that|this)\s+(?P<edge>top|final)(?:{NAMED_THING}|\s+hit)\b"  # the top result, the final paper
    # At the start, with no "the": "2nd and 3rd: …", "first one - …", "top hit — …", "for 3rd and 4th, …".
    rf"|^\W*(?:(?:ok|okay|so|and|now|also)\W+)*(?:for\s+)?(?P<lead>{PLACES_SAID}|top|final)"
    rf"(?:{NAMED_THING}|\s+hit)?(?=\s*[:,—–-]|{NAMED_THING}\b)"
    r"|(?:#|\b(?:papers?|numbers?|no\.|results?|items?)\s+)(?P<number>\d{1,2}(?:\s*(?:,|and|&)\s*#?\d{1,2})*)\b",
    re.IGNORECASE,
)  # #4, paper 2, papers 1 and 3
EACH_PLACE = re.compile(rf"\b{PLACE}\b", re.IGNORECASE)


def pointed(question: str, count: int) -> list[int] | None:
    """The indexes (from 0) of the papers among `count` that the question points to by place, in the order it
    names them; None when it names no place, or one past the last."""
    places: list[int] = []
    for match in POINTER.finditer(question) if count > 1 else ():
        if match["lead"] and question[match.end() :].lstrip().startswith(",") and " " not in match["lead"]:
            continue  # "First, what …": an adverb, not a place
        if match["end"]:
            many = HOW_MANY.get(match["many"].lower()) or int(match["many"])
            top = match["end"].lower() in ("first", "top")
            places += list(range(many)) if top else list(range(count - many, count))
        elif match["number"]:
            places += [int(number) - 1 for number in re.findall(r"\d+", match["number"])]
        elif (edge := (match["edge"] or match["lead"] or "").lower()) in ("top", "final"):
            places.append(0 if edge == "top" else count - 1)
        else:
            places += [_index(word.lower(), count) for word in EACH_PLACE.findall(match.group())]
    places = list(dict.fromkeys(places))
    return places if places and all(0 <= place < count for place in places) else None


def _index(word: str, count: int) -> int:
    if word in ("former", "latter"):  # of the first two, as before
        return 0 if word == "former" else 1
    if word == "last":
        return count - 1
    return PLACES.get(word, 0) - 1 if word in PLACES else int(re.sub(r"\D", "", word)) - 1


def without_pointers(question: str) -> str:
    """The question without the words that point by place ("How does the second one work?" -> "How does work?")."""
    return re.sub(r"\s+", " ", POINTER.sub(" ", question)).strip()
