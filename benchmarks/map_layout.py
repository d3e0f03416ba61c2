"""The map's layout and themes, measured side by side on the same paper vectors: scikit-learn's Barnes-Hut t-SNE
(the map until issue 42) against openTSNE's t-SNE (the map now: Barnes-Hut under 10,000 papers, FFT-accelerated
gradients from there on), both from the same 50 PCA dimensions, perplexity 30, PCA initialisation, seed 0.

    python benchmarks/map_layout.py --index /tmp/fullidx            # every paper of the index
    python benchmarks/map_layout.py --index /tmp/fullidx --papers 2000

Printed per method: seconds, and how well the picture keeps the papers' neighbourhoods, on the same sample of
papers: `kept@10`, the share of each sampled paper's 10 nearest papers by its vector (cosine) that are also among
its 10 nearest on the map; `theme@10`, the share of its 10 nearest on the map that share its theme (the map's
own k-means themes, computed once for both). Then the themes' k-means alone, as the map builds them.
Both layouts run in this process, one after the other, with the machine's load printed before and after.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from machine import load_line  # benchmarks/machine.py, beside this script

from rag.answering.paper_map import MOST_THEMES
from rag.core.config import with_overrides
from rag.index import paper_map
from rag.index.paper_map import PCA_DIMENSIONS, PERPLEXITY, SEED, paper_vectors
from rag.service import RagService

SAMPLE = 2000  # papers whose neighbourhoods are compared
NEAREST = 10


def sklearn_layout(vectors: np.ndarray) -> np.ndarray:
    """The layout as the map made it before issue 42: scikit-learn's Barnes-Hut t-SNE."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    reduced = PCA(min(PCA_DIMENSIONS, *vectors.shape), random_state=SEED).fit_transform(vectors)
    perplexity = min(PERPLEXITY, (len(vectors) - 1) / 3)
    return TSNE(2, perplexity=perplexity, init="pca", random_state=SEED).fit_transform(reduced)


def nearest(points: np.ndarray, rows: np.ndarray, cosine: bool) -> np.ndarray:
    """For each of `rows`, the indices of its NEAREST nearest other points."""
    if cosine:
        distances = -(points[rows] @ points.T)
    else:
        distances = ((points[rows, None, :] - points[None, :, :]) ** 2).sum(-1)
    distances[np.arange(len(rows)), rows] = np.inf
    return np.argsort(distances, axis=1)[:, :NEAREST]


def scores(vectors: np.ndarray, places: np.ndarray, themes: np.ndarray, rows: np.ndarray) -> tuple[float, float]:
    by_vector, on_map = nearest(vectors, rows, cosine=True), nearest(places, rows, cosine=False)
    kept = np.mean([len(set(a) & set(b)) / NEAREST for a, b in zip(by_vector, on_map)])
    same_theme = np.mean(themes[on_map] == themes[rows, None])
    return float(kept), float(same_theme)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder (e.g. the full list's)")
    parser.add_argument("--papers", type=int, default=0, help="lay out only the first N papers (0: all)")
    args = parser.parse_args()

    service = RagService(with_overrides("extractive", vectorstore={"path": str(args.index)}))
    vectors_by_paper = paper_vectors(service.index)
    ids = sorted(vectors_by_paper)[: args.papers or None]
    vectors = np.stack([vectors_by_paper[pid] for pid in ids]).astype(np.float32)
    rows = np.random.default_rng(SEED).choice(len(ids), min(SAMPLE, len(ids)), replace=False)
    print(f"{len(ids)} papers; {load_line()}")

    from sklearn.cluster import KMeans

    started = time.perf_counter()
    count = max(1, min(MOST_THEMES, round(np.sqrt(len(vectors) / 2))))  # as the map's themes_of
    themes = KMeans(count, n_init=4, random_state=0).fit_predict(vectors)
    print(f"themes (k-means, {count}, n_init=4): {time.perf_counter() - started:.1f} s")

    methods = {"scikit-learn Barnes-Hut t-SNE": sklearn_layout, "openTSNE t-SNE (the map now)": paper_map.layout}
    for name, method in methods.items():
        started = time.perf_counter()
        places = method(vectors)
        seconds = time.perf_counter() - started
        kept, same_theme = scores(vectors, np.asarray(places, dtype=np.float64), themes, rows)
        print(f"{name}: {seconds:.1f} s; kept@10 {kept:.3f}; theme@10 {same_theme:.3f}; {load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
