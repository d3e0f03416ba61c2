"""`POST /v1/related`: the papers most related to a paper, or to an abstract sent in, each with the pair
of sentences that ties it (rag/answering/related.py). Mounted on the /v1 router by ui/openai_api.py, so it
has the same key check and OpenAI-style errors as the other routes (a bad request is a 400 naming it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from rag.answering.related import find_related
from rag.core.config import RequestK
from rag.core.errors import InputError
from rag.core.filters import FilterSpec, as_filters
from rag.retrieval.related import Method

if TYPE_CHECKING:
    from ui.openai_api import Models


class RelatedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paper: str | None = Field(None, description="A stored paper's OpenReview id, or its title as stored.")
    abstract: str | None = Field(None, description="Or your own abstract (a first line before it: its title).")
    k: RequestK = None
    filters: FilterSpec | None = Field(None, description="Only related papers matching all of these.")
    method: Method = Field("fused", description="fused (the default), dense or bm25: how they are ranked.")
    model: str | None = Field(None, description="A config name from GET /v1/models (default: the server's).")


def add_related_route(v1: APIRouter, models: Models) -> None:
    """`POST /v1/related` on the router, answered by the config `model` names."""

    @v1.post("/related")
    async def related(body: RelatedRequest) -> dict:
        chosen = models.get(body.model)
        if (body.paper is None) == (body.abstract is None):
            raise InputError("give `paper` (a stored paper's id or title) or `abstract` (your own), one of the two")
        filters = as_filters(body.filters)
        found = await anyio.to_thread.run_sync(
            lambda: find_related(chosen, body.paper or "", body.abstract, body.k, filters, body.method)
        )
        return {"object": "related", "model": chosen.config.name, **found.to_payload()}
