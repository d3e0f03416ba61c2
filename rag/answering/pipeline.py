"""The answer policy: from a question to a checked, cited `Answer`.

the standalone question (a follow-up rewritten, rag/retrieval/followup.py) and its sources (the
caller's retrieval) -> refusal, or evidence sentences -> the extractive answer, or the model's words checked against the
sources (unsupported sentences removed; the extractive answer stands when the key facts are lost,
or when the model fails and `llm.fallback` allows it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rag.answering.acceptance import key_tokens, news, set_aside
from rag.answering.citations import CitationChecker, kept_text, renumbered
from rag.answering.evidence import EvidencePicker, evidence_sources, extractive_answer
from rag.answering.providers import ExtractiveProvider, Provider
from rag.core.config import Settings
from rag.core.errors import ModelError
from rag.core.markup import plain_text
from rag.core.types import Answer, Source
from rag.retrieval.followup import Standalone
from rag.retrieval.refusal import refusal, stands_in


class AnswerPipeline:
    """Refusal, evidence, generation, checking and fallback over the sources retrieval found."""

    def __init__(
        self,
        config: Settings,
        picker: EvidencePicker,
        checker: CitationChecker,
        provider: Callable[[], Provider],
    ):
        self.config = config
        self.picker = picker
        self.checker = checker
        self.provider = provider  # called when a model is needed: loading it is the caller's business

    def stream(self, standalone: Standalone, sources: list[Source], stamp: dict) -> Iterator[str | Answer]:
        """Yield answer text in pieces as the model writes it, then the final, checked `Answer`.

        `stamp`: the fields every Answer gets (the question as asked, filters, config...)."""
        asked = standalone.question
        # A follow-up about the papers in focus is theirs to answer: their sentences decide, as for a named paper.
        reason = None if standalone.focus and sources else refusal(asked, sources, self.config.retrieval)
        if not reason and (standing := stands_in(asked, sources)) and standing is not sources[0]:
            sources = [standing, *(source for source in sources if source is not standing)]  # the look-up's paper first
        evidence = [] if reason else self.picker.pick(asked, sources)
        if not reason and not evidence:
            reason = "no sentence of the closest abstracts answers it"
        if reason:
            yield Answer(text=refusal_text(sources), sources=sources, refused=True, refusal_reason=reason, **stamp)
            return
        extractive = extractive_answer(asked, evidence, sources)
        try:
            if standalone.model_failure:  # it just failed on the rewrite: don't wait for it a second time
                raise ModelError(standalone.model_failure)
            provider = self.provider()
            # The extractive provider's answer is the extractive one made above (its own stream would pick
            # the same evidence again, a sixth of an answer's time): checked, not weighed as a model's words.
            if isinstance(provider, ExtractiveProvider):
                answer = self.checked(extractive, sources, answered_by="extractive", **stamp)
                yield answer.text  # streamed in one piece, as every consumer of the stream expects some text
                yield answer
                return
            pieces = []
            for piece in provider.stream(asked, evidence_sources(evidence, sources)):
                pieces.append(piece)
                yield piece
        except ModelError as err:
            if not self.config.llm.falls_back:
                raise
            yield self.checked(extractive, sources, answered_by="extractive", fallback=str(err), **stamp)
            return
        text, checks = self.checker.check(renumbered("".join(pieces), evidence), sources)
        key, told = key_tokens(asked, evidence, sources), news(asked, evidence)
        replaced = set_aside(checks, key, told, self.config.answer.keep_news)
        if replaced:
            yield self.checked(extractive, sources, answered_by="extractive", replaced=replaced, **stamp)
            return
        kept = [check for check in checks if check.supported]  # what its sources don't back is removed
        yield Answer(text=kept_text(kept), sources=sources, checks=kept, answered_by="model", **stamp)

    def checked(self, text: str, sources: list[Source], **fields) -> Answer:
        text, checks = self.checker.check(text, sources)
        return Answer(text=text, sources=sources, checks=checks, **fields)


def refusal_text(sources: list[Source]) -> str:
    """A refusal in a researcher's words, naming the closest papers once; the figures that decided it
    go to `Answer.refusal_reason`."""
    if not sources:
        return "No indexed abstract matches this question, so it is not answered."
    titles = [f"“{plain_text(source.title)}”" for source in sources[:3]]
    closest = titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} and {titles[-1]}"
    return f"The indexed abstracts don't answer this question. The closest papers are {closest}."
