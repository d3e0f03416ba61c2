"""`rag serve` at its edges (issue 39, items 4 and 10), each on a real server on loopback in its own
process, with a new user's data folder: a request naming a config still answers from the server's
`--index`; every Gradio route that runs an event refuses values its inputs can't take with a 4xx and no
traceback; no route list or statistics are served; /v1 checks the key before reading a body and reads
none past the cap; the failed-login slow-down believes X-Forwarded-For only from `ui.trusted_proxies`."""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from conftest import settings_for, user_environment

from benchmarks.harness.servers import HOST, Balancer, ServeProcess, nginx_command
from rag.service import RagService
from ui.guard import MAX_CALL_BYTES

pytestmark = pytest.mark.slow

KEY = "edge-key-5b1c"
LOGIN = ("reader", "edge-pass-77")
WRONG = {"username": LOGIN[0], "password": "guess"}
RIGHT = dict(zip(("username", "password"), LOGIN))


@pytest.fixture(scope="module")
def index_x(tmp_path_factory, embeddings, full_list_sample) -> tuple[Path, set[str], list[dict]]:
    """An index of 12 papers of the real list, none of them a bundled seed: (its folder, their ids, the records)."""
    folder = tmp_path_factory.mktemp("index-x")
    lines = full_list_sample.read_text(encoding="utf-8").splitlines()[:12]
    (folder / "papers.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    RagService(settings_for(folder / "index"), embeddings=embeddings).ingest([folder / "papers.jsonl"])
    records = [json.loads(line) for line in lines]
    return folder / "index", {record["id"] for record in records}, records


def own_copy(index: Path, folder: Path) -> Path:
    """A server's own copy of the index, so no two processes open one Chroma folder."""
    return Path(shutil.copytree(index, folder / "index"))


def clean_log(server: ServeProcess) -> None:
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("edge-user")


@pytest.fixture(scope="module")
def answering(home, index_x):
    """`rag --index X serve` for a new user (the default config, no key, no login)."""
    with ServeProcess(home / "serve.log", user_environment(home), "--index", str(index_x[0])) as server:
        yield server
    clean_log(server)


def created_in(home: Path) -> list[str]:
    """What a server made in the user's data folder (where the default index would be)."""
    data = home / "data"
    return sorted(str(path.relative_to(home)) for path in data.rglob("*")) if data.exists() else []


# -- item 4: a config named by a request answers from the server's index ------------------------------


def answered_ids(reply: httpx.Response) -> set[str]:
    """The papers a /v1 reply answers from, whichever route it came from."""
    if reply.headers["content-type"].startswith("text/event-stream"):
        events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: {")]
        body = next(event for event in events if "rag" in event)
    else:
        body = reply.json()
    if "rag" in body:
        return {source["paper_id"] for source in body["rag"]["sources"]}
    if body["object"] == "related":
        return {body["subject"]["paper_id"]} | {paper["paper_id"] for paper in body["papers"]}
    if body["object"] == "map":
        return {point["paper_id"] for point in body["points"]}
    return {source["paper_id"] for source in body["data"]}


def model_requests(records: list[dict]) -> dict[str, tuple[str, str, dict | None]]:
    """Every /v1 route that takes `model`, naming the extractive config (the server runs the default one)."""
    question = f"What does {records[0]['title']} propose?"
    chat = {"model": "extractive", "messages": [{"role": "user", "content": question}]}
    return {
        "retrieve": ("POST", "/v1/retrieve", {"question": question, "model": "extractive"}),
        "chat": ("POST", "/v1/chat/completions", chat),
        "chat, streamed": ("POST", "/v1/chat/completions", {**chat, "stream": True}),
        "related": ("POST", "/v1/related", {"paper": records[0]["id"], "model": "extractive"}),
        "map": ("GET", "/v1/map?model=extractive", None),
    }


@pytest.mark.parametrize("route", ["retrieve", "chat", "chat, streamed", "related", "map"])
def test_a_config_named_by_a_request_answers_from_the_servers_index(answering, index_x, home, route):
    _, ids, records = index_x
    method, path, body = model_requests(records)[route]
    reply = httpx.request(method, f"{answering.url.rstrip('/')}{path}", json=body, timeout=600)
    assert reply.status_code == 200, reply.text[:500]
    found = answered_ids(reply)
    assert found and found <= ids, found - ids  # papers of X, none of the seeds
    assert created_in(home) == []  # no default index made (nor seeded) for the named config


# -- item 10: Gradio's event routes refuse what their inputs can't take, with a 4xx and no traceback ----


def bad_event_calls(url: str) -> dict[str, tuple[str, dict]]:
    """queue/join calls the page could never make, one per kind of input Gradio would log a traceback
    for, found from the app's own /config (so they follow the page as it changes)."""
    config = httpx.get(f"{url}config", timeout=60).json()
    kinds = {component["id"]: component["type"] for component in config["components"]}
    calls: dict[str, tuple[str, dict]] = {}
    for event in config["dependencies"]:
        inputs = [kinds.get(number) for number in event["inputs"]]
        join = {"fn_index": event["id"], "session_hash": "edge", "event_data": None}
        if not event.get("backend_fn") and "browser-only event" not in calls:
            calls["browser-only event"] = ("queue/join", {**join, "data": [None] * len(inputs)})
        if any(trigger[1] == "select" for trigger in event["targets"]) and "no event data" not in calls:
            calls["no event data"] = ("queue/join", {**join, "data": [None] * len(inputs)})
        for kind, value in (("chatbot", 1), ("checkboxgroup", 1), ("radio", 12345), ("dropdown", 12345)):
            if kind in inputs and event.get("backend_fn") and f"bad {kind}" not in calls:
                data = [value if place == inputs.index(kind) else None for place in range(len(inputs))]
                calls[f"bad {kind}"] = ("queue/join", {**join, "data": data})
    return calls


NAMED_CALLS = {
    "call/v2 with a data list": ("call/v2/ask", {"data": [1, 2, 3]}),
    "call/v2/ with a data list": ("call/v2/ask/", {"data": [1, 2, 3]}),
    "call/v2 without the question": ("call/v2/ask", {}),
    "call/v2 of no endpoint": ("call/v2/nosuch", {"question": "x"}),
    "call with three values": ("call/ask", {"data": [1, 2, 3]}),
    "run with three values": ("run/ask", {"data": [1, 2, 3]}),
    "api with three values": ("api/ask/", {"data": [1, 2, 3]}),
    "a server function of no component": (
        "component_server",
        {"component_id": 99999, "fn_name": "x", "session_hash": "edge", "data": None},
    ),
}
EVENT_CALLS = ["browser-only event", "no event data", "bad chatbot", "bad checkboxgroup", "bad radio", "bad dropdown"]


@pytest.mark.parametrize("case", [*NAMED_CALLS, *EVENT_CALLS])
def test_every_event_route_refuses_values_it_cannot_take_with_a_4xx_and_no_traceback(answering, case):
    calls = NAMED_CALLS | bad_event_calls(answering.url)
    if case not in calls:
        pytest.skip(f"the page has no event with a {case.removeprefix('bad ')} input now")
    route, body = calls[case]
    before = answering.log.read_text(errors="replace")
    reply = httpx.post(f"{answering.url}gradio_api/{route}", json=body, timeout=60)
    time.sleep(1)  # what the queue would log comes after the reply
    assert 400 <= reply.status_code < 500, (reply.status_code, reply.text[:300])
    assert reply.json()["detail"] and "Traceback" not in reply.text
    assert "Traceback" not in answering.log.read_text(errors="replace")[len(before) :]


@pytest.mark.parametrize("path", ["/openapi.json", "/docs", "/redoc", "/monitoring", "/monitoring/summary"])
def test_no_route_list_or_route_statistics_are_served_without_a_login(answering, path):
    reply = httpx.get(f"{answering.url.rstrip('/')}{path}", timeout=60)
    assert reply.status_code in (403, 404), (reply.status_code, reply.text[:300])
    assert '"paths"' not in reply.text and '"functions"' not in reply.text


# -- item 10: /v1 reads no body past the cap -------------------------------------------------------


def raw_reply(port: int, head: bytes, body: bytes = b"", within: float = 20) -> bytes:
    """Send `head` and `body` and wait for the reply without sending more (nor closing)."""
    with socket.create_connection((HOST, port), timeout=within) as connection:
        connection.sendall(head + body)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            reply += connection.recv(65536) or b"}"  # closed: what came is the reply
        return reply


def assert_openai_413(reply: bytes) -> None:
    status, _, rest = reply.partition(b"\r\n")
    assert status.split()[1] == b"413", reply[:300]
    error = json.loads(rest.partition(b"\r\n\r\n")[2])["error"]
    assert error["type"] == "invalid_request_error" and f"{MAX_CALL_BYTES:,} bytes" in error["message"]


def test_a_body_declared_over_the_cap_is_refused_before_it_is_sent(answering):
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000000\r\n\r\n"
    )
    assert_openai_413(raw_reply(answering.port, head))  # nothing of the 100 MB sent: the server waits for none


def test_a_body_without_a_length_is_cut_at_the_cap(answering):
    history = [{"role": role, "content": "x" * 15_000} for _ in range(60) for role in ("user", "assistant")]
    body = json.dumps({"model": "extractive", "messages": [*history, {"role": "user", "content": "Which?"}]})
    assert len(body) > 1.5 * MAX_CALL_BYTES
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Transfer-Encoding: chunked\r\n\r\n"
    sent = body.encode()[: MAX_CALL_BYTES + 200_000]  # the cap and a little more, in chunks; the body never ends
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in _pieces(sent, 65536))
    assert_openai_413(raw_reply(answering.port, head, chunks))


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# -- item 10: the key before the body; the login slow-down and forwarded addresses -----------------------


