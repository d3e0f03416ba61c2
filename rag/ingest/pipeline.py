"""Incremental, idempotent, resumable ingestion of paper records into a `PaperIndex`.

Per batch: decide for each record whether it is new, changed, relabelled (same title and abstract,
new status, authors or area), unchanged or a duplicate; relabel metadata in place; write the
chunks of new and changed papers (ids are content hashes, so a rewrite is a no-op); drop the
chunks a changed paper no longer has; and only then mark the papers complete. A run killed
anywhere leaves every paper either as it was or complete, plus at most some chunks that the next
run rewrites under the same ids.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from rag.core.config import IngestConfig
from rag.core.errors import InputError
from rag.core.papers import SEED_ID_PREFIX, PaperRecord
from rag.index.store import PaperIndex
from rag.index.vectors import lacking_vectors
from rag.ingest.chunking import Chunker
from rag.ingest.papers import LoadProblem, load_papers


@dataclass
class IngestReport:
    """What an ingest did, for the CLI's summary line and for tests."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    duplicates: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    problems: list[LoadProblem] = field(default_factory=list)
    seconds: float = 0.0
    papers: int = 0
    chunks: int = 0
    repaired: int = 0  # stored papers written again: a chunk had lost its vector (rag/index/vectors.py)
    map: str = ""  # what the map's update did (rag/answering/paper_map.py)
    map_error: str = ""  # why the map could not be brought up to date, if it could not

    def summary(self) -> str:
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed, "
            f"{self.duplicates} duplicates skipped; {self.chunks_added} chunks written, "
            f"{self.chunks_removed} removed; index: {self.papers} papers, {self.chunks} chunks; "
            f"{len(self.problems)} problems; {self.seconds:.1f} s"
            + (f"; {self.repaired} papers written again, their chunks lacking vectors" if self.repaired else "")
            + (f"; {self.map}" if self.map else "")
        )


def ingest_papers(
    records: Iterable[PaperRecord],
    index: PaperIndex,
    chunker: Chunker,
    prune: bool = False,
    strict: bool = False,
    batch_size: int = 256,
    on_progress: Callable[[int], None] | None = None,
    report: IngestReport | None = None,
) -> IngestReport:
    """Bring the index in step with `records`; with `prune`, remove papers not among them."""
    report = report or IngestReport()
    started = time.perf_counter()
    run = _Run(index, chunker, report, strict)
    iterator = iter(records)
    while batch := list(islice(iterator, batch_size)):
        run.ingest_batch(batch)
        if on_progress:
            on_progress(len(batch))
    if prune:
        gone = [pid for pid in index.all_paper_ids() if pid not in run.present]
        report.chunks_removed += index.remove_papers(gone)
        report.removed += len(gone)
    report.papers = index.paper_count()
    report.chunks = index.chunk_count()
    report.seconds = time.perf_counter() - started
    return report


def ingest_files(
    paths: list[str | Path],
    index: PaperIndex,
    chunker: Chunker,
    limits: IngestConfig,
    prune: bool = False,
    strict: bool = False,
    progress: bool = False,
) -> IngestReport:
    """`ingest_papers` of the papers in `paths`, their bad lines reported (fatal only when `strict`); with
    `progress`, a bar on stderr, after a first pass that counts the papers."""
    report = IngestReport()
    records = load_papers(paths, strict=strict, on_problem=report.problems.append, limits=limits)
    batch = limits.batch_size
    if not progress:
        return ingest_papers(records, index, chunker, prune, strict, batch, report=report)
    from tqdm import tqdm

    total = sum(1 for _ in load_papers(paths, limits=limits))
    with tqdm(total=total, unit="paper", desc="ingest", file=sys.stderr, dynamic_ncols=True) as bar:
        return ingest_papers(records, index, chunker, prune, strict, batch, on_progress=bar.update, report=report)


