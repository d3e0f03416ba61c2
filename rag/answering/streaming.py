"""Checked sentences as they come: a model's text in pieces, out only the sentences their sources support.

A stream shows nothing unchecked: the model's text is held until a sentence is complete (the next
one has begun, or the model is done), then that sentence is checked on its own against the sources
it cites (`CitationChecker.check_sentences`), its markers already referring to the full source list
(`renumbered`). A supported sentence is shown, or in its place the evidence sentences it says nothing
beyond (the abstract's own words: a small model cuts facts away as it shortens); any other is not, anywhere.
What was shown is the final answer: the pipeline builds the `Answer` from the shown sentences, and adds
(never swaps in) the evidence sentences the model's ones don't say when they leave out what the best one says
or none of them is in the model's words.
The tidying the checker does on a whole text is done here as the sentences come: a sentence said
twice is checked once, and an unfinished last sentence is dropped when complete ones came before.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rag.answering.citations import FINISHED, LIST_ITEM, CitationChecker, renumbered
from rag.answering.evidence import REPEATED, Evidence
from rag.answering.quoting import quoted, with_name
from rag.core.markers import MARKER, SENTENCE_END, attach_marker, split_sentences
from rag.core.types import SentenceCheck, Source
from rag.text.words import content_stems


def sentence_key(sentence: str) -> str:
    """A sentence's words, markers and case ignored: two sentences with one key are one sentence."""
    return " ".join(re.findall(r"\w+", MARKER.sub("", sentence).lower()))


def shown_text(check: SentenceCheck) -> str:
    """A checked sentence as it is shown, with its markers."""
    return attach_marker(check.text, check.cited)


class SentenceStream:
    """Model text in, as it comes; out, each complete sentence that a source it cites supports, the first of each
    paper after the paper's name when neither the question nor the answer so far names it (as a quote is named)."""

    def __init__(self, checker: CitationChecker, sources: list[Source], evidence: list[Evidence], question: str = ""):
        self.checker, self.sources, self.evidence = checker, sources, evidence
        self.pending = ""  # the text after the last complete sentence
        self.seen: set[str] = set()  # the model's sentences, as keys (`sentence_key`)
        self.quoted: set[str] = set()  # the evidence sentences quoted in place of some of them
        self.checks: list[SentenceCheck] = []  # every sentence checked, supported or not
        self.written: list[SentenceCheck] = []  # the supported ones as shown, unnamed: what the model is judged on
        self.own = 0  # how many of them are in the model's words, not quoted in their place (`_as_quoted`)
        self.said = question  # what names a paper already: the question, then each sentence shown
        self.named: set[int] = set()

    def feed(self, piece: str) -> list[SentenceCheck]:
        """The supported sentences `piece` completes (usually none: a sentence takes many pieces)."""
        self.pending += piece
        *complete, self.pending = SENTENCE_END.split(self.pending)
        return self._checked([part.strip() for part in complete if part and part.strip()])

    def finish(self) -> list[SentenceCheck]:
        """The last sentence, if supported, when the model is done; unfinished, it is dropped after others."""
        last, self.pending = split_sentences(self.pending), ""
        if last and self.seen and not FINISHED.search(last[-1]) and not LIST_ITEM.match(last[-1]):
            last.pop()
        return self._checked(last)

    def _checked(self, sentences: list[str]) -> list[SentenceCheck]:
        fresh = []
        for sentence in sentences:
            key = sentence_key(sentence)
            if key and key not in self.seen:
                self.seen.add(key)
                fresh.append(renumbered(sentence, self.evidence))
        if not fresh or not self.sources:
            return []
        checks = self.checker.check_sentences(fresh, self.sources)
        self.checks += checks
        supported = [shown for check in checks if check.supported for shown in self._as_quoted(check)]
        self.written += supported
        return [self._named(check) for check in supported]

    def _as_quoted(self, check: SentenceCheck) -> list[SentenceCheck]:
        """The model's supported sentence, or when it says nothing the evidence sentences it draws on don't
        (`cut_from`), those sentences quoted in its place: a model cuts a fact away as it shortens ("ensures the
        learning of compact representations" of "… enforces the learning of compact, semantically-rich
        representations of normal nodes …"), a quote is the abstract's own words. Nothing when they were shown
        already."""
        items = cut_from(check, self.evidence)
        if not items:
            self.own += 1
            return [check]
        fresh = [(item, quote) for item in items for quote in quoted(item) if sentence_key(quote) not in self.quoted]
        self.quoted.update(sentence_key(quote) for _, quote in fresh)
        if not fresh:
            return []
        quotes = [attach_marker(quote, [item.number]) for item, quote in fresh]
        return [quote for quote in self.checker.check_sentences(quotes, self.sources) if quote.supported]

    def _named(self, check: SentenceCheck) -> SentenceCheck:
        """The supported sentence as shown: after its paper's name when it is the first to cite that paper alone
        and nothing said so far names it (`with_name`)."""
        if len(check.cited) == 1 and check.cited[0] not in self.named:
            number = check.cited[0]
            self.named.add(number)
            check = replace(check, text=with_name(check.text, self.sources[number - 1], f"{self.said} {check.text}"))
        self.said += f" {check.text}"
        return check


def cut_from(check: SentenceCheck, evidence: list[Evidence]) -> list[Evidence]:
    """The evidence sentences of the one paper a model's sentence cites that hold nearly all (`REPEATED`) of its
    content words, in the evidence's order: one, or two it joins ("We further investigate … by proposing a simple
    yet effective extension to ST-GS" of one sentence about the investigation and one about the extension). None
    when it says more than they do."""
    said = content_stems(check.text)
    own = [item for item in evidence if check.cited == (item.number,)]
    drawn = sorted(own, key=lambda item: len(said & content_stems(item.sentence)), reverse=True)
    for most in (1, 2):
        held = set().union(*(content_stems(item.sentence) for item in drawn[:most]))
        if said and len(said & held) >= REPEATED * len(said):
            return [item for item in own if item in drawn[:most]]
    return []


def quoted_checks(
    checker: CitationChecker, text: str, sources: list[Source], shown: list[SentenceCheck]
) -> list[SentenceCheck]:
    """The supported sentences of a quoted (extractive) text, without those already shown."""
    seen = {sentence_key(check.text) for check in shown}
    _, checks = checker.check(text, sources)
    return [check for check in checks if check.supported and sentence_key(check.text) not in seen]
