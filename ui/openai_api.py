"""An OpenAI-compatible API over `RagService`: `/v1/chat/completions`, `/v1/models`, `/v1/retrieve`, `/v1/related`,
`/v1/map`, `/health`.

Routes only validate and delegate, as the chat page does. Unmodified OpenAI clients work: the
response fields they know are standard, and the answer's sources, refusal and fallback travel in
one extra top-level field, `rag` (the same JSON as the app's `/ask`; see docs/api.md). Every error
is an OpenAI-style body, `{"error": {"message", "type", "param", "code"}}`, never a traceback.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Generator
from functools import partial
from typing import Any, Literal, TypedDict

import anyio
from fastapi import APIRouter, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from rag.core.config import RequestK, config_names, load_config, served_by
from rag.core.errors import InputError, RagError, StoreError, first_problem
from rag.core.filters import Filters, FilterSpec, as_filters
from rag.core.markup import inert_links
from rag.core.types import Answer
from rag.service import RagService
from rag.services import get_service
from ui.guard import MAX_CALL_BYTES
from ui.map_api import add_map_route
from ui.related_api import add_related_route
from ui.slots import AnswerSlots, QueueFull

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error for the client, in OpenAI's shape."""

    def __init__(
        self, status: int, message: str, kind: str = "invalid_request_error", code=None, param=None, headers=None
    ):
        super().__init__(message)
        self.status, self.body = status, {"message": message, "type": kind, "param": param, "code": code}
        self.headers: dict[str, str] = headers or {}


def error_for(err: Exception) -> ApiError:
    """The status and body for an exception raised while answering."""
    if isinstance(err, ApiError):
        return err
    if isinstance(err, InputError):
        return ApiError(400, str(err))
    if isinstance(err, QueueFull):
        return ApiError(503, str(err), "server_error", "queue_full")
    if isinstance(err, StoreError):
        return ApiError(503, str(err), "server_error", "index_unavailable")
    if isinstance(err, RagError):  # a model that failed with no fallback, a config that can't be used
        return ApiError(503, str(err), "server_error", "model_unavailable")
    log.error("answering failed", exc_info=err)
    return ApiError(500, f"unexpected {type(err).__name__}; the details are in the server log", "server_error")


class Message(BaseModel):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if not isinstance(self.content, list):
            return self.content or ""
        if any(part.get("type") != "text" for part in self.content):
            raise ApiError(400, "only text content is supported", param="messages")
        return "".join(str(part.get("text", "")) for part in self.content)


class ChatRequest(BaseModel):
    # Sampling options (temperature, max_tokens, ...) are accepted and ignored: the config decides.
    model_config = ConfigDict(extra="allow")

    model: str | None = Field(None, description="A config name from GET /v1/models (default: the server's).")
    messages: list[Message] = Field(min_length=1)
    stream: StrictBool = False  # strict, as `k` and `has_code`: "yes" is a 400, not true
    k: RequestK = None
    filters: FilterSpec | None = Field(None, description="Extension: restrict retrieval.")

    def question_and_history(self) -> tuple[str, list[tuple[str, str]]]:
        """The last user message, and the (question, answer) pairs before it; system messages are ignored.

        A conversation the history can't be read from is one 400 naming the message (1-based, as sent):
        tool calls, two questions or two answers in a row, an answer before any question, an empty turn.
        The length of each turn is checked where every interface's history is (checked_standalone)."""
        turns = []
        for number, message in enumerate(self.messages, start=1):
            if message.role in ("tool", "function"):
                raise ApiError(400, f"message {number}: {message.role} messages are not supported", param="messages")
            if message.role in ("user", "assistant"):
                turns.append((number, message))
        if not turns or turns[-1][1].role != "user":
            raise ApiError(400, "the last message must be the user's question", param="messages")
        history: list[tuple[str, str]] = []
        asked: str | None = None  # the question waiting for its answer
        for number, message in turns:
            text = message.text()
            if not text.strip() and number != turns[-1][0]:  # the question itself: "the question is empty"
                raise ApiError(400, f"message {number} ({message.role}) is empty", param="messages")
            expected = "user" if asked is None else "assistant"
            if message.role != expected:
                what = "an answer before any question" if expected == "user" else "a second question in a row"
                raise ApiError(
                    400,
                    f"message {number} is {what}: user and assistant messages must alternate, the user's first",
                    param="messages",
                )
            if asked is None:  # the message is the user's (checked above)
                asked = text
            else:
                history.append((asked, text))
                asked = None
        return turns[-1][1].text(), history


