"""From a question to ranked papers: search chunks, group them by paper, cut the top k.

Filters restrict the search itself (Chroma `where` clauses), except the author substring, which
Chroma cannot match inside a string: for it more chunks are fetched and filtered here.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.documents import Document

from rag.chunking import passage
from rag.results import Source

CHUNK_FIELDS = ("chunk", "start", "end", "prefix_chars", "content_hash")
PASSAGE_GAP = " … "


@dataclass(frozen=True)
class Filters:
    """What a question may be restricted to; empty fields restrict nothing."""

    status: tuple[str, ...] = ()
    primary_area: tuple[str, ...] = ()
    author: str = ""
    has_code: bool | None = None

    def where(self) -> dict | None:
        """The Chroma metadata filter for the fields Chroma can match itself."""
        clauses = []
        if self.status:
            clauses.append({"status": {"$in": list(self.status)}})
        if self.primary_area:
            clauses.append({"primary_area": {"$in": list(self.primary_area)}})
        if self.has_code is not None:
            clauses.append({"has_code": self.has_code})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def admits(self, metadata: dict) -> bool:
        return not self.author or self.author.lower() in str(metadata.get("authors", "")).lower()


def group_by_paper(hits: list[tuple[Document, float]], k: int, passages_per_paper: int) -> list[Source]:
    """One Source per paper, ranked by its best chunk, holding its best passages in abstract order."""
    best: dict[str, list[tuple[Document, float]]] = {}
    for doc, score in sorted(hits, key=lambda hit: -hit[1]):
        kept = best.setdefault(doc.metadata["paper_id"], [])
        if len(kept) < passages_per_paper:
            kept.append((doc, score))
    sources = []
    for paper_id, kept in list(best.items())[:k]:
        in_order = sorted(kept, key=lambda hit: hit[0].metadata.get("start", 0))
        metadata = {key: value for key, value in kept[0][0].metadata.items() if key not in CHUNK_FIELDS}
        metadata["passages"] = [
            {"start": doc.metadata.get("start", 0), "end": doc.metadata.get("end", 0), "score": round(score, 4)}
            for doc, score in in_order
        ]
        sources.append(
            Source(
                paper_id=paper_id,
                title=metadata.get("title", paper_id),
                text=PASSAGE_GAP.join(passage(doc) for doc, _ in in_order),
                score=round(kept[0][1], 4),
                metadata=metadata,
            )
        )
    return sources
