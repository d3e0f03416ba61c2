"""`rag map`: the map of the conference stored with the index (rag/answering/paper_map.py): how many papers
are placed and the themes with their sizes; `--json` as /v1/map gives it, `--html FILE` a page that opens
offline, `--rebuild` a full layout afresh. Its options are in rag/cli.py, beside the other commands'.
"""

from __future__ import annotations

import argparse
import sys

from rag.commands import filters_from, service_from


def run_map(args: argparse.Namespace) -> int:
    from rag.answering.paper_map import read_map, rebuild_map
    from rag.core.errors import InputError
    from rag.core.text import terminal_json
    from rag.core.wording import counted

    if args.html is not None and not args.html.strip():
        raise InputError("--html: empty; give the file to write the map to")
    service = service_from(args)
    if args.rebuild:
        print(rebuild_map(service).summary(), file=sys.stderr)
    found = read_map(service, filters_from(args))
    if stale := found.stale():
        print(f"warning: {stale}", file=sys.stderr)
    if args.html:
        write_html(found, args.html, args.colour)
    if args.json:
        print(terminal_json(found.to_payload(), indent=None))
        return 0
    filters = "; ".join(found.filters.labels())
    shown = f"{len(found.points):,} of them shown (filters: {filters})" if filters else ""
    print(f"{counted(found.placed, 'paper')} placed{'; ' + shown if shown else ''}; {len(found.themes)} themes:")
    for number, (name, papers) in enumerate(found.theme_sizes(), start=1):
        print(f"{number:3}. {name} ({counted(papers, 'paper')})")
    return 0


def write_html(found, path: str, colour_by) -> None:
    """The map as a page of its own, plotly.js inside it (opens without a network)."""
    from rag.core.errors import InputError
    from ui.map_figure import map_figure

    try:
        map_figure(found, colour_by).write_html(path, include_plotlyjs=True, full_html=True)
    except OSError as err:
        raise InputError(f"cannot write the map to {path}: {err.strerror or err}") from None
    print(f"wrote the map of {len(found.points):,} papers to {path}", file=sys.stderr)
