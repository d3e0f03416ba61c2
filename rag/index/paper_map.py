"""The map of the papers: each paper placed in 2-D, stored with the index in a third Chroma collection.

`<name>-map` holds one entry per placed paper: its vector (the normalised mean of its chunks' vectors, so
a new paper's nearest placed papers are one Chroma query away) and, as metadata, its place (x, y), its
theme and its title and content hash (a changed abstract is placed again). The themes' names sit in the
collection's metadata, with a revision stamped at every write, so readers can cache the map and know when
another process changed it. Being a Chroma collection, it works the same on disk and on a shared server.

The layout is openTSNE's t-SNE of the vectors reduced by PCA to 50 dimensions, imported only when a map is built
(scikit-learn's t-SNE before it: the two side by side in benchmarks/map_layout.py and docs/map.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.core.errors import StoreError, first_line

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.index.store import PaperIndex

NEIGHBOURS = 10  # the placed papers a new paper is put among
CLOSENESS = 0.05  # their weights: a neighbour 0.05 more similar (cosine) weighs e times more
PCA_DIMENSIONS = 50
PERPLEXITY = 30.0
SEED = 0  # the same papers give the same map
SMALL = 2000  # papers: a layout of fewer runs in one thread
FEW = 50  # papers: fewer are laid out by PCA and put in themes by the overview's Ward clustering, without scikit-learn
WRITE_BATCH = 2000
CHUNKS = "chunks"  # a paper's vector: the mean of its chunks' (the model's, in any index but a static one)
TITLED = "chunks+title"  # a static index's: the mean of its chunks' static vectors, and the model's of its title


@dataclass(frozen=True)
class MapPoint:
    """One placed paper: where it is, its theme (an index into `StoredMap.themes`) and its title."""

    paper_id: str
    x: float
    y: float
    theme: int
    title: str


@dataclass(frozen=True)
class StoredMap:
    """What the map collection holds: every placed paper, the themes' names, and the revision of its last write."""

    points: list[MapPoint]
    themes: list[str]
    revision: str


