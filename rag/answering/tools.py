"""What an answerer may use besides the question: `Tools`.

Each kind's answerer is `(Question, Tools) -> Answer` (rag/answering/kinds.py). The service builds the tools
for each question it answers (`RagService.tools`): an answerer gets these, typed, not the service. Search,
the metadata and related papers are still the service's own functions (they hold the index open while they
read, `RagService.reading`): calls back up a stage, which `benchmarks/trace.py` counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.answering.pipeline import AnswerPipeline
    from rag.answering.related import Related
    from rag.core.config import Settings
    from rag.core.filters import Filters
    from rag.core.types import Source

# (a text cleaned already, k, filters) -> the top-k papers, best first.
Search = Callable[[str, int, "Filters"], list["Source"]]


@dataclass(frozen=True)
class Tools:
    """What answering may use: the settings, search, the stored metadata, sentence embeddings, the answer
    pipeline (a model's sentence for each theme of an overview) and related papers."""

    settings: Settings
    search: Search
    candidates: Search  # `search` without its cap on k: a list's or count's candidates (rag/answering/membership.py)
    metadata: Callable[[Filters], dict[str, list]]  # filters -> {stored key: one value per paper they admit}
    sentence_embeddings: Embeddings
    pipeline: AnswerPipeline
    related: Callable[..., Related]  # find_related over the index: (paper, abstract=, k=, filters=) -> Related
    stored_paper: Callable[[str], str | None]  # the stored paper a name, title or id names exactly, if one
