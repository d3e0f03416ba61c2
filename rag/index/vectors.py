"""Chunks whose vector Chroma can't read: a question reads around them, and the next ingest writes them again.

Two processes writing to one on-disk index at once (before ingests took the folder's lock, rag/index/locks.py)
could leave chunks in Chroma's SQLite whose vector neither process saved: any `get` of their embeddings fails
with `Error finding id`, whichever other chunks it asks for (90 of 1,196 chunks, and every question, in the probe
of issue 39). A question then reads the chunks it can (`readable`); an ingest writes a paper with such a chunk,
or with fewer chunks than it was stored with, again under the same ids, which puts the vectors back
(`lacking_vectors`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)

Found = dict[str, Any]  # what Chroma's `get` returns: "ids", and a list per included field


def readable(fetch: Callable[[list[str]], Found], keys: list[str]) -> tuple[list[Found], list[str]]:
    """`fetch(keys)`; when Chroma can't read a vector it asked for, the fetches of the parts that it can (halves,
    then their halves), and the keys it can't. Any other error is raised."""
    from chromadb.errors import ChromaError

    try:
        return [fetch(keys)], []
    except ChromaError as err:
        if "Error finding id" not in str(err):
            raise
        if len(keys) == 1:
            return [], keys
    middle = len(keys) // 2
    first, first_lost = readable(fetch, keys[:middle])
    second, second_lost = readable(fetch, keys[middle:])
    return first + second, first_lost + second_lost


def readable_chunks(chunks, chunk_ids: list[str], batch: int) -> Iterator[tuple[str, str, dict[str, Any], Any]]:
    """(id, text, metadata, vector) of those of these chunks still stored whose vector can be read, read `batch`
    at a time; the others are left out, and said in a warning."""
    lost: list[str] = []
    for start in range(0, len(chunk_ids), batch):
        pages, unreadable = readable(
            lambda ids: chunks.get(ids=ids, include=["documents", "metadatas", "embeddings"]),
            chunk_ids[start : start + batch],
        )
        lost += unreadable
        for page in pages:
            yield from zip(page["ids"], page["documents"], page["metadatas"], page["embeddings"])
    if lost:
        log.warning(
            "%d of the chunks read have no readable vector (left out); `rag ingest` of their papers writes them again",
            len(lost),
        )


def lacking_vectors(chunks, stored: dict[str, dict[str, Any]], batch: int = 500) -> set[str]:
    """Those of these stored papers (paper_id -> stored metadata, with the count of chunks written) that have a
    chunk without a readable vector, or fewer chunks than they were written with; read `batch` papers at a time."""

    def fetch(paper_ids: list[str]) -> Found:
        return chunks.get(where={"paper_id": {"$in": paper_ids}}, include=["metadatas", "embeddings"])

    ids = list(stored)
    found: list[Found] = []
    lacking: list[str] = []
    for start in range(0, len(ids), batch):
        pages, lost = readable(fetch, ids[start : start + batch])
        found, lacking = found + pages, lacking + lost
    counts = Counter(str(meta.get("paper_id")) for page in found for meta in page["metadatas"])
    short = {pid for pid, meta in stored.items() if counts.get(pid, 0) < int(meta.get("chunks", 0) or 0)}
    return set(lacking) | short
