"""A cold `rag ask`: whole fresh processes on the seed index, repeated, median and spread, against the targets.

    python benchmarks/cold_start.py                              # the default (no model), then the bundled one
    python benchmarks/cold_start.py --configs extractive --runs 9
    python benchmarks/cold_start.py --compare /path/to/other/checkout   # the same runs of another checkout's code,
                                                                        # interleaved with these, for before/after

"Cold" is a new Python process each time, as a user typing the command gets: every import, the
Chroma client, the ONNX session, the BM25 index and (with the smollm2 config) the language model are
loaded again. The files themselves stay in the OS page cache, as they do for someone asking one
question after another. One run of each command is made first and not counted: it builds the seed
index and the ONNX export in the data folder (`--data`) if they are missing.

Targets from issue 18, on a 2-core machine: no model (default, extractive) <= 3 s median, the bundled model <= 4.5 s.
Other processes slow every run down: the load average is printed before and after, and the runs
of the two checkouts alternate so that both see the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import load_line  # benchmarks/machine.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How many reaction templates does RxnFlow use?"
TARGETS = {"default": 3.0, "extractive": 3.0, "smollm2": 4.5}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="default,smollm2", help="configs to time (comma-separated)")
    parser.add_argument("--runs", type=int, default=5, help="counted runs per command")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--data", type=Path, default=ROOT / ".rag" / "cold-start", help="XDG_DATA_HOME of the runs")
    parser.add_argument("--compare", type=Path, help="another checkout of this project, timed the same way")
    args = parser.parse_args()

    checkouts = {"this": ROOT} | ({"compare": args.compare.resolve()} if args.compare else {})
    print(f"load average before: {load_line()}")
    for config in args.configs.split(","):
        commands = {name: ask_command(folder, config, args.question, args.data) for name, folder in checkouts.items()}
        for name, (command, env) in commands.items():
            warm_up = subprocess.run(command, env=env, cwd=checkouts[name], capture_output=True, text=True)
            if warm_up.returncode != 0:
                raise SystemExit(f"{name}, {config}: exit {warm_up.returncode}\n{warm_up.stderr[-2000:]}")
        times: dict[str, list[float]] = {name: [] for name in commands}
        memory: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, env) in commands.items():  # alternating: both see the same load
                seconds, peak_mib = timed_run(command, env, checkouts[name])
                times[name].append(seconds)
                memory[name].append(peak_mib)
        target = TARGETS.get(config)
        for name, folder in checkouts.items():
            median = statistics.median(times[name])
            verdict = (
                "" if target is None else f"  target <= {target:.1f} s: {'met' if median <= target else 'NOT met'}"
            )
            print(
                f"{config:>10} {name} ({folder}): median {median:.2f} s, min {min(times[name]):.2f}, "
                f"max {max(times[name]):.2f}, stdev {statistics.stdev(times[name]) if args.runs > 1 else 0:.2f} "
                f"({args.runs} runs); peak RSS median {statistics.median(memory[name]):.0f} MiB{verdict}"
            )
    print(f"load average after: {load_line()}")
    return 0


def ask_command(checkout: Path, config: str, question: str, data: Path) -> tuple[list[str], dict[str, str]]:
    """`rag --config CONFIG ask QUESTION` running `checkout`'s code, with its own data folder.

    Run with `checkout` as working directory: `python -c` puts it first on the import path.
    """
    env = os.environ | {"PYTHONPATH": str(checkout), "XDG_DATA_HOME": str(data)}
    env.pop("RAG_CONFIG", None)
    launcher = "import sys; from rag.cli import main; sys.exit(main())"  # what the `rag` script runs
    return [sys.executable, "-c", launcher, "--config", config, "ask", question], env


def timed_run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall-clock seconds and peak RSS (MiB) of one whole process."""
    with tempfile.TemporaryFile() as stderr:  # a file, not a pipe: llama.cpp's logging could fill a pipe
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            stderr.seek(0)
            raise SystemExit(f"exit {process.returncode}: {command}\n{stderr.read().decode(errors='replace')[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
