"""Split abstracts into chunks measured in the embedding model's own word pieces.

A chunk is embedded as "title + newline + passage", so the passage budget is what the model
takes (`max_seq_length`, minus its two special tokens) less the title's pieces: no chunk is ever
truncated silently by the model. Each chunk records where its passage sits in the abstract.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import TYPE_CHECKING

from langchain_core.documents import Document

from rag.core.config import ChunkingConfig
from rag.core.papers import PaperRecord
from rag.index.tokens import WordPieces

if TYPE_CHECKING:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

SEPARATORS = ["\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", ""]
MAX_TITLE_TOKENS = 48
SPECIAL_TOKENS = 2  # [CLS] and [SEP]
SLACK_TOKENS = 2  # word pieces can merge differently at the title/passage seam


class Chunker:
    """Turns a paper into the Documents stored in the vector index."""

    def __init__(self, tokenizer: WordPieces, config: ChunkingConfig):
        self.tokenizer = tokenizer
        self.max_seq_length = tokenizer.max_length
        self.config = config
        # The splitter measures every sentence twice (to split, then to merge) and tokenising is most
        # of its time: recent counts are remembered.
        self.count_tokens = lru_cache(maxsize=4096)(self._count_tokens)

    def _count_tokens(self, text: str) -> int:
        return len(self.tokenizer.pieces(text))

    def chunk(self, paper: PaperRecord) -> list[Document]:
        title = self._title_for_embedding(paper.title)
        prefix = f"{title}\n"
        budget = self.max_seq_length - SPECIAL_TOKENS - SLACK_TOKENS - self.count_tokens(title)
        splitter = self._splitter(min(self.config.chunk_tokens, budget))
        metadata = paper.metadata()
        chunks = []
        start = 0
        for index, text in enumerate(splitter.split_text(paper.abstract)):
            # Chunks are substrings in order; LangChain's own start_index misplaces some when they overlap.
            start = paper.abstract.find(text, start)
            content = prefix + text
            chunk_id = hashlib.sha256(f"{paper.paper_id}\0{start}\0{content}".encode()).hexdigest()[:32]
            chunks.append(
                Document(
                    id=chunk_id,
                    page_content=content,
                    metadata={
                        **metadata,
                        "chunk": index,
                        "start": start,
                        "end": start + len(text),
                        "prefix_chars": len(prefix),
                    },
                )
            )
            start += 1
        return chunks

    def _title_for_embedding(self, title: str) -> str:
        pieces = self.tokenizer.pieces(title)
        if len(pieces) <= MAX_TITLE_TOKENS:
            return title
        return self.tokenizer.join(pieces[:MAX_TITLE_TOKENS])

    @lru_cache(maxsize=64)
    def _splitter(self, size: int) -> RecursiveCharacterTextSplitter:
        # Imported on first split: the library takes seconds to import (start-up speed).
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        return RecursiveCharacterTextSplitter(
            chunk_size=size,
            chunk_overlap=min(self.config.overlap_tokens, size // 2),
            length_function=self.count_tokens,
            separators=SEPARATORS,
            keep_separator="end",
            strip_whitespace=True,
        )
