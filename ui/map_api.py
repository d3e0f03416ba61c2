"""`GET /v1/map`: the map of the conference stored with the index (rag/answering/paper_map.py), every paper
the filters admit with its place and theme, and the themes with their sizes. Mounted on the /v1 router by
ui/openai_api.py, so it has the same key check and OpenAI-style errors (an index without a map is a 503
saying how to build one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import anyio
from fastapi import APIRouter, Query

from rag.answering.paper_map import MapReader
from rag.core.filters import Filters

if TYPE_CHECKING:
    from ui.openai_api import Models


def add_map_route(v1: APIRouter, models: Models) -> None:
    """`GET /v1/map?status=Oral&primary_area=...&author=...&has_code=true&model=...`, each filter optional."""
    readers: dict[str, MapReader] = {}  # one per config: each keeps its map until the index changes

    @v1.get("/map")
    async def paper_map(
        status: Annotated[list[str], Query(description="Only papers with one of these statuses.")] = [],  # noqa: B006
        primary_area: Annotated[list[str], Query(description="Only papers of one of these areas.")] = [],  # noqa: B006
        author: str = "",
        has_code: bool | None = None,
        model: str | None = None,
    ) -> dict:
        chosen = models.get(model)
        filters = Filters.of(status=status, primary_area=primary_area, author=author, has_code=has_code)
        reader = readers.setdefault(chosen.config.name, MapReader(chosen))
        found = await anyio.to_thread.run_sync(lambda: reader(filters))
        return {"object": "map", "model": chosen.config.name, **found.to_payload()}
