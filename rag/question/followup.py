"""The follow-up rewrite, the first part of understanding a question: a question that leans on the
conversation ("what results does it report?") made self-contained, so that retrieval can answer it alone.

A model may rewrite it; without one (or when its rewrite fails), the rule: the last question + this one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from rag.core.errors import InputError, ModelError
from rag.core.filters import Filters
from rag.core.text import not_text
from rag.core.wording import is_refusal
from rag.text.naming import names_in

# The longest earlier answer a history may hold: far above any answer given (a list of 33 papers, a quoted
# sentence each, ran to 22,762 characters in benchmarks/reader.py; a list shows at most 50), far below what
# would slow the history's checks and the model's prompt.
MAX_ANSWER_CHARS = 60_000

FOLLOW_UP = re.compile(r"\b(it|its|they|their|them|this|that|these|those|the paper|the method)\b", re.IGNORECASE)


class Rewriter(Protocol):
    """What rewrites a follow-up: a model provider (rag/answering/providers.py)."""

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        """A standalone version of a follow-up question, or None to leave it to the rule."""


@dataclass(frozen=True)
class Standalone:
    """A question made self-contained, and why the model couldn't rewrite it (if it failed)."""

    question: str
    model_failure: str | None = None
    # The papers in focus it is answered from (rag/question/focus.py); empty when it searches anew.
    focus: tuple[str, ...] = ()
    # The conversation's answers, for a follow-up that leans on them (held to their papers or rewritten with
    # them): what was said already, which the follow-up's evidence does not quote again while another sentence
    # answers (a third turn repeated the first answer's sentences when this held the last answer alone).
    said: str = ""
    # It leans on the turn before, which was refused, and names nothing of its own ("What data do they use?"):
    # there is nothing it can be answered from (rag/answering/refusal.py refuses it).
    leans_on_refusal: bool = False

    def held(self, filters: Filters) -> Filters:
        """The filters it is searched with: held to the papers in focus, if any."""
        return replace(filters, papers=self.focus or filters.papers)


def standalone_question(question: str, history: list[tuple[str, str]], rewriter: Callable[[], Rewriter]) -> Standalone:
    """Rewrite a follow-up into a question that retrieval can answer alone.

    `rewriter` is called only for a follow-up, so a plain question never loads a model. After a refusal the
    question is never joined to the refused one: that only pulled its search towards what the index does not
    hold. One that names a paper of its own is asked as it is; one that only leans on the refused turn is
    marked, and refused.
    """
    if not history or not FOLLOW_UP.search(question):
        return Standalone(question)
    if is_refusal(history[-1][1]):
        return Standalone(question, leans_on_refusal=not names_in(question))
    try:
        rewritten = rewriter().rewrite(question, history)
    except ModelError as err:
        # Without a model, or when its rewrite is unusable: the rule, last question + this one.
        return Standalone(f"{history[-1][0]} {question}", model_failure=str(err))
    return Standalone(rewritten or f"{history[-1][0]} {question}")


def checked_standalone(
    question: str,
    history: list[tuple[str, str]],
    rewriter: Callable[[], Rewriter],
    clean: Callable[[str, str], str],
    focused: Callable[[], Standalone | None] = lambda: None,
) -> Standalone:
    """The (clean) question made self-contained with the history; each other text is checked first with
    `clean(text, what)`, and a refusal names the one refused: a question of the history, its answer, or
    the rewritten follow-up (a question that is not a follow-up was cleaned already).

    `focused` is the follow-up held to the papers in focus (rag/question/focus.py), or None when it
    asks anew; it is called once the history is checked."""
    for number, (asked, replied) in enumerate(history, start=1):
        clean(asked, f"question {number} of the history")
        if problem := not_text(replied):
            raise InputError(f"answer {number} of the history {problem}")
        if not replied.strip():
            raise InputError(f"answer {number} of the history is empty")
        if len(replied) > MAX_ANSWER_CHARS:
            raise InputError(
                f"answer {number} of the history is {len(replied):,} characters long; the limit is {MAX_ANSWER_CHARS:,}"
            )
    standalone = (focused() if history else None) or standalone_question(question, history, rewriter)
    if history and (standalone.focus or standalone.question != question):
        standalone = replace(standalone, said=" ".join(answer for _, answer in history))
    if standalone.question == question:
        return standalone
    return replace(standalone, question=clean(standalone.question, "the follow-up rewritten with the conversation"))
