"""`rag mcp`: the product as MCP tools for agents (Claude Desktop, Cursor, agent frameworks), over stdio.

Tools `search_papers` (question, k, filters -> papers), `ask` (question -> cited answer with its
sources), `related_papers` (a paper or an abstract -> the papers like it, each with the sentences that
tie them), `paper_map` (the map of the conference: its themes, and each paper's place), and a resource per
paper, `paper://{paper_id}` (title, abstract, metadata). Built with the official SDK
(`pip install -e ".[mcp]"`); each call delegates to one `RagService`. Our errors come back as MCP tool
errors (`isError` with the message), an unknown paper as resource-not-found.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, ValidationError

from rag.answering.related import find_related
from rag.core.config import RequestK
from rag.core.errors import ConfigError, InputError, RagError, first_problem
from rag.core.filters import FilterSpec, as_filters
from rag.service import RagService

INSTRUCTIONS = (
    "Search and question the indexed ICLR 2025 paper abstracts. search_papers ranks papers for a question; "
    "ask answers from the abstracts with [n] markers citing its sources (sources[n-1]), or says the abstracts "
    "don't cover it (refused). related_papers lists the papers most like a paper (id or title) or an abstract. "
    "paper_map gives the conference's themes and sizes (and each paper's place in 2-D). "
    "Read a paper's abstract and metadata at paper://{paper_id}."
)
PAPER_URI = "paper://{paper_id}"
FILTERS = Annotated[FilterSpec | None, Field(description="Only papers matching all of these.")]


class RereadLines:
    """The stdio transport's messages, a line its JSON parser refused read again by Python's `json`.

    The SDK's parser refuses a lone surrogate (JSON "\\ud800", as JavaScript writes a broken string),
    and a line it refuses is dropped: the request gets no reply and its client waits forever. Read by
    `json`, the request reaches its tool, which refuses the text with a reason (`clean_question`).
    """

    def __init__(self, stream: Any):
        self.stream = stream

    def __getattr__(self, name: str) -> Any:  # the rest (aclose, last_context) is the stream's
        return getattr(self.stream, name)

    def __aiter__(self) -> RereadLines:
        return self

    async def __anext__(self) -> Any:
        return reread(await self.stream.__anext__())

    async def receive(self) -> Any:
        return reread(await self.stream.receive())


def reread(item: Any) -> Any:
    """A message the SDK could not parse, parsed by `json` and checked by the SDK's own model; else `item`."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    if not isinstance(item, ValidationError) or item.errors()[0]["type"] != "json_invalid":
        return item
    try:
        message = jsonrpc_message_adapter.validate_python(json.loads(item.errors()[0]["input"]), by_name=False)
        return SessionMessage(message)
    except (ValueError, TypeError):  # not JSON either, or not a message: the SDK's error stands
        return item


def build_mcp_server(service: RagService):
    """The MCP server over `service`; `.run("stdio")` serves it."""
    try:
        server = papers_server()
    except ImportError:
        raise ConfigError('rag mcp needs the MCP SDK: pip install -e ".[mcp]" (or pip install mcp)') from None
    add_tools(server, service)
    add_related_tool(server, service)
    add_map_tool(server, service)
    return server


def papers_server():
    """The SDK's server, with errors in one sentence and each line read as `RereadLines` reads it."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    class PapersServer(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            """As the SDK calls a tool, but arguments that don't fit are one sentence naming the field
            ("k: Input should be a valid integer"), not pydantic's banner, the value and a help link."""
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as err:
                if not isinstance(err.__cause__, ValidationError):
                    raise
                where, what = first_problem(err.__cause__.errors())
                raise ToolError(f"Error executing tool {name}: {where}: {what}") from err.__cause__

        async def run_stdio_async(self) -> None:
            """As the SDK serves stdio (`.run("stdio")`), each line read as `RereadLines` reads it."""
            from mcp.server.stdio import stdio_server

            lowlevel = self._lowlevel_server  # the SDK's own run_stdio_async does the same
            async with stdio_server() as (read_stream, write_stream):
                options = lowlevel.create_initialization_options()
                await lowlevel.run(RereadLines(read_stream), write_stream, options)

    return PapersServer("abstract-rag", instructions=INSTRUCTIONS, log_level="WARNING")


