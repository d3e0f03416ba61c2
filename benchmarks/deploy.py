"""A lab's deployment on loopback, measured: `chroma run`, `rag --config CONFIG serve` replicas on it
(each with its own BM25 cache folder), Debian's nginx in front, the bundled seeds in the index.
The same code as tests/test_deploy.py (benchmarks/harness/deployment.py), with more users and the real list.

    RAG_LLM__PROVIDER=onnx python benchmarks/deploy.py   # 3 replicas of the server config, the bundled SmolLM2 in each
    python benchmarks/deploy.py                          # the same as shipped: no language model
    python benchmarks/deploy.py --sweep 1,2,3,4          # latency and memory at the same load, per replica count

Scenarios, in this order: access through the balancer (no key, a wrong key, the key; the page without
and with its login); many users at once (every answer checked against its question asked alone);
`rag ingest` of new papers from the ICLR 2025 list while users ask (seconds until every replica,
asked directly, retrieves each first for its title); the Chroma server killed and started again under
load; one replica killed with SIGKILL under load. Each figure is printed with the load average (the
machine may be shared: figures taken on a busy machine are slower).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

from harness.deployment import (  # benchmarks/harness/, beside this script: shared with the tests
    access,
    chroma_restart,
    deployment,
    ingest_while_serving,
    kill_replica,
    many_users,
    replica_memory,
)
from harness.loadgen import expectations, seed_questions, summary

from rag.core.config import BUNDLED_SEEDS, with_overrides
from rag.core.papers import content_hash
from rag.ingest.papers import load_papers
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent

FULL_LIST = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="server", help="config every replica serves (default: server)")
    parser.add_argument("--replicas", type=int, default=3, help="replicas behind nginx (default 3)")
    parser.add_argument("--users", type=int, default=12, help="users asking at once (default 12)")
    parser.add_argument("--questions", type=int, default=3, help="questions each user asks (default 3)")
    parser.add_argument("--new-papers", type=int, default=5, help="records of the full list to ingest (default 5)")
    parser.add_argument("--full-list", type=Path, default=FULL_LIST, help="the ICLR 2025 list (JSONL, gzipped)")
    parser.add_argument("--sweep", help="instead: replica counts to compare at the same load, e.g. 1,2,3,4")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        if args.sweep:
            return sweep(Path(scratch), args, [int(n) for n in args.sweep.split(",")])
        return scenarios(Path(scratch), args)


def scenarios(scratch: Path, args) -> int:
    print(f"config {args.config}, {args.replicas} replicas, {os.cpu_count()} cores", flush=True)
    with deployment(scratch, replicas=args.replicas, config=args.config) as lab:
        reference = reference_service(lab, scratch)
        pool = expectations(reference, seed_questions())
        report("access through the balancer", access(lab, pool[0].question))
        results, seconds, served = many_users(lab, pool, args.users, args.questions)
        figures = summary(results, seconds)
        figures["wrong"] = [r.problems for r in results if r.problems]
        report(f"{args.users} users x {args.questions} questions", {**figures, "served_by_replica": served})
        report("replica RSS after it (MiB)", replica_memory(lab))
        papers = new_papers(args.full_list, args.new_papers)
        file = scratch / "new.jsonl"
        file.write_text("".join(json.dumps(paper) + "\n" for paper in papers))
        report(f"rag ingest of {len(papers)} new papers while {args.users // 2} users ask",
               ingest_while_serving(lab, pool, papers, file, users=args.users // 2))  # fmt: skip
        pool = expectations(reference, seed_questions())  # the new papers may join some questions' sources
        report("Chroma server killed, started 6 s later, under load", chroma_restart(lab, pool, args.users // 2, 6))
        report("one replica killed (SIGKILL) under load", kill_replica(lab, pool, args.users // 2))
        if "Traceback" in lab.logs():
            print("a replica logged a traceback:\n" + lab.logs()[-3000:])
            return 1
    return 0


def sweep(scratch: Path, args, counts: list[int]) -> int:
    """The same users and questions through 1, 2, ... replicas: latency, throughput, memory."""
    print(f"config {args.config}, {args.users} users x {args.questions} questions, {os.cpu_count()} cores")
    for count in counts:
        folder = scratch / f"{count}-replicas"
        folder.mkdir()
        with deployment(folder, replicas=count, config=args.config) as lab:
            reference = reference_service(lab, folder)
            pool = expectations(reference, seed_questions())
            many_users(lab, pool, users=count, questions=1)  # warm-up: each replica answers once
            results, seconds, served = many_users(lab, pool, args.users, args.questions)
            figures = {**summary(results, seconds), "wrong": sum(1 for r in results if r.problems)}
            report(f"{count} replicas", {**figures, "rss_mib": replica_memory(lab), "served": served})
    return 0


def reference_service(lab, folder: Path) -> RagService:
    """The extractive service over the lab's Chroma server: what each question retrieves asked alone."""
    vectorstore = {"mode": "http", "host": lab.env["RAG_VECTORSTORE__HOST"], "port": lab.chroma.port}
    retrieval = {"lexical_cache": str(folder / "reference-bm25")}
    return RagService(with_overrides("extractive", vectorstore=vectorstore, retrieval=retrieval))


def new_papers(full_list: Path, count: int) -> list[dict]:
    """`count` records of the full list, spread over it, that are not seed abstracts."""
    seeds = {paper.content_hash for paper in load_papers([BUNDLED_SEEDS])}
    with gzip.open(full_list, "rt", encoding="utf-8") as lines:
        records = (json.loads(line) for line in itertools.islice(lines, 0, None, 997))
        fresh = (r for r in records if r.get("title") and content_hash(r["abstract"]) not in seeds)
        return list(itertools.islice(fresh, count))


def report(name: str, figures) -> None:
    load = [round(value, 2) for value in os.getloadavg()]
    print(f"{name}: {json.dumps(figures, default=str)}\n  (load average {load})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
