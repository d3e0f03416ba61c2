"""A lab's deployment on loopback, and what is measured through it: a Chroma server (`chroma run`),
`rag serve` replicas pointed at it, and nginx in front (servers.py `Balancer`).

Shared by tests/test_deploy.py (a small run in CI) and benchmarks/deploy.py (the figures in
docs/operations.md). Users ask through the balancer's `/v1/chat/completions` with the lab's key
(loadgen.ApiUser), and every answer is checked as in the load test: its sources are those of its own
question asked alone. Each scenario returns its figures as a dict.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from .loadgen import ApiUser, Expected, Result, plan, rss_mib, run_users
from .servers import HOST, Balancer, ChromaServer, ServeProcess, ServerProcess

ROOT = Path(__file__).resolve().parents[2]
KEY = "lab-key-0d9e4b"  # ABSTRACT_RAG_API_KEY of every replica
LOGIN = ("lab", "lab-pass-61c2")  # the chat page's login, through ui.auth_env
# Every route of the page that answers a question; without a login each must say 401.
PAGE_QUESTION_ROUTES = ("/gradio_api/call/ask", "/gradio_api/run/ask", "/gradio_api/api/ask", "/gradio_api/queue/join")


@dataclass
class Deployment:
    folder: Path
    env: dict[str, str]  # what every `rag` command of the lab runs with (the config, the Chroma server)
    config: str
    chroma: ChromaServer
    replicas: list[ServeProcess]
    balancer: Balancer | None = None  # started last

    @property
    def url(self) -> str:
        assert self.balancer, "the balancer is not started yet"
        return self.balancer.url

    def rag(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """A `rag` command of the lab (`rag --config CONFIG ARGS`), as an operator types it."""
        command = [sys.executable, "-m", "rag.cli", "--config", self.config, *args]
        return subprocess.run(command, env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)

    def user(self, url: str | None = None) -> ApiUser:
        return ApiUser(url or self.url, KEY)

    def logs(self) -> str:
        return "".join(replica.log_tail() for replica in self.replicas)


def lab_environment(base: dict[str, str], chroma_port: int, **settings: str) -> dict[str, str]:
    """`base` with the index on the Chroma server at `chroma_port`, the lab's key and page login set,
    and any `RAG_...` settings given (e.g. RAG_UI__CONCURRENCY_LIMIT="2")."""
    env = {name: value for name, value in base.items() if not name.startswith("RAG_")}
    env.update(
        RAG_VECTORSTORE__MODE="http", RAG_VECTORSTORE__HOST=HOST, RAG_VECTORSTORE__PORT=str(chroma_port),
        ABSTRACT_RAG_API_KEY=KEY, LAB_LOGIN=":".join(LOGIN), RAG_UI__AUTH_ENV="LAB_LOGIN",
        RAG_UI__TRUSTED_PROXIES=HOST,  # nginx: its X-Forwarded-For names each client (docs/operations.md)
    )  # fmt: skip
    env.update(settings)
    if embedding_cache := base.get("RAG_EMBEDDING__ONNX_CACHE"):
        env["RAG_EMBEDDING__ONNX_CACHE"] = embedding_cache
    return env


@contextmanager
def deployment(
    folder: Path, replicas: int = 3, config: str = "server", base_env: dict[str, str] | None = None, **settings: str
) -> Iterator[Deployment]:
    """Chroma, the bundled seeds ingested into it, `replicas` x `rag --config CONFIG serve` (each with its
    own BM25 cache folder), nginx in front; everything stopped at the end, whatever happened."""
    started: list[ServerProcess] = []
    try:
        chroma = ChromaServer(folder / "chroma", folder / "chroma.log").start()
        started.append(chroma)
        env = lab_environment(base_env or dict(os.environ), chroma.port, **settings)
        lab = Deployment(folder, env, config, chroma, [])
        ingested = lab.rag("ingest", "--quiet", str(ROOT / "seeds"))
        if ingested.returncode:
            raise RuntimeError(f"rag ingest of the seeds failed: {ingested.stderr}")
        for number in range(replicas):
            own_cache = {"RAG_RETRIEVAL__LEXICAL_CACHE": str(folder / f"bm25-{number}")}
            lab.replicas.append(
                ServeProcess(folder / f"replica-{number}.log", {**env, **own_cache}, "--config", config)
            )
        started += lab.replicas
        start_together(lab.replicas)
        lab.balancer = Balancer(folder / "nginx", [replica.port for replica in lab.replicas]).start()
        started.append(lab.balancer)
        yield lab
    finally:
        for process in reversed(started):
            process.stop()


def start_together(processes: list[ServeProcess]) -> None:
    """Start them all at once (each loads its models), and wait until every one is ready."""
    failures: list[Exception] = []

    def start(process: ServeProcess) -> None:
        try:
            process.start()
        except Exception as err:  # reported below, after the others had their chance
            failures.append(err)

    threads = [threading.Thread(target=start, args=(process,)) for process in processes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


BEARER = {"Authorization": f"Bearer {KEY}"}


def ask_body(question: str) -> dict:
    return {"messages": [{"role": "user", "content": question}]}


# -- the scenarios ----------------------------------------------------------------------


def access(lab: Deployment, question: str) -> dict:
    """Through the balancer: the API without the key, with a wrong one and with it; the page's
    question routes without a login, and `/ask` with it."""
    from gradio_client import Client

    body = ask_body(question)
    figures: dict = {}
    for name, headers in (("no key", {}), ("wrong key", {"Authorization": "Bearer guess"})):
        reply = httpx.post(f"{lab.url}v1/chat/completions", json=body, headers=headers, timeout=60)
        figures[name] = (reply.status_code, reply.json().get("error", {}).get("code"))
    answer = lab.user().ask(question, [], timeout=600)
    figures["key"] = (200, bool(answer["cited"]))
    call = {"data": [question, [], None, None, None]}
    for route in PAGE_QUESTION_ROUTES:
        figures[f"page {route} without login"] = httpx.post(f"{lab.url.rstrip('/')}{route}", json=call).status_code
    logged_in = Client(lab.url, auth=LOGIN, verbose=False).predict(question, api_name="/ask")
    figures["page /ask with login"] = (200, bool(logged_in["cited"]))
    return figures


def many_users(lab: Deployment, pool: list[Expected], users: int, questions: int) -> tuple[list[Result], float, dict]:
    """`users` at once, each asking `questions` through the balancer; results, wall seconds, and how
    many requests each replica served (from nginx's log)."""
    before = len(balancer_log(lab))
    results, seconds = run_users(lab.url, plan(pool, users, questions), connect=lambda url, auth: lab.user(url))
    served = Counter(entry.upstreams[-1] for entry in balancer_log(lab)[before:] if entry.uri == "/v1/chat/completions")
    return results, seconds, dict(served)


@contextmanager
def background_users(lab: Deployment, pool: list[Expected], users: int, seconds: float) -> Iterator[list[Result]]:
    """Users asking through the balancer for `seconds`, from a thread; the list fills when they are done
    (on leaving the block, which waits for them)."""
    results: list[Result] = []
    until = time.monotonic() + seconds

    def load() -> None:
        done, _ = run_users(lab.url, plan(pool, users, 4), connect=lambda url, auth: lab.user(url), until=until)
        results.extend(done)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    try:
        yield results
    finally:
        thread.join()


def ingest_while_serving(lab: Deployment, pool: list[Expected], papers: list[dict], file: Path, users: int) -> dict:
    """`rag ingest FILE` of `papers` (new ones) while users ask; then the seconds until every replica,
    asked directly, retrieves each new paper first for its own title."""
    # A new paper may join a seed question's sources: only the gold paper stays fixed meanwhile.
    loose = [replace(expected, sources=None) for expected in pool]
    with background_users(lab, loose, users, seconds=10) as results:
        began = time.monotonic()
        ingested = lab.rag("ingest", "--quiet", str(file))
        ingest_seconds = time.monotonic() - began
        if ingested.returncode:
            raise RuntimeError(f"rag ingest failed: {ingested.stderr}")
        waits = [wait_until_found(replica, papers) for replica in lab.replicas]
    return {
        "ingest_s": round(ingest_seconds, 1),
        "until_every_replica_answers_from_them_s": round(max(waits), 2),
        "per_replica_s": [round(wait, 2) for wait in waits],
        "answers_meanwhile": len(results),
        "failed_meanwhile": [r.problems for r in results if r.problems],
    }


def wait_until_found(replica: ServeProcess, papers: list[dict], within: float = 120) -> float:
    """Seconds until `replica` retrieves each paper first for its title (asked at once, then every 0.1 s)."""
    began = time.monotonic()
    missing = list(papers)
    with httpx.Client(base_url=f"{replica.url}v1", headers=BEARER) as client:
        while missing:
            paper = missing[0]
            reply = client.post("/retrieve", json={"question": paper["title"], "k": 3}, timeout=60)
            data = reply.json()["data"] if reply.status_code == 200 else []
            if [p["paper_id"] for p in data[:1]] == [paper["id"]]:
                missing.pop(0)
            elif time.monotonic() - began > within:
                # The relevance tells which ranking lacks the paper: 1.0 first in both, less in one only.
                said = [
                    (p["paper_id"], p["relevance"], p["score"]) for p in data
                ] or f"{reply.status_code} {reply.text}"
                health = client.get(f"{replica.url}health").text
                raise RuntimeError(
                    f"{replica.url} still lacks {[p['id'] for p in missing]} after {within} s: {said}; {health}"
                )
            else:
                time.sleep(0.1)
    return time.monotonic() - began


def chroma_restart(lab: Deployment, pool: list[Expected], users: int, down_seconds: float = 3) -> dict:
    """Under load, the Chroma server is killed and started again `down_seconds` later (same port, same
    data). Figures: answers and failures meanwhile, what each failure said, and the seconds from the
    server's return until every replica (not restarted) answers again."""
    pids = [replica.process.pid for replica in lab.replicas]
    # A restarted Chroma server rebuilds its approximate vector index, which may then rank the nearest chunks
    # of a question a little differently (chroma-core/chroma#3638): only the gold paper stays fixed across it.
    loose = [replace(expected, sources=None) for expected in pool]
    with background_users(lab, loose, users, seconds=down_seconds + 25) as results:
        time.sleep(3)
        lab.chroma.kill()
        down_at = time.monotonic()
        probe = httpx.post(f"{lab.url}v1/chat/completions", json=ask_body(pool[0].question), headers=BEARER, timeout=60)
        time.sleep(max(0.0, down_seconds - (time.monotonic() - down_at)))
        lab.chroma.start()
        back_at = time.monotonic()
        waits = [wait_until_answering(replica) for replica in lab.replicas]
    failures = [r for r in results if r.problems]
    return {
        "answers": sum(1 for r in results if not r.problems),
        "failed": len(failures),
        "failures": dict(Counter(failure_kind(r) for r in failures)),
        "asked_while_down": f"{probe.status_code} {probe.json()['error']['code']}: {probe.json()['error']['message']}",
        "server_down_s": round(back_at - down_at, 1),
        "until_every_replica_answers_s": round(max(waits), 2),
        "replicas_restarted": sum(1 for replica, pid in zip(lab.replicas, pids) if replica.process.pid != pid),
    }


def wait_until_answering(replica: ServeProcess, within: float = 120) -> float:
    """Seconds until `replica` answers a retrieval with 200 (asked every 0.1 s)."""
    began = time.monotonic()
    with httpx.Client(base_url=f"{replica.url}v1", headers=BEARER) as client:
        while client.post("/retrieve", json={"question": "diffusion", "k": 1}, timeout=60).status_code != 200:
            if time.monotonic() - began > within:
                raise RuntimeError(f"{replica.url} does not answer {within} s after the Chroma server came back")
            time.sleep(0.1)
    return time.monotonic() - began


def failure_kind(result: Result) -> str:
    """What a failed request said, in a few words: its status and OpenAI error code, else the problem."""
    import json

    said = API_FAILURE.match(result.error or "")
    if not said:
        return (result.error or "; ".join(result.problems))[:120]
    try:
        error = json.loads(said["body"])["error"]
        return f"{said['status']} {error['code']}: {error['message'][:90]}"
    except (ValueError, KeyError, TypeError):
        return f"{said['status']}, not an OpenAI error: {said['body'][:90]}"


def kill_replica(lab: Deployment, pool: list[Expected], users: int, number: int = 0) -> dict:
    """Under load, replica `number` is killed with SIGKILL. Figures: answers and failures, and from
    nginx's log, the requests the dead replica held at the kill and those nginx sent it after (each
    retried on another replica), with when they were sent."""
    before = len(balancer_log(lab))
    dead = f"{HOST}:{lab.replicas[number].port}"
    with background_users(lab, pool, users, seconds=20) as results:
        time.sleep(4)
        killed_at = time.time()
        lab.replicas[number].kill()
    touched = [e for e in balancer_log(lab)[before:] if dead in e.upstreams and e.ended > killed_at]
    held, sent_after = [e for e in touched if e.started < killed_at], [e for e in touched if e.started >= killed_at]
    return {
        "answers": sum(1 for r in results if not r.problems),
        "failed": sum(1 for r in results if r.problems),
        "failures": dict(Counter(failure_kind(r) for r in results if r.problems)),
        "in_flight_on_it": len(held),
        "in_flight_answered_by_another": sum(1 for e in held if e.upstreams[-1] != dead and e.status == 200),
        "sent_to_it_after_the_kill_s": [round(e.started - killed_at, 2) for e in sent_after],
        "of_those_answered_by_another": sum(1 for e in sent_after if e.upstreams[-1] != dead and e.status == 200),
    }


# -- nginx's log --------------------------------------------------------------------------


@dataclass(frozen=True)
class Logged:
    """One request in nginx's access log (format `replicas` in servers.balancer_config)."""

    ended: float  # epoch seconds
    method: str
    uri: str
    status: int
    upstreams: tuple[str, ...]  # the replicas tried, in order
    seconds: float

    @property
    def started(self) -> float:
        return self.ended - self.seconds


LOG_LINE = re.compile(r'^(\S+) (\S+) (\S+) (\d+) "([^"]*)" "([^"]*)" (\S+)$')
API_FAILURE = re.compile(r"^ApiFailure: HTTP (?P<status>\d+): (?P<body>.*)$", re.DOTALL)


def balancer_log(lab: Deployment) -> list[Logged]:
    entries = []
    assert lab.balancer
    for line in lab.balancer.access_log.read_text().splitlines():
        if found := LOG_LINE.match(line):
            ended, method, uri, status, upstreams, _, seconds = found.groups()
            tried = tuple(address.strip() for address in re.split(r"[,:]\s", upstreams) if address.strip())
            entries.append(Logged(float(ended), method, uri, int(status), tried, float(seconds)))
    return entries


def replica_memory(lab: Deployment) -> list[float]:
    """Resident memory of each live replica, MiB."""
    return [round(rss_mib(r.process.pid), 1) for r in lab.replicas if r.process and r.process.poll() is None]
