"""One index's stored map against another's: how much of the model's picture it keeps (issue 42).

    python benchmarks/map_compare.py --index /tmp/staticidx --against /tmp/fullidx

For papers drawn at random, each one's ten nearest papers by the `--against` index's paper vectors (the
model's, the mean of a paper's chunks) are looked for among its ten nearest on each map (`kept@10`, as in
benchmarks/map_layout.py, which compares layouts of one index's vectors); the themes of the
two maps are compared by the adjusted Rand index (1: the same grouping; 0: as by chance). Both maps are read
as stored (`rag map --rebuild --index …` lays one out again first).
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.metrics import adjusted_rand_score

from rag.answering.paper_map import read_map
from rag.core.config import with_overrides
from rag.index.paper_map import MapPoint, paper_vectors
from rag.service import RagService

NEAREST = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True, help="the index whose map is judged")
    parser.add_argument("--against", required=True, help="the index whose vectors and map it is judged against")
    parser.add_argument("--papers", type=int, default=2000, help="papers drawn at random")
    args = parser.parse_args()
    judged, reference = (
        RagService(with_overrides("extractive", vectorstore={"path": p})) for p in (args.index, args.against)
    )
    ours = {point.paper_id: point for point in read_map(judged).points}
    theirs = {point.paper_id: point for point in read_map(reference).points}
    vectors = paper_vectors(reference.index)
    ids = sorted(set(ours) & set(theirs) & set(vectors))
    print(f"{len(ids)} papers on both maps")
    agreement = adjusted_rand_score([theirs[i].theme for i in ids], [ours[i].theme for i in ids])
    print(f"themes against the other map's (adjusted Rand): {agreement:.3f}")
    drawn = np.random.default_rng(0).choice(len(ids), min(args.papers, len(ids)), replace=False)
    truth = nearest(np.stack([vectors[i] for i in ids]), drawn, by_cosine=True)
    for name, points in (("this map", ours), ("the other map", theirs)):
        found = nearest(places(points, ids), drawn, by_cosine=False)
        kept = np.mean([len(set(a) & set(b)) / NEAREST for a, b in zip(truth, found)])
        print(f"{name}: kept@{NEAREST} {kept:.3f}")
    print("this map's first themes:", "; ".join(read_map(judged).themes[:6]))


def places(points: dict[str, MapPoint], ids: list[str]) -> np.ndarray:
    return np.array([[points[i].x, points[i].y] for i in ids])


def nearest(matrix: np.ndarray, drawn: np.ndarray, by_cosine: bool) -> np.ndarray:
    """The NEAREST rows nearest each drawn row (itself left out): by cosine of unit rows, or by distance."""
    if by_cosine:
        closeness = matrix @ matrix[drawn].T
    else:
        closeness = -((matrix[:, None, :] - matrix[None, drawn, :]) ** 2).sum(-1)
    closeness[drawn, np.arange(len(drawn))] = -np.inf
    return np.argsort(-closeness, axis=0)[:NEAREST].T


if __name__ == "__main__":
    main()
