"""The answer policy: from a question to a checked, cited `Answer`.

the question as read (rag/question/question.py: a follow-up made self-contained, its asks) and its sources (the
caller's retrieval) -> refusal, or evidence sentences -> the extractive answer, or the model's words checked
sentence by sentence against the sources as they stream (unsupported sentences never shown; one that says nothing
beyond the evidence shown as those sentences, quoted; the evidence sentences they don't say follow when the key
facts are lost or no sentence is the model's own, the extractive answer when the model fails and `llm.fallback`
allows it). What streams is the answer: nothing is swapped afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rag.answering.acceptance import Shortfall, key_tokens, left_out, news, not_said, shortfall
from rag.answering.citations import CitationChecker, kept_text
from rag.answering.evidence import Evidence, EvidencePicker
from rag.answering.providers import ExtractiveProvider, Provider
from rag.answering.quoting import evidence_sources, extractive_answer
from rag.answering.refusal import refusal, stands_in
from rag.answering.streaming import SentenceStream, quoted_checks, shown_text
from rag.core.config import Settings
from rag.core.errors import ModelError
from rag.core.filters import as_filters
from rag.core.markup import plain_text
from rag.core.types import Answer, SentenceCheck, Source
from rag.core.wording import scope, verb
from rag.question.question import Question


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

    def stream(self, question: Question, sources: list[Source]) -> Iterator[str | Answer]:
        """Yield the answer's checked sentences as they come, then the final `Answer`, whose text is
        exactly what was yielded: a model's sentence only once a source it cites supports it, and the
        evidence sentences they don't say after them when they leave out what the best one says (see streaming.py).

        The answer says what every answer says of its question (`Question.stamped`)."""
        asked = question.text
        # A follow-up about the papers in focus is theirs to answer: their sentences decide, as for a named paper.
        reason = None if question.focus and sources else refusal(question, sources, self.config.retrieval)
        if not reason and (standing := stands_in(question, sources)) and standing is not sources[0]:
            sources = [standing, *(source for source in sources if source is not standing)]  # the look-up's paper first
        evidence = [] if reason else self.picker.pick(question, sources)
        if not reason and not evidence:
            reason = "no sentence of the closest abstracts answers it"
        if reason:
            text = refusal_text(sources, question.filters.to_json())
            yield self.stamped(question, Answer("", text, sources, refused=True, refusal_reason=reason))
            return
        extractive = extractive_answer(asked, evidence, sources)
        shown: list[SentenceCheck] = []  # what the stream has shown: the final answer's sentences
        sentences = SentenceStream(self.checker, sources, evidence, asked)
        try:
            if question.standalone.model_failure:  # it just failed on the rewrite: don't wait for it a second time
                raise ModelError(question.standalone.model_failure)
            provider = self.provider()
            # The extractive provider's answer is the extractive one made above (its own stream would pick
            # the same evidence again, a sixth of an answer's time): checked, not weighed as a model's words.
            if isinstance(provider, ExtractiveProvider):
                yield from self.shown(quoted_checks(self.checker, extractive, sources, shown), shown)
                yield self.final(question, shown, sources, answered_by="extractive")
                return
            for piece in provider.stream(asked, evidence_sources(evidence, sources)):
                yield from self.shown(sentences.feed(piece), shown)
            yield from self.shown(sentences.finish(), shown)
        except ModelError as err:
            if not self.config.llm.falls_back:
                raise
            # What the model wrote before it failed was checked and stays; the quoted answer follows.
            quoted = extractive_answer(asked, evidence, sources, kept_text(shown)) if shown else extractive
            yield from self.shown(quoted_checks(self.checker, quoted, sources, shown), shown)
            by = "model" if sentences.own else "extractive"
            yield self.final(question, shown, sources, answered_by=by, fallback=str(err))
            return
        # The model is judged on its own words: a name shown before them says which paper, not what it says.
        lacking, unsaid = self.lacking(question, evidence, sources, sentences)
        if unsaid:  # the evidence sentences the shown ones don't say follow them (when none was shown, all of it)
            added = extractive_answer(asked, unsaid, sources, kept_text(shown))
            yield from self.shown(quoted_checks(self.checker, added, sources, shown), shown)
        yield self.final(
            question,
            shown,
            sources,
            answered_by="model" if sentences.own else "extractive",  # quotes alone: the abstracts' words
            replaced=lacking.reason if lacking else None,
            shortfall=lacking.words if lacking else None,
        )

    def lacking(
        self, question: Question, evidence: list[Evidence], sources: list[Source], sentences: SentenceStream
    ) -> tuple[Shortfall | None, list[Evidence]]:
        """What the model's shown sentences lack (acceptance.py), and the evidence sentences to follow them: when
        they lack something, those they don't say; when none is in the model's words (quotes alone, `_as_quoted`),
        every evidence sentence they don't quote, as the extractive answer has it. They lack nothing when they say
        every evidence sentence (the paper's name aside: their [n] gives it); quoting one again would repeat it."""
        shown = sentences.written
        key, told = key_tokens(question, evidence, sources), news(question, evidence)
        lacking = shortfall(shown, key, told, self.config.answer.keep_news)
        if not sentences.own:
            unsaid = not_said(evidence, shown)
        else:
            unsaid = left_out(question, evidence, sources, shown) if lacking else []
        return (lacking if unsaid else None), unsaid

    @staticmethod
    def shown(checks: list[SentenceCheck], shown: list[SentenceCheck]) -> Iterator[str]:
        """Each checked sentence as a piece of the stream ("" before the first, " " before the others)."""
        for check in checks:
            yield (" " if shown else "") + shown_text(check)
            shown.append(check)

    def final(self, question: Question, shown: list[SentenceCheck], sources: list[Source], **fields) -> Answer:
        """The answer the stream showed: its text is the shown sentences, as they were streamed. When no
        sentence could be shown (none is supported), a refusal."""
        if not shown:
            reason = "no sentence of the answer is supported by the abstract it cites"
            text = refusal_text(sources, question.filters.to_json())
            return self.stamped(question, Answer("", text, sources, refused=True, refusal_reason=reason))
        return self.stamped(question, Answer("", kept_text(shown), sources, checks=list(shown), **fields))

    def stamped(self, question: Question, answer: Answer) -> Answer:
        return question.stamped(answer, self.config.name)


def refusal_text(sources: list[Source], filters: dict | None = None) -> str:
    """A refusal in a researcher's words, naming the closest papers once, or when there are none the
    filters that left none (`filters`: the applied ones, as `Answer.filters` holds them); the figures
    that decided it go to `Answer.refusal_reason`."""
    if not sources:
        labels = as_filters(filters or {}).labels()
        among = f" among {scope(labels)}" if labels else ""
        return f"No indexed abstract{among} matches this question, so it is not answered."
    titles = [f"“{plain_text(source.title)}”" for source in sources[:3]]
    closest = titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} and {titles[-1]}"
    are = verb(len(titles), "closest paper is", "closest papers are")
    return f"The indexed abstracts don't answer this question. The {are} {closest}."
