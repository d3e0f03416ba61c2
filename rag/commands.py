"""What each `rag` command does (its options are in rag/cli.py): each handler takes the parsed
options and returns the exit status.

Like rag/cli.py, this imports only the standard library up front, so `rag --help` is instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: nothing beyond the standard library is imported up front
    from tqdm import tqdm

    from rag.retrieval.related import Method


def filters_from(args: argparse.Namespace):
    from rag.core.filters import FIELDS, Filters

    return Filters.of(**{spec.name: getattr(args, spec.name) for spec in FIELDS})


def service_from(args: argparse.Namespace, **overrides: dict):
    """The service for --config (else $RAG_CONFIG, else default) and --index, some sections' keys overridden."""
    from rag.core.config import with_overrides
    from rag.service import RagService

    if args.index is not None:
        if not args.index.strip():
            from rag.core.errors import InputError

            raise InputError("--index: empty; give the index folder's path")
        overrides["vectorstore"] = {"mode": "persistent", "path": args.index}
    return RagService(with_overrides(args.config, **overrides))


def run_ingest(args: argparse.Namespace) -> int:
    if args.complete:
        if args.paths or args.prune:
            from rag.core.errors import InputError

            raise InputError("--complete takes no files and no --prune: it embeds the papers the index holds")
        print(complete_static(service_from(args), progress=not args.quiet))
        return 0
    report = service_from(args).ingest(args.paths, prune=args.prune, strict=args.strict, progress=not args.quiet)
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(report.summary())
    if report.map_error:  # the papers are stored all the same (rag/answering/paper_map.py, with_map)
        print(f"error: {report.map_error}", file=sys.stderr)
    if report.problems:
        print(f"error: skipped {len(report.problems)} bad lines or files (warnings above)", file=sys.stderr)
    return 1 if report.problems or report.map_error else 0


def complete_static(service, progress: bool) -> str:
    """`rag ingest --complete` on the service's index of static vectors (rag/ingest/complete.py): its summary."""
    from dataclasses import replace

    from rag.answering.paper_map import update_map
    from rag.core.errors import InputError
    from rag.index.setup import IndexSetup
    from rag.index.store import PaperIndex
    from rag.ingest.complete import complete

    setup = IndexSetup.of(service.choice.config)
    if not service.index_exists or setup.vectors != "static":
        built = f"holds the model's own vectors ({setup.label()})" if service.index_exists else "holds no index"
        raise InputError(f"the index {service.where} {built}; --complete completes one built with backend static")
    full = replace(setup, backend="onnx-int8")
    with service.access.writing_here(opened="client" in service.__dict__):
        target = PaperIndex(service.client, full.collection_name(), service.embeddings, service.where, None, full)
        maps: list[str] = []
        done = complete(
            service.index, target, service.embeddings, progress, lambda: maps.append(update_map(target).summary())
        )
    return f"{done.summary()}; {maps[0]}"


def run_fetch(args: argparse.Namespace) -> int:
    from rag.core.config import load_config
    from rag.ingest.fetch import fetch_venue, output_file, resolve_venue

    config = load_config(args.config).fetch
    venue = resolve_venue(args.venue)
    out = output_file(args.out, venue, config)
    bars: list[tqdm] = []  # made at the first page, so a venue that fails at once prints only its error

    def progress(done: int, total: int) -> None:
        if not bars:
            from tqdm import tqdm

            bars.append(tqdm(total=total, unit="paper", desc="fetch", file=sys.stderr, dynamic_ncols=True))
        bars[0].update(done - bars[0].n)

    try:
        report = fetch_venue(
            venue, out, config, on_progress=None if args.quiet or not sys.stderr.isatty() else progress
        )
    finally:
        for bar in bars:
            bar.close()
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(report.summary())
    if args.ingest:
        args.paths, args.prune, args.strict, args.complete = [out], False, False, False
        return run_ingest(args)
    return 0


def run_ask(args: argparse.Namespace) -> int:
    """The checked answer, once, with who wrote it and its sources best first.

    On a terminal the answer's sentences show as they are checked (what streams is the answer: it is
    not printed again); piped or with --json, the whole answer is printed when it is ready. With
    --export, stdout holds the export alone (so `> refs.bib` is a clean file) and one line on stderr
    says what it holds.
    """
    from rag.core.text import terminal_json
    from rag.core.types import Answer

    service = service_from(args)
    streamed = TerminalStream(sys.stdout) if sys.stdout.isatty() and not (args.json or args.export) else None
    final = None
    try:
        asked = service.stream_answer(args.question, k=args.k, filters=filters_from(args), understand=args.understand)
        for piece in asked:
            if isinstance(piece, Answer):
                final = piece
            elif streamed:
                streamed.write(piece)
    finally:
        if streamed:
            streamed.end()
    assert final is not None  # the stream ends with the Answer
    if args.json:
        print(terminal_json(final.to_dict()))
        return 0
    if args.export:
        return print_export(final, args.export)
    print_answer(final, service, printed=bool(streamed and streamed.text), explain=args.explain)
    return 0


