"""Many people at once against a running chat app: `gradio_client` users, and the check of every answer.

Shared by tests/test_load.py (the short form CI runs) and benchmarks/load.py (the long form). Each
simulated user is its own `gradio_client.Client` (its own Gradio session) holding its own
conversation: it sends its earlier question/answer pairs as `history` with every question.

What an answer should be is measured, not written down: each question is first asked alone through
a `RagService` over the same index (`expectations`), and only questions whose top source there is
their gold paper (tests/eval/seed_questions.jsonl) are used. Under load, every answer must then
carry exactly the sources its own question retrieves alone and cite only among them; an answer
holding another conversation's papers cannot pass.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .servers import free_port

ROOT = Path(__file__).resolve().parents[2]
SEED_QUESTIONS = ROOT / "tests" / "eval" / "seed_questions.jsonl"
HOST = "127.0.0.1"
FOLLOW_UP = "What results does it report?"
KEPT_HISTORY = 6  # exchanges a simulated user sends back as its conversation
MARKER_NUMBERS = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


@dataclass(frozen=True)
class Expected:
    """A question and what it retrieves when asked alone: its gold paper first, then these sources;
    and what `FOLLOW_UP` retrieves when asked right after it (None when not measured)."""

    question: str
    gold: str
    sources: tuple[str, ...] | None
    follow_up: tuple[str, ...] | None = None
    text: str | None = None  # the answer given alone, when it must come out the same under load


@dataclass(frozen=True)
class Turn:
    """One question of one simulated user. A follow-up (`FOLLOW_UP`) is about the user's previous turn."""

    client: int
    number: int
    question: str
    expected: Expected
    follow_up: bool = False


@dataclass
class Result:
    turn: Turn
    started: float
    seconds: float
    payload: dict | None = None
    error: str | None = None
    problems: list[str] = field(default_factory=list)


def seed_questions(path: Path = SEED_QUESTIONS) -> list[dict]:
    """Answerable single-paper seed questions that are not follow-ups themselves (no 'it', 'this', ...)."""
    from rag.question.followup import FOLLOW_UP as FOLLOW_UP_WORDS

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if len(row["gold"]) == 1 and not FOLLOW_UP_WORDS.search(row["question"])]


def expectations(
    service, rows: list[dict], follow_ups: bool = False, limit: int | None = None, text: bool = False
) -> list[Expected]:
    """Questions asked alone through `service`, kept when answerable (not refused) from their gold
    paper as top source; up to `limit` of them, one per gold paper before any second.

    With `follow_ups`, what `FOLLOW_UP` retrieves right after each is measured too, and only questions
    whose follow-up stays on the same gold paper are kept. Measure follow-ups with a service that
    rewrites them by rule (extractive): a language model's rewrite depends on its earlier answer.
    With `text`, each question is answered and kept only when the answer cites and needs no
    fallback; its text is kept: a deterministic model (temperature 0) must give it again under load.
    """
    from rag.answering.refusal import refusal_reason

    def on_topic(sources) -> bool:
        return not refusal_reason(sources, service.config.retrieval) and sources[0].paper_id == gold

    firsts: dict[str, dict] = {}
    for row in rows:
        firsts.setdefault(row["gold"][0], row)
    ordered = list(firsts.values()) + [row for row in rows if firsts[row["gold"][0]] is not row]
    found = []
    for row in ordered:
        if limit is not None and len(found) >= limit:
            break
        question, gold, said = row["question"], row["gold"][0], None
        if text:
            answer = service.answer(question)
            if answer.refused or answer.fallback or not answer.cited:
                continue
            sources, said = answer.sources, answer.text
        else:
            sources = service.retrieve(question)
        if not on_topic(sources):
            continue
        after = None
        if follow_ups:
            # The history a user sends holds the answer's text: its [n] say which paper the follow-up is about.
            earlier = said if said is not None else service.answer(question).text
            chain = {"question": FOLLOW_UP, "history": [(question, earlier)], "k": None, "filters": None}
            next_sources = service.retrieval_chain.invoke(chain)["sources"]
            # held to the paper in focus, a follow-up is answered from it (its sentences decide, not the rule)
            if not next_sources or next_sources[0].paper_id != gold:
                continue
            after = tuple(source.paper_id for source in next_sources)
        found.append(Expected(question, gold, tuple(source.paper_id for source in sources), after, said))
    return found


