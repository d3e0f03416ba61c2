"""A small OpenReview API v2 stand-in on loopback, for `rag fetch` without the internet.

It answers the routes the official client calls for a fetch, as the API does: `GET /groups?id=`,
`GET /notes?invitation=&sort=id&limit=&after=&count=` and `POST /login`, from the hand-written notes in
tests/fixtures/openreview_iclr2025.json. Like the real server it gives at most `page_cap` notes a page
(here 3, so 8 notes make three pages), and it can misbehave on cue: a 429 with Retry-After, or a
request that hangs until released (to kill a fetch mid-way).

Run it by hand for a manual try: `python benchmarks/harness/openreview_server.py` prints the URL to set as
RAG_FETCH__OPENREVIEW_URL.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

HOST = "127.0.0.1"
FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "openreview_iclr2025.json"


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str
    query: dict[str, str]
    at: float
    status: int = 200
    authorization: str | None = None


@dataclass
class OpenReviewFixture:
    """The server's state; tests change it between fetches (a decision, an abstract) and read `seen`."""

    page_cap: int = 3
    throttle_on: set[int] = field(default_factory=set)  # 1-based numbers of /notes requests answered 429
    retry_after: int = 1
    hang_on: int | None = None  # the /notes request that waits for `release`
    release: threading.Event = field(default_factory=threading.Event)
    seen: list[Seen] = field(default_factory=list)
    account: tuple[str, str] = ("ada@example.org", "fixture-password")  # the one user POST /login knows
    token: str = "fixture-token"

    def __post_init__(self):
        data = json.loads(FIXTURE.read_text(encoding="utf-8"))
        self.groups = {group["id"]: group for group in data["groups"]}
        self.notes = {note["id"]: note for note in data["notes"]}

    def set_content(self, note_id: str, **values: str) -> None:
        """Change fields of a note's content, as an edit on OpenReview would (e.g. venue, venueid)."""
        for key, value in values.items():
            self.notes[note_id]["content"][key] = {"value": value}

    def notes_requests(self) -> list[Seen]:
        return [request for request in self.seen if request.path == "/notes"]

    def login(self, body: dict) -> tuple[int, dict]:
        """POST /login: a token for the known account, as the API answers it."""
        if (body.get("id"), body.get("password")) != self.account:
            return 400, {"name": "LoginError", "message": "Invalid username or password"}
        return 200, {"token": self.token, "user": {"id": self.account[0], "profile": {"id": "~Ada_Example1"}}}

    def answer(self, path: str, query: dict[str, str], authorization: str | None = None) -> tuple[int, dict, dict]:
        """(status, JSON body, extra headers) for one GET."""
        request = Seen(path, query, time.monotonic(), authorization=authorization)
        self.seen.append(request)
        if path == "/groups":
            group = self.groups.get(query.get("id", ""))
            if group is None:
                return 404, {"name": "NotFoundError", "message": f"Group Not Found: {query.get('id')}"}, {}
            return 200, {"groups": [group]}, {}
        if path != "/notes":
            return 404, {"name": "NotFoundError", "message": f"Not Found: {path}"}, {}
        number = len(self.notes_requests())
        if number in self.throttle_on:
            request.status = 429
            headers = {"Retry-After": str(self.retry_after)}
            return 429, {"name": "RateLimitError", "message": "Too many requests"}, headers
        if number == self.hang_on:
            self.release.wait(60)
        matching = sorted(
            (note for note in self.notes.values() if query.get("invitation") in note["invitations"]),
            key=lambda note: note["id"],
        )
        after = query.get("after")
        page = [note for note in matching if after is None or note["id"] > after]
        page = page[: min(int(query.get("limit", 1000)), self.page_cap)]
        body = {"notes": copy.deepcopy(page)}
        if query.get("count") == "true":
            body["count"] = len(matching)
        return 200, body, {}


class FixtureServer:
    """`OpenReviewFixture` served over HTTP on a free loopback port; a context manager."""

    def __init__(self, fixture: OpenReviewFixture | None = None):
        self.fixture = fixture or OpenReviewFixture()
        fixture = self.fixture

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the name http.server looks for
                url = urlparse(self.path)
                query = {key: values[-1] for key, values in parse_qs(url.query).items()}
                self.send(*fixture.answer(url.path, query, self.headers.get("Authorization")))

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if urlparse(self.path).path == "/login":
                    self.send(*fixture.login(body), {})
                else:
                    self.send(404, {"name": "NotFoundError", "message": "Not Found"}, {})

            def send(self, status: int, body: dict, headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed while this request hung: expected in the kill test

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{HOST}:{self.server.server_address[1]}"

    def __enter__(self) -> FixtureServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.fixture.release.set()
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    with FixtureServer() as running:
        print(f"RAG_FETCH__OPENREVIEW_URL={running.url}  (Ctrl-C stops)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