def print_answer(final, service, printed: bool = False, explain: bool = False) -> None:
    """The checked answer as `rag ask` and `rag chat` print it: its text (unless its stream `printed` it
    already), what it was asked as and the papers a follow-up was held to, who wrote it, and the sources
    best first; with `explain`, how a list's line was drawn and a refusal's figures. Plain lines, for any screen
    reader."""
    from rag.core.markup import plain_text
    from rag.core.types import by_relevance

    if not printed:
        print(plain_text(final.text))
    if final.focus:
        papers = [
            f"[{number}] “{plain_text(source.title)}”"
            for number, source in enumerate(final.sources, start=1)
            if source.paper_id in final.focus
        ]
        print(f"(a follow-up on {', '.join(papers)}, asked as: {final.standalone_question})")
    elif final.standalone_question and final.standalone_question != final.question:
        print(f"(asked as: {final.standalone_question})")
    if explain and final.line and not final.refused:  # thresholds and scores: for those who ask (--explain)
        print(f"({final.line})")
    if final.understood:
        print(f"(filters understood from the question: {'; '.join(final.understood)}; --no-understand to drop them)")
    if final.refused:
        if explain and final.refusal_reason:
            print(f"(not answered: {final.refusal_reason})")
        return  # the text names the closest papers
    if note := final.provenance(service.model_label() if final.answered_by == "model" else ""):
        print(f"({note})")
    if final.table:
        print(f"\n{final.table.plain()}")
    if final.sources:
        print("\nSources, best match first (* cited):")
    for number, source in by_relevance(final.sources):
        mark = "*" if source.paper_id in final.cited else " "
        print(f"{mark}[{number}] {plain_text(source.title)} ({source.paper_id}), relevance {source.relevance:.0%}")


def run_related(args: argparse.Namespace) -> int:
    """The papers most related to a stored paper or to the abstract in --file, with the sentences that tie
    each to it, cited as `rag ask` cites ([1] is the given paper), then the sources; --json: as /v1/related."""
    from pathlib import Path

    from rag.answering.related import find_related
    from rag.core.errors import InputError
    from rag.core.markup import plain_text
    from rag.core.text import terminal_json

    if args.paper.strip() and args.file:
        raise InputError("give a paper (its id or title) or --file with your abstract, not both")
    if not args.paper.strip() and not args.file:
        raise InputError("give a paper's id or title, or --file with your abstract")
    abstract = None
    if args.file:
        try:
            abstract = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"cannot read the abstract from {args.file}: {err}") from None
        if not abstract.strip():
            raise InputError(f"{args.file} is empty: it should hold your abstract")
    service = service_from(args)
    found = find_related(service, args.paper, abstract, args.k, filters_from(args), args.method)
    if args.json:
        print(terminal_json(found.to_payload()))
        return 0
    print(plain_text(found.text))
    print("\nSources ([1] is the paper given):")
    for number, source in enumerate(found.sources, start=1):
        print(f"[{number}] {plain_text(source.title)} ({source.paper_id})")
    return 0


def print_export(answer, fmt: str) -> int:
    """The answer's papers in `fmt` on stdout, exactly; what they are (or why there are none) on stderr."""
    from rag.core.export import answer_papers

    papers = answer_papers(answer)
    sys.stdout.write(answer.export(fmt))
    if answer.refused:
        why = answer.refusal_reason or "no abstract answers it"
        print(f"not answered ({why}): no papers to export", file=sys.stderr)
    else:
        print(f"exported {len(papers)} paper{'' if len(papers) == 1 else 's'} as {fmt}", file=sys.stderr)
    return 0


class TerminalStream:
    """The answer's checked sentences, printed as they come, as the final answer prints them (plain text)."""

    def __init__(self, out):
        self.out = out
        self.text = ""

    def write(self, piece: str) -> None:
        from rag.core.markup import plain_text

        # Each piece is whole sentences (" " before all but the first): read as text one by one, they
        # read as the whole answer does.
        lead = " " if piece.startswith(" ") else ""
        shown = lead + plain_text(piece[len(lead) :])
        self.out.write(shown)
        self.out.flush()
        self.text += shown

    def end(self) -> None:
        """The line the stream printed, ended: what follows (the provenance, the sources, an error) starts its own."""
        if self.text:
            self.out.write("\n")
            self.out.flush()


