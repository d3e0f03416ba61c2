"""A paper's name, as a reader calls it, and whether a text names it.

`paper_name` reads it from the title ("RxnFlow: …") or from what the abstract proposes ("We propose
Recurrent Replay Relevance Distributed DQN (R3D2)"); `mentions` and `says_name` tell whether a
question or a sentence names it; `named_by` whether a question asks about a paper by its name.
"""

from __future__ import annotations

import re
import unicodedata

from rag.core.markup import plain_text
from rag.core.types import Source
from rag.text.words import GENERIC, MARKUP, NAME, acronyms, content_stems, source_sentences

# What an abstract says when it comes to what it proposes: 'We introduce …', 'this paper presents …'.
PROPOSAL = re.compile(
    r"\b(?:we|this (?:paper|work)|our (?:method|approach|framework))\s+(?:\w+ly\s+)?"
    r"(?:propose|present|introduce|develop|design|call|name|term|dub)s?\b",
    re.IGNORECASE,
)
TERMED = re.compile(r"\b(?:called|termed|named|dubbed|coined)\s+([A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,4})")
ACRONYM = re.compile(r"\(([A-Za-z][\w-]*[A-Z0-9][\w-]*)\)")
# A compound that describes rather than names: "a completely back-propagation-free (BP-free) framework".
DESCRIBES = re.compile(r"-(free|based|aware|agnostic|efficient|friendly|guided|driven|invariant|equivariant)$", re.I)


def paper_name(source: Source) -> str:
    """What a reader calls the paper: the name its title gives before a colon (RxnFlow), else the name
    its abstract proposes ("Recurrent Replay Relevance Distributed DQN (R3D2)"), else a real title in
    quotes; "" for an abstract with neither (the seed abstracts have stand-in titles, not real ones)."""
    title = source.title.strip()
    head, colon, _ = title.partition(":")
    if colon and len(head.split()) <= 4:
        return plain_text(head.strip())  # "$\epsilon$-VAE" reads "ϵ-VAE"
    # A stand-in title starts at the abstract's proposal, which the passages given may not include.
    proposal = next(filter(None, map(PROPOSAL.search, [title, *source_sentences(source)])), None)
    if proposal:
        name = proposed_name(proposal.string[proposal.end() :])
        if spelled := acronyms(source.text).get(name):  # "… to integrate BE into …": the bright ending (BE)
            return f"{spelled} ({name})"
        if name:
            return name
    return "" if is_stand_in(title, source) else f"“{plain_text(title)}”"


def proposed_name(after: str) -> str:
    """The name in the words after 'we propose': 'Long Form (ACR)', or the first name-like word."""
    acronym = ACRONYM.search(after[:100])
    if acronym and is_name(acronym.group(1)):
        before = re.split(r",|\b(?:called|termed|named|dubbed|coined)\b", after[: acronym.start()])[-1]
        words = [word.strip("\"'“”‘’") for word in MARKUP.sub("", before).split()]  # 'a "bright ending" (BE)'
        while words and words[0].lower() in ("a", "an", "the", "novel", "new"):
            words.pop(0)
        letters = re.sub(r"[^A-Za-z]", "", acronym.group(1))
        spelled = words[-len(letters) :] if letters else []
        if spelled and "".join(word[0] for word in spelled).lower() == letters.lower():
            words = spelled  # "… via cross-domain latent distribution matching (LDM)"
        return f"{' '.join(words)} ({acronym.group(1)})" if 0 < len(words) <= 6 else acronym.group(1)
    after = MARKUP.sub("", after)
    termed = TERMED.search(after)
    if termed:
        return termed.group(1)
    first = re.match(r"\s*([A-Z][\w-]+)\s*[,:(]", after)  # "We present Finedefics, an MLLM …"
    if first and is_name(first.group(1)):
        return first.group(1)
    return next((m.group(0) for m in NAME.finditer(after[:60]) if is_name(m.group(0))), "")


def is_name(word: str) -> bool:
    """Whether a name-like word names a method: not a field's acronym (LLMs), not a description (BP-free)."""
    return word not in GENERIC and not DESCRIBES.search(word)