class AnswerOptions(TypedDict):
    """What a chat request sets of `RagService.stream_answer`'s options."""

    history: list[tuple[str, str]]
    k: int | None
    filters: Filters


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    k: RequestK = None
    filters: FilterSpec | None = None
    model: str | None = None


class Models:
    """`model` names a config: the server's own, or any in configs/ (each built once, when first asked,
    over the server's index: `served_by`)."""

    def __init__(self, service: RagService):
        self.service = service

    def names(self) -> list[str]:
        return sorted({*config_names(), self.service.config.name})

    def get(self, name: str | None) -> RagService:
        if not name or name == self.service.config.name:
            return self.service
        if name not in config_names():  # never a path: a client must not make the server read files
            raise ApiError(404, f"The model '{name}' does not exist", param="model", code="model_not_found")
        return get_service(served_by(load_config(name), self.service.config))  # the server's index, always


def add_openai_routes(
    app: FastAPI, service: RagService, slots: AnswerSlots, api_key: str | None, login: bool = False
) -> None:
    """Mount the API on `app`; answers take `slots`; with `api_key`, every /v1 request needs
    `Authorization: Bearer KEY`, whatever address it comes from (behind a balancer or proxy on the
    same machine, every request comes from loopback). With a `login` for the page and no key, /v1 is
    closed: a login guards every route that answers questions, and API clients can't log in."""
    models = Models(service)
    # The key is checked before the body is read, and no body over the cap is read (ApiGate; FastAPI's own limit).
    app.add_middleware(ApiGate, check_key=key_check(service, api_key, login))
    v1 = APIRouter(prefix="/v1", max_body_size=MAX_CALL_BYTES)

    @v1.get("/models")
    def list_models() -> dict:
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "abstract-rag"} for name in models.names()]
        return {"object": "list", "data": data}

    @v1.post("/chat/completions")
    async def chat_completions(body: ChatRequest):
        chosen = models.get(body.model)
        question, history = body.question_and_history()
        question = chosen.clean_question(question)  # a bad question is a 400 before any stream starts
        options: AnswerOptions = {"history": history, "k": body.k, "filters": as_filters(body.filters)}
        reply = Reply(body.model or chosen.config.name)
        if not body.stream:
            await slots.take()
            try:
                answer = await anyio.to_thread.run_sync(lambda: chosen.answer(question, **options))
            finally:
                slots.give_back()
            return reply.completion(answer)
        slots.refuse_if_full()  # a 503 now, while there is still a status line to give it
        start = partial(chosen.stream_answer, question, **options)
        return StreamingResponse(reply.events(start, slots), media_type="text/event-stream")

    @v1.post("/retrieve")
    async def retrieve(body: RetrieveRequest) -> dict:
        chosen = models.get(body.model)
        filters = as_filters(body.filters)
        sources = await anyio.to_thread.run_sync(lambda: chosen.retrieve(body.question, body.k, filters))
        return {"object": "list", "model": chosen.config.name, "data": [s.to_payload() for s in sources]}

    @app.get("/health")
    async def health() -> JSONResponse:
        try:
            stats = await anyio.to_thread.run_sync(service.stats)
        except RagError as err:
            return JSONResponse({"status": "unavailable", "error": str(err)}, status_code=503)
        return JSONResponse({"status": "ok", "papers": stats["papers"], "config": stats["config"]})

    add_related_route(v1, models)  # POST /v1/related (ui/related_api.py)
    add_map_route(v1, models)  # GET /v1/map (ui/map_api.py)
    add_unknown_route(v1)
    app.include_router(v1)
    add_error_handlers(app)