def run_stats(args: argparse.Namespace) -> int:
    for key, value in service_from(args).stats().items():
        print(f"{key}: {value}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from rag.core.text import terminal_json
    from rag.evaluation.counts import evaluate_counts, is_count_set
    from rag.evaluation.questions import ServiceSystem, evaluate, load_questions, metrics_table
    from rag.evaluation.related import is_related_file
    from rag.evaluation.themes import is_overview_set, overview_report, report_table

    if is_related_file(args.questions):  # hand-labelled related papers (tests/eval/related_questions.jsonl)
        return run_related_eval(args)

    if is_count_set(args.questions):  # counting questions: every figure exact, against a direct count
        counts = evaluate_counts(service_from(args), args.questions, args.split)
        print(json.dumps(counts.to_dict(), indent=2) if args.json else counts.table(misses=args.misses))
        return 0
    if is_overview_set(args.questions):  # overview questions: how well the themes separate papers
        overview = overview_report(service_from(args), args.questions, args.split)
        print(terminal_json(overview) if args.json else report_table(overview))
        return 0
    questions = load_questions(args.questions, args.split)
    service = service_from(args, retrieval={"mode": args.mode} if args.mode else {})
    system = ServiceSystem(service, answers=args.answers)
    missing = system.missing(questions)
    if missing and len(missing) == len({pid for q in questions for pid in q.gold}):
        from rag.core.errors import InputError

        raise InputError(f"none of the gold papers of {args.questions} is in the index; ingest their list first")
    k = args.k or service.config.retrieval.k
    report = evaluate(system, questions, k, label=args.questions, split=args.split)
    report.missing_gold = missing
    if args.json:
        print(terminal_json(report.to_dict()))
        return 0
    print(metrics_table([report]))
    if missing:
        from rag.core.wording import counted

        print(
            f"warning: {counted(len(missing), 'gold paper')} not in the index: {', '.join(missing[:10])}",
            file=sys.stderr,
        )
    if args.misses:
        for row in report.misses():
            what = "refused" if row.refused else f"rank {row.rank() or '>' + str(k)}"
            print(f"  {row.split:4} {row.kind:12} {what:9} {row.question[:100]}")
        for row in report.fact_misses():
            assert row.text is not None  # fact_misses keeps answered questions only
            what = "refused" if row.refused else f"lacks {', '.join(row.missing_facts)}"
            print(f"  {row.split:4} {row.kind:12} {what} | {row.question[:80]}\n       answer: {row.text[:300]}")
    return 0


def run_related_eval(args: argparse.Namespace) -> int:
    """Precision at k of the related papers of each labelled paper; --mode picks the ranking (hybrid: fused)."""
    from rag.evaluation.related import held_by, load_related_sets, measure, ranked_by, related_table

    service = service_from(args)
    labelled = load_related_sets(args.questions, args.split)
    sets = held_by(service, labelled, args.questions)
    if len(sets) < len(labelled):
        missing = len(labelled) - len(sets)
        print(f"warning: {missing} of the papers are not in the index; measured without them", file=sys.stderr)
    method: Method = "dense" if args.mode == "dense" else "bm25" if args.mode == "bm25" else "fused"
    result = measure(ranked_by(service, method), sets, args.k or 5)
    print(json.dumps(result, indent=2) if args.json else related_table(args.questions, args.split, {method: result}))
    return 0


def run_ui(args: argparse.Namespace) -> int:
    from ui.access import exposure_warning, read_auth

    service = service_from(args)
    settings = service.config.ui
    host, port = args.host or settings.host, args.port or settings.port
    share = settings.share if args.share is None else args.share
    auth = read_auth(args.auth_env or settings.auth_env)
    if warning := exposure_warning(host, share, auth is not None):
        print(warning, file=sys.stderr)
    service.ensure_index()
    from ui.app import build_app, launch

    launch(build_app(service), host, port, share=share, auth=auth, trusted_proxies=settings.trusted_proxies)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from ui.access import exposure_warning, is_loopback, open_page_warning, read_api_key, read_auth

    service = service_from(args)
    settings = service.config.ui
    host, port = args.host or settings.host, args.port or settings.port
    # A key that is set is always required: behind a balancer on this machine every request is from loopback.
    api_key = read_api_key(settings.api_key_env, host, required=not is_loopback(host))
    auth = read_auth(args.auth_env or settings.auth_env)
    if warning := exposure_warning(host, False, auth is not None) or open_page_warning(api_key, auth):
        print(warning, file=sys.stderr)
    if auth and not api_key:
        closed = f"note: the API at /v1 is closed (a login guards the page); set {settings.api_key_env} to open it"
        print(closed, file=sys.stderr)
    service.ensure_index()
    from ui.serve import build_server, serve

    serve(build_server(service, api_key=api_key, auth=auth), host, port, settings.trusted_proxies)
    return 0


def run_mcp(args: argparse.Namespace) -> int:
    from rag.mcp_server import build_mcp_server

    service = service_from(args)
    service.choice  # noqa: B018 - an unusable index stops the server here, in one line, not at every tool call
    build_mcp_server(service).run("stdio")
    return 0
