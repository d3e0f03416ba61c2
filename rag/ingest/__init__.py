"""From files to papers to chunks: loaders (JSONL, CSV, the seed text, OpenReview), chunking, the ingest run."""