@pytest.fixture(scope="module")
def locked(tmp_path_factory, index_x):
    """`rag --config extractive serve` with a key and a login, `ui.trusted_proxies` unset."""
    folder = tmp_path_factory.mktemp("locked")
    env = user_environment(folder) | {"ABSTRACT_RAG_API_KEY": KEY, "EDGE_LOGIN": ":".join(LOGIN)}
    env["RAG_UI__AUTH_ENV"] = "EDGE_LOGIN"
    index = own_copy(index_x[0], folder)
    with ServeProcess(folder / "serve.log", env, "--config", "extractive", "--index", str(index)) as server:
        yield server
    clean_log(server)


def peak_growth_from_now(server: ServeProcess) -> Callable[[], float]:
    """A function giving how far (MB) the server's peak resident memory has risen since this call."""
    proc = Path(f"/proc/{server.process.pid}")
    (proc / "clear_refs").write_text("5")  # Linux: the peak (VmHWM) starts again from the resident size now
    start = peak_mb(proc)
    return lambda: peak_mb(proc) - start


def peak_mb(proc: Path) -> float:
    status = (proc / "status").read_text().splitlines()
    return int(next(line.split()[1] for line in status if line.startswith("VmHWM:"))) / 1024


@pytest.mark.parametrize("key, status, code", [(None, 401, "invalid_api_key"), (KEY, 413, None)])
def test_a_100mb_history_is_refused_without_being_read(locked, key, status, code):
    history = [{"role": role, "content": "x" * 19_000} for _ in range(2700) for role in ("user", "assistant")]
    body = json.dumps({"model": "extractive", "messages": [*history, {"role": "user", "content": "Which?"}]}).encode()
    assert len(body) > 100_000_000
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    grown = peak_growth_from_now(locked)
    reply = httpx.post(f"{locked.url}v1/chat/completions", content=body, headers=headers, timeout=120)
    assert reply.status_code == status and reply.json()["error"]["code"] == code, reply.text[:300]
    assert grown() < 30  # MB: it read none of it (reading it whole cost +115 MB before a 401, +210 MB in all)


