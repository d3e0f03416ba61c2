"""`rag serve` as OpenAI clients meet it: the official `openai` package (sync, async, streaming) and
LangChain's `ChatOpenAI` against a fresh server on loopback, in its own process with a new user's
data folder; what they get must be what `rag` itself answers over the same seeds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
import openai
import pytest
from conftest import settings_for, user_environment

from benchmarks.harness.servers import ServeProcess
from rag.core.config import PROJECT_ROOT, config_names
from rag.core.markers import MARKER

pytestmark = pytest.mark.slow

RXNFLOW = "How many reaction templates does RxnFlow use?"
HANABI = "Which agent learns to play Hanabi with unfamiliar partners?"
BRIGHT = "What is the bright ending anomaly?"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A new user's home; the first `rag serve` started in it indexes the bundled seeds."""
    return tmp_path_factory.mktemp("serve-user")


@pytest.fixture(scope="module")
def server(home):
    """A fresh user's `rag --config extractive serve`."""
    with ServeProcess(home / "serve.log", user_environment(home), "--config", "extractive") as server:
        yield server
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}v1", api_key="unused", max_retries=0, timeout=600)


def ask(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


def ids(sources) -> list[str]:
    return [s["paper_id"] if isinstance(s, dict) else s.paper_id for s in sources]


def test_a_plain_client_gets_the_cited_answer_and_sources_rag_gives(client, seeded):
    expected = seeded.answer(RXNFLOW)
    reply = client.chat.completions.create(model="extractive", messages=ask(RXNFLOW))
    assert (reply.object, reply.model, reply.choices[0].finish_reason) == ("chat.completion", "extractive", "stop")
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == expected.text and MARKER.search(expected.text)
    extra = reply.model_extra["rag"]
    assert ids(extra["sources"]) == ids(expected.sources)
    assert extra["cited"] == expected.cited and extra["cited"][0] == expected.sources[0].paper_id
    assert (extra["refused"], extra["fallback"], extra["text"]) == (False, None, expected.text)
    assert extra["sources"][0]["passage"] == expected.sources[0].text


def test_the_bundled_model_streams_a_cited_answer_and_its_sources_from_a_fresh_server(client, seeded):
    """`model="smollm2"`: the bundled SmolLM2, loaded by the server on demand."""
    stream = client.chat.completions.create(model="smollm2", messages=ask(RXNFLOW), stream=True)
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    last = chunks[-1]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert last.choices[0].finish_reason == "stop" and all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert [c for c in chunks if c.choices[0].delta.content] and text.strip()
    extra = last.model_extra["rag"]
    assert text == extra["text"]  # the deltas are the checked sentences: they are the answer, nothing follows
    assert extra["config"] == "smollm2" and not extra["refused"]
    assert ids(extra["sources"]) == ids(seeded.retrieve(RXNFLOW))  # same index, same ranking
    assert extra["cited"] and set(extra["cited"]) <= set(ids(extra["sources"]))
    assert MARKER.search(extra["text"])


def test_a_stream_is_server_sent_events_ending_with_done(server, seeded):
    raw_pieces = "".join(p for p in seeded.stream_answer(BRIGHT) if isinstance(p, str))
    body = {"model": "extractive", "messages": ask(BRIGHT), "stream": True}
    with httpx.stream("POST", f"{server.url}v1/chat/completions", json=body, timeout=600) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in events) and events[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == raw_pieces
    assert [c for c in chunks if "rag" in c] == [chunks[-1]]
    assert chunks[-1]["rag"]["cited"] == seeded.answer(BRIGHT).cited


def test_async_clients_asking_at_once_each_get_their_own_answer(server, seeded):
    async def run() -> tuple[list, list]:
        client = openai.AsyncOpenAI(base_url=f"{server.url}v1", api_key="unused", max_retries=0, timeout=600)
        questions = [RXNFLOW, HANABI, BRIGHT]
        replies = await asyncio.gather(
            *(client.chat.completions.create(model="extractive", messages=ask(q)) for q in questions)
        )
        stream = await client.chat.completions.create(model="extractive", messages=ask(HANABI), stream=True)
        chunks = [chunk async for chunk in stream]
        return replies, chunks

    replies, chunks = asyncio.run(run())
    for question, reply in zip([RXNFLOW, HANABI, BRIGHT], replies):
        assert reply.choices[0].message.content == seeded.answer(question).text
        assert ids(reply.model_extra["rag"]["sources"]) == ids(seeded.retrieve(question))
    assert chunks[-1].model_extra["rag"]["cited"] == seeded.answer(HANABI).cited


def test_earlier_turns_are_the_conversation_history(client, seeded):
    first = seeded.answer(HANABI)
    follow_up = "What benchmark do they play?"
    expected = seeded.answer(follow_up, history=[(HANABI, first.text)])
    messages = [
        {"role": "system", "content": "Answer from the ICLR 2025 abstracts."},
        {"role": "user", "content": HANABI},
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": [{"type": "text", "text": follow_up}]},
    ]
    extra = client.chat.completions.create(model="extractive", messages=messages).model_extra["rag"]
    assert extra["standalone_question"] == expected.standalone_question and extra["focus"] == first.cited[:1]
    # the same paper, and the benchmark sentence (two services may order near-tied sentences apart)
    assert ids(extra["sources"]) == ids(expected.sources) and "Hanabi benchmark" in extra["text"]


def test_langchain_chat_openai_works_inside_a_chain(server, seeded):
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=f"{server.url}v1", api_key="unused", model="extractive", max_retries=0, timeout=600)
    prompt = ChatPromptTemplate.from_messages([("system", "Cite the abstracts."), ("human", "{question}")])
    chain = prompt | llm | StrOutputParser()
    assert chain.invoke({"question": RXNFLOW}) == seeded.answer(RXNFLOW).text
    assert chain.batch([{"question": HANABI}, {"question": BRIGHT}]) == [
        seeded.answer(HANABI).text,
        seeded.answer(BRIGHT).text,
    ]
    streamed = list(chain.stream({"question": BRIGHT}))
    assert "".join(streamed) == "".join(p for p in seeded.stream_answer(BRIGHT) if isinstance(p, str))


