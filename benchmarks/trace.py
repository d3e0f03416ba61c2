"""Which modules a question passes through, and how often control moves back up the stages.

    python benchmarks/trace.py --index /tmp/seedidx "How many reaction templates does RxnFlow use?"

`sys.setprofile` records every Python call made while `rag.answer` answers the question (the service built
and warmed by a first question, so only a question's own path is traced). A *move back up* is a call from a
module of a lower stage into one of a higher stage (docs/architecture.md's picture, the layers of
pyproject.toml's import contract): a callback, which no import check sees. Prints JSON: the modules passed,
in the order first reached, and each move back up with its count.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections import Counter
from pathlib import Path

import rag
from rag.core.config import Settings, with_overrides

ROOT = Path(__file__).resolve().parent.parent


def layers() -> list[list[str]]:
    """The stages of the import contract, highest first, each a list of packages or modules."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = config["tool"]["importlinter"]["contracts"][0]
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def layer_of(module: str, stages: list[list[str]]) -> int | None:
    """The stage a module belongs to (0 the highest), or None for one outside the contract."""
    for number, stage in enumerate(stages):
        if any(module == name or module.startswith(name + ".") for name in stage):
            return number
    return None


def trace(question: str, settings: Settings) -> tuple[list[str], Counter[tuple[str, str]]]:
    stages = layers()
    passed: dict[str, None] = {}
    moves: Counter[tuple[str, str]] = Counter()

    def profile(frame, event, arg) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if layer_of(module, stages) is None:
            return
        passed.setdefault(module)
        caller = frame.f_back
        while caller is not None and layer_of(caller.f_globals.get("__name__", ""), stages) is None:
            caller = caller.f_back  # through the libraries (a comprehension's frame is its module's)
        if caller is None:
            return
        source = caller.f_globals.get("__name__", "")
        lower, higher = layer_of(source, stages), layer_of(module, stages)
        if lower is not None and higher is not None and higher < lower:
            moves[(source, module)] += 1

    sys.setprofile(profile)
    try:
        rag.answer(question, settings)
    finally:
        sys.setprofile(None)
    return list(passed), moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("question")
    parser.add_argument("--index", required=True, help="an index folder (rag --index)")
    parser.add_argument("--config", default="extractive")
    args = parser.parse_args()
    settings = with_overrides(args.config, vectorstore={"path": args.index})
    rag.answer(args.question, settings)  # the parts built and warm: what is traced is a question's own path
    passed, moves = trace(args.question, settings)
    print(
        json.dumps(
            {
                "question": args.question,
                "modules": len(passed),
                "moves_back_up": sum(moves.values()),
                "passed": passed,
                "moves": {f"{low} -> {high}": count for (low, high), count in moves.most_common()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