def test_rotating_x_forwarded_for_from_loopback_gets_no_more_login_tries(locked):
    with httpx.Client(base_url=locked.url.rstrip("/"), timeout=30) as guesser:
        statuses = [
            guesser.post("/login", data=WRONG, headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code
            for n in range(8)
        ]
    assert statuses[:5] == [400] * 5 and statuses[5:] == [429] * 3, statuses


@pytest.mark.parametrize(
    "spoofed",
    [
        {"X-Forwarded-For": "127.0.0.1"},
        {"X-Real-IP": "127.0.0.1"},
        {"Forwarded": "for=127.0.0.1"},
        {"X-Forwarded-For": "127.0.0.1", "Host": "localhost"},
    ],
)
def test_the_key_is_needed_whatever_the_forwarding_headers_say(locked, spoofed):
    reply = httpx.post(f"{locked.url}v1/retrieve", json={"question": "graphs"}, headers=spoofed, timeout=60)
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "invalid_api_key"


@pytest.fixture(scope="module")
def behind_nginx(tmp_path_factory, index_x):
    """The lab's recipe in small (docs/operations.md): nginx in front of one replica that trusts it."""
    try:
        nginx_command()
    except RuntimeError as err:
        pytest.skip(f"{err}; .ci/run installs it")
    folder = tmp_path_factory.mktemp("proxied")
    env = user_environment(folder) | {"ABSTRACT_RAG_API_KEY": KEY, "EDGE_LOGIN": ":".join(LOGIN)}
    env |= {"RAG_UI__AUTH_ENV": "EDGE_LOGIN", "RAG_UI__TRUSTED_PROXIES": "127.0.0.1"}
    index = own_copy(index_x[0], folder)
    with ServeProcess(folder / "serve.log", env, "--config", "extractive", "--index", str(index)) as replica:
        with Balancer(folder / "nginx", [replica.port]) as balancer:
            yield balancer
    clean_log(replica)


def test_behind_a_trusted_proxy_each_client_has_its_own_login_tries(behind_nginx):
    def client(address: str) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=address)
        return httpx.Client(base_url=behind_nginx.url.rstrip("/"), transport=transport, timeout=30)

    with client("127.0.0.2") as guesser:
        statuses = [
            guesser.post("/login", data=WRONG, headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code
            for n in range(8)
        ]
    assert statuses[:5] == [400] * 5 and statuses[5:] == [429] * 3, statuses  # nginx's address is the guesser's
    with client("127.0.0.3") as neighbour:  # another client of the same nginx is not held back
        assert neighbour.post("/login", data=RIGHT).status_code == 200