def key_check(service: RagService, api_key: str | None, login: bool) -> Callable[[Request], None]:
    """The check every /v1 request passes: the bearer `api_key` when one is set; none when neither it nor
    a `login` is; with a login and no key, a 401 for every request (the API is closed)."""

    def check_key(request: Request) -> None:
        if api_key is None and not login:
            return
        if api_key is None:
            variable = service.config.ui.api_key_env
            message = f"this server's API is closed: a login guards its page and no API key is set (${variable})"
            raise ApiError(401, message, code="invalid_api_key")
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
            raise ApiError(401, "Incorrect API key provided", code="invalid_api_key")

    return check_key


class ApiGate:
    """ASGI middleware: a /v1 request passes `check_key` on its headers before any of its body is read
    (FastAPI reads the body before a route's dependencies run), and one whose Content-Length is over the
    cap is refused unread; each with its error sent at once. A body sent without a length is held to
    the cap as it comes in, by FastAPI's `max_body_size` on the router."""

    def __init__(self, app: ASGIApp, check_key: Callable[[Request], None]):
        self.app, self.check_key = app, check_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (scope["path"] == "/v1" or scope["path"].startswith("/v1/")):
            request = Request(scope)
            try:
                self.check_key(request)
                length = request.headers.get("content-length", "")  # the server refuses one that isn't a number
                if length.isdigit() and int(length) > MAX_CALL_BYTES:
                    raise ApiError(413, f"the request body is over {MAX_CALL_BYTES:,} bytes")
            except ApiError as err:
                return await api_error_response(request, err)(scope, receive, send)
        await self.app(scope, receive, send)