class MapStore:
    """The `<name>-map` collection of one `PaperIndex`."""

    def __init__(self, index: PaperIndex, create: bool = True):
        """The map of `index`; without `create`, a StoreError when the index has none (a reader makes none)."""
        from chromadb.errors import NotFoundError

        self.name = f"{index.name}-map"
        self.client = index.client
        self.limit = index.max_batch_size  # the most entries one call to Chroma may carry (or return)
        try:
            if create:
                self.collection = self._created()
            else:
                self.collection = self.client.get_collection(self.name, embedding_function=None)
        except StoreError:
            raise
        except NotFoundError:
            raise StoreError(
                f"the index {index.where} has no map yet; `rag map --rebuild` (or any `rag ingest`) builds it"
            ) from None
        except Exception as err:
            raise StoreError(f"cannot open the map {self.name} {index.where}: {first_line(err)}") from None

    def count(self) -> int:
        return self.collection.count()

    def revision(self) -> str:
        """The revision of the map's last write (re-read: another process may have written since)."""
        return str(self._metadata().get("revision", ""))

    def vectors(self) -> str:
        """What the placed papers' vectors are (`CHUNKS` or `TITLED`): a map stored before the mark, `CHUNKS`."""
        return str(self._metadata().get("vectors", CHUNKS))

    def emptied(self) -> MapStore:
        """This map with no paper placed, in a new collection: for vectors of another kind (and length)."""
        self.client.delete_collection(self.name)
        self.collection = self._created()
        return self

    def _created(self):
        """The map's collection, made if it is not there: cosine space, vectors given by the caller."""
        return self.client.get_or_create_collection(
            self.name, embedding_function=None, metadata={"hnsw:space": "cosine"}, configuration=None
        )

    def themes(self) -> list[str]:
        """The themes' names, a theme's number its place in the list."""
        return list(json.loads(str(self._metadata().get("themes", "[]"))))

    def hashes(self) -> dict[str, str]:
        """paper_id -> the content hash of the abstract it was placed with."""
        return {pid: str(meta.get("content_hash", "")) for pid, meta in self._entries()}

    def read(self) -> StoredMap:
        """The whole map, as stored."""
        metadata = self._metadata()  # first: a write after it changes the revision, and is read next time
        points = [
            MapPoint(pid, float(meta["x"]), float(meta["y"]), int(meta["theme"]), str(meta.get("title", "")))
            for pid, meta in self._entries()
        ]
        return StoredMap(points, json.loads(str(metadata.get("themes", "[]"))), str(metadata.get("revision", "")))

    def _entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(paper_id, metadata) of every placed paper, read in pages."""
        for offset in range(0, self.count(), self.limit):
            page = self.collection.get(include=["metadatas"], limit=self.limit, offset=offset)
            yield from zip(page["ids"], page["metadatas"])

    def nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[float, float, int, float]]]:
        """For each vector, its n nearest placed papers: (x, y, theme, cosine similarity), nearest first.

        In queries of at most `limit` results in all: Chroma reads the results' metadata in one SQL
        statement, one variable a result, and 11,650 new papers' 10 neighbours each went past SQLite's
        32,766 (`too many SQL variables`)."""
        n = min(n, self.count())
        if n == 0 or not len(vectors):
            return [[] for _ in vectors]
        per_query = max(1, self.limit // n)
        placed: list[list[tuple[float, float, int, float]]] = []
        for start in range(0, len(vectors), per_query):
            found = self.collection.query(
                query_embeddings=vectors[start : start + per_query].tolist(),
                n_results=n,
                include=["metadatas", "distances"],
            )
            placed += [
                [(float(m["x"]), float(m["y"]), int(m["theme"]), 1.0 - float(d)) for m, d in zip(metas, distances)]
                for metas, distances in zip(found["metadatas"], found["distances"])
            ]
        return placed

    def write(
        self, points: list[MapPoint], vectors: np.ndarray, hashes: dict[str, str], themes: list[str], kind: str
    ) -> None:
        """Place these papers (each with its vector, of `kind`), and stamp the themes' names and a new revision."""
        batch = min(WRITE_BATCH, self.limit)
        for start in range(0, len(points), batch):
            part = points[start : start + batch]
            self.collection.upsert(
                ids=[point.paper_id for point in part],
                embeddings=vectors[start : start + batch].tolist(),
                metadatas=[
                    {"x": p.x, "y": p.y, "theme": p.theme, "title": p.title, "content_hash": hashes[p.paper_id]}
                    for p in part
                ],
            )
        self._stamp(themes, kind)

    def remove(self, paper_ids: Iterable[str]) -> None:
        ids = list(paper_ids)
        batch = min(WRITE_BATCH, self.limit)
        for start in range(0, len(ids), batch):
            self.collection.delete(ids=ids[start : start + batch])
        if ids:
            self._stamp(self.themes(), self.vectors())

    def _metadata(self) -> dict[str, Any]:
        # Re-read: a Collection object keeps the metadata it was fetched with.
        return dict(self.client.get_collection(self.name, embedding_function=None).metadata or {})

    def _stamp(self, themes: list[str], kind: str) -> None:
        self.collection.modify(metadata={"themes": json.dumps(themes), "revision": uuid.uuid4().hex, "vectors": kind})


def paper_vectors(index: PaperIndex, paper_ids: list[str] | None = None, batch: int = 5000) -> dict[str, np.ndarray]:
    """paper_id -> the normalised mean of its chunks' vectors: of these papers, or (None) of every paper."""
    sums: dict[str, np.ndarray] = {}
    wanted = ["embeddings", "metadatas"]
    if paper_ids is None:
        pages = (
            index.chunks.get(include=wanted, limit=batch, offset=offset)
            for offset in range(0, index.chunk_count(), batch)
        )
    else:
        pages = (
            index.chunks.get(where={"paper_id": {"$in": paper_ids[start : start + 500]}}, include=wanted)
            for start in range(0, len(paper_ids), 500)
        )
    for page in pages:
        for meta, vector in zip(page["metadatas"], page["embeddings"]):
            pid = str(meta["paper_id"])
            sums[pid] = sums.get(pid, 0.0) + np.asarray(vector, dtype=np.float64)
    return {pid: total / max(float(np.linalg.norm(total)), 1e-12) for pid, total in sums.items()}


