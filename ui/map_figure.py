"""The map of the conference as a Plotly figure: a WebGL scatter (`Scattergl`) of every paper shown, one trace
per theme or per primary area (the legend names them, with their sizes), the title on hover, and the papers of
the current answer drawn large and outlined over the others, which are dimmed. `rag map --html` writes it to a
file that opens offline (plotly.js inside); the page draws the same groups, colours and texts (ui/map_data.py)
on a canvas of its own (ui/paper_map.py)."""

from __future__ import annotations

from collections.abc import Collection
from html import escape
from itertools import cycle

import numpy as np
import plotly.graph_objects as go

from rag.answering.paper_map import PaperMap, ShownPoint
from ui.map_data import CROWD, PALETTE, ColourBy, groups_of, heading, highlighted_name, hover_text


def as_text(text: str) -> str:
    """`text` for a Plotly label (hover text, a legend's name), which reads a few HTML tags (<a href>, <span
    style>, <b>): `<`, `>` and `&` escaped. Quotes are not: Plotly reads back `&lt;`, `&gt;`, `&amp;` and numbered
    entities, not `&quot;`, which would show as written (and with no tag, a quote is only a quote)."""
    return escape(text, quote=False)


def hover(point: ShownPoint) -> str:
    """`hover_text`, as text."""
    return as_text(hover_text(point))


def scatter(points: list[ShownPoint], name: str, marker: dict) -> go.Scattergl:
    """One trace: these papers, each with its title on hover and its id for a click."""
    return go.Scattergl(
        # float32 arrays: Plotly sends them base64-encoded, a third of the JSON of the numbers written out
        x=np.asarray([point.x for point in points], dtype=np.float32),
        y=np.asarray([point.y for point in points], dtype=np.float32),
        mode="markers",
        name=name,
        customdata=[point.paper_id for point in points],
        hovertext=[hover(point) for point in points],
        hoverinfo="text",
        marker=marker,
    )


def map_figure(found: PaperMap, colour_by: ColourBy = "theme", highlight: Collection[str] = ()) -> go.Figure:
    """The figure: a trace per group, then (if any) the highlighted papers on top. Each point carries its
    paper id (`customdata`), which a click sends to the page."""
    highlight = set(highlight)
    dim = bool(highlight & {point.paper_id for point in found.points})
    size = 5 if len(found.points) > CROWD else 9  # thousands of papers need small points; a few, ones to see
    opacity = 0.25 if dim else 0.75
    traces = [  # an area's name is any text a record holds: as text, never markup (`as_text`)
        scatter(points, as_text(f"{name} ({len(points):,})"), {"size": size, "color": colour, "opacity": opacity})
        for (name, points), colour in zip(groups_of(found, colour_by), cycle(PALETTE))
    ]
    if chosen := [point for point in found.points if point.paper_id in highlight]:
        outlined = {"size": 13, "color": "#ffd400", "line": {"width": 2, "color": "#111"}}
        traces.append(scatter(chosen, highlighted_name(len(chosen)), outlined))
    figure = go.Figure(traces)
    figure.update_layout(
        title={"text": heading(found, colour_by), "font": {"size": 14}},
        template="plotly_white",
        height=640,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"visible": False},
        yaxis={"visible": False, "scaleanchor": "x"},
        showlegend=True,
        legend={"font": {"size": 11}, "itemsizing": "constant"},
        hovermode="closest",
        uirevision="map",  # zoom and pan survive a redraw (a new answer, a filter)
    )
    return figure
