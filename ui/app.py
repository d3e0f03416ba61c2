"""The Gradio chat app: `build_app(service)` lays out the page, `ChatHandlers` answer its events.

Everything the app knows comes from the `RagService` passed in; handlers call it and turn the
`Answer`s (or `RagError`s) into the page's HTML with `ui.render`. The per-browser conversation
lives in a `gr.State` (the list of answers so far), never in module globals.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from html import escape
from pathlib import Path
from typing import Any, Protocol

import gradio as gr
from pydantic import BaseModel, ValidationError

from rag.core.config import Settings
from rag.core.errors import RagError, first_problem
from rag.core.export import ExportFormat, answer_papers
from rag.core.filters import Filters, as_filters
from rag.core.types import Answer
from rag.question.focus import History
from ui.focus import focus_picker, focus_updates, history_for
from ui.paper_map import map_view
from ui.related import sources_panel
from ui.render import (
    answer_html,
    answer_payload,
    error_html,
    header_html,
    sources_panel_html,
    streaming_html,
)
from ui.style import CSS, SCRIPT
from ui.tally import tally_view
from ui.widgets import DOWNLOADS, chat_window, download_buttons, filter_inputs, question_box, understood_chips

log = logging.getLogger(__name__)

SEARCHING = '<p class="rag-answer rag-streaming">Searching the abstracts…</p>'
TITLE = "Ask the ICLR 2025 abstracts"


def message(role: str, html: str) -> dict[str, str]:
    return {"role": role, "content": html}


def question_html(question: str) -> str:
    return escape(question) if question.strip() else "<em>(empty question)</em>"


class ChatService(Protocol):
    """What the page asks of its service: a `RagService`, or under `rag serve` one whose answers take one of
    the slots the page and the API share (ui/slots.py)."""

    @property
    def config(self) -> Settings: ...

    def model_label(self) -> str: ...

    def stats(self) -> dict: ...

    def filter_choices(self) -> dict[str, list[str]]: ...

    def stream_answer(
        self,
        question: str,
        *,
        history: History | None = ...,
        filters: Filters | None = ...,
        dropped: Iterable[str] = ...,
    ) -> Iterator[str | Answer]: ...

    def answer(self, question: str, *, history: History | None = ..., filters: Filters | None = ...) -> Answer: ...


class ChatHandlers:
    """The app's event handlers: each calls the service and returns what the page shows."""

    def __init__(self, service: ChatService):
        self.service = service
        self.files = ExportFiles()

    def header(self) -> str:
        return header_html(self.service.model_label(), self.service.stats())

    def respond(
        self,
        question: str,
        chat: list[dict],
        answers: list[Answer | None],
        focus: list[str] | None = None,
        focus_for: int | None = None,
        *picked: list[str] | None,
    ) -> Iterator[tuple[list[dict], list[Answer | None], str, str]]:
        """Stream one answer into the chat: (chat, answers, sources panel, question box) per step.

        Each turn adds a user and an assistant message and one entry to `answers` (None for an
        error), so assistant message i // 2 belongs to answers[i // 2]. `focus`: the papers ticked in
        the focus picker for the first `focus_for` answers (None: the focus the last answer left);
        `picked`: the filter pickers' values.
        """
        history = history_for(answers, focus, focus_for)
        yield from self._turn(question, chat, answers, Filters.from_pickers(picked), history=history)

    def drop_understood(
        self, ticked: list[str], chat: list[dict], answers: list[Answer | None], *picked: list[str] | None
    ) -> Iterator[tuple[list[dict], list[Answer | None], str, str]]:
        """A chip of an understood filter was unticked: ask the last question again without it."""
        last = answers[-1] if answers else None
        if last is None:
            return
        dropped = {label.split(":")[0] for label in last.understood if label not in (ticked or [])}
        yield from self._turn(last.question, chat, answers, Filters.from_pickers(picked), dropped)

    def chips(self, answers: list[Answer | None]) -> dict:
        """The last answer's understood filters as ticked chips; hidden when there are none."""
        understood = answers[-1].understood if answers and answers[-1] is not None else []
        return gr.update(choices=understood, value=understood, visible=bool(understood))

    def _turn(
        self,
        question: str,
        chat: list[dict],
        answers: list[Answer | None],
        filters: Filters,
        dropped=frozenset(),
        history: History | None = None,
    ) -> Iterator[tuple[list[dict], list[Answer | None], str, str]]:
        turn = len(answers)
        if history is None:
            history = [(answer.question, answer.text) for answer in answers if answer is not None]
        chat = [*chat, message("user", question_html(question))]
        yield [*chat, message("assistant", SEARCHING)], answers, sources_panel_html(None, turn), ""
        streamed = ""
        try:
            for piece in self.service.stream_answer(question, history=history, filters=filters, dropped=dropped):
                if isinstance(piece, Answer):
                    answers = [*answers, piece]
                    chat = [*chat, message("assistant", answer_html(piece, turn))]
                    yield chat, answers, sources_panel_html(piece, turn), ""
                    return
                streamed += piece
                yield [*chat, message("assistant", streaming_html(streamed))], answers, gr.skip(), ""
            failure = "the answer stream ended without an answer"
        except RagError as err:
            failure = str(err)
        except Exception as err:  # a bug must still end the spinner with a message, not a frozen chat
            log.exception("answering %r failed", question)
            failure = unexpected(err)
        yield (
            [*chat, message("assistant", error_html(failure))],
            [*answers, None],
            '<div class="rag-panel-empty">No sources: the question was not answered.</div>',
            question,
        )

    def show_sources(self, answers: list[Answer | None], selected: gr.SelectData) -> str:
        """Clicking a message shows the sources of its turn in the panel."""
        index = selected.index[0] if isinstance(selected.index, list | tuple) else selected.index
        turn = int(index) // 2
        if not 0 <= turn < len(answers) or answers[turn] is None:
            return gr.skip()
        return sources_panel_html(answers[turn], turn)

    def downloads(self, answers: list[Answer | None]) -> list[gr.DownloadButton]:
        """The download buttons for the latest answer: a file per format of the papers it cites (or
        lists), or hidden when it has none (a refusal, an error, an empty chat)."""
        latest = answers[-1] if answers else None
        if latest is None or not answer_papers(latest):
            return [gr.DownloadButton(value=None, visible=False) for _ in DOWNLOADS]
        return [gr.DownloadButton(value=str(self.files.write(latest, fmt)), visible=True) for fmt in DOWNLOADS]

    def clear(self) -> tuple[list, list, str, str]:
        """ "Clear chat", or the chat's own clear icon: the answers go, and after them the focus, the chips and
        the panels (an empty chat must leave no paper in focus for the next question)."""
        return [], [], sources_panel_html(None, 0), ""

    def ask(
        self,
        question: str,
        history: list[list[str]] | None = None,
        status: list[str] | None = None,
        primary_area: list[str] | None = None,
        export: str | None = None,
    ) -> dict[str, Any]:
        """Answer a question from the indexed abstracts, with cited sources.

        Args:
            question: the question.
            history: earlier [question, answer] pairs of the conversation, oldest first, for follow-ups.
            status: only papers with one of these statuses (e.g. ["Oral", "Spotlight"]).
            primary_area: only papers of one of these primary areas.
            export: "bib", "csv" or "md": also return the cited (or listed) papers as BibTeX, CSV or Markdown.
        Returns:
            {question, text, cited, refused, fallback, sources: [{number, paper_id, title, score, status,
            url, github, passage}], standalone_question, config}, plus `export` (text) when asked for;
            `[n]` in text is sources[n - 1].
        """
        try:
            call = AskCall(question=question, history=history, status=status, primary_area=primary_area, export=export)
        except ValidationError as err:  # API clients send anything: name the value, don't log a traceback
            where, what = first_problem(err.errors())
            raise gr.Error(f"/ask {where}: {what}", print_exception=False) from None
        # Read as a `FilterSpec`, as /v1, MCP and LangChain read theirs.
        filters = as_filters({"status": call.status or [], "primary_area": call.primary_area or []})
        try:
            answer = self.service.answer(call.question, history=call.history or [], filters=filters)
            return answer_payload(answer, export=call.export)
        except RagError as err:
            raise gr.Error(str(err), print_exception=False) from None
        except Exception as err:  # a bug: still a reason for the client, not Gradio's bare {"error": null}
            log.exception("/ask %r failed", call.question)
            raise gr.Error(unexpected(err), print_exception=False) from None


