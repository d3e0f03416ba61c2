"""Question answering over research-paper abstracts, with cited sources.

    from rag import answer, retrieve
    a = answer("Which agent plays Hanabi with unfamiliar partners?")
    a.text, a.sources, a.cited, a.refused

Importing this package loads nothing heavy; the first call builds a `RagService` for its config
and keeps a few of them, so repeated calls don't reload the models.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.results import Answer, Source
    from rag.retrieval import Filters
    from rag.service import RagService

__all__ = ["answer", "retrieve", "service", "stream_answer"]


def service(config: str | Settings | None = None) -> RagService:
    """The service for a config name, path or Settings (None: $RAG_CONFIG, else default)."""
    from rag.config import load_config

    return _service_for(load_config(config).model_dump_json())


@lru_cache(maxsize=4)
def _service_for(settings_json: str) -> RagService:
    from rag.config import Settings
    from rag.service import RagService

    return RagService(Settings.model_validate_json(settings_json))


def answer(
    question: str,
    config: str | Settings | None = None,
    history: list[tuple[str, str]] | None = None,
    k: int | None = None,
    filters: Filters | None = None,
) -> Answer:
    """A cited answer: `text` with `[n]` markers that refer to `sources[n - 1]`."""
    return service(config).answer(question, history=history, k=k, filters=filters)


def stream_answer(
    question: str,
    config: str | Settings | None = None,
    history: list[tuple[str, str]] | None = None,
    k: int | None = None,
    filters: Filters | None = None,
) -> Iterator[str | Answer]:
    """Text pieces as the model writes them, then the final `Answer`."""
    return service(config).stream_answer(question, history=history, k=k, filters=filters)


def retrieve(
    question: str, k: int = 5, config: str | Settings | None = None, filters: Filters | None = None
) -> list[Source]:
    """The k best-matching papers, one `Source` each, best first."""
    return service(config).retrieve(question, k=k, filters=filters)