def plan(pool: list[Expected], clients: int, questions: int, follow_ups: bool = False) -> list[list[Turn]]:
    """`questions` turns for each of `clients` users. Users asking at the same time ask about different
    papers where the pool allows (so a mix-up shows); with `follow_ups`, every second turn is a
    follow-up on the turn before it, which only that user's own history can resolve (the pool must
    then come from `expectations(..., follow_ups=True)`)."""
    by_gold: dict[str, list[Expected]] = {}
    for item in pool:
        by_gold.setdefault(item.gold, []).append(item)
    distinct = [items[0] for items in by_gold.values()] + [i for items in by_gold.values() for i in items[1:]]
    plans = []
    for client in range(clients):
        turns: list[Turn] = []
        for number in range(questions):
            if follow_ups and number % 2 == 1:
                before = turns[-1].expected
                turns.append(Turn(client, number, FOLLOW_UP, before, follow_up=True))
                continue
            expected = distinct[(client + number * clients) % len(distinct)]
            turns.append(Turn(client, number, expected.question, expected))
        plans.append(turns)
    return plans


def problems_of(result: Result, allow_fallback: bool = False) -> list[str]:
    """Everything wrong with one answer; empty when it is its own question's correct, cited answer."""
    if result.error:
        return [result.error]
    payload, turn = result.payload, result.turn
    found = []
    if payload.get("question") != turn.question:
        found.append(f"answers {payload.get('question')!r}")
    if payload.get("refused"):
        found.append("refused")
    if payload.get("fallback") and not allow_fallback:
        found.append(f"fallback: {payload['fallback']}")
    ids = [source["paper_id"] for source in payload.get("sources", [])]
    if not ids or ids[0] != turn.expected.gold:
        found.append(f"top source {ids[:1]}, not the gold paper {turn.expected.gold}")
    alone = turn.expected.follow_up if turn.follow_up else turn.expected.sources
    if alone is not None and tuple(ids) != alone:
        found.append(f"sources {ids} differ from those of the question asked alone {list(alone)}")
    same_text = turn.expected.text is None or turn.follow_up or payload.get("fallback")
    if not same_text and payload.get("text") != turn.expected.text:
        found.append(f"answer {payload.get('text')!r} differs from the one given alone {turn.expected.text!r}")
    cited = payload.get("cited") or []
    if not cited:
        found.append("cites nothing")
    if not set(cited) <= set(ids):
        found.append(f"cites {sorted(set(cited) - set(ids))}, which are not among its own sources")
    numbers = [int(n) for group in MARKER_NUMBERS.findall(payload.get("text", "")) for n in re.split(r"[,;]", group)]
    if any(not 1 <= n <= len(ids) for n in numbers):
        found.append(f"markers {numbers} point past its {len(ids)} sources")
    return found


class PageUser:
    """A user of the chat app's `/ask` endpoint: its own `gradio_client.Client` (its own Gradio session)."""

    def __init__(self, url: str, auth: tuple[str, str] | None = None):
        from gradio_client import Client

        self.client = Client(url, auth=auth, verbose=False)

    def ask(self, question: str, history: list[list[str]], timeout: float) -> dict:
        return self.client.submit(question, history, api_name="/ask").result(timeout=timeout)

    def close(self) -> None:
        self.client.close()


class ApiUser:
    """A user of `rag serve`'s `/v1/chat/completions` (at `url`, the server's or a balancer's root),
    sending its conversation as earlier messages; the answer's `rag` field is what `/ask` returns."""

    def __init__(self, url: str, api_key: str | None = None):
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=f"{url.rstrip('/')}/v1", headers=headers)

    def ask(self, question: str, history: list[list[str]], timeout: float) -> dict:
        earlier = [
            {"role": role, "content": text} for pair in history for role, text in zip(("user", "assistant"), pair)
        ]
        messages = [*earlier, {"role": "user", "content": question}]
        reply = self.client.post("/chat/completions", json={"messages": messages}, timeout=timeout)
        if reply.status_code != 200:
            raise ApiFailure(reply.status_code, reply.text)
        return reply.json()["rag"]

    def close(self) -> None:
        self.client.close()


