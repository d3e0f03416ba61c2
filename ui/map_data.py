"""What a drawing of the map shows, shared by the page's canvas (ui/paper_map.py) and the Plotly figure of
`rag map --html` (ui/map_figure.py): the points in their groups (by theme or by area), each group's colour, the
text hovering a paper shows, the map's heading. `map_data` packs it all as the compact JSON the page's canvas
draws. No plotly here: the page does not need it."""

from __future__ import annotations

import json
from collections.abc import Collection
from itertools import cycle
from typing import Literal

from rag.answering.paper_map import PaperMap, ShownPoint
from rag.core.markup import plain_text
from rag.core.wording import plural

ColourBy = Literal["theme", "area"]
# Plotly's Dark24 then Light24: enough colours for the themes (20) and the areas.
PALETTE = [
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86", "#EB663B", "#511CFB",
    "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE", "#862A16", "#A777F1", "#620042", "#1616A7",
    "#DA60CA", "#6C4516", "#0D2A63", "#AF0038",
    "#FD3216", "#00FE35", "#6A76FC", "#FED4C4", "#FE00CE", "#0DF9FF", "#F6F926", "#FF9616", "#479B55", "#EEA6FB",
    "#DC587D", "#D626FF", "#6E899C", "#00B5F7", "#B68E00", "#C9FBE5", "#FF0092", "#22FFA7", "#E3EE9E", "#86CE00",
    "#BC7196", "#7E7DCD", "#FC6955", "#E48F72",
]  # fmt: skip
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


def hover_text(point: ShownPoint) -> str:
    """What hovering a paper shows, as plain text: its title, and its status when known. The area is the
    legend's, or the card's when a click opens it."""
    title = plain_text(point.title)
    return f"{title} ({point.status})" if point.status else title


def heading(found: PaperMap, colour_by: ColourBy) -> str:
    """The map's heading: how many papers it shows, and what colours them."""
    count = len(found.points)
    shown = f"{count:,} of {found.placed:,}" if count < found.placed else f"all {found.placed:,}"
    return f"Map of the conference: {shown} {plural('paper', found.placed)}, coloured by {colour_by}"


def highlighted_name(count: int) -> str:
    """The legend's entry for the current answer's papers."""
    return f"this answer's papers ({count})"


def map_data(found: PaperMap, colour_by: ColourBy = "theme", highlight: Collection[str] = ()) -> str:
    """The map as the page's canvas draws it (ui/paper_map.js), as JSON: the heading; the groups in the
    legend's order, each `[name (size), colour]`; per paper, in the groups' order, its id, hover text, place
    and group; the highlighted papers (positions in those lists) and their legend entry; the points' radius."""
    groups = groups_of(found, colour_by)
    points = [point for _, members in groups for point in members]
    chosen = set(highlight)
    highlighted = [i for i, point in enumerate(points) if point.paper_id in chosen]
    data = {
        "title": heading(found, colour_by),
        "groups": [[f"{name} ({len(members):,})", colour] for (name, members), colour in zip(groups, cycle(PALETTE))],
        "ids": [point.paper_id for point in points],
        "labels": [hover_text(point) for point in points],
        "x": [point.x for point in points],
        "y": [point.y for point in points],
        "group": [number for number, (_, members) in enumerate(groups) for _ in members],
        "highlight": highlighted,
        "highlight_name": highlighted_name(len(highlighted)),
        "radius": 2.5 if len(points) > CROWD else 4.5,  # thousands of papers need small points; a few, ones to see
    }
    # `<` written as \u003c: a title's "<script>" reads the same once parsed, and no HTML tag is ever sent
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
