"""A question made self-contained with the conversation before it, and the focus each answer leaves.

A follow-up that refers back to the papers the last answer cited is held to them (rag/question/focus.py);
any other is rewritten by a model or the rule (rag/question/followup.py). What each answer cited is
remembered by its conversation; for an answer given elsewhere, recovered by asking its question again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from rag.core.filters import Filters
from rag.core.markers import cited_numbers
from rag.core.types import Answer, Kind
from rag.question.focus import FocusMemory, History, Search, Turn, as_turns, gone_back, held_to_focus, pairs
from rag.question.followup import Rewriter, Standalone, checked_standalone
from rag.question.pointing import POINTER, pointed
from rag.question.understand import Understood


class RuleOnly:
    """A rewriter that leaves every follow-up to the rule (no model is loaded or asked)."""

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        return None


class Conversation:
    """The conversation step of understanding a question, over the service's search (`search(question,
    k, filters)`, k None for the configured), its reading of a question (`understand`, if `reads()`), its
    check of a text (`clean(text, what)`) and its model (`rewriter`, called only when a rewrite is wanted)."""

    def __init__(
        self,
        search: Callable[[str, int | None, Filters], list],
        understand: Callable[[str], Understood],
        clean: Callable[[str, str], str],
        rewriter: Callable[[], Rewriter],
        reads: Callable[[], bool] = lambda: True,
    ):
        self.search, self.understand, self.clean, self.rewriter = search, understand, clean, rewriter
        self.reads = reads  # whether questions are read for their kind and filters (questions.understand)
        self.memory = FocusMemory(self.cited_again)

    def standalone(self, question: str, history: History, rewrite: bool = True) -> Standalone:
        """The (clean) question made self-contained with the history, each text of which is checked first:
        held to the papers in focus when it refers back to them, else rewritten. `rewrite=False` leaves the
        model out (the rule only)."""
        turns = as_turns(history)
        rewriter: Callable[[], Rewriter] = self.rewriter if rewrite else RuleOnly
        search: Search = self.search
        return checked_standalone(
            question, pairs(turns), rewriter, self.clean, lambda: self.held(question, turns, search, rewriter)
        )

    def held(
        self, question: str, turns: list[Turn], search: Search, rewriter: Callable[[], Rewriter]
    ) -> Standalone | None:
        """The follow-up held to the papers in focus (focus.py): those of the last answer, or of the earlier
        one it goes back to ("Going back to the first list, …"), or the latest that holds the places it points
        to."""
        back = gone_back(question, turns, lambda end: len(self.memory.cited_in(turns[:end])) > 1)
        if back is not None:
            end, question = back
            turns = turns[:end]
        focus = self.memory.focus_of(turns)
        if back is None and POINTER.search(question) and pointed(question, len(focus)) is None:
            # "the first three" when the last answer cited one paper: the latest answer before it with that many
            ends = range(len(turns) - 1, max(len(turns) - 4, 0), -1)
            holding = next((end for end in ends if pointed(question, len(self.memory.cited_in(turns[:end])))), None)
            if holding is not None:
                turns = turns[:holding]
                focus = self.memory.focus_of(turns)
        return held_to_focus(question, turns, focus, search, rewriter)

    def cited_again(self, turns: list[Turn]) -> tuple[str, ...]:
        """What the last turn's answer cited, recovered: its [n] markers read against the sources its
        question, with the (at most 4) turns before it, finds again (the same on the same index)."""
        last = turns[-1]
        if not cited_numbers(last.answer, 99):
            return ()  # a refusal, or an answer citing nothing
        earlier = self.standalone(self.clean(last.question, "a question of the history"), turns[-5:-1], rewrite=False)
        asked = earlier.question
        understood = self.understand(asked) if self.reads() else Understood.literal(asked)
        if understood.kind != Kind.LOOKUP and not earlier.focus:
            return ()  # a list's sources come from other searches: not recovered
        applied = understood.applied(Filters())
        sources = self.search(understood.text, None, replace(applied, papers=earlier.focus or applied.papers))
        return tuple(dict.fromkeys(sources[n - 1].paper_id for n in cited_numbers(last.answer, len(sources))))

    def remembering(self, pieces: Iterator[str | Answer], question: str, history: History) -> Iterator[str | Answer]:
        """An answer's stream, passed on; the papers the final answer to `question` cites (as numbered) are
        remembered for this conversation (`history`, then this turn) alone."""
        for piece in pieces:
            if isinstance(piece, Answer):
                self.memory.remember([*as_turns(history), Turn(question, piece.text)], piece.numbered)
            yield piece
