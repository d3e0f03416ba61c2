"""The `rag` command: ingest, ask, stats, eval, ui.

Only argparse is imported up front, so `rag --help` is instant. Errors meant for the user
(`RagError`) print as one line on stderr and exit 1; no traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from rag.errors import RagError

    try:
        return args.run(args)
    except RagError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; run the same command again to continue", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag", description="Question answering over paper abstracts, with citations.")
    parser.add_argument("--config", help="config name in configs/ or a YAML path (default: $RAG_CONFIG or 'default')")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    ingest = commands.add_parser("ingest", help="add paper files to the index (default: the bundled seeds)")
    ingest.add_argument("paths", nargs="*", help="seed .txt, .jsonl, .jsonl.gz or .csv files, or directories")
    ingest.add_argument("--prune", action="store_true", help="remove papers that are not in these files")
    ingest.add_argument("--strict", action="store_true", help="stop at the first bad record instead of skipping it")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(run=run_ingest)

    ask = commands.add_parser("ask", help="answer a question with cited sources")
    ask.add_argument("question")
    ask.add_argument("-k", type=int, default=None, help="number of papers to retrieve")
    ask.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_filter_options(ask)
    ask.set_defaults(run=run_ask)

    stats = commands.add_parser("stats", help="what the index holds")
    stats.set_defaults(run=run_stats)
    return parser


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", action="append", default=[], help="only papers with this status (repeatable)")
    parser.add_argument("--area", action="append", default=[], help="only papers of this primary area (repeatable)")
    parser.add_argument("--author", default="", help="only papers with an author name containing this")
    parser.add_argument("--has-code", action="store_true", default=None, help="only papers that link to GitHub")


def filters_from(args: argparse.Namespace):
    from rag.retrieval import Filters

    return Filters(tuple(args.status), tuple(args.area), args.author, args.has_code)


def service_from(args: argparse.Namespace):
    from rag.service import RagService

    return RagService(args.config)


def run_ingest(args: argparse.Namespace) -> int:
    report = service_from(args).ingest(args.paths, prune=args.prune, strict=args.strict, progress=not args.quiet)
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(report.summary())
    return 0


def run_ask(args: argparse.Namespace) -> int:
    from rag.results import Answer

    service = service_from(args)
    final, streamed = None, []
    for piece in service.stream_answer(args.question, k=args.k, filters=filters_from(args)):
        if isinstance(piece, Answer):
            final = piece
        elif not args.json:
            streamed.append(piece)
            print(piece, end="", flush=True)
    if args.json:
        print(json.dumps(final.to_dict(), indent=2, ensure_ascii=False))
        return 0
    if streamed:
        print()
    if final.fallback:
        print(f"\n[the model failed: {final.fallback}; extractive answer instead]")
    if not streamed or final.fallback or final.text != "".join(streamed):
        print(("\nChecked answer:\n" if streamed else "") + final.text)
    print("\nSources:")
    for number, source in enumerate(final.sources, start=1):
        mark = "*" if source.paper_id in final.cited else " "
        print(f"{mark}[{number}] {source.title} ({source.paper_id}) score {source.score:.3f}")
    return 0


def run_stats(args: argparse.Namespace) -> int:
    for key, value in service_from(args).stats().items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
