"""The page's widgets that hold no behaviour of their own: the chat window, the question box, the chips of the
filters understood, the download buttons and the filter pickers. ui/app.py lays them out and wires them."""

from __future__ import annotations

import gradio as gr

from rag.core.export import ExportFormat
from rag.core.filters import PICKERS

# The download buttons under the sources panel: format -> label (elem_id rag-download-<format>).
DOWNLOADS: dict[ExportFormat, str] = {"bib": "BibTeX", "csv": "CSV", "md": "Markdown"}


def chat_window() -> gr.Chatbot:
    """The conversation: the questions asked and the answers, each as the HTML ui.render builds."""
    return gr.Chatbot(
        elem_id="rag-chat",
        label="Chat",
        height=520,
        # Answers arrive as HTML built from escaped text (ui.render); no Markdown, LaTeX or
        # custom tags, so nothing in an abstract or an answer can become markup.
        render_markdown=False,
        sanitize_html=True,
        allow_tags=False,
        latex_delimiters=[],
        feedback_options=None,
        buttons=["copy_all"],
        layout="panel",
    )


def question_box() -> gr.Textbox:
    """Where the question is typed; Enter asks it."""
    return gr.Textbox(
        elem_id="rag-question",
        placeholder="Ask about the papers, e.g. how does RxnFlow keep molecules synthesizable?",
        show_label=False,
        scale=6,
        max_lines=4,
    )


def understood_chips() -> gr.CheckboxGroup:
    """The filters read from the last question, ticked; hidden until a question has some."""
    return gr.CheckboxGroup(
        [],
        label="Filters understood from your question (untick one to ask without it)",
        elem_id="rag-understood",
        visible=False,
    )


def download_buttons() -> list[gr.DownloadButton]:
    """The latest answer's papers to take away, one button per format; hidden until an answer cites some."""
    with gr.Row(elem_id="rag-downloads"):
        return [
            gr.DownloadButton(label, visible=False, size="sm", min_width=90, elem_id=f"rag-download-{fmt}")
            for fmt, label in DOWNLOADS.items()
        ]


def filter_inputs(choices: dict[str, list[str]]) -> list[gr.Dropdown]:
    """A picker per filter declared with one (status, primary area), shown only when the index records its field."""
    with gr.Accordion("Filters", open=False, visible=any(choices.values()), elem_id="rag-filters"):
        return [
            gr.Dropdown(
                choices.get(spec.name, []),
                multiselect=True,
                label=spec.label,
                elem_id=f"rag-{spec.name.replace('_', '-')}",
                value=[],
            )
            for spec in PICKERS
        ]
