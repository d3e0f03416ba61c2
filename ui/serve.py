"""`rag serve`: one process, one port: the chat page at `/` and the OpenAI-compatible API at `/v1`.

Both live on one FastAPI app: ours holds the API routes, and Gradio's own `mount_gradio_app` mounts
the chat onto it (Gradio runs on FastAPI already, so no second web framework). Routes of the parent
app are matched before the mounted page. Answers from the page and the API share `ui.concurrency_limit`
slots (ui/slots.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import gradio as gr
from fastapi import FastAPI

from rag.service import RagService
from ui.app import build_app
from ui.guard import gradio_app_options
from ui.openai_api import add_openai_routes
from ui.slots import AnswerSlots, SlottedService
from ui.style import CSS, SCRIPT


def build_server(service: RagService, api_key: str | None = None, auth: tuple[str, str] | None = None) -> FastAPI:
    """The API (a bearer `api_key` required when given; closed when only `auth` is) and the chat page
    (a login when `auth` is given)."""
    # No /docs or /openapi.json: docs/api.md documents the API, and nothing is shown before a login.
    app = FastAPI(title="abstract-rag", docs_url=None, redoc_url=None, openapi_url=None)
    slots = AnswerSlots(service.config.ui.concurrency_limit, service.config.ui.max_queue)
    add_openai_routes(app, service, slots, api_key, login=auth is not None)
    page = build_app(SlottedService(service, slots))
    gated = gradio_app_options()  # as `rag ui`: nothing but the login page before a login
    return gr.mount_gradio_app(
        app, page, path="/", auth=auth, css=CSS, js=SCRIPT, footer_links=["api"], show_error=False, **gated
    )


def serve(app: FastAPI, host: str, port: int, trusted_proxies: Sequence[object] = ()) -> None:
    """Serve until Ctrl-C. A request's address is the connection's, or, from one of `trusted_proxies`
    (`ui.trusted_proxies`), the right-most address in its X-Forwarded-For that is not one of them
    (uvicorn's own proxy-header handling; left on, it would believe that header from loopback)."""
    import uvicorn

    print(f"Serving http://{host}:{port}/ (the chat) and /v1 (the API); Ctrl-C stops it", flush=True)
    trusted = [str(address) for address in trusted_proxies]
    uvicorn.run(app, host=host, port=port, log_level="warning", forwarded_allow_ips=trusted)
