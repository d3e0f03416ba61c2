"""Many users at once against the chat app, served as `python -m ui` in its own process on loopback.

Each simulated user is its own `gradio_client.Client` with its own conversation (benchmarks/harness/loadgen.py);
all start together and ask their questions one after another through the app's `/ask` endpoint.
Every answer is checked: its sources must be exactly those its question retrieves when asked alone
(measured first with the extractive config, retrieval only), its top source the question's gold paper
(tests/eval/seed_questions.jsonl), and it must cite only among its own sources. Also counted, not
failed: questions whose model answers differ in wording between users. Decoding is greedy, but
llama.cpp reuses the cached start of the previous prompt, which can tip a near tie to another token.

    python benchmarks/load.py                           # 20 users x 5 questions, the bundled model (smollm2)
    python benchmarks/load.py --soak 180                # then 3 minutes more of the same, sampling RSS
    python benchmarks/load.py --users 4 --questions 2 --config extractive --concurrency 2

Reported: requests, errors, wrong answers (and answers citing nothing, which the small model
sometimes writes), fallbacks, throughput, p50/p95/max latency, the server's resident memory, and
the load average (the machine may be shared: figures taken on a busy machine are slower).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

# benchmarks/harness/ and benchmarks/machine.py, beside this script
from harness.loadgen import RssSampler, expectations, plan, rss_mib, run_users, seed_questions, summary
from harness.servers import AppProcess
from machine import load_average

from rag.core.config import BUNDLED_SEEDS, with_overrides
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--config", default="smollm2", help="config the app serves (default: smollm2, the bundled model)"
    )
    parser.add_argument("--users", type=int, default=20, help="simulated users at once (default 20)")
    parser.add_argument("--questions", type=int, default=5, help="questions each user asks (default 5)")
    parser.add_argument("--concurrency", type=int, help="ui.concurrency_limit of the app (default: the config's)")
    parser.add_argument("--max-queue", type=int, help="ui.max_queue of the app (default: the config's)")
    parser.add_argument("--soak", type=float, default=0, help="then keep the users asking this many seconds more")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one request may take (default 900)")
    parser.add_argument("--json", help="also write the report and every answer's check to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        index = Path(scratch) / "index"
        reference = build_index(index)
        pool = expectations(reference, seed_questions())
        reference.client.close()  # the app opens the index itself
        print(f"{len(pool)} seed questions answered from their gold paper ({len({e.gold for e in pool})} papers)")
        env = {"RAG_CONFIG": args.config, "RAG_VECTORSTORE__PATH": str(index)}
        if args.concurrency:
            env["RAG_UI__CONCURRENCY_LIMIT"] = str(args.concurrency)
        if args.max_queue:
            env["RAG_UI__MAX_QUEUE"] = str(args.max_queue)
        settings = with_overrides(args.config, ui=ui_overrides(args))
        print(
            f"app: config {args.config}, ui.concurrency_limit {settings.ui.concurrency_limit}, "
            f"ui.max_queue {settings.ui.max_queue}; {args.users} users x {args.questions} questions; "
            f"{os.cpu_count()} cores"
        )
        report: dict = {"config": args.config, "users": args.users, "questions": args.questions}
        report["concurrency_limit"], report["max_queue"] = settings.ui.concurrency_limit, settings.ui.max_queue
        with AppProcess(Path(scratch) / "app.log", env) as app:
            pid = app.process.pid
            report["rss_idle_mib"] = round(rss_mib(pid), 1)
            plans = plan(pool, args.users, args.questions)
            report["load_before"] = load_average()
            with RssSampler(pid) as memory:
                results, seconds = run_users(
                    app.url, plans, timeout=args.timeout, allow_fallback=True, on_result=progress()
                )
            report["run"] = describe(results, seconds, memory)
            report["load_after"] = load_average()
            print_run("load", report["run"], report["load_before"], report["load_after"])
            if args.soak:
                report["soak_load_before"] = load_average()
                with RssSampler(pid, interval=5) as memory:
                    soaked, seconds = run_users(
                        app.url,
                        plans,
                        timeout=args.timeout,
                        allow_fallback=True,
                        on_result=progress(),
                        until=time.monotonic() + args.soak,
                    )
                report["soak"] = describe(soaked, seconds, memory)
                report["soak_load_after"] = load_average()
                print_run("soak", report["soak"], report["soak_load_before"], report["soak_load_after"])
                results += soaked
            if "Traceback" in app.log.read_text(errors="replace"):
                print("the app logged a traceback:\n" + app.log_tail())
    if args.json:
        report["answers"] = [
            {
                "user": r.turn.client,
                "question": r.turn.question,
                "seconds": round(r.seconds, 2),
                "error": r.error,
                "problems": r.problems,
                "fallback": r.payload and r.payload.get("fallback"),
                "text": r.payload and r.payload.get("text"),
            }
            for r in results
        ]
        Path(args.json).write_text(json.dumps(report, indent=1))
    failed = report["run"]["errors"] + report["run"]["wrong_sources"]
    if args.soak:
        failed += report["soak"]["errors"] + report["soak"]["wrong_sources"]
    return 1 if failed else 0


def ui_overrides(args) -> dict:
    ui = {}
    if args.concurrency:
        ui["concurrency_limit"] = args.concurrency
    if args.max_queue:
        ui["max_queue"] = args.max_queue
    return ui


def build_index(index: Path) -> RagService:
    """The seeds ingested into `index`; returns the extractive service over it (the reference)."""
    service = RagService(with_overrides("extractive", vectorstore={"path": str(index)}))
    service.ingest([BUNDLED_SEEDS])
    return service


def progress():
    """Prints a line every ten answers, so a long run shows it is alive."""
    started, count = time.perf_counter(), [0]

    def report(result) -> None:
        count[0] += 1
        if count[0] % 10 == 0:
            print(f"  {count[0]} answers, {(time.perf_counter() - started) / 60:.1f} min", flush=True)

    return report


def describe(results, seconds: float, memory: RssSampler) -> dict:
    """The summary, the kinds of problems, fallback reasons, and the server's memory over the run."""
    figures = summary(results, seconds)
    # An answer whose sentences no source supports cites nothing: the small model's quality, not the load.
    figures["uncited"] = sum(1 for r in results if r.problems == ["cites nothing"])
    figures["wrong_sources"] = sum(1 for r in results if r.problems and not r.error) - figures["uncited"]
    figures["problem_kinds"] = dict(Counter(problem.split(" ")[0] for r in results for problem in r.problems))
    reasons = Counter(r.payload["fallback"].split(": ", 1)[-1] for r in results if r.payload and r.payload["fallback"])
    figures["fallback_reasons"] = dict(reasons)
    texts: dict[str, set[str]] = defaultdict(set)
    for r in results:
        if r.payload and not r.payload.get("fallback"):
            texts[r.turn.question].add(r.payload["text"])
    figures["texts_differ"] = sum(1 for answers in texts.values() if len(answers) > 1)
    samples = [mib for _, mib in memory.samples]
    if samples:
        half = samples[len(samples) // 2 :]
        figures["rss_mib"] = {
            "first": round(samples[0], 1),
            "max": round(max(samples), 1),
            "last": round(samples[-1], 1),
            "second_half_range": round(max(half) - min(half), 1),
            "samples": len(samples),
        }
        figures["rss_slope_mib_per_min"] = round(slope(memory.samples) * 60, 2)
    return figures


def slope(samples: list[tuple[float, float]]) -> float:
    """Least-squares MiB per second over the second half of the samples (after warm-up)."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return 0.0
    mean_t = sum(t for t, _ in half) / len(half)
    mean_m = sum(m for _, m in half) / len(half)
    spread = sum((t - mean_t) ** 2 for t, _ in half)
    return sum((t - mean_t) * (m - mean_m) for t, m in half) / spread if spread else 0.0


def print_run(name: str, figures: dict, before: list[float], after: list[float]) -> None:
    print(
        f"{name}: {figures['requests']} requests in {figures['seconds']} s: "
        f"{figures['answers_per_minute']} answers/min; "
        f"latency p50 {figures['p50_s']} s, p95 {figures['p95_s']} s, max {figures['max_s']} s; "
        f"errors {figures['errors']}, wrong sources {figures['wrong_sources']}, uncited {figures['uncited']}, "
        f"fallbacks {figures['fallbacks']}, questions whose answers differ between users {figures['texts_differ']}"
    )
    if "rss_mib" in figures:
        rss = figures["rss_mib"]
        print(
            f"{name}: server RSS {rss['first']} -> {rss['last']} MiB (max {rss['max']}, {rss['samples']} samples); "
            f"second half: range {rss['second_half_range']} MiB, slope {figures['rss_slope_mib_per_min']} MiB/min"
        )
    print(f"{name}: load average before {before}, after {after} (1, 5, 15 min)")
    if figures["problem_kinds"]:
        print(f"{name}: problems by kind: {figures['problem_kinds']}")
    if figures["fallback_reasons"]:
        print(f"{name}: why the model failed: {figures['fallback_reasons']}")


if __name__ == "__main__":
    sys.exit(main())
