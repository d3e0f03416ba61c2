"""The app's gate, an ASGI middleware in front of Gradio's routes.

With a login configured, a client without one reaches only the login page (with its API
description taken out), the static files that page loads, and the login form; every other route
answers 401 without running, whatever Gradio adds in a later version. Failed logins slow down per
client address (the connection's; behind a proxy named in `ui.trusted_proxies`, the client's it
forwards). Uploads are refused for everyone: the app takes no files. A call of an endpoint
whose body does not hold one value per parameter, or a value its input refuses, is refused with 422
before it is queued (Gradio would queue it, log a traceback and send back `{"error": null}`); so is a
call of a component's server function on no component.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

API = "/gradio_api"
LOGIN = {"/login", "/login/"}
UPLOADS = {f"{API}/upload", f"{API}/upload_progress", f"{API}/process_recording"}
PAGES = {"/", ""}
# Every route of Gradio 6 that queues or runs an event with values a client sends (gradio/routes.py):
# call/v2 takes the values by parameter name, the others as a "data" list.
CALLS = re.compile(rf"^{API}/(?:(?P<v2>call/v2)|call|run|api)/(?P<name>[^/]+)/?$|^{API}/queue/join/?$")
MAX_CALL_BYTES = 1 << 20  # a question is at most a few thousand characters
# What the login page itself loads before anyone has logged in; `startup-events` is what Gradio's
# launch calls to check the server is up (it runs the app's startup events once, nothing more).
PUBLIC_FILES = ("/assets/", "/static/", "/svelte/", "/pwa_icon")
PUBLIC = {
    "/favicon.ico",
    "/theme.css",
    f"{API}/theme.css",
    "/manifest.json",
    "/robots.txt",
    "/logout",
    f"{API}/startup-events",
}
# Gradio writes the API description into every page, the login page included (`api_info(request)`
# in gradio/routes.py `main`); its JSON escapes "<", so the script ends at the first "</script>".
API_INFO = re.compile(rb"(window\.gradio_api_info\s*=\s*).*?(;?\s*</script>)", re.DOTALL)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
BodyCheck = Callable[[Any, bytes], "str | None"]  # (Gradio's app, a request's body) -> why it can't run, or None


class LoginFailures:
    """Failed logins per client address. After `free` tries in a row, each further try must wait
    twice as long as the one before (from `first_wait` up to `longest` seconds). A try counts as
    failed when it starts, so a burst of parallel guesses gets no more tries than a sequence."""

    def __init__(self, free: int = 5, first_wait: float = 1.0, longest: float = 60.0, clock=time.monotonic):
        self.free, self.first_wait, self.longest, self.clock = free, first_wait, longest, clock
        self.tries: dict[str, tuple[int, float]] = {}  # address -> (failed tries in a row, time of the last)

    def wait(self, client: str) -> float:
        """Seconds this client must still wait before its next try; 0 when it may try now."""
        count, last = self.tries.get(client, (0, 0.0))
        if count < self.free:
            return 0.0
        needed = min(self.first_wait * 2 ** (count - self.free), self.longest)
        return max(0.0, last + needed - self.clock())

    def start(self, client: str) -> None:
        count, _ = self.tries.get(client, (0, 0.0))
        self.tries[client] = (count + 1, self.clock())
        if len(self.tries) > 10_000:  # forget addresses that have waited out the longest delay
            cutoff = self.clock() - self.longest
            self.tries = {address: entry for address, entry in self.tries.items() if entry[1] > cutoff}

    def succeeded(self, client: str) -> None:
        self.tries.pop(client, None)


class Gate:
    """ASGI middleware: see the module docstring. `scope["app"]` is Gradio's FastAPI app."""

    def __init__(self, app, failures: LoginFailures | None = None):
        self.app = app
        self.failures = failures or LoginFailures()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and not logged_in(scope):
            return await send({"type": "websocket.close", "code": 1008})
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path.rstrip("/") in UPLOADS:
            return await respond(send, 403, "this app takes no uploads")
        if path in LOGIN and scope["method"] == "POST":
            return await self.login(scope, receive, send)
        if logged_in(scope):
            if scope["method"] == "POST" and (check := body_check(path)):
                return await self.checked_call(scope, receive, send, check)
            return await self.app(scope, receive, send)
        if path in PAGES and scope["method"] in ("GET", "HEAD"):
            return await self.app(scope, receive, without_api_info(send))
        if path in PUBLIC or path.startswith(PUBLIC_FILES):
            return await self.app(scope, receive, send)
        return await respond(send, 401, "Not authenticated")

    async def login(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = (scope.get("client") or ("unknown",))[0]
        wait = self.failures.wait(client)
        if wait > 0:
            seconds = math.ceil(wait)
            message = f"too many failed logins from this address; try again in {seconds} s"
            return await respond(send, 429, message, {"retry-after": str(seconds)})
        self.failures.start(client)
        status = []

        async def watch(message: dict) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, receive, watch)
        if status and status[0] < 400:
            self.failures.succeeded(client)

    async def checked_call(self, scope: Scope, receive: Receive, send: Send, check: BodyCheck) -> None:
        """Read the call's body, refuse it with 422 if its values don't fit the endpoint, else pass it on."""
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_CALL_BYTES:
                return await respond(send, 413, f"request body over {MAX_CALL_BYTES:,} bytes")
        if problem := check(scope["app"], body):
            return await respond(send, 422, problem)
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def body_check(path: str) -> BodyCheck | None:
    """How a POST's body is checked on a route that runs something with values a client sends; None elsewhere."""
    if path.rstrip("/") == f"{API}/component_server":
        return component_problem
    if not (call := CALLS.match(path)):
        return None
    check = named_call_problem if call["v2"] else call_problem
    return lambda gradio, body: check(gradio, call["name"], body)