@pytest.mark.parametrize(
    ("request_options", "error", "status", "says"),
    [
        ({"model": "nope"}, openai.NotFoundError, 404, "model_not_found"),
        ({"model": "../configs/extractive.yaml"}, openai.NotFoundError, 404, "does not exist"),
        ({"messages": ask("   ")}, openai.BadRequestError, 400, "the question is empty"),
        ({"messages": ask("why? " * 500)}, openai.BadRequestError, 400, "the limit is 2,000"),
        ({"messages": ask("   "), "stream": True}, openai.BadRequestError, 400, "the question is empty"),
        ({"messages": [*ask(RXNFLOW), {"role": "assistant", "content": "x"}]}, openai.BadRequestError, 400, "last"),
        ({"messages": []}, openai.BadRequestError, 400, "messages"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            openai.BadRequestError,
            400,
            "only text",
        ),
        ({"messages": [*ask(HANABI), *ask(RXNFLOW)]}, openai.BadRequestError, 400, "message 2 is a second question"),
        (
            {"messages": [{"role": "assistant", "content": "R3D2 [1]."}, *ask(RXNFLOW)]},
            openai.BadRequestError,
            400,
            "message 1 is an answer before any question: user and assistant messages must alternate",
        ),
        (
            {"messages": [*ask(HANABI), {"role": "assistant", "content": " "}, *ask(RXNFLOW)]},
            openai.BadRequestError,
            400,
            "message 2 (assistant) is empty",
        ),
        (
            {"messages": [*ask(HANABI), {"role": "tool", "content": "x", "tool_call_id": "1"}, *ask(RXNFLOW)]},
            openai.BadRequestError,
            400,
            "message 2: tool messages are not supported",
        ),
        (
            {"messages": [*ask(HANABI), {"role": "assistant", "content": "R3D2 [1]. " * 6001}, *ask(RXNFLOW)]},
            openai.BadRequestError,
            400,
            "answer 1 of the history is 60,010 characters long; the limit is 60,000",
        ),
    ],
    ids=[
        "unknown-model",
        "path-as-model",
        "empty",
        "too-long",
        "empty-stream",
        "not-a-question",
        "none",
        "image",
        "two-questions",
        "answer-first",
        "empty-turn",
        "tool-turn",
        "long-answer",
    ],
)
def test_bad_requests_get_openai_error_bodies(client, request_options, error, status, says):
    options = {"model": "extractive", "messages": ask(RXNFLOW), **request_options}
    with pytest.raises(error) as caught:
        client.chat.completions.create(**options)
    assert caught.value.status_code == status
    assert set(caught.value.body) == {"message", "type", "param", "code"} and says in json.dumps(caught.value.body)