class _Run:
    """State of one ingest: which ids and abstracts have been seen, across batches."""

    def __init__(self, index: PaperIndex, chunker: Chunker, report: IngestReport, strict: bool):
        self.index = index
        self.chunker = chunker
        self.report = report
        self.strict = strict
        self.hash_of: dict[str, str] = {}  # paper_id -> content hash, for every paper seen this run
        self.id_of: dict[str, str] = {}  # content hash -> paper_id kept for it
        self.present: set[str] = set()  # stored paper ids that the inputs still hold

    def ingest_batch(self, batch: list[PaperRecord]) -> None:
        stored = self.index.stored_metadata(list(dict.fromkeys(paper.paper_id for paper in batch)))
        stored_ids = self.index.ids_by_hash(list(dict.fromkeys(paper.content_hash for paper in batch)))
        to_write: list[PaperRecord] = []
        to_relabel: list[PaperRecord] = []
        kept: list[PaperRecord] = []
        replaced: list[str] = []
        for paper in batch:
            if not self._first_sighting(paper):
                continue
            twin = self.id_of.get(paper.content_hash) or stored_ids.get(paper.content_hash)
            if twin and twin != paper.paper_id:  # the same abstract under another id: identity is the id
                if not paper.has_own_id:  # an abstract without an id of its own, stored under its real one
                    self.report.duplicates += 1
                    self.present.add(twin)
                    continue
                if twin.startswith(SEED_ID_PREFIX):
                    replaced.append(twin)  # the same abstract, now with a real id and title: keep this one
                    self.present.discard(twin)
            self.id_of[paper.content_hash] = paper.paper_id
            self.present.add(paper.paper_id)
            old = stored.get(paper.paper_id)
            if old is None:
                to_write.append(paper)
                self.report.added += 1
            elif old["content_hash"] != paper.content_hash or old.get("title") != paper.title:
                to_write.append(paper)  # new text to embed
                self.report.updated += 1
            elif not paper.described_by(old):
                to_relabel.append(paper)  # same text, new decision or authors: metadata only
                self.report.updated += 1
            else:
                kept.append(paper)
        to_write += self._lacking_vectors(kept, stored)
        self._write(to_write, updated=[p.paper_id for p in to_write if p.paper_id in stored])
        self.index.relabel(to_relabel)
        if replaced:
            self.report.chunks_removed += self.index.remove_papers(replaced)

    def _lacking_vectors(self, kept: list[PaperRecord], stored: dict[str, dict]) -> list[PaperRecord]:
        """Of the papers stored as they are, those to write again: a chunk without a readable vector, or missing."""
        lacking = lacking_vectors(self.index.chunks, {paper.paper_id: stored[paper.paper_id] for paper in kept})
        self.report.unchanged += len(kept) - len(lacking)
        self.report.repaired += len(lacking)
        return [paper for paper in kept if paper.paper_id in lacking]

    def _first_sighting(self, paper: PaperRecord) -> bool:
        known = self.hash_of.get(paper.paper_id)
        if known is None:
            self.hash_of[paper.paper_id] = paper.content_hash
            return True
        if known != paper.content_hash:
            problem = LoadProblem(
                paper.source, paper.line, f"duplicate id '{paper.paper_id}' with different text; kept the first"
            )
            if self.strict:
                raise InputError(str(problem))
            self.report.problems.append(problem)
        self.report.duplicates += 1
        return False

    def _write(self, papers: list[PaperRecord], updated: list[str]) -> None:
        if not papers:
            return
        chunks_of = {paper.paper_id: self.chunker.chunk(paper) for paper in papers}
        chunks = [chunk for paper_chunks in chunks_of.values() for chunk in paper_chunks]
        self.index.add_chunks(chunks)
        self.report.chunks_added += len(chunks)
        if updated:
            keep = {chunk.id for chunk in chunks if chunk.id is not None}  # the chunker gives each its id
            self.report.chunks_removed += self.index.remove_stale_chunks(updated, keep)
        self.index.mark_complete(papers, {pid: len(c) for pid, c in chunks_of.items()})