def page_of(gradio, session_hash: Any):
    """The page as a session sees it: its own copy where its events changed a component (the choices of the
    papers in focus, say), which Gradio checks values against (route_utils.get_fn, Blocks.preprocess_data)."""
    holder = gradio.state_holder
    if isinstance(session_hash, str) and session_hash in holder:
        return holder[session_hash].blocks_config
    return gradio.get_blocks()


def component_problem(gradio, body: bytes) -> str | None:
    """Why a call of a component's server function can't run (Gradio looks its component up unchecked)."""
    try:
        call = json.loads(body)
    except ValueError:
        return "the body is not JSON"
    if not isinstance(call, dict) or not isinstance(call.get("component_id"), int):
        return 'the body must be a JSON object with a "component_id"'
    if call["component_id"] not in page_of(gradio, call.get("session_hash")).blocks:
        return f"no such component: {call['component_id']}"
    return None


def call_problem(gradio, name: str | None, body: bytes) -> str | None:
    """Why a call's JSON body can't run (not an object with a `data` list, an unknown endpoint, a
    wrong number of values, a value its input refuses, missing event data), or None to let Gradio
    handle it. `name` is None for queue/join, and "predict" when the page calls an event by
    `fn_index` without the queue."""
    try:
        call = json.loads(body)
    except ValueError:
        return "the body is not JSON"
    if not isinstance(call, dict) or not isinstance(call.get("data"), list):
        return 'the body must be a JSON object with a "data" list: one value per parameter'
    page = page_of(gradio, call.get("session_hash"))
    fns, index = page.fns, call.get("fn_index")
    if index is not None:  # the page names the event by number, even on run/predict; Gradio goes by it first
        fn = fns.get(index) if isinstance(index, int) else None
    else:
        fn = next((fn for fn in fns.values() if fn.api_name == name), None)
    if fn is None or fn.fn is None:  # none, or one that runs in the browser only
        return f"no such endpoint: {name if index is None else index}"
    if len(call["data"]) != len(fn.inputs):
        wanted = ", ".join(inspect.signature(fn.fn).parameters)
        return f'"data" must hold {len(fn.inputs)} values ({wanted}; null for none), not {len(call["data"])}'
    inputs = [page.blocks.get(block._id, block) for block in fn.inputs]
    return value_problem(fn, inputs, call["data"]) or event_problem(fn, call.get("event_data"))