def test_models_retrieve_and_health(server, client, seeded):
    assert [model.id for model in client.models.list()] == config_names()
    reply = httpx.post(f"{server.url}v1/retrieve", json={"question": HANABI, "k": 3}).json()
    expected = seeded.retrieve(HANABI, k=3)
    assert ids(reply["data"]) == ids(expected)
    assert [round(p["score"], 4) for p in reply["data"]] == [round(s.score, 4) for s in expected]
    assert reply["data"][0]["passage"] == expected[0].text and "title" in reply["data"][0]
    oral = httpx.post(f"{server.url}v1/retrieve", json={"question": HANABI, "filters": {"status": ["Oral"]}})
    assert oral.json()["data"] == []  # no seed is an oral
    for bad in ({"question": HANABI, "filters": {"stats": ["Oral"]}}, {"k": 3}, {"question": " "}):
        response = httpx.post(f"{server.url}v1/retrieve", json=bad)
        assert response.status_code == 400 and set(response.json()["error"]) >= {"message", "type"}
    garbled = httpx.post(f"{server.url}v1/chat/completions", content=b"{not json")
    assert garbled.status_code == 400 and "error" in garbled.json()
    assert httpx.get(f"{server.url}health").json() == {"status": "ok", "papers": 19, "config": "extractive"}
    page = httpx.get(server.url)
    assert page.status_code == 200 and "gradio" in page.text.lower()  # the chat, on the same port