def is_stand_in(title: str, source: Source) -> bool:
    """True for a title made from the abstract's own words (papers without a title get one)."""
    words = title.rstrip(" …").split()
    return title.endswith("…") or bool(words) and " ".join(words) in " ".join(source.text.split())


# A title's opening word that is not part of what it names ("Revisit Micro-batch Clipping: …").
OPENER = re.compile(r"^(?:revisit(?:ing)?|rethinking|towards?|on)\s+(?=\S+\s+\S)", re.IGNORECASE)


def name_parts(name: str) -> list[str]:
    """The ways a text may give the name: 'Long Form (ACR)' as either part; 'Revisit Micro-batch Clipping'
    as 'Micro-batch Clipping'."""
    return [OPENER.sub("", part.strip(" “”()")) for part in re.split(r" \(", name)]


def mentions(text: str, name: str) -> bool:
    """True when the text names the paper: its name (without an opening "Revisit", "Towards"), or either
    part of 'Long Form (ACR)'."""
    parts = [part.lower() for part in name_parts(name)]
    return any(part and part in text.lower() for part in parts)


def named_by(question: str, source: Source) -> bool:
    """True when the question names the paper word for word ("… according to Jump Your Steps?") and
    asks about what its passages say: they hold at least half of the question's other content words.
    Such a paper is what the asker means even when its passages and the question share little meaning."""
    name = paper_name(source)
    if not says_name(question, name):
        return False
    rest = content_stems(question) - content_stems(name)
    return bool(rest) and 2 * len(rest & content_stems(source.text)) >= len(rest)


def says_name(text: str, name: str) -> bool:
    """True when the text has the name, or either part of 'Long Form (ACR)', as a word with its case
    ("ε-VAE" is "ϵ-VAE"), and the name is one no ordinary word or phrase could be."""
    text = unicodedata.normalize("NFKC", text)
    parts = [unicodedata.normalize("NFKC", part.strip(" “”()")) for part in re.split(r" \(", name)]
    for part in filter(None, parts):
        for match in re.finditer(rf"(?<!\w){re.escape(part)}(?!\w)", text):
            mid_sentence = text[: match.start()].rstrip()[-1:] not in ("", ".", "?", "!")
            if is_proper_name(part) or (is_coined(part) and mid_sentence):
                return True
    return False


def is_coined(name: str) -> bool:
    """One capitalised word of five letters or more that is not a field's acronym ("Finedefics"): a name
    a paper coined when a text writes it with its capital in mid-sentence, where an ordinary word has none."""
    return len(name) >= 5 and name[0].isupper() and name[1:].islower() and name.isalpha() and name not in GENERIC


def is_proper_name(name: str) -> bool:
    """Several words, or one with a capital after its first letter or a digit (RxnFlow, JYS, GPT-4), not a
    field's acronym: matched with its case, "Diffusion Models" in a title is not "diffusion models"."""
    if len(name.split()) > 1:
        return True
    return any(c.isupper() or c.isdigit() for c in name[1:]) and name not in GENERIC


def names_in(text: str) -> list[str]:
    """The words of a question after its first that may name a paper: with a capital or a digit in them
    (RxnFlow, GPT-4o, MoE++, Proteina, SANA)."""
    words = (word.strip(".,;:!?\"'“”") for word in re.findall(r"(?<=\s)[\w+.-]*[A-Z0-9][\w+.-]*", text))
    return list(dict.fromkeys(word for word in words if word))


WEB_ADDRESS = re.compile(r"https?://|www\.", re.I)
# A sentence that says where the code is, or that it will be released: no answer but to "is there code?"
# ("Code and model will be publicly released upon publication.", "Our code can be seen in https://…").
RELEASE = re.compile(
    WEB_ADDRESS.pattern + r"|\b(?:code|codes|weights|implementations?|checkpoints?)\b[^.]{0,60}?"
    r"\b(?:publicly\s+|openly\s+)?(?:released|available|open[- ]sourced|accessible)\b",
    re.I,
)
