"""A lab's deployment, end to end on loopback: `chroma run`, three `rag --config extractive serve`
replicas on it (the server setup with the extractive answerer, for speed), Debian's nginx in front.
The small form of benchmarks/deploy.py, through the same code (benchmarks/harness/deployment.py)."""

from __future__ import annotations

import pytest
from conftest import user_environment, write_jsonl

from benchmarks.harness.deployment import (
    PAGE_QUESTION_ROUTES,
    access,
    chroma_restart,
    deployment,
    ingest_while_serving,
    kill_replica,
    many_users,
)
from benchmarks.harness.loadgen import expectations, seed_questions
from benchmarks.harness.servers import nginx_command
from rag.core.config import with_overrides
from rag.service import RagService

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

RXNFLOW = "How many reaction templates does RxnFlow use?"
# New papers, in words no seed abstract uses: each must come first for its own title once ingested.
NEW_PAPERS = [
    {"id": "new-quokka", "title": "Quokka: Marsupial Gait Priors for Legged Robot Locomotion",
     "abstract": "We teach quadruped robots to hop like quokkas using marsupial gait priors from wildlife video."},
    {"id": "new-sourdough", "title": "Sourdough Starters as Living Reservoir Computers",
     "abstract": "Fermenting sourdough cultures act as reservoir computers whose yeast dynamics forecast chaotic "
                 "series."},
]  # fmt: skip


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    try:
        nginx_command()
    except RuntimeError as err:
        pytest.skip(f"{err}; .ci/run installs it")
    folder = tmp_path_factory.mktemp("lab")
    base = user_environment(folder)  # a new user's data folder; the ONNX export built once is reused
    with deployment(folder, replicas=3, config="extractive", base_env=base) as lab:
        yield lab
        assert "Traceback" not in lab.logs(), lab.logs()[-3000:]


@pytest.fixture(scope="module")
def reference(lab, embeddings):
    """The extractive service over the lab's Chroma server: what each question retrieves alone."""
    vectorstore = {"mode": "http", "host": lab.env["RAG_VECTORSTORE__HOST"], "port": lab.chroma.port}
    folder = lab.folder / "reference-bm25"
    settings = with_overrides("extractive", vectorstore=vectorstore, retrieval={"lexical_cache": str(folder)})
    return RagService(settings, embeddings=embeddings)


@pytest.fixture
def pool(reference):
    """Measured again for each test: papers ingested by an earlier one may join a question's sources."""
    return expectations(reference, seed_questions())


def test_through_the_balancer_every_question_needs_the_key_or_the_login(lab):
    seen = access(lab, RXNFLOW)
    assert seen["no key"] == (401, "invalid_api_key") and seen["wrong key"] == (401, "invalid_api_key")
    assert seen["key"] == (200, True)
    assert {route: seen[f"page {route} without login"] for route in PAGE_QUESTION_ROUTES} == dict.fromkeys(
        PAGE_QUESTION_ROUTES, 401
    )
    assert seen["page /ask with login"] == (200, True)  # the page's routes stick to one replica


def test_many_users_through_the_balancer_each_get_their_own_answer_from_every_replica(lab, pool):
    results, _, served = many_users(lab, pool, users=6, questions=3)
    assert len(results) == 18
    assert [(r.turn.question, r.problems) for r in results if r.problems] == []
    assert sorted(served) == sorted(f"127.0.0.1:{replica.port}" for replica in lab.replicas), served


def test_papers_ingested_while_they_serve_reach_every_replica(lab, pool, tmp_path):
    figures = ingest_while_serving(lab, pool, NEW_PAPERS, write_jsonl(tmp_path / "new.jsonl", NEW_PAPERS), users=3)
    assert figures["failed_meanwhile"] == [] and figures["answers_meanwhile"] > 0
    assert len(figures["per_replica_s"]) == 3  # each replica, asked directly, retrieved both new papers


def test_a_chroma_restart_is_one_clear_error_per_request_meanwhile_and_replicas_recover(lab, pool):
    figures = chroma_restart(lab, pool, users=3, down_seconds=6)
    assert figures["replicas_restarted"] == 0 and figures["answers"] > 0
    said = figures["asked_while_down"]
    assert said.startswith("503 index_unavailable:") and f"Chroma server at 127.0.0.1:{lab.chroma.port}" in said
    for said in figures["failures"]:
        assert said.startswith("503 index_unavailable:") and "Chroma server" in said, figures["failures"]


def test_a_replica_killed_under_load_loses_no_request(lab, pool):
    figures = kill_replica(lab, pool, users=4)
    assert figures["failed"] == 0, figures["failures"]
    assert figures["answers"] > 0
    assert figures["in_flight_answered_by_another"] == figures["in_flight_on_it"]
    assert figures["of_those_answered_by_another"] == len(figures["sent_to_it_after_the_kill_s"])
