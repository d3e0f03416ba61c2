"""From `rag ingest` to the first answer, on the whole list: how long a new venue waits before its first question.

    python benchmarks/searchable.py                                  # static and onnx-int8, the whole list
    python benchmarks/searchable.py --backends static --n 2000

For each embedding backend, in a new index folder: `rag ingest` of the first N records starts, and as soon as
its progress bar shows every record stored (the map is laid out after that, while questions are answered), a
cold `rag ask` is run in another process. Reported: when every paper was stored, when the first answer came
(both from the moment the ingest started), how long the ingest ran in all (with the map), and the answer's
first line. Peak memory and the textbook pipeline's time: benchmarks/ingest.py.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

from machine import load_line  # benchmarks/machine.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
FULL_LIST = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"
RAG = [sys.executable, "-m", "rag.cli", "--config", "extractive"]
QUESTION = "How many reaction templates does RxnFlow use?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="static,onnx-int8", help="comma-separated embedding backends")
    parser.add_argument("--n", type=int, default=None, help="the first N records (default: the whole list)")
    parser.add_argument("--corpus", type=Path, default=FULL_LIST)
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rag-searchable-"))
    try:
        corpus = sample(args.corpus, args.n, work) if args.n else args.corpus
        print(f"load average before: {load_line()}", flush=True)
        rows = [run(backend, corpus, args.question, work) for backend in args.backends.split(",")]
        print(f"load average after: {load_line()}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| backend | papers | all stored s | first answer s | ingest with the map s | answer |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['backend']} | {row['papers']} | {row['stored_s']:.1f} | {row['answered_s']:.1f} | "
            f"{row['ingest_s']:.1f} | {row['answer'][:70]} |"
        )
    return 0


def sample(corpus: Path, n: int, work: Path) -> Path:
    path = work / "sample.jsonl"
    with gzip.open(corpus, "rt", encoding="utf-8") as lines, path.open("w") as out:
        out.writelines(islice(lines, n))
    return path


def run(backend: str, corpus: Path, question: str, work: Path) -> dict:
    folder = work / f"index-{backend}"
    env = {**os.environ, "RAG_EMBEDDING__BACKEND": backend, "PYTHONPATH": str(ROOT)}
    log = work / f"ingest-{backend}.log"
    started = time.perf_counter()
    with log.open("w") as err:
        ingest = subprocess.Popen(
            [*RAG, "ingest", "--index", str(folder), str(corpus)], stderr=err, stdout=err, env=env
        )
        stored_s = wait_until_stored(log, ingest) - started
        asked = subprocess.run(
            [*RAG, "ask", "--index", str(folder), question], capture_output=True, text=True, env=env, check=True
        )
        answered_s = time.perf_counter() - started
        ingest.wait()
    ingest_s = time.perf_counter() - started
    report = log.read_text().strip().splitlines()[-1]
    papers = re.search(r"index: (\d+) papers", report)
    return {
        "backend": backend,
        "papers": int(papers.group(1)) if papers else 0,
        "stored_s": stored_s,
        "answered_s": answered_s,
        "ingest_s": ingest_s,
        "answer": asked.stdout.strip().splitlines()[0] if asked.stdout.strip() else "",
        "report": report,
    }


def wait_until_stored(log: Path, ingest: subprocess.Popen, poll: float = 0.2) -> float:
    """The time (perf_counter) when the ingest's progress bar says every record is stored (N/N)."""
    while ingest.poll() is None:
        bar = re.findall(r"(\d+)/(\d+) \[", log.read_text(errors="replace"))
        if bar and bar[-1][0] == bar[-1][1]:
            break
        time.sleep(poll)
    return time.perf_counter()


if __name__ == "__main__":
    raise SystemExit(main())
