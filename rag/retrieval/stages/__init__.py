"""Steps that run on the fused ranking, in the order `retrieval.stages` lists them.

Each is a module here exposing `Options` (a pydantic model of its settings) and `Stage`, built from
those options, with:
- `pool(k)`: how many of the best fused papers it wants to see (their chunks are read first);
- `__call__(question, candidates, k)`: the candidates it keeps, best first (the cut to k follows).

A reranker or a diversity pass is one new module and one entry in the config, e.g.
`retrieval: {stages: [{name: mmr, weight: 0.5}]}`.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from rag.core.config import StageConfig
    from rag.retrieval.search import Candidate


class Stage(Protocol):
    def pool(self, k: int) -> int: ...

    def __call__(self, question: str, candidates: list[Candidate], k: int) -> list[Candidate]: ...


def available() -> list[str]:
    return sorted(module.name for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_"))


def options_of(config: StageConfig) -> BaseModel:
    """The stage's options, checked by its module; a ValueError names what is wrong."""
    if config.name not in available():
        raise ValueError(f"unknown retrieval stage {config.name!r}; available: {', '.join(available())}")
    module = importlib.import_module(f"{__name__}.{config.name}")
    return module.Options.model_validate(config.model_extra or {})


def build(configs: list[StageConfig]) -> list[Stage]:
    stages = []
    for config in configs:
        module = importlib.import_module(f"{__name__}.{config.name}")
        stages.append(module.Stage(options_of(config)))
    return stages