class ApiFailure(Exception):
    """A request the API answered with an error: its status and body, as the client got them."""

    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body}")
        self.status, self.body = status, body


def run_users(
    url: str,
    plans: list[list[Turn]],
    auth: tuple[str, str] | None = None,
    timeout: float = 600,
    allow_fallback: bool = False,
    on_result=None,
    until: float | None = None,
    connect=PageUser,
) -> tuple[list[Result], float]:
    """Every user asks its turns one after another, all users at once; returns results and wall seconds.

    Users connect first (`connect(url, auth)`: a `PageUser` by default; pass e.g.
    `lambda url, auth: ApiUser(url, key)` to ask through the API), then start together. A request that
    gets no answer within `timeout` is an error. With `until` (a `time.monotonic()` deadline), users go
    round their turns again and again until it passes, keeping only their last few exchanges as
    history, as a long conversation's client would.
    """
    results: list[Result] = []
    lock = threading.Lock()
    ready = threading.Barrier(len(plans) + 1)

    def user(turns: list[Turn]) -> None:
        try:
            client = connect(url, auth)
        except Exception as err:  # a user that cannot connect fails all its turns, visibly
            client, failure = None, f"cannot connect: {type(err).__name__}: {err}"
        ready.wait()
        history: list[list[str]] = []
        for asked, turn in enumerate(itertools.cycle(turns) if until is not None else turns):
            if until is not None and asked and time.monotonic() >= until:
                break
            if client is None:
                result = Result(turn, time.perf_counter(), 0.0, error=failure)
                result.problems = problems_of(result)
            else:
                result = ask(client, turn, history, timeout, allow_fallback)
                del history[:-KEPT_HISTORY]
            with lock:
                results.append(result)
            if on_result:
                on_result(result)
        if client is not None:
            client.close()

    threads = [threading.Thread(target=user, args=(turns,), daemon=True) for turns in plans]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return sorted(results, key=lambda r: (r.turn.client, r.started)), time.perf_counter() - started


def ask(client, turn: Turn, history: list[list[str]], timeout: float = 600, allow_fallback: bool = False) -> Result:
    """One question from a `PageUser` or `ApiUser`, checked; a good answer joins `history` (the user's conversation)."""
    result = Result(turn, time.perf_counter(), 0.0)
    try:
        result.payload = client.ask(turn.question, history, timeout)
    except Exception as err:  # any failure of a request is recorded and reported, never dropped
        result.error = f"{type(err).__name__}: {err}"
    result.seconds = time.perf_counter() - result.started
    result.problems = problems_of(result, allow_fallback)
    if result.payload:
        history.append([turn.question, result.payload["text"]])
    return result


def summary(results: list[Result], seconds: float) -> dict:
    """Requests, errors, wrong answers, throughput and latency percentiles of a run."""
    latencies = sorted(r.seconds for r in results if not r.error)
    cuts = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    return {
        "requests": len(results),
        "errors": sum(1 for r in results if r.error),
        "wrong": sum(1 for r in results if r.problems and not r.error),
        "fallbacks": sum(1 for r in results if r.payload and r.payload.get("fallback")),
        "seconds": round(seconds, 1),
        "answers_per_minute": round(60 * len(latencies) / seconds, 1) if seconds else 0.0,
        "p50_s": round(cuts[49], 2) if cuts else None,
        "p95_s": round(cuts[94], 2) if cuts else None,
        "max_s": round(latencies[-1], 2) if latencies else None,
    }


# -- serving the app ----------------------------------------------------------------------


@contextmanager
def app_in_process(service, auth: tuple[str, str] | None = None) -> Iterator[str]:
    """The chat app over `service`, served from this process on a free loopback port; yields its URL."""
    from ui.app import build_app, launch

    demo = build_app(service)
    url = launch(demo, HOST, free_port(), auth=auth, block=False)
    try:
        yield url
    finally:
        demo.close()


def rss_mib(pid: int) -> float:
    """Resident memory of a process, in MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class RssSampler:
    """Samples a process's resident memory every `interval` seconds in a thread, until stopped."""

    def __init__(self, pid: int, interval: float = 2.0):
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.perf_counter() - self._started, rss_mib(self.pid)))
            except (OSError, RuntimeError):
                return  # the process ended
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