def add_tools(server, service: RagService) -> None:
    """The tools `search_papers` and `ask` and the `paper://` resource, each delegating to `service`."""
    from mcp.server.mcpserver import ResourceSecurity
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
    from mcp.shared.uri_template import UriTemplate
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    # Ids are percent-encoded in a URI (`{`, `/`, spaces), and decoded again when one is read.
    paper_uri = UriTemplate.parse(PAPER_URI)

    @server.tool(annotations=read_only)
    def search_papers(question: str, k: RequestK = None, filters: FILTERS = None) -> dict[str, Any]:
        """The papers whose abstracts best match the question, best first, each with its best passages
        and a score (cosine similarity of the best passage), and a paper:// URI for its full abstract."""
        try:
            sources = service.retrieve(question, k=k, filters=as_filters(filters))
        except RagError as err:
            raise ToolError(str(err)) from None
        return {"papers": [{**s.to_payload(), "uri": paper_uri.expand({"paper_id": s.paper_id})} for s in sources]}

    @server.tool(annotations=read_only)
    def ask(
        question: str,
        k: RequestK = None,
        filters: FILTERS = None,
        history: Annotated[
            list[tuple[str, str]] | None, Field(description="Earlier [question, answer] pairs, oldest first.")
        ] = None,
    ) -> dict[str, Any]:
        """A short answer from the abstracts: `text` cites sources as [n] (= sources[n-1]); `refused` is true
        when the abstracts don't cover the question; `fallback` says why a quoted answer stands in; a count over
        the papers' metadata ("which areas have the most oral papers?") has its counts in `table`."""
        try:
            answer = service.answer(question, history=list(history or []), k=k, filters=as_filters(filters))
        except RagError as err:
            raise ToolError(str(err)) from None
        return answer.to_payload()

    # An id is a key looked up in the index, never a path: the SDK's checks for paths (no "/" first, no "..",
    # no "x:" drive) made "/lead", "../up" or "x:y" an unknown resource. Its check for NUL stays.
    ids_not_paths = ResourceSecurity(reject_path_traversal=False, reject_absolute_paths=False)

    @server.resource(PAPER_URI, mime_type="application/json", description="A paper's abstract and data.",
                     security=ids_not_paths)  # fmt: skip
    def paper(paper_id: str) -> str:
        try:
            found = service.paper(paper_id)
        except RagError as err:
            raise ResourceError(str(err)) from None
        if found is None:
            raise ResourceNotFoundError(f"no paper with id {paper_id!r} in the index")
        return json.dumps(found, ensure_ascii=False)


def add_related_tool(server, service: RagService) -> None:
    """The tool `related_papers`, delegating to `find_related` (rag/answering/related.py)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=read_only)
    def related_papers(
        paper: Annotated[str | None, Field(description="A stored paper's OpenReview id, or its title.")] = None,
        abstract: Annotated[str | None, Field(description="Or your own abstract's text.")] = None,
        k: RequestK = None,
        filters: FILTERS = None,
    ) -> dict[str, Any]:
        """The papers most related to a stored paper or to an abstract, best first (never the paper itself),
        each with `tie`: the sentence of each abstract that ties them, and their cosine similarity."""
        try:
            if (paper is None) == (abstract is None):
                raise InputError("give `paper` (a stored paper's id or title) or `abstract`, one of the two")
            return find_related(service, paper or "", abstract, k, as_filters(filters)).to_payload()
        except RagError as err:
            raise ToolError(str(err)) from None


def add_map_tool(server, service: RagService) -> None:
    """The tool `paper_map`, delegating to `read_map` (rag/answering/paper_map.py)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from rag.answering.paper_map import read_map

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    def paper_map(
        filters: FILTERS = None,
        points: Annotated[bool, Field(description="Also every paper shown, with its x, y and theme.")] = False,
    ) -> dict[str, Any]:
        """The map of the conference: how many papers are placed and shown, and the themes (each named by its
        distinctive words, with its papers shown); with `points`, each paper's place in 2-D and its theme."""
        try:
            payload = read_map(service, as_filters(filters)).to_payload()
        except RagError as err:
            raise ToolError(str(err)) from None
        return payload if points else {key: value for key, value in payload.items() if key != "points"}
