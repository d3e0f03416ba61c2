"""The papers in focus, picked on the page: which of the last answer's papers a follow-up that refers
back is asked of.

The page shows the last answer's sources as ticks, the papers it cited ticked (the focus the answer
leaves by itself). Ticking others sets the focus for the next question through the conversation's
history (the last `Turn` carries the picked papers), the same mechanism every interface uses
(rag/question/focus.py); nothing here decides whether a follow-up refers back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from rag.core.types import Answer
from rag.question.focus import History, Turn
from ui.render import focus_choices

FOCUS_LABEL = "Papers in focus: a follow-up that refers back (“what dataset do they use?”) is asked of these"
# The papers the picker offers: an answer's first ones, as the panel ranks them. A list or an overview cites
# dozens; a follow-up asked of all of them is not about "them", and a tick per paper would fill the page.
FOCUS_CHOICES = 8


@dataclass(frozen=True)
class FocusPicker:
    """The picker on the page, and what goes with it: its clear button, the number of answers it is for
    (`shown_for`), and the ticks a person made on it (`ticked`; None: the focus the answer left)."""

    picker: gr.CheckboxGroup
    clear: gr.Button
    shown_for: gr.State
    ticked: gr.State

    @property
    def updated(self) -> list[Any]:
        """What `focus_updates` sets, in its order."""
        return [self.picker, self.clear, self.shown_for, self.ticked]


def focus_picker() -> FocusPicker:
    """The last answer's papers as ticks, and a button that unticks them all; hidden until an answer has sources.

    The ticks go to a State as they are made: a question is sent with them, never with the picker's value,
    which may still be an earlier answer's while the last answer's events run (Gradio refused those as not
    among the choices, and the question failed); `history_for` keeps only papers the answer offered."""
    with gr.Row(elem_id="rag-focus-row", equal_height=False):
        picker = gr.CheckboxGroup(
            [], value=[], label=FOCUS_LABEL, elem_id="rag-focus-picker", visible=False, scale=6, container=True
        )
        clear = gr.Button("Clear focus", elem_id="rag-focus-clear", size="sm", visible=False, scale=1, min_width=90)
    focus = FocusPicker(picker, clear, gr.State(0), gr.State(None))
    private: dict[str, Any] = {"api_visibility": "private", "queue": False}
    clear.click(cleared, inputs=[focus.shown_for], outputs=[picker, focus.shown_for], **private)
    picker.input(lambda papers: papers, inputs=[picker], outputs=[focus.ticked], **private)
    return focus


def focus_updates(answers: list[Answer | None]) -> tuple[dict, dict, int, None]:
    """The picker and its clear button for the last answer (its first FOCUS_CHOICES sources, those it cited
    ticked: the focus of its next follow-up), the number of answers the picker is for (a question sent
    before the picker caught up is asked as if nothing were picked), and no ticks made on it yet."""
    last = answers[-1] if answers else None
    if last is None or not last.sources:
        return gr.update(choices=[], value=[], visible=False), gr.update(visible=False), len(answers), None
    choices = focus_choices(last)
    offered = choices[:FOCUS_CHOICES]
    more = f" (the first {len(offered)} of its {len(choices)} papers)" if len(choices) > len(offered) else ""
    label = FOCUS_LABEL + more
    ticked = [paper for _, paper in offered if paper in set(last.cited)]
    picker = gr.update(choices=offered, value=ticked, label=label, visible=True)
    return picker, gr.update(visible=True), len(answers), None


def history_for(answers: list[Answer | None], picked: list[str] | None, picked_for: int | None = None) -> History:
    """The conversation the next question is asked with: each answered turn, the last one carrying the
    papers picked (for these `answers`: `picked_for` is their number) when they differ from those it
    cited; none at all when "Clear focus" cleared it (`picked_for` is then minus their number). No ticks
    alone don't clear it: the page may not yet show the ticks of the last answer when a question is sent."""
    turns: list[Any] = [(answer.question, answer.text) for answer in answers if answer is not None]
    last = answers[-1] if answers else None
    if last is not None and picked_for == -len(answers):
        return []  # cleared: the next question is asked on its own
    if not picked or picked_for != len(answers) or last is None or set(picked) == set(last.cited):
        return turns  # the focus the answer left by itself (remembered by the service)
    order = [source.paper_id for source in last.sources]
    papers = tuple(sorted(set(picked) & set(order), key=order.index))
    return [*turns[:-1], Turn(last.question, last.text, papers)] if papers else turns


def cleared(picked_for: int) -> tuple[dict, int]:
    """ "Clear focus": no ticks, and the mark that the next question is asked without the conversation."""
    return gr.update(value=[]), -abs(picked_for)
