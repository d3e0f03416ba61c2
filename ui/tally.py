"""A count over the metadata on the page: the latest answer's `table` as a table and a bar chart under the
sources panel, hidden for every other answer. Gradio's own components (a Dataframe, a BarPlot drawn by
Vega in the browser), so no plotting library is added."""

from __future__ import annotations

from typing import Any

import gradio as gr

from rag.core.types import Answer


def tally_view(answers: gr.State) -> dict[str, Any]:
    """The table and the chart, hidden until an answer counts something, and the step that fills them from
    the answers, to run after each answer (`event.then(**step)`)."""
    widths: list[str | int] = ["80%", "20%"]
    table = gr.Dataframe(
        elem_id="rag-tally-table", visible=False, interactive=False, wrap=True, max_height=320, column_widths=widths
    )
    chart = gr.BarPlot(
        elem_id="rag-tally-chart", x="group", y="papers", y_lim=[0, None], x_label_angle=-40, height=360, visible=False
    )
    return {"fn": tally_updates, "inputs": [answers], "outputs": [table, chart], "api_visibility": "private"}


def tally_updates(answers: list[Answer | None]) -> tuple[Any, Any]:
    """The latest answer's counts for the table and the chart; both hidden when it has none."""
    import pandas as pd

    latest = answers[-1] if answers else None
    table = latest.table if latest is not None else None
    if table is None or not table.rows:
        return gr.update(visible=False), gr.update(visible=False)
    names = [name for name, _ in table.rows]
    frame = pd.DataFrame({"group": names, "papers": [number for _, number in table.rows]})
    shown = f"{len(table.rows)} of {table.groups:,}" if len(table.rows) < table.groups else f"all {table.groups:,}"
    label = f"Papers per {table.group} ({shown}): the {table.counted:,} {table.what}"
    return (
        gr.update(value=frame.rename(columns={"group": table.group}), label=label, visible=True),
        gr.update(value=frame, x_title=table.group, sort=names, label=label, visible=True),
    )