def with_titles(vectors: dict[str, np.ndarray], titles: dict[str, str], model: Embeddings) -> dict[str, np.ndarray]:
    """Static papers' vectors (rag/index/static.py) with the model's vector of each title beside them, each half
    of unit length. On the whole list (2026-12-05), a static index's map laid out from its vectors alone kept 0.082
    of each paper's ten nearest by the model's vectors among its ten nearest on the map, and its themes agreed
    with the int8 index's map's at an adjusted Rand of 0.153; with the titles, 0.164 and 0.331 (the int8 map:
    0.328), for 12.2 s of the model embedding 11,669 titles (docs/benchmarks.md)."""
    ids = list(vectors)
    if not ids:  # an ingest that added no paper (the same file again, decisions only)
        return {}
    embedded = np.asarray(model.embed_documents([titles.get(pid, "") for pid in ids]), dtype=np.float64)
    embedded /= np.maximum(np.linalg.norm(embedded, axis=1, keepdims=True), 1e-12)
    return {pid: np.concatenate([title, vectors[pid]]) / np.sqrt(2) for pid, title in zip(ids, embedded)}


def layout(vectors: np.ndarray) -> np.ndarray:
    """Every paper placed in 2-D, papers with similar vectors near each other: t-SNE (PCA-initialised,
    fixed seed) of the vectors reduced by PCA, scaled into [-1, 1]. Under `FEW` papers, PCA alone: t-SNE's
    neighbourhoods say little of a handful, and importing scikit-learn doubled the seeds' ingest."""
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2))
    if n < FEW:
        centred = vectors - vectors.mean(axis=0)
        _, _, axes = np.linalg.svd(centred, full_matrices=False)
        coords = centred @ axes[:2].T
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    else:
        from openTSNE import TSNE
        from sklearn.decomposition import PCA
        from threadpoolctl import threadpool_limits

        reduced = PCA(min(PCA_DIMENSIONS, n, vectors.shape[1]), random_state=SEED).fit_transform(vectors)
        # t-SNE needs fewer neighbours than papers: a small index gets a perplexity of a third of them.
        perplexity = min(PERPLEXITY, (n - 1) / 3)
        # A small layout in one thread: OpenMP threads waiting on each other (and on torch's) took the seeds'
        # 0.5 to 2 s, against 0.12 s in one.
        # openTSNE picks the gradients' method by size: Barnes-Hut under 10,000 papers, FFT from there on.
        tsne = TSNE(2, perplexity=perplexity, initialization="pca", n_jobs=1 if n < SMALL else -1, random_state=SEED)
        with threadpool_limits(1 if n < SMALL else None):
            coords = np.asarray(tsne.fit(reduced))
    coords = coords - coords.mean(axis=0)
    return coords / max(float(np.abs(coords).max()), 1e-12)


def placed_among(neighbours: list[tuple[float, float, int, float]]) -> tuple[float, float, int]:
    """A new paper's place and theme from its nearest placed papers: the mean of their places, and the theme
    with the most weight among them, each weighted by exp(similarity / `CLOSENESS`), so that a paper far
    nearer than the rest (a new version of a placed one) lands beside it, and ten about as near, among them."""
    similarities = np.asarray([similarity for *_, similarity in neighbours])
    weights = np.exp((similarities - similarities.max()) / CLOSENESS)
    places = np.asarray([(x, y) for x, y, *_ in neighbours])
    x, y = (weights @ places) / weights.sum()
    votes: dict[int, float] = {}
    for (_, _, theme, _), weight in zip(neighbours, weights):
        votes[theme] = votes.get(theme, 0.0) + float(weight)
    return float(x), float(y), max(votes, key=lambda theme: votes[theme])