def add_unknown_route(v1: APIRouter) -> None:
    """Any other /v1 request, declared after the routes that answer: a 405 or 404 in the API's own error
    format (without it, the chat page mounted at / would answer with its own)."""
    answered = list(v1.routes)  # the routes declared so far

    @v1.api_route("/{path:path}", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    def no_such_route(request: Request) -> None:
        path = request.url.path
        allowed = sorted(methods_at(answered, path))
        if allowed:
            message = f"{request.method} is not allowed on {path}; use {' or '.join(allowed)}"
            raise ApiError(405, message, code="method_not_allowed", headers={"Allow": ", ".join(allowed)})
        raise ApiError(404, f"no such endpoint: {request.method} {path}", code="unknown_url")


def add_error_handlers(app: FastAPI) -> None:
    """Every error as an OpenAI-style body: ours, FastAPI's own, a request that does not validate, a bug."""
    # Starlette types every handler as taking any Exception, not the class it is added for (Kludex/starlette#2417).
    app.add_exception_handler(ApiError, api_error_response)  # type: ignore[arg-type]  # Starlette's typing
    app.add_exception_handler(HTTPException, http_error_response)  # type: ignore[arg-type]  # Starlette's typing
    for known in (RagError, QueueFull):
        app.add_exception_handler(known, lambda request, err: api_error_response(request, error_for(err)))
    app.add_exception_handler(RequestValidationError, invalid_request_response)  # type: ignore[arg-type]  # as above
    app.add_exception_handler(Exception, lambda request, err: api_error_response(request, error_for(err)))


def methods_at(routes: list[BaseRoute], path: str) -> set[str]:
    """The methods `routes` answer at `path`."""
    answering = [route for route in routes if isinstance(route, APIRoute) and route.path_regex.match(path)]
    # FastAPI sets every APIRoute's methods (GET by default); Starlette's Route types them as optional.
    return {method for route in answering for method in route.methods}  # type: ignore[union-attr]  # as said


def api_error_response(request: Request, err: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else {}
    # A message may quote what the client sent: a lone surrogate in it could not be encoded as UTF-8.
    body = {**err.body, "message": err.body["message"].encode("utf-8", "backslashreplace").decode()}
    return JSONResponse({"error": body}, status_code=err.status, headers={**headers, **err.headers})


def invalid_request_response(request: Request, err: RequestValidationError) -> JSONResponse:
    first = err.errors()[0]
    if first["type"] == "json_invalid":  # its loc holds a character position, not a field
        where = first["loc"][-1]
        message = f"the body is not valid JSON: {first['ctx']['error']} (character {where})"
        return api_error_response(request, ApiError(400, message))
    where, what = first_problem(err.errors())
    return api_error_response(request, ApiError(400, f"{where or 'body'}: {what}", param=where or None))


async def http_error_response(request: Request, err: HTTPException) -> Response:
    """FastAPI's own errors (a body it could not read, one too large): in OpenAI's shape under /v1."""
    if not request.url.path.startswith("/v1/"):
        return await http_exception_handler(request, err)
    cause = err.__cause__
    if isinstance(cause, UnicodeDecodeError):
        message = f"the body is not UTF-8 text (byte 0x{cause.object[cause.start]:02x} at position {cause.start})"
    elif err.status_code == 413:  # FastAPI's max_body_size: refused from Content-Length, or once the cap is passed
        message = f"the request body is over {MAX_CALL_BYTES:,} bytes"
    elif isinstance(cause, RecursionError):
        message = "the body is not JSON this server reads: it is nested too deeply"
    else:
        message = str(err.detail)
    kind = "invalid_request_error" if err.status_code < 500 else "server_error"
    return api_error_response(request, ApiError(err.status_code, message, kind, headers=err.headers))


class Reply:
    """The OpenAI response shapes for one answer: a whole completion, or its stream of chunks."""

    def __init__(self, model: str):
        self.id, self.created, self.model = f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), model

    def completion(self, answer: Answer) -> dict:
        message = {"role": "assistant", "content": inert_links(answer.text), "refusal": None}
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "rag": answer.to_payload(),
        }

    def chunk(self, delta: dict, finish: str | None = None, **extra) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model}
        return f"data: {json.dumps({**body, 'choices': [choice], **extra})}\n\n"

    async def events(
        self, start: Callable[[], Generator[str | Answer, None, None]], slots: AnswerSlots
    ) -> AsyncIterator[str]:
        """Server-sent events: the role, the answer's checked sentences as they come, then a last chunk with
        `rag` (the checked answer and its sources), then `[DONE]`. The slot is taken here, not before,
        so a stream that never starts holds none; the answer runs in a worker thread."""
        try:
            yield self.chunk({"role": "assistant", "content": ""})
            await slots.take()
            pieces = None
            try:
                pieces, streamed = start(), ""
                while (piece := await anyio.to_thread.run_sync(next, pieces, None)) is not None:
                    if isinstance(piece, Answer):
                        if rest := unstreamed_text(piece, streamed):
                            yield self.chunk({"content": rest})
                        yield self.chunk({}, "stop", rag=piece.to_payload())
                    else:
                        streamed += piece
                        yield self.chunk({"content": inert_links(piece)})
            finally:  # also when the client went away: stop the answer there (no thread runs it now)
                if pieces is not None:
                    pieces.close()
                slots.give_back()
            yield "data: [DONE]\n\n"
        except Exception as err:  # headers are sent: the error goes in the stream, as OpenAI does
            yield f"data: {json.dumps({'error': error_for(err).body})}\n\n"


def unstreamed_text(answer: Answer, streamed: str) -> str:
    """What a plain client still needs after the streamed text: the whole answer when none was streamed
    (a refusal, say); else nothing, since the stream held the answer's checked sentences themselves
    (after a model that failed midway, the quoted ones too)."""
    return "" if streamed else inert_links(answer.text)
