"""The `rag` command: ingest, ask, chat, related, map, stats, eval, ui, serve, mcp, fetch; its options (what
each command does is in rag/commands.py).

Only argparse is imported up front, so `rag --help` is instant. Errors meant for the user
(`RagError`) print as one line on stderr and exit 1; no traceback reaches the terminal. Whatever a command
prints, on stdout and stderr, passes through `terminal_text` (`PlainOutput`): a title, an area or a line of a
questions file holding escape sequences reaches the terminal as plain characters, never as commands to it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, TextIO

from rag.chat_command import run_chat
from rag.commands import (
    run_ask,
    run_eval,
    run_fetch,
    run_ingest,
    run_mcp,
    run_related,
    run_serve,
    run_stats,
    run_ui,
)
from rag.map_command import run_map


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.run is run_mcp:  # stdout carries the MCP protocol's messages (JSON, which escapes what it must)
        return run(args)
    with redirect_stdout(PlainOutput(sys.stdout, keep="\r\n")), redirect_stderr(PlainOutput(sys.stderr, keep="\r")):
        return run(args)


def run(args: argparse.Namespace) -> int:
    """The command, its errors meant for the user as one line on stderr."""
    from rag.core.errors import RagError

    try:
        return args.run(args)
    except RagError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return reader_went_away()


def reader_went_away() -> int:
    """Stdout's reader closed the pipe (`rag stats | head -1`): stop quietly, as Unix tools do.

    Python would otherwise print a traceback, and another one when it flushes stdout at exit;
    pointing stdout at /dev/null silences the second (Python's docs, "Note on SIGPIPE").
    """
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141  # 128 + SIGPIPE: what a shell reports for a tool that a closed pipe stopped


class PlainOutput:
    """A stream (stdout, stderr) whose every write passes through `terminal_text` (rag/core/text.py): the one
    path what the `rag` command prints takes to the terminal. `keep`: control characters passed on where they
    stand together so (stdout keeps the line ends of a CSV export, "\\r\\n"; stderr the carriage return that
    redraws a progress bar in place)."""

    def __init__(self, stream: TextIO, keep: str = ""):
        from rag.core.text import terminal_text

        self.stream, self.keep, self.shown = stream, keep, terminal_text

    def write(self, text: str) -> int:
        parts = text.split(self.keep) if self.keep else [text]
        self.stream.write(self.keep.join(map(self.shown, parts)))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer: the stream's
        return getattr(self.stream, name)


INDEX_HELP = "the index folder to use (sets vectorstore.path, on disk; default: the per-user index)"


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """--config and --index after the command too (`rag ask --index PATH ...`); absent, the top-level ones stand."""
    parser.add_argument("--config", default=argparse.SUPPRESS, help="as the top-level --config")
    parser.add_argument("--index", metavar="PATH", default=argparse.SUPPRESS, help=INDEX_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag", description="Question answering over paper abstracts, with citations.")
    parser.add_argument("--config", help="config name in configs/ or a YAML path (default: $RAG_CONFIG or 'default')")
    parser.add_argument("--index", metavar="PATH", help=INDEX_HELP)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    ingest = commands.add_parser("ingest", help="add paper files to the index (default: the bundled seeds)")
    ingest.add_argument("paths", nargs="*", help="seed .txt, .jsonl, .jsonl.gz or .csv files, or directories")
    ingest.add_argument("--prune", action="store_true", help="remove papers that are not in these files")
    ingest.add_argument("--strict", action="store_true", help="stop at the first bad record instead of skipping it")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--complete", action="store_true", help="give an index built with backend static the model's own vectors"
    )
    add_common_options(ingest)
    ingest.set_defaults(run=run_ingest)

    add_ask_parser(commands)
    add_chat_parser(commands)
    add_related_parser(commands)
    add_map_parser(commands)

    stats = commands.add_parser("stats", help="what the index holds")
    add_common_options(stats)
    stats.set_defaults(run=run_stats)

    add_eval_parser(commands)
    add_serving_parsers(commands)
    add_fetch_parser(commands)
    return parser


def add_ask_parser(commands) -> None:
    ask = commands.add_parser("ask", help="answer a question with cited sources")
    ask.add_argument("question")
    add_asking_options(ask)
    output = ask.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the answer as JSON")
    output.add_argument(
        "--export",
        choices=("bib", "csv", "md"),
        help="print only the cited (or listed) papers as BibTeX, CSV or Markdown, e.g. > refs.bib",
    )
    ask.set_defaults(run=run_ask)


def add_chat_parser(commands) -> None:
    chat = commands.add_parser("chat", help="a conversation in the terminal: follow-ups see the answers before them")
    chat.add_argument("questions", nargs="?", help="a file of questions, one a line, asked in turn (default: typed)")
    add_asking_options(chat)
    chat.set_defaults(run=run_chat)


def add_related_parser(commands) -> None:
    related = commands.add_parser("related", help="the papers most related to a paper (id or title) or to an abstract")
    related.add_argument("paper", nargs="?", default="", help="the paper's OpenReview id, or its title as stored")
    related.add_argument("--file", help="a text file holding your own abstract (a first line before it: its title)")
    related.add_argument("--method", choices=("fused", "dense", "bm25"), default="fused", help="how to rank them")
    related.add_argument("--json", action="store_true", help="print them as JSON")
    related.add_argument("-k", type=papers_k, default=None, help="papers to list (default and bounds: retrieval.k)")
    add_filter_options(related)
    add_common_options(related)
    related.set_defaults(run=run_related)


def add_map_parser(commands) -> None:
    paper_map = commands.add_parser("map", help="the map of the conference: papers placed in 2-D, in themes")
    paper_map.add_argument("--rebuild", action="store_true", help="lay out every paper afresh (else: kept from ingest)")
    paper_map.add_argument("--json", action="store_true", help="print the map as JSON (every paper: x, y, theme)")
    paper_map.add_argument("--html", metavar="FILE", help="also write the map as a page that opens offline")
    paper_map.add_argument(
        "--colour", choices=("theme", "area"), default="theme", help="--html's colours (default: theme)"
    )
    add_filter_options(paper_map)
    add_common_options(paper_map)
    paper_map.set_defaults(run=run_map)


def add_asking_options(parser: argparse.ArgumentParser) -> None:
    """What `rag ask` and `rag chat` take: -k, --no-understand, --explain, the filters, --config and --index."""
    parser.add_argument("-k", type=papers_k, default=None, help="papers to retrieve (default and bounds: retrieval.k)")
    parser.add_argument(
        "--no-understand",
        dest="understand",
        action="store_false",
        default=None,
        help="take the question literally: no filters or list/count/compare read from its words",
    )
    parser.add_argument(
        "--explain", action="store_true", help="also print how a list's line was drawn and a refusal's figures"
    )
    add_filter_options(parser)
    add_common_options(parser)


def add_eval_parser(commands) -> None:
    evaluate = commands.add_parser("eval", help="measure retrieval (and answers) on a question set with gold papers")
    evaluate.add_argument("questions", help="JSON Lines: {question, gold: [paper_id, ...], split, kind}")
    add_common_options(evaluate)
    evaluate.add_argument(
        "-k", "--k", type=papers_k, default=None, help="papers retrieved per question (default and bounds: retrieval.k)"
    )
    evaluate.add_argument("--split", choices=("dev", "test", "all"), default="all", help="which questions")
    evaluate.add_argument("--mode", choices=("dense", "bm25", "hybrid"), help="override retrieval.mode")
    evaluate.add_argument("--answers", action="store_true", help="also answer; report fact recall and citations")
    evaluate.add_argument("--json", action="store_true", help="print the full report, per question, as JSON")
    evaluate.add_argument("--misses", action="store_true", help="list the questions answered wrongly")
    evaluate.set_defaults(run=run_eval)


def add_serving_parsers(commands) -> None:
    """`rag ui`, `rag serve` and `rag mcp`: the commands that serve the index to others."""
    ui = commands.add_parser("ui", help="start the chat app in the browser (Gradio)")
    add_common_options(ui)
    ui.add_argument("--host", help="address to bind (default: ui.host, 127.0.0.1: this machine only)")
    ui.add_argument("--port", type=int, help="port (default: ui.port, 7860)")
    ui.add_argument("--share", action="store_true", default=None, help="also open a public gradio.live link")
    ui.add_argument("--auth-env", help="environment variable holding 'user:password' to require (default: ui.auth_env)")
    ui.set_defaults(run=run_ui)

    serve = commands.add_parser("serve", help="the chat page and an OpenAI-compatible API (/v1) on one port")
    add_common_options(serve)
    serve.add_argument("--host", help="address to bind (default: ui.host, 127.0.0.1; any other needs an API key)")
    serve.add_argument("--port", type=int, help="port (default: ui.port, 7860)")
    serve.add_argument("--auth-env", help="environment variable holding 'user:password' for the chat page")
    serve.set_defaults(run=run_serve)

    mcp = commands.add_parser("mcp", help="an MCP server on stdio: tools search_papers and ask, paper:// resources")
    add_common_options(mcp)
    mcp.set_defaults(run=run_mcp)


def add_fetch_parser(commands) -> None:
    from rag.ingest.fetch import SHORTCUTS

    fetch = commands.add_parser("fetch", help="download a venue's abstracts from OpenReview (needs the internet)")
    sources = fetch.add_subparsers(required=True, metavar="SOURCE")
    options = argparse.ArgumentParser(add_help=False)
    add_common_options(options)
    options.add_argument("--out", help="JSON Lines file to write (default: fetch.folder/VENUE.jsonl)")
    options.add_argument("--ingest", action="store_true", help="then ingest the file into the index")
    options.add_argument("--quiet", action="store_true", help="no progress bar")
    openreview = sources.add_parser("openreview", parents=[options], help="any OpenReview API v2 venue")
    openreview.add_argument("venue", metavar="VENUE_ID", help="e.g. NeurIPS.cc/2024/Conference")
    openreview.set_defaults(run=run_fetch)
    for name, venue in SHORTCUTS.items():
        shortcut = sources.add_parser(name, parents=[options], help=f"short for: openreview {venue}")
        shortcut.set_defaults(run=run_fetch, venue=venue)


def papers_k(text: str) -> int:
    """-k is held to the bounds of retrieval.k."""
    from rag.core.config import checked_k
    from rag.core.errors import InputError

    try:
        return checked_k(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """One option per field of `Filters`, from its declaration."""
    from rag.core.filters import FIELDS

    for spec in FIELDS:
        if spec.match == "one_of":
            parser.add_argument(
                spec.option, dest=spec.name, action="append", default=[], help=f"{spec.help} (repeatable)"
            )
        elif spec.match == "equals":
            parser.add_argument(spec.option, dest=spec.name, action=argparse.BooleanOptionalAction, help=spec.help)
        else:
            parser.add_argument(spec.option, dest=spec.name, default="", help=spec.help)


if __name__ == "__main__":
    sys.exit(main())
