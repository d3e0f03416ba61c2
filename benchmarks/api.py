"""What the OpenAI-compatible API of `rag serve` adds to an answer: the same questions asked in-process
(`RagService`) and through the official `openai` client against `rag serve` on loopback.

    RAG_VECTORSTORE__PATH=/tmp/issue16/index python benchmarks/api.py [--config extractive] [--repeat 3]

The server runs in its own process over the same index (seeded first if empty). Printed per path:
median and worst wall-clock seconds per answer; for streams, also the time to the first text piece.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="extractive")
    parser.add_argument("--questions", type=Path, default=ROOT / "tests" / "eval" / "seed_questions.jsonl")
    parser.add_argument("-n", type=int, default=8, help="questions from the file")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import openai
    from harness.servers import free_port  # benchmarks/harness/, beside this script

    from rag.service import RagService

    lines = args.questions.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines[: args.n]] * args.repeat
    service = RagService(args.config)
    service.ensure_index()
    service.answer(questions[0])  # load the models before timing

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "rag.cli", "--config", args.config, "serve", "--port", str(port)])
    try:
        wait_for(f"http://127.0.0.1:{port}/health")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=600)
        ask = [{"role": "user", "content": questions[0]}]
        client.chat.completions.create(model=args.config, messages=ask)  # the server loads its models too
        rows = {"in-process RagService.answer": [], "openai client, whole answer": [], "openai client, stream": []}
        first_piece = []
        for question in questions:
            rows["in-process RagService.answer"].append(timed(lambda q=question: service.answer(q)))
            messages = [{"role": "user", "content": question}]
            rows["openai client, whole answer"].append(
                timed(lambda m=messages: client.chat.completions.create(model=args.config, messages=m))
            )
            start = time.perf_counter()
            stream = client.chat.completions.create(model=args.config, messages=messages, stream=True)
            for chunk in stream:
                if chunk.choices[0].delta.content and len(first_piece) < len(rows["openai client, stream"]) + 1:
                    first_piece.append(time.perf_counter() - start)
            rows["openai client, stream"].append(time.perf_counter() - start)
    finally:
        server.terminate()
        server.wait(30)
    print(f"{len(questions)} answers each, config {args.config}")
    for label, seconds in rows.items():
        print(f"{label:32} p50 {statistics.median(seconds):.3f} s  max {max(seconds):.3f} s")
    print(f"{'stream, first text piece':32} p50 {statistics.median(first_piece):.3f} s  max {max(first_piece):.3f} s")
    return 0


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def wait_for(url: str, within: float = 300) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"no answer from {url} after {within} s")


if __name__ == "__main__":
    sys.exit(main())
