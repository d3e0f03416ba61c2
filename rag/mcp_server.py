"""`rag mcp`: the product as MCP tools for agents (Claude Desktop, Cursor, agent frameworks), over stdio.

Tools `search_papers` (question, k, filters -> papers) and `ask` (question -> cited answer with its
sources), and a resource per paper, `paper://{paper_id}` (title, abstract, metadata). Built with the
official SDK (`pip install -e ".[mcp]"`); each call delegates to one `RagService`. Our errors come
back as MCP tool errors (`isError` with the message), an unknown paper as resource-not-found.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from rag.core.errors import ConfigError, RagError
from rag.core.filters import FilterSpec, as_filters
from rag.service import RagService

INSTRUCTIONS = (
    "Search and question the indexed ICLR 2025 paper abstracts. search_papers ranks papers for a question; "
    "ask answers from the abstracts with [n] markers citing its sources (sources[n-1]), or says the abstracts "
    "don't cover it (refused). Read a paper's abstract and metadata at paper://{paper_id}."
)
K = Annotated[int | None, Field(ge=1, le=50, description="How many papers (default: the config's retrieval.k).")]
FILTERS = Annotated[FilterSpec | None, Field(description="Only papers matching all of these.")]


def build_mcp_server(service: RagService):
    """The MCP server over `service`; `.run("stdio")` serves it."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
        from mcp.types import ToolAnnotations
    except ImportError:
        raise ConfigError('rag mcp needs the MCP SDK: pip install -e ".[mcp]" (or pip install mcp)') from None

    server = MCPServer("abstract-rag", instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=read_only)
    def search_papers(question: str, k: K = None, filters: FILTERS = None) -> dict[str, Any]:
        """The papers whose abstracts best match the question, best first, each with its best passages
        and a score (cosine similarity of the best passage), and a paper:// URI for its full abstract."""
        try:
            sources = service.retrieve(question, k=k, filters=as_filters(filters))
        except RagError as err:
            raise ToolError(str(err)) from None
        return {"papers": [{**s.to_payload(), "uri": f"paper://{s.paper_id}"} for s in sources]}

    @server.tool(annotations=read_only)
    def ask(
        question: str,
        k: K = None,
        filters: FILTERS = None,
        history: Annotated[
            list[tuple[str, str]] | None, Field(description="Earlier [question, answer] pairs, oldest first.")
        ] = None,
    ) -> dict[str, Any]:
        """A short answer from the abstracts: `text` cites sources as [n] (= sources[n-1]); `refused` is true
        when the abstracts don't cover the question; `fallback` says why a quoted answer stands in."""
        try:
            answer = service.answer(question, history=list(history or []), k=k, filters=as_filters(filters))
        except RagError as err:
            raise ToolError(str(err)) from None
        return answer.to_payload()

    @server.resource("paper://{paper_id}", mime_type="application/json", description="A paper's abstract and data.")
    def paper(paper_id: str) -> str:
        try:
            found = service.paper(paper_id)
        except RagError as err:
            raise ResourceError(str(err)) from None
        if found is None:
            raise ResourceNotFoundError(f"no paper with id {paper_id!r} in the index")
        return json.dumps(found, ensure_ascii=False)

    return server
