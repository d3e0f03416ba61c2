"""Where chunks live: the Chroma store, the BM25 index beside it, the embedding models, the write lock."""
