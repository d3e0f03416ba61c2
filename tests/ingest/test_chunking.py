"""Chunks fit the embedding model, overlap, carry metadata and offsets, and have content ids."""

from __future__ import annotations

import pytest
from conftest import SEED_FILE

from rag.core.config import ChunkingConfig, EmbeddingConfig
from rag.core.papers import PaperRecord
from rag.index.embeddings import load_tokenizer
from rag.index.store import passage
from rag.ingest.chunking import Chunker
from rag.ingest.papers import load_papers


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(EmbeddingConfig())


def test_every_seed_chunk_fits_the_model_and_maps_back_to_the_abstract(tokenizer):
    tok = tokenizer
    assert tok.max_length == 256
    chunker = Chunker(tok, ChunkingConfig(chunk_tokens=120, overlap_tokens=24))
    for paper in load_papers([SEED_FILE]):
        chunks = chunker.chunk(paper)
        assert chunks, paper.paper_id
        for chunk in chunks:
            # what the model reads: the title and passage plus [CLS] and [SEP]
            assert len(tok.pieces(chunk.page_content)) + 2 <= tok.max_length
            start, end = chunk.metadata["start"], chunk.metadata["end"]
            assert paper.abstract[start:end] == passage(chunk)
            assert chunk.page_content.startswith(paper.title)
            assert chunk.metadata["paper_id"] == paper.paper_id
        covered = set()
        for chunk in chunks:
            covered.update(range(chunk.metadata["start"], chunk.metadata["end"]))
        assert len(covered) >= len(paper.abstract.strip()) - 5  # nothing of the abstract left out


def test_long_abstracts_get_overlapping_chunks(tokenizer):
    tok = tokenizer
    chunker = Chunker(tok, ChunkingConfig(chunk_tokens=80, overlap_tokens=45))
    paper = next(iter(load_papers([SEED_FILE])))
    chunks = chunker.chunk(paper)
    assert len(chunks) >= 3
    assert any(b.metadata["start"] < a.metadata["end"] for a, b in zip(chunks, chunks[1:]))


def test_a_long_title_shrinks_the_passage_budget_instead_of_being_truncated_away(tokenizer):
    tok = tokenizer
    chunker = Chunker(tok, ChunkingConfig(chunk_tokens=240, overlap_tokens=0))
    paper = PaperRecord("p1", "word " * 40, "Sentence number one is here. " * 60)
    for chunk in chunker.chunk(paper):
        assert len(tok.pieces(chunk.page_content)) + 2 <= tok.max_length


def test_word_pieces_are_those_of_the_models_transformers_tokenizer(tokenizer):
    """The `tokenizers` copy that keeps transformers off the question path gives the same ids."""
    from transformers import AutoTokenizer

    from rag.index.embeddings import model_directory

    reference = AutoTokenizer.from_pretrained(str(model_directory(EmbeddingConfig())), local_files_only=True)
    texts = [paper.title + "\n" + paper.abstract for paper in load_papers([SEED_FILE])]
    texts += ["", "Ünïcode ­soft hyphen, $\\tau$-leaping & 1.2M blocks", "word " * 400]
    assert tokenizer.ids(texts) == reference(texts, truncation=True, max_length=256)["input_ids"]
    assert [tokenizer.pieces(text) for text in texts] == [reference.tokenize(text) for text in texts]
    long_title = tokenizer.pieces(texts[0])[:48]
    assert tokenizer.join(long_title) == reference.convert_tokens_to_string(long_title)


def test_chunk_ids_depend_on_content_only(tokenizer):
    tok = tokenizer
    chunker = Chunker(tok, ChunkingConfig())
    paper = PaperRecord("p1", "Title", "An abstract about graphs. " * 30)
    same = PaperRecord("p1", "Title", "An abstract about graphs. " * 30, source="elsewhere.jsonl")
    other = PaperRecord("p1", "Title", "An abstract about trees. " * 30)
    assert [c.id for c in chunker.chunk(paper)] == [c.id for c in chunker.chunk(same)]
    assert not {c.id for c in chunker.chunk(paper)} & {c.id for c in chunker.chunk(other)}