def unexpected(err: Exception) -> str:
    return f"unexpected {type(err).__name__}; the details are in the server log"


class AskCall(BaseModel):
    """The values of an `/ask` call, checked before they reach the service."""

    question: str
    history: list[tuple[str, str]] | None = None
    status: list[str] | None = None
    primary_area: list[str] | None = None
    export: ExportFormat | None = None


class ExportFiles:
    """The files the download buttons serve: one per answer and format, named by a hash of its text,
    in a folder of the system's temp directory (whose files Gradio may serve; it copies them to its
    cache), made when first needed and removed when the process ends."""

    def __init__(self) -> None:
        self.folder: tempfile.TemporaryDirectory | None = None

    def write(self, answer: Answer, fmt: ExportFormat) -> Path:
        if self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="abstract-rag-exports-")
        text = answer.export(fmt)
        path = Path(self.folder.name, hashlib.sha256(text.encode()).hexdigest()[:16], f"references.{fmt}")
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            # Written aside, then renamed: another session asking for the same file never reads half of it.
            handle, partial = tempfile.mkstemp(dir=path.parent)
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(text)
            os.replace(partial, path)
        return path


# The page's own loading is not queued: a full queue (`ui.max_queue`) would turn it away, leaving the page
# without its header or map and telling someone who asked nothing that the app is busy.
PAGE_LOAD = {"queue": False}


