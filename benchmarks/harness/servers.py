"""Real servers on loopback for tests: llama.cpp's OpenAI-compatible server, a Chroma server, and a
scripted HTTP server that answers like a misbehaving one (errors, stalls, garbage, a scripted chat stream).

Everything binds 127.0.0.1 only, and every server is stopped by its context manager.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"


def free_port() -> int:
    """A port nothing listens on right now (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A server command in its own process group on a free loopback port; `kill` and `start` again
    reuse the port. Subclasses say what to run and how to tell it is ready."""

    name = "server"
    cwd: Path | None = None
    env: dict[str, str] | None = None

    def __init__(self, log: Path, port: int | None = None):
        self.log = log
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    def start(self, ready_within: float = 120) -> ServerProcess:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(), cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + ready_within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}: {self.log_tail()}")
            if self.alive():
                return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.name} not ready after {ready_within} s: {self.log_tail()}")

    def kill(self) -> None:
        """Stop it the hard way, as a crash or a pulled cable would."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def answers(url: str) -> bool:
    """Whether a GET of `url` gets a 200 within 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


class LlamaServer(ServerProcess):
    """`python -m llama_cpp.server` serving a GGUF on loopback."""

    name = "llama_cpp.server"

    def __init__(self, model: Path, log: Path, *args: str):
        super().__init__(log)
        self.model, self.args = model, args

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", HOST,
                "--port", str(self.port), *self.args]  # fmt: skip

    def alive(self) -> bool:
        return answers(f"{self.base_url}/models")


class ChromaServer(ServerProcess):
    """`chroma run --path DATA --host 127.0.0.1 --port PORT` (the chromadb package's server); the data
    folder outlives a restart."""

    name = "chroma run"

    def __init__(self, data: Path, log: Path, port: int | None = None):
        super().__init__(log, port)
        self.data = data

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def command(self) -> list[str]:
        return [chroma_command(), "run", "--path", str(self.data), "--host", HOST, "--port", str(self.port)]

    def alive(self) -> bool:
        return answers(f"{self.url}/api/v2/heartbeat")

    def wait_until_alive(self, within: float = 60) -> None:
        """For a server someone else started: wait for its heartbeat."""
        deadline = time.monotonic() + within
        while not self.alive():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no Chroma server answers at {self.url} after {within} s")
            time.sleep(0.2)


class AppProcess(ServerProcess):
    """`python -m ui` (the chat app) on loopback, as a user would start it, with `env` added to ours."""

    name = "the app"
    cwd = Path(__file__).resolve().parents[2]

    def __init__(self, log: Path, env: dict[str, str], *args: str):
        super().__init__(log)
        self.env, self.args = {**os.environ, **env}, args

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "ui", "--port", str(self.port), *self.args]

    def alive(self) -> bool:
        return f"Chat app running at {self.url}" in self.log_tail()

    def start(self, ready_within: float = 300) -> AppProcess:
        return super().start(ready_within)


class ServeProcess(ServerProcess):
    """`rag [ARGS] serve` (the chat page and the /v1 API) on loopback, in the given environment."""

    name = "rag serve"
    cwd = Path(__file__).resolve().parents[2]

    def __init__(self, log: Path, env: dict[str, str], *args: str):
        super().__init__(log)
        self.env, self.args = env, args

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "rag.cli", *self.args, "serve", "--port", str(self.port)]

    def alive(self) -> bool:
        return answers(f"{self.url}health")

    def start(self, ready_within: float = 300) -> ServeProcess:
        return super().start(ready_within)


class Balancer(ServerProcess):
    """Debian's nginx in front of `rag serve` replicas, from a config it writes into `folder` (its own
    pid, logs and temp files there; `daemon off`, so stopping this process stops it). See
    `balancer_config` for what it does; docs/operations.md shows the same config."""

    name = "nginx"

    def __init__(self, folder: Path, replica_ports: list[int]):
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(folder / "nginx.out")
        self.folder = folder
        self.config = folder / "nginx.conf"
        self.config.write_text(balancer_config(self.port, replica_ports, folder))

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    @property
    def access_log(self) -> Path:
        return self.folder / "access.log"

    def command(self) -> list[str]:
        return [nginx_command(), "-p", str(self.folder), "-c", str(self.config), "-e", str(self.folder / "error.log")]

    def alive(self) -> bool:
        with socket.socket() as sock:
            return sock.connect_ex((HOST, self.port)) == 0


def balancer_config(port: int, replica_ports: list[int], folder: Path) -> str:
    """An nginx config: /v1 and /health spread over every replica (each request is on its own); the
    chat page's routes sticky by client address (a Gradio session and its login live in one replica).
    A replica that refuses or drops a connection is left out for 10 s, and the request goes to the
    next one, POSTs too: answering a question changes nothing, so asking again is safe."""
    import getpass

    servers = "\n".join(f"    server {HOST}:{p} max_fails=1 fail_timeout=10s;" for p in replica_ports)
    user = f"user {getpass.getuser()};" if os.geteuid() == 0 else ""  # as root, workers would run as nobody
    return f"""{user}
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log notice;
events {{ worker_connections 1024; }}
http {{
  log_format replicas '$msec $request_method $uri $status "$upstream_addr" "$upstream_status" $request_time';
  access_log {folder}/access.log replicas;
  client_body_temp_path {folder}/client_body;
  proxy_temp_path {folder}/proxy;
  fastcgi_temp_path {folder}/fastcgi;
  uwsgi_temp_path {folder}/uwsgi;
  scgi_temp_path {folder}/scgi;
  upstream rag_api {{
{servers}
    keepalive 16;
  }}
  upstream rag_page {{
    ip_hash;
{servers}
  }}
  server {{
    listen {HOST}:{port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    proxy_buffering off;
    proxy_connect_timeout 2s;
    proxy_read_timeout 600s;
    proxy_next_upstream error timeout non_idempotent;
    proxy_next_upstream_tries 3;
    location /v1/ {{ proxy_pass http://rag_api; }}
    location = /health {{ proxy_pass http://rag_api; }}
    location / {{ proxy_pass http://rag_page; }}
  }}
}}
"""


def nginx_command() -> str:
    """Debian's nginx (`apt-get install nginx`); it lives in /usr/sbin, often not on a user's PATH."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if not found:
        raise RuntimeError("nginx is not installed (Debian: apt-get install -y nginx)")
    return found


def chroma_command() -> str:
    """The `chroma` CLI beside this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise RuntimeError("the `chroma` command (package chromadb) is not installed")
    return found


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict


@dataclass
class Scripted:
    """What the scripted server does with each request; see the factory functions below."""

    respond: Callable[[BaseHTTPRequestHandler, Request], None]
    requests: list[Request] = field(default_factory=list)
    release: Callable[[], None] = lambda: None  # called before shutdown, to free stalled handlers


def reply(status: int, body: bytes | str, content_type: str = "application/json") -> Scripted:
    """Answer every request with this status and body."""
    data = body.encode() if isinstance(body, str) else body

    def respond(handler, request):
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return Scripted(respond)


def error(status: int, message: str) -> Scripted:
    """An OpenAI-style JSON error."""
    return reply(status, json.dumps({"error": {"message": message, "type": "test", "code": status}}))


def echo_key_401() -> Scripted:
    """401 with the request's Authorization header in the message, as careless servers do."""

    def respond(handler, request):
        body = json.dumps({"error": {"message": f"Invalid key: {request.headers.get('authorization')}"}}).encode()
        handler.send_response(401)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return Scripted(respond)


def stall(after_headers: bool = False) -> Scripted:
    """Read the request, then say nothing (optionally after sending a 200 and stream headers)."""
    stop = threading.Event()

    def respond(handler, request):
        if after_headers:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            handler.wfile.flush()
        stop.wait(120)

    return Scripted(respond, release=stop.set)


def chat(*answers: str, piece_chars: int = 6) -> Scripted:
    """An OpenAI-compatible chat endpoint that answers request i with answers[i] (the last one
    repeats), streamed in small pieces when the request asks for a stream."""

    def respond(handler, request):
        text = answers[min(len(scripted.requests) - 1, len(answers) - 1)]
        if not request.body.get("stream"):
            message = {"role": "assistant", "content": text}
            data = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "stub",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
            ).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        pieces = [text[i : i + piece_chars] for i in range(0, len(text), piece_chars)]
        for i, piece in enumerate([*pieces, None]):
            delta = {"content": piece} if piece is not None else {}
            if i == 0:
                delta["role"] = "assistant"
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "stub",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None if piece is not None else "stop"}],
            }
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            handler.wfile.flush()
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()

    scripted = Scripted(respond)
    return scripted


@contextmanager
def scripted_server(scripted: Scripted) -> Iterator[str]:
    """Serve `scripted` on a free loopback port; yields the base URL ending in /v1."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - the name http.server looks for
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            scripted.requests.append(request)
            scripted.respond(self, request)

        do_GET = do_POST  # noqa: N815

        def log_message(self, *args):  # keep test output clean
            pass

    server = ThreadingHTTPServer((HOST, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/v1"
    finally:
        scripted.release()
        server.shutdown()
        server.server_close()
