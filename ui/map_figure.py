"""The map of the conference as a Plotly figure: a WebGL scatter (`Scattergl`) of every paper shown, one trace
per theme or per primary area (the legend names them, with their sizes), the title on hover, and the papers of
the current answer drawn large and outlined over the others, which are dimmed. The page shows it in a
`gr.Plot`; `rag map --html` writes it to a file that opens offline (plotly.js inside)."""

from __future__ import annotations

from collections.abc import Collection
from itertools import cycle
from html import escape
from typing import Literal

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from rag.answering.paper_map import PaperMap, ShownPoint
from rag.core.markup import plain_text

ColourBy = Literal["theme", "area"]
PALETTE = qualitative.Dark24 + qualitative.Light24  # enough colours for the themes (20) and the areas
NO_AREA = "(no area)"
CROWD = 1000  # papers: a map of more draws its points small


def groups_of(found: PaperMap, colour_by: ColourBy) -> list[tuple[str, list[ShownPoint]]]:
    """The points in their groups, each named: by theme (in the themes' order), or by area (largest first)."""
    groups: dict[str, list[ShownPoint]] = {}
    if colour_by == "theme":
        for point in found.points:
            groups.setdefault(found.themes[point.theme] if point.theme < len(found.themes) else "", []).append(point)
        order = [name for name in found.themes if name in groups]
    else:
        for point in found.points:
            groups.setdefault(point.primary_area.replace("&amp;", "&") or NO_AREA, []).append(point)
        order = sorted(groups, key=lambda name: (-len(groups[name]), name))
    return [(name, groups[name]) for name in order]


def hover(point: ShownPoint) -> str:
    """What hovering a paper shows: its title, and its status when known (escaped: Plotly reads a few HTML
    tags in hover text). The area is the legend's, or the card's when a click opens it."""
    title = escape(plain_text(point.title))
    return f"{title} ({escape(point.status)})" if point.status else title


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
    traces = [
        scatter(points, f"{name} ({len(points):,})", {"size": size, "color": colour, "opacity": 0.25 if dim else 0.75})
        for (name, points), colour in zip(groups_of(found, colour_by), cycle(PALETTE))
    ]
    if chosen := [point for point in found.points if point.paper_id in highlight]:
        outlined = {"size": 13, "color": "#ffd400", "line": {"width": 2, "color": "#111"}}
        traces.append(scatter(chosen, f"this answer's papers ({len(chosen)})", outlined))
    figure = go.Figure(traces)
    count = len(found.points)
    shown = f"{count:,} of {found.placed:,}" if count < found.placed else f"all {found.placed:,}"
    figure.update_layout(
        title={"text": f"Map of the conference: {shown} papers, coloured by {colour_by}", "font": {"size": 14}},
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
