"""A map of the conference: every paper placed in 2-D, in themes, built at ingest and stored with the index.

`update_map` runs at the end of every `rag ingest` (and `rag map --rebuild`): with no map yet, or asked to,
it lays out every paper (t-SNE, rag/index/paper_map.py) and finds the themes (k-means of the paper vectors,
each theme named by its distinctive words, class-based TF-IDF as an overview's themes are named,
rag/answering/themes.py); otherwise it only places the new and changed papers, each at the similarity-weighted
mean of the places of its nearest placed papers, in their theme, and drops the removed ones, leaving every
other paper where it was. `read_map` gives the map the page, `rag map`, `rag.paper_map()` and /v1/map show,
with the filters applied. scikit-learn is imported only here, when a map is built: never on a question's path.
"""

from __future__ import annotations

import math
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rag.core.errors import StoreError, first_line
from rag.core.filters import Filters
from rag.core.wording import counted
from rag.index.paper_map import (
    CHUNKS,
    FEW,
    NEIGHBOURS,
    TITLED,
    MapPoint,
    MapStore,
    StoredMap,
    layout,
    paper_vectors,
    placed_among,
    with_titles,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.index.access import IndexAccess
    from rag.index.lexical import Revision
    from rag.index.store import PaperIndex
    from rag.ingest.pipeline import IngestReport

    class Parts(Protocol):
        """What reading the map needs of a service (rag.service.RagService has it all)."""

        @property
        def index(self) -> PaperIndex: ...
        @property
        def where(self) -> str: ...
        @property
        def access(self) -> IndexAccess: ...
        @property
        def embeddings(self) -> Embeddings: ...
        @property
        def index_embeddings(self) -> Embeddings: ...
        def ensure_index(self) -> None: ...
        def reading(self) -> AbstractContextManager[Revision | None]: ...
        def metadata(self, filters: Filters) -> dict[str, list]: ...


MOST_THEMES = 20  # colours a reader can still tell apart


@dataclass(frozen=True)
class MapUpdate:
    """What `update_map` did, for `rag ingest`'s and `rag map`'s summary line."""

    placed: int
    removed: int
    papers: int
    themes: int
    full: bool
    seconds: float

    def summary(self) -> str:
        if self.full:
            laid_out = f"{counted(self.papers, 'paper')} laid out in {counted(self.themes, 'theme')}"
            return f"map: {laid_out} ({self.seconds:.1f} s)"
        kept = self.papers - self.placed
        return f"map: {self.placed:,} placed, {self.removed:,} removed, {kept:,} left in place ({self.seconds:.1f} s)"


@dataclass(frozen=True)
class ShownPoint:
    """A paper as the map shows it: its place and theme, and the fields the filters and colours read."""

    paper_id: str
    title: str
    x: float
    y: float
    theme: int
    status: str
    primary_area: str


@dataclass(frozen=True)
class PaperMap:
    """The map with the filters applied: the papers shown, the themes' names, and how many are placed in all."""

    points: list[ShownPoint]
    themes: list[str]
    placed: int
    filters: Filters
    revision: str = ""  # of the stored map it was read from: the same revision and filters, the same map
    indexed: int = 0  # papers in the index: more (or fewer) than placed, and the map is out of date
    where: str = ""  # the index's place, for `stale`

    def stale(self) -> str | None:
        """What `rag map` says of a map that places another number of papers than the index holds, or None."""
        if self.placed == self.indexed:
            return None
        return (
            f"the map is out of date: it places {self.placed:,} papers, the index {self.where} holds {self.indexed:,}; "
            "`rag map --rebuild` lays it out again (or run `rag ingest` again to place the new ones)"
        )

    def theme_sizes(self) -> list[tuple[str, int]]:
        """(name, papers shown) per theme, in the themes' order (largest first when laid out)."""
        counts = np.bincount([point.theme for point in self.points], minlength=len(self.themes))
        return [(name, int(count)) for name, count in zip(self.themes, counts)]

    def to_payload(self) -> dict[str, Any]:
        """What /v1/map, `rag map --json` and `rag.paper_map().to_payload()` give."""
        return {
            "papers": self.placed,
            "shown": len(self.points),
            "filters": self.filters.to_json(),
            "themes": [{"theme": i, "name": name, "papers": n} for i, (name, n) in enumerate(self.theme_sizes())],
            "points": [vars(point) for point in self.points],
        }


def update_map(index: PaperIndex, rebuild: bool = False, title_model: Embeddings | None = None) -> MapUpdate:
    """Bring the index's map in step with its papers: all laid out afresh when it has none (or `rebuild`, or its
    vectors are of another kind), else the new and changed papers placed among the others and the removed ones
    dropped. `title_model`: the model whose title vectors join a static index's (`with_titles`)."""
    started = time.perf_counter()
    store = MapStore(index)
    papers = dict(_paper_metadata(index))
    if store.vectors() != _kind(title_model):
        store = store.emptied()
    placed = store.hashes()
    if rebuild or not placed:
        themes = _lay_out(index, store, papers, title_model)
        store.remove(pid for pid in placed if pid not in papers)
        return MapUpdate(len(papers), 0, len(papers), themes, True, time.perf_counter() - started)
    stale = [pid for pid, hashed in placed.items() if papers.get(pid, {}).get("content_hash") != hashed]
    store.remove(stale)
    if len(stale) == len(placed):  # every placed paper changed or went: nothing left to place among
        return update_map(index, rebuild=True, title_model=title_model)
    new = [pid for pid in papers if pid not in placed or pid in stale]
    if len(new) > len(placed) - len(stale):  # many placed among few would keep the few's themes for all
        return update_map(index, rebuild=True, title_model=title_model)
    _place(index, store, new, papers, title_model)
    removed = sum(pid not in papers for pid in stale)
    return MapUpdate(len(new), removed, len(papers), -1, False, time.perf_counter() - started)


def with_map(report: IngestReport, index: PaperIndex, title_model: Embeddings | None = None) -> IngestReport:
    """The ingest's report, after the map is brought in step with what the ingest stored (`report.map` says how).

    A map that can't be is said in the report (`map_error`), which is still given: the papers are stored, and
    `rag map` says its map is out of date until a rebuild or the next ingest places them."""
    from chromadb.errors import ChromaError

    try:
        report.map = update_map(index, title_model=title_model).summary()
    except (StoreError, ChromaError) as err:
        report.map_error = f"the map was not brought up to date ({first_line(err)}); `rag map --rebuild` lays it out"
    return report


def _paper_metadata(index: PaperIndex, batch: int = 5000):
    """(paper_id, stored metadata) of every paper: their abstracts are read only for a layout (`_lay_out`)."""
    for offset in range(0, index.paper_count(), batch):
        page = index.papers.get(include=["metadatas"], limit=batch, offset=offset)
        yield from zip(page["ids"], page["metadatas"])


def _lay_out(index: PaperIndex, store: MapStore, papers: dict[str, dict], title_model: Embeddings | None) -> int:
    """Every paper laid out and put in a theme; returns the number of themes."""
    vectors = _vectors(index, papers, None, title_model)
    ids = [pid for pid in papers if pid in vectors]
    if not ids:
        return 0
    matrix = np.stack([vectors[pid] for pid in ids])
    places = layout(matrix)
    titles = [str(papers[pid].get("title", "")) for pid in ids]
    abstracts = {pid: abstract for pid, abstract, _ in index.iter_papers()}
    labels, names = themes_of(matrix, [f"{title} {abstracts[pid]}" for pid, title in zip(ids, titles)], titles)
    points = [
        MapPoint(pid, round(float(x), 4), round(float(y), 4), int(label), title)
        for pid, (x, y), label, title in zip(ids, places, labels, titles)
    ]
    store.write(points, matrix, {pid: papers[pid]["content_hash"] for pid in ids}, names, _kind(title_model))
    return len(names)


def _place(
    index: PaperIndex, store: MapStore, new: list[str], papers: dict[str, dict], title_model: Embeddings | None
) -> None:
    """Each new paper at the similarity-weighted mean of its nearest placed papers' places, in their theme."""
    vectors = _vectors(index, papers, new, title_model)
    ids = [pid for pid in new if pid in vectors]
    if not ids:
        return
    matrix = np.stack([vectors[pid] for pid in ids])
    themes = store.themes()
    points = []
    for pid, neighbours in zip(ids, store.nearest(matrix, NEIGHBOURS)):
        x, y, theme = placed_among(neighbours)
        points.append(MapPoint(pid, round(x, 4), round(y, 4), theme, str(papers[pid].get("title", ""))))
    store.write(points, matrix, {pid: papers[pid]["content_hash"] for pid in ids}, themes, _kind(title_model))


def title_model(parts: Parts) -> Embeddings | None:
    """The model whose title vectors join the papers' on the map of a static index (`with_titles`), else None."""
    return parts.embeddings if parts.index_embeddings is not parts.embeddings else None


def _vectors(
    index: PaperIndex, papers: dict[str, dict], ids: list[str] | None, title_model: Embeddings | None
) -> dict[str, np.ndarray]:
    """The vectors the map places these papers by (`ids` None: all): their chunks' mean, with their titles'."""
    vectors = paper_vectors(index, ids)
    if title_model is None:
        return vectors
    return with_titles(vectors, {pid: str(papers.get(pid, {}).get("title", "")) for pid in vectors}, title_model)


def _kind(title_model: Embeddings | None) -> str:
    return CHUNKS if title_model is None else TITLED


def themes_of(vectors: np.ndarray, texts: list[str], titles: list[str]) -> tuple[np.ndarray, list[str]]:
    """A theme per paper (0 the largest) and each theme's name: k-means of the unit vectors into
    √(papers / 2) themes, at most `MOST_THEMES` (under `FEW` papers, an overview's Ward clustering), named by
    their distinctive words (themes.py); from `FEW` papers on, only among terms used by at most 2 / themes of them."""
    count = max(1, min(MOST_THEMES, round(math.sqrt(len(vectors) / 2))))
    if count == 1 or len(vectors) < 3:
        labels = np.zeros(len(vectors), dtype=int)
    elif len(vectors) < FEW:
        from rag.answering.themes import clusters  # an overview's themes: how many by their silhouette

        labels = clusters(vectors)
    else:
        from sklearn.cluster import KMeans

        labels = KMeans(count, n_init=4, random_state=0).fit_predict(vectors)
    order = sorted(set(labels.tolist()), key=lambda label: -int((labels == label).sum()))
    renumbered = np.zeros(len(labels), dtype=int)
    for new, old in enumerate(order):
        renumbered[labels == old] = new
    groups = [np.flatnonzero(renumbered == theme).tolist() for theme in range(len(order))]
    from rag.answering.themes import distinctive_words  # here: the module stays light on a question's path

    # On a map of many papers, a term used by more than twice a theme's mean share of them tells no theme from
    # the others; a map of a few dozen has too few papers per theme to say which terms are common.
    most_common = 2 / len(groups) if len(vectors) >= FEW else 1.0
    words = distinctive_words(groups, texts, "", titles, most_common)
    return renumbered, [", ".join(named) or f"theme {theme + 1}" for theme, named in enumerate(words)]


def rebuild_map(parts: Parts) -> MapUpdate:
    """Every paper of the service's index laid out afresh (`rag map --rebuild`), as a writer of the index."""
    parts.ensure_index()
    with parts.access.writing_here(opened=True):  # alone among the folder's writers, on a client opened again
        return update_map(parts.index, rebuild=True, title_model=title_model(parts))


def read_map(parts: Parts, filters: Filters | None = None) -> PaperMap:
    """The stored map, with only the papers `filters` admit (read once: `MapReader` keeps it for a server)."""
    return MapReader(parts)(filters)


class MapReader:
    """The map of one service's index, read again only when another write changed it (its revision)."""

    def __init__(self, parts: Parts):
        self.parts = parts
        self._stored: StoredMap | None = None

    def __call__(self, filters: Filters | None = None) -> PaperMap:
        """The map with only the papers `filters` admit; an index without a map is a StoreError saying how
        to build one."""
        filters = filters or Filters()
        fields = self.parts.metadata(filters)  # the papers admitted, with their status and area
        with self.parts.reading():
            store = MapStore(self.parts.index, create=False)
            revision = store.revision()
            if self._stored is None or self._stored.revision != revision or not revision:
                self._stored = store.read()
            stored = self._stored
            indexed = self.parts.index.paper_count()
        if not stored.points:
            raise StoreError(f"the index {self.parts.where} has no map yet; `rag map --rebuild` builds it")
        row = {pid: i for i, pid in enumerate(fields["paper_id"])}
        shown = [
            ShownPoint(p.paper_id, p.title, p.x, p.y, p.theme, fields["status"][i], fields["primary_area"][i])
            for p in stored.points
            if (i := row.get(p.paper_id)) is not None
        ]
        return PaperMap(shown, stored.themes, len(stored.points), filters, stored.revision, indexed, self.parts.where)
