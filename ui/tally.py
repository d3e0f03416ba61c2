"""A count over the metadata on the page: the latest answer's `table` as a table and a bar chart under the
sources panel, hidden for every other answer. Gradio's own components, so no plotting library is added: a
Dataframe, and a Plot given a Vega-Lite spec of ours, drawn by the Vega-Lite the page ships (Gradio's
BarPlot writes a spec of an older Vega-Lite, which the browser warns of, and tilts long names until they are
cut off). The chart's bars run across, each named in full on the lines it needs."""

from __future__ import annotations

import math
import textwrap
from typing import Any

import gradio as gr
from gradio.components.plot import AltairPlotData

from rag.core.tables import Table
from rag.core.types import Answer
from rag.core.wording import papers_of

# The Vega-Lite that draws a gr.Plot on Gradio 6's page (5.23 in Gradio 6.31; its BarPlot bundles 6.4 yet writes
# a 5.17 spec): a spec of another major version is warned about in the console.
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
LABEL_CHARACTERS = 40  # a group's name is wrapped onto lines of about this many characters
LINE_PIXELS = 13  # the height of one line of a label at the axis's font size
AXIS_PIXELS = 40  # the x axis under the bars, with its title


def tally_view(answers: gr.State) -> dict[str, Any]:
    """The table and the chart, hidden until an answer counts something, and the step that fills them from
    the answers, to run after each answer (`event.then(**step)`)."""
    widths: list[str | int] = ["80%", "20%"]
    table = gr.Dataframe(
        elem_id="rag-tally-table", visible=False, interactive=False, wrap=True, max_height=320, column_widths=widths
    )
    chart = gr.Plot(elem_id="rag-tally-chart", visible=False, show_label=False)  # the table has the label
    return {"fn": tally_updates, "inputs": [answers], "outputs": [table, chart], "api_visibility": "private"}


def tally_updates(answers: list[Answer | None]) -> tuple[Any, Any]:
    """The latest answer's counts for the table and the chart; both hidden when it has none."""
    import pandas as pd

    latest = answers[-1] if answers else None
    table = latest.table if latest is not None else None
    if table is None or not table.rows:
        return gr.update(visible=False), gr.update(value=None, visible=False)
    frame = pd.DataFrame({table.group: [name for name, _ in table.rows], "papers": [n for _, n in table.rows]})
    if table.of:  # a share: the papers each row is out of, and the percentage
        frame["of"] = list(table.of)
        frame["share (%)"] = [round(table.share(row), 1) for row in range(len(table.rows))]
    shown = f"{len(table.rows)} of {table.groups:,}" if len(table.rows) < table.groups else f"all {table.groups:,}"
    label = f"Papers per {table.group} ({shown}): the {papers_of(table.counted, table.what)}"
    return (
        gr.update(value=frame, label=label, visible=True),
        gr.update(value=AltairPlotData(chart="bar", plot=chart_spec(table)), label=label, visible=True),
    )


def chart_spec(table: Table) -> str:
    """The counts as a Vega-Lite bar chart, as JSON: one bar across per group, in the table's order, its name
    wrapped onto as many lines as it needs (so none is cut off), drawn as SVG at the panel's width."""
    import json

    names = [wrapped(name) for name, _ in table.rows]
    rows = [{"name": shown, table.group: name, "papers": n} for shown, (name, n) in zip(names, table.rows)]
    lines = max(name.count("\n") + 1 for name in names)
    most = max(number for _, number in table.rows)
    ticks = list(range(0, most + 1, max(1, math.ceil(most / 8))))  # whole papers only
    spec = {
        "$schema": VEGA_LITE_SCHEMA,
        "usermeta": {"embedOptions": {"renderer": "svg", "actions": False}},
        # Fitted to the panel's width and to this height, its x axis included: each bar as tall as its name.
        "height": len(rows) * (LINE_PIXELS * lines + 8) + AXIS_PIXELS,
        "autosize": {"type": "fit", "contains": "padding"},
        "background": None,
        "data": {"values": rows},
        "mark": {"type": "bar", "color": "#f97316"},
        "encoding": {
            "y": {
                "field": "name",
                "type": "nominal",
                "sort": None,  # the table's order: most first (or fewest, when that was asked)
                "title": None,
                "axis": {"labelExpr": "split(datum.value, '\\n')", "labelLimit": 0, "labelLineHeight": LINE_PIXELS},
            },
            "x": {"field": "papers", "type": "quantitative", "axis": {"values": ticks, "format": "d"}},
            "tooltip": [{"field": table.group, "type": "nominal"}, {"field": "papers", "type": "quantitative"}],
        },
    }
    return json.dumps(spec)


def wrapped(name: str) -> str:
    """A group's name on lines of about LABEL_CHARACTERS characters, broken between words, joined by newlines."""
    return "\n".join(textwrap.wrap(name, LABEL_CHARACTERS, break_long_words=False, break_on_hyphens=False)) or name
