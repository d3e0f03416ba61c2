"""The textbook LangChain pipeline, as a baseline: RecursiveCharacterTextSplitter(1000, 200) ->
HuggingFaceEmbeddings (the same bundled MiniLM) -> Chroma top-k, with the library defaults.

The only thing added is what a comparison by paper needs: the chunk hits are deduplicated by
paper before the cut to k. The index is built once into a cache folder and reused; the build is
resumable (papers already stored are skipped), because it takes long on two cores.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from rag.core.config import EmbeddingConfig
from rag.index.embeddings import model_directory
from rag.ingest.papers import load_papers

COLLECTION = "textbook"


class TextbookBaseline:
    """Splitter 1000/200, HuggingFaceEmbeddings, Chroma similarity search; ranks papers by their first hit."""

    name = "LangChain textbook"

    def __init__(self, folder: Path):
        from langchain_chroma import Chroma
        from langchain_huggingface import HuggingFaceEmbeddings

        self.embeddings = HuggingFaceEmbeddings(
            model_name=str(model_directory(EmbeddingConfig())), model_kwargs={"device": "cpu", "local_files_only": True}
        )
        self.store = Chroma(
            collection_name=COLLECTION, embedding_function=self.embeddings, persist_directory=str(folder)
        )

    def build(self, corpus: Path, batch: int = 256, log=print) -> int:
        """Split and embed every paper of `corpus` not stored yet; returns the number of chunks stored."""
        from langchain_core.documents import Document
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
        collection = self.store._collection
        papers = list(load_papers([corpus]))
        started, done = time.perf_counter(), 0
        for offset in range(0, len(papers), batch):
            part = papers[offset : offset + batch]
            stored = {
                meta["paper_id"]
                for meta in collection.get(
                    where={"paper_id": {"$in": [p.paper_id for p in part]}}, include=["metadatas"]
                )["metadatas"]
            }
            docs = [
                Document(page_content=f"{p.title}\n\n{p.abstract}", metadata={"paper_id": p.paper_id})
                for p in part
                if p.paper_id not in stored
            ]
            splits = splitter.split_documents(docs)
            if splits:
                seen: Counter[str] = Counter()
                ids = []
                for doc in splits:  # numbered per paper, so a rerun over a half-stored batch overwrites it
                    ids.append(f"{doc.metadata['paper_id']}-{seen[doc.metadata['paper_id']]}")
                    seen[doc.metadata["paper_id"]] += 1
                self.store.add_documents(splits, ids=ids)
            done += len(part)
            log(f"textbook index: {done}/{len(papers)} papers, {time.perf_counter() - started:.0f} s")
        return collection.count()

    def paper_count(self, page: int = 5000) -> int:
        """Distinct papers stored (read in pages: one get of every chunk exceeds SQLite's variable limit)."""
        collection, papers = self.store._collection, set()
        for offset in range(0, collection.count(), page):
            found = collection.get(include=["metadatas"], limit=page, offset=offset)
            papers.update(meta["paper_id"] for meta in found["metadatas"])
        return len(papers)

    def search(self, question: str, k: int) -> list[str]:
        """The first k distinct papers among the nearest chunks."""
        ranked: list[str] = []
        for doc in self.store.similarity_search(question, k=4 * k):
            if doc.metadata["paper_id"] not in ranked:
                ranked.append(doc.metadata["paper_id"])
        return ranked[:k]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build the textbook baseline index (resumable).")
    parser.add_argument("corpus", type=Path)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    print(TextbookBaseline(args.folder).build(args.corpus), "chunks")