def build_app(service: ChatService) -> gr.Blocks:
    """The chat app over `service`, its queue sized from `service.config.ui`. Launch it with `launch`."""
    settings = service.config.ui
    handlers = ChatHandlers(service)
    choices = service.filter_choices()
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        gr.HTML(f"<h1 class='rag-title'>{TITLE}</h1>")
        header = gr.HTML(elem_id="rag-header")
        answers = gr.State([])
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                chatbot = chat_window()
                with gr.Row():
                    question = question_box()
                    ask = gr.Button("Ask", variant="primary", elem_id="rag-ask", scale=1, min_width=80)
                    clear = gr.Button("Clear chat", elem_id="rag-clear", scale=1, min_width=80)
                focus = focus_picker()
                examples = gr.Examples(
                    examples=[[text] for text in settings.examples], inputs=[question], label="Example questions"
                )
                understood = understood_chips()
                pickers = filter_inputs(choices)
            with gr.Column(scale=2):
                panel = sources_panel(service, sources_panel_html(None, 0))  # a card's "More like this" shows below
                downloads = download_buttons()
                tally_of = tally_view(answers)
        map_of = map_view(service, answers, pickers)  # the map of the conference, under the chat (ui/paper_map.py)

        outputs = [chatbot, answers, panel, question]
        respond: dict[str, Any] = {
            "fn": handlers.respond,
            "inputs": [question, chatbot, answers, focus.ticked, focus.shown_for, *pickers],
            "outputs": outputs,
            "api_visibility": "private",
            "concurrency_id": "answer",
            "show_progress": "minimal",
        }
        private: dict[str, Any] = {"api_visibility": "private"}
        show_chips = {"fn": handlers.chips, "inputs": [answers], "outputs": [understood], **private}
        # After every change of the answers (an answer, an error, a cleared chat), the chips, the
        # downloads and the papers in focus follow. Chained with `.then`, not `answers.change`: Gradio spots
        # a changed State by hashing its value, and an Answer (a frozen dataclass holding lists) can't be hashed.
        downloads_of = {"fn": handlers.downloads, "inputs": [answers], "outputs": downloads, **private}
        focus_of = {"fn": focus_updates, "inputs": [answers], "outputs": focus.updated, **private}

        def refresh(event: Any) -> None:
            event.then(**show_chips).then(**downloads_of).then(**focus_of).then(**tally_of).then(**map_of)

        refresh(gr.on([question.submit, ask.click], **respond))
        refresh(examples.load_input_event.then(**respond))
        redo = {**respond, "fn": handlers.drop_understood, "inputs": [understood, chatbot, answers, *pickers]}
        refresh(understood.input(**redo))
        refresh(gr.on([clear.click, chatbot.clear], handlers.clear, outputs=outputs, queue=False, **private))
        chatbot.select(handlers.show_sources, inputs=[answers], outputs=[panel], api_visibility="private")
        demo.load(handlers.header, outputs=[header], api_visibility="private", **PAGE_LOAD)
        demo.load(**map_of | PAGE_LOAD)  # beside the header, not after it: the model loads there
        gr.api(handlers.ask, api_name="ask", concurrency_id="answer")
    demo.queue(default_concurrency_limit=settings.concurrency_limit, max_size=settings.max_queue)
    return demo


def launch(
    demo: gr.Blocks,
    host: str,
    port: int,
    share: bool = False,
    auth: tuple[str, str] | None = None,
    block: bool = True,
    trusted_proxies: Sequence[object] = (),
) -> str:
    """Serve the app; returns its local URL (at once when `block` is False, else when it stops). A request's address
    is the connection's, or, from one of `trusted_proxies` (`ui.trusted_proxies`), the one it forwards: Gradio's
    uvicorn reads which from FORWARDED_ALLOW_IPS, and would otherwise believe X-Forwarded-For from loopback (a
    login's failures counted per address a client makes up)."""
    from ui.guard import gradio_app_options

    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(str(address) for address in trusted_proxies)

    _, url, share_url = demo.launch(
        server_name=host,
        server_port=port,
        share=share,
        auth=auth,
        prevent_thread_lock=True,
        css=CSS,
        js=SCRIPT,
        footer_links=["api"],
        show_error=False,
        quiet=True,  # Gradio's own banner suggests `share=True` in code; ours names the CLI option
        **gradio_app_options(),  # what a client without a login reaches; no uploads, no route list
    )
    if block:
        where = f"{url} and {share_url}" if share_url else url
        print(f"Chat app running at {where} (Ctrl-C stops it)", flush=True)
        demo.block_thread()
    return url
