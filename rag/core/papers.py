"""What is stored per paper: `PaperRecord`, written by ingest into the index and read back by it.

It lives in core because the index stores it and ingest makes it (from files, `rag/ingest/papers.py`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

SEED_ID_PREFIX = "seed-"


def content_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class PaperRecord:
    """One abstract and what is known about its paper."""

    paper_id: str
    title: str
    abstract: str
    authors: tuple[str, ...] = ()
    status: str = ""
    url: str = ""
    primary_area: str = ""
    source: str = ""
    github: tuple[str, ...] = field(default=())
    line: int = field(default=0, compare=False)  # where it starts in `source`, for messages

    @property
    def content_hash(self) -> str:
        """Hash of the abstract with whitespace normalised: the same text from two files is one paper."""
        return content_hash(self.abstract)

    @property
    def has_own_id(self) -> bool:
        """False for seed-text papers, whose id is derived from their text."""
        return not self.paper_id.startswith(SEED_ID_PREFIX)

    def metadata(self) -> dict[str, Any]:
        """Flat metadata for the vector store (Chroma takes scalars only)."""
        return {**self.description(), "source": self.source}

    def description(self) -> dict[str, Any]:
        """The metadata that says what the paper is, i.e. all but the file it was read from: when a stored
        paper's differs (a new decision, corrected authors), ingest counts the paper as updated."""
        return {
            "paper_id": self.paper_id,
            "title": self.title,
            "authors": "; ".join(self.authors),
            "status": self.status,
            "url": self.url,
            "primary_area": self.primary_area,
            "github": " ".join(self.github),
            "has_code": bool(self.github),
            "content_hash": self.content_hash,
        }

    def described_by(self, stored: dict[str, Any]) -> bool:
        """True when stored metadata describes this record exactly."""
        return all(stored.get(key) == value for key, value in self.description().items())