def named_call_problem(gradio, name: str | None, body: bytes) -> str | None:
    """`call_problem` for call/v2, whose body is an object of values by parameter name: Gradio's own
    client code (`construct_args`) puts them in order, as the route does."""
    from gradio_client.utils import construct_args

    try:
        call = json.loads(body)
    except ValueError:
        return "the body is not JSON"
    endpoint = gradio.get_blocks().get_api_info()["named_endpoints"].get(f"/{name}")
    if endpoint is None:
        return f"no such endpoint: {name}"
    if not isinstance(call, dict):
        return "the body must be a JSON object of values by parameter name"
    try:
        data = construct_args(endpoint["parameters"], (), call)
    except (TypeError, ValueError) as err:
        return str(err).split(". Please click")[0]  # the rest points at the page's API view
    return call_problem(gradio, name, json.dumps({"data": data}).encode())


def value_problem(fn, inputs: list, data: list) -> str | None:
    """Why a value doesn't fit its input, by the component's own checks (its data model, its
    preprocess), which Gradio would run in the queue and log a traceback for; or None."""
    for place, (block, value) in enumerate(zip(inputs, data), start=1):
        if block.stateful or value is None:  # a state is the server's, never the client's value
            continue
        try:
            model = getattr(block, "data_model", None)
            checked = model.model_validate(value, context={"validate_meta": True}) if model else value
            if fn.preprocess:
                block.preprocess(checked)
        except Exception as err:  # whatever the component raises, the value is not one it takes
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return f'"data" value {place} does not fit its input ({block.get_block_name()}): {reason}'
    return None


def event_problem(fn, event_data: Any) -> str | None:
    """Why the event data a handler takes (a click's index and value, say) can't be read; or None."""
    from gradio import EventData
    from gradio.utils import get_type_hints  # as Gradio finds the handler's EventData parameter

    hints = get_type_hints(fn.fn)
    for kind in (hint for hint in hints.values() if isinstance(hint, type) and issubclass(hint, EventData)):
        try:
            kind(None, event_data)
        except (KeyError, TypeError, AttributeError):
            return f'this event needs its "event_data" ({kind.__name__})'
    return None


def logged_in(scope: Scope) -> bool:
    """True when no login is configured, or the request carries a session cookie Gradio issued.

    Gradio keeps its sessions in `app.tokens` under the cookie `access-token[-unsecure]-{app.cookie_id}`
    (its own `get_current_user` reads the same); anything missing counts as not logged in."""
    gradio = scope.get("app")
    if getattr(gradio, "auth", None) is None:
        return True
    cookie_id, tokens = getattr(gradio, "cookie_id", None), getattr(gradio, "tokens", None) or {}
    cookies = Request(scope).cookies
    token = cookies.get(f"access-token-{cookie_id}") or cookies.get(f"access-token-unsecure-{cookie_id}")
    return cookie_id is not None and token in tokens


def without_api_info(send: Send) -> Send:
    """A `send` that holds an HTML page back until it is complete, then blanks its API description."""
    start: dict = {}
    body: list[bytes] = []

    async def send_page(message: dict) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body":
            return await send(message)
        body.append(message.get("body", b""))
        if message.get("more_body"):
            return
        page = API_INFO.sub(rb"\1null\2", b"".join(body))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
        await send({"type": "http.response.body", "body": page})

    return send_page


async def respond(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    """A small JSON error in the shape Gradio's own routes use ({"detail": ...})."""
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(name.encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def gradio_app_options() -> dict[str, Any]:
    """What `rag ui` and `rag serve` pass to Gradio's launch and mount: the Gate in front of its app;
    FastAPI's own route list and docs off (`/openapi.json`, `/docs`: docs/api.md is the reference), and
    Gradio's per-route statistics (`/monitoring`, `/monitoring/summary`) not kept."""
    from starlette.middleware import Middleware

    app_kwargs = {"middleware": [Middleware(Gate)], "openapi_url": None, "docs_url": None, "redoc_url": None}
    return {"app_kwargs": app_kwargs, "enable_monitoring": False}
