"""Checked sentences as they come: a model's text in pieces, out only the sentences their sources support.

A stream shows nothing unchecked: the model's text is held until a sentence is complete (the next
one has begun, or the model is done), then that sentence is checked on its own against the sources
it cites (`CitationChecker.check_sentences`), its markers already referring to the full source list
(`renumbered`). A supported sentence is shown; any other is not, anywhere. What was shown is the
final answer: the pipeline builds the `Answer` from the shown sentences, and adds (never swaps in)
the evidence sentences the model's ones don't say when they leave out what the best one says.
The tidying the checker does on a whole text is done here as the sentences come: a sentence said
twice is checked once, and an unfinished last sentence is dropped when complete ones came before.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rag.answering.citations import FINISHED, LIST_ITEM, CitationChecker, renumbered
from rag.answering.evidence import Evidence
from rag.answering.quoting import with_name
from rag.core.markers import MARKER, SENTENCE_END, attach_marker, split_sentences
from rag.core.types import SentenceCheck, Source


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
        self.seen: set[str] = set()
        self.checks: list[SentenceCheck] = []  # every sentence checked, supported or not
        self.written: list[SentenceCheck] = []  # the supported ones as the model wrote them: what it is judged on
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
        supported = [check for check in checks if check.supported]
        self.written += supported
        return [self._named(check) for check in supported]

    def _named(self, check: SentenceCheck) -> SentenceCheck:
        """The supported sentence as shown: after its paper's name when it is the first to cite that paper alone
        and nothing said so far names it (`with_name`)."""
        if len(check.cited) == 1 and check.cited[0] not in self.named:
            number = check.cited[0]
            self.named.add(number)
            check = replace(check, text=with_name(check.text, self.sources[number - 1], f"{self.said} {check.text}"))
        self.said += f" {check.text}"
        return check


def quoted_checks(
    checker: CitationChecker, text: str, sources: list[Source], shown: list[SentenceCheck]
) -> list[SentenceCheck]:
    """The supported sentences of a quoted (extractive) text, without those already shown."""
    seen = {sentence_key(check.text) for check in shown}
    _, checks = checker.check(text, sources)
    return [check for check in checks if check.supported and sentence_key(check.text) not in seen]
