"""The embedding model's word pieces: what the ONNX backend feeds the model and what chunking measures.

Its own module, below both `embeddings.py` (which loads it, `load_tokenizer`) and `onnx.py`, and
below ingest's chunker, which only needs its type.
"""

from __future__ import annotations


class WordPieces:
    """The embedding model's own tokenizer, run by the `tokenizers` library from its `tokenizer.json`
    (what transformers' fast tokenizers wrap), so asking a question imports neither transformers nor torch."""

    def __init__(self, tokenizer, max_length: int):
        self._pieces = tokenizer  # no truncation: measures whole texts for chunking
        self._pieces.no_truncation()
        self._pieces.no_padding()
        self._ids = tokenizer.__class__.from_str(tokenizer.to_str())  # its own copy: settings are per object
        self._ids.enable_truncation(max_length)
        self.max_length = max_length
        self.pad_id = self._ids.token_to_id("[PAD]") or 0

    def copy(self):
        """A copy of the `tokenizers.Tokenizer`, cutting and padding nothing."""
        return self._pieces.__class__.from_str(self._pieces.to_str())

    def ids(self, texts: list[str]) -> list[list[int]]:
        """Model input ids of each text, special tokens included, cut at the model's longest input."""
        return [encoding.ids for encoding in self._ids.encode_batch(texts)]

    def pieces(self, text: str) -> list[str]:
        """The word pieces of a text, without special tokens."""
        return self._pieces.encode(text, add_special_tokens=False).tokens

    def join(self, pieces: list[str]) -> str:
        """Text from word pieces, as the model's own decoder joins them."""
        return self._pieces.decoder.decode(pieces)