def test_beyond_loopback_the_api_needs_the_bearer_key(seeded):
    from fastapi.testclient import TestClient

    from ui.serve import build_server

    app = TestClient(build_server(seeded, api_key="s3cret"))
    wrong = openai.OpenAI(base_url="http://testserver/v1", api_key="guess", http_client=app, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        wrong.models.list()
    assert caught.value.status_code == 401 and caught.value.body["code"] == "invalid_api_key"
    assert app.post("/v1/retrieve", json={"question": HANABI}).status_code == 401
    right = openai.OpenAI(base_url="http://testserver/v1", api_key="s3cret", http_client=app, max_retries=0)
    assert [model.id for model in right.models.list()] == config_names()
    assert app.get("/health").status_code == 200  # for load balancers; says nothing but a count


KEY, LOGIN = "lab-key-5f2a", ("lab", "pass-7c1e")
# Every route of the page that answers a question; before a login each must say 401.
QUESTION_ROUTES = ("/gradio_api/call/ask", "/gradio_api/run/ask", "/gradio_api/api/ask", "/gradio_api/queue/join")


def test_on_loopback_too_a_set_key_and_login_guard_every_route_that_answers(server, home):
    """Behind a balancer on the same machine every request comes from 127.0.0.1: the key and the
    login must hold there as well."""
    from gradio_client import Client

    env = {**user_environment(home), "ABSTRACT_RAG_API_KEY": KEY, "LAB_LOGIN": ":".join(LOGIN)}
    with ServeProcess(
        home / "guarded.log", {**env, "RAG_UI__AUTH_ENV": "LAB_LOGIN"}, "--config", "extractive"
    ) as guarded:
        api = f"{guarded.url}v1"
        for method, path, body in (
            ("POST", "/chat/completions", {"messages": ask(RXNFLOW)}),
            ("POST", "/retrieve", {"question": RXNFLOW}),
            ("GET", "/models", None),
        ):
            for headers in ({}, {"Authorization": "Bearer guess"}):
                refused = httpx.request(method, f"{api}{path}", json=body, headers=headers, timeout=60)
                assert refused.status_code == 401, (path, headers, refused.text)
                assert refused.json()["error"]["code"] == "invalid_api_key", refused.text
        keyed = openai.OpenAI(base_url=api, api_key=KEY, max_retries=0, timeout=600)
        reply = keyed.chat.completions.create(model="extractive", messages=ask(RXNFLOW))
        assert reply.model_extra["rag"]["cited"] and not reply.model_extra["rag"]["refused"]

        call = {"data": [RXNFLOW, [], None, None, None]}
        for path in QUESTION_ROUTES:
            refused = httpx.post(f"{guarded.url.rstrip('/')}{path}", json=call, timeout=60)
            assert refused.status_code == 401, (path, refused.text)
        answer = Client(guarded.url, auth=LOGIN, verbose=False).predict(RXNFLOW, api_name="/ask")
        assert answer["cited"] and not answer["refused"]
        assert "Traceback" not in guarded.log_tail()

    # A login without a key: API clients can't log in, so the API is closed, and says why.
    with ServeProcess(home / "login-only.log", {**env, "ABSTRACT_RAG_API_KEY": "", "RAG_UI__AUTH_ENV": "LAB_LOGIN"},
                      "--config", "extractive") as login_only:  # fmt: skip
        for headers in ({}, {"Authorization": f"Bearer {KEY}"}):
            closed = httpx.post(
                f"{login_only.url}v1/chat/completions", json={"messages": ask(RXNFLOW)}, headers=headers
            )
            assert closed.status_code == 401 and "ABSTRACT_RAG_API_KEY" in closed.json()["error"]["message"]
        assert "the API at /v1 is closed" in login_only.log_tail()


def test_serving_beyond_loopback_without_a_key_is_refused_in_one_line(tmp_path):
    env = user_environment(tmp_path)
    env.pop("ABSTRACT_RAG_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-m", "rag.cli", "serve", "--host", "0.0.0.0", "--port", "9"],
        capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("error: serving on 0.0.0.0") and "ABSTRACT_RAG_API_KEY" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_chat_and_the_api_share_the_answer_slots_and_a_full_line_is_turned_away():
    import threading

    from ui.slots import AnswerSlots, QueueFull

    async def run(slots: AnswerSlots, chat_done: threading.Event) -> list[str]:
        seen = []
        waiter = asyncio.create_task(slots.take())  # an API request while the chat answers: it waits
        await asyncio.sleep(0.2)
        seen.append(f"busy {slots.busy}, waiting {slots.waiting}, served {waiter.done()}")
        try:
            await slots.take()  # one more than the line holds
        except QueueFull as err:
            seen.append(str(err))
        chat_done.set()
        await asyncio.wait_for(waiter, 5)  # the chat's answer ended: the API request gets the slot
        seen.append(f"busy {slots.busy}, waiting {slots.waiting}")
        return seen

    slots, answering, chat_done = AnswerSlots(limit=1, max_waiting=1), threading.Event(), threading.Event()

    def chat_answer():
        with slots.held():
            answering.set()
            chat_done.wait(10)

    chat = threading.Thread(target=chat_answer)
    chat.start()
    answering.wait(10)
    assert asyncio.run(run(slots, chat_done)) == [
        "busy 1, waiting 1, served False",
        "the server is busy; try again",
        "busy 1, waiting 0",
    ]
    chat.join(10)


def test_a_model_that_is_down_is_a_503_or_a_marked_fallback(seeded, embeddings):
    from fastapi.testclient import TestClient

    from rag.service import RagService
    from ui.serve import build_server

    def client_for(fallback: str) -> openai.OpenAI:
        dead = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "x", "max_retries": 0}
        settings = settings_for(seeded.config.vectorstore.path, llm={**dead, "fallback": fallback})
        app = TestClient(build_server(RagService(settings, embeddings=embeddings)))
        return openai.OpenAI(base_url="http://testserver/v1", api_key="x", http_client=app, max_retries=0)

    strict = client_for("none")
    with pytest.raises(openai.InternalServerError) as caught:
        strict.chat.completions.create(model="extractive", messages=ask(RXNFLOW))
    assert caught.value.status_code == 503 and caught.value.body["code"] == "model_unavailable"
    with pytest.raises(openai.APIError, match="openai"):  # headers were sent: the error arrives in the stream
        list(strict.chat.completions.create(model="extractive", messages=ask(RXNFLOW), stream=True))

    reply = client_for("extractive").chat.completions.create(model="extractive", messages=ask(RXNFLOW))
    assert reply.model_extra["rag"]["fallback"] and reply.choices[0].message.content == seeded.answer(RXNFLOW).text


def test_under_rag_serve_each_chat_answer_holds_a_slot_while_it_is_made(seeded):
    from ui.slots import AnswerSlots, SlottedService

    slots = AnswerSlots(limit=1, max_waiting=1)
    chat_service = SlottedService(seeded, slots)
    pieces = chat_service.stream_answer(RXNFLOW)
    next(pieces)
    assert slots.busy == 1
    *_, final = pieces
    assert slots.busy == 0 and final == seeded.answer(RXNFLOW) == chat_service.answer(RXNFLOW)
    assert chat_service.stats() == seeded.stats()  # everything else is the service's own
