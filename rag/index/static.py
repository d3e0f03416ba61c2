"""A static first stage: the embedding model distilled into one vector per word piece (issue 42).

model2vec's recipe, run on the model's own ONNX export: every word piece of the vocabulary is encoded alone
(`[CLS] piece [SEP]`) by the fp32 model, the vectors are reduced to DIMS dimensions by PCA and weighted by the
pieces' Zipf frequency (SIF), and a text's vector is the mean of its pieces' vectors. model2vec's `StaticModel`
stores the result (any model2vec user can load the folder); `StaticEmbeddings` runs it as `StaticModel.encode`
does. model2vec's own distiller is not used because it needs packages our registries don't hold
(`skeletoken`) and pins a transformers older than ours. Distilling the bundled MiniLM takes about 14 s here, once
per model; embedding the whole list's abstracts then takes about 3 s, against about 10 minutes for the model.

Static vectors are lossy alone (a text is a bag of pieces), so an index that stores them ranks candidates with
BM25 and these vectors, and the full model scores the candidates it keeps (rag/retrieval/search.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.core.built import build_once

if TYPE_CHECKING:
    from tokenizers import Tokenizer

DIMS = 256  # model2vec's default: PCA keeps the directions that carry the pieces' meaning
SIF = 1e-4  # model2vec's default weight of a piece's estimated frequency
STATIC_RECIPE = 1  # bump when the recipe changes: distilled models are then built again
BATCH = 2048  # pieces encoded per model call (three tokens each)


def static_model_folder(model_file: Path, tokenizer: Callable[[], Tokenizer]) -> Path:
    """The static model distilled from the fp32 export `model_file`, beside it; built on first use (with the model's
    `tokenizer()`)."""
    target = model_file.parent / f"static-{DIMS}-r{STATIC_RECIPE}"
    if not (target / "config.json").is_file():
        print(f"distilling the embedding model into a static one, once: {target}", file=sys.stderr)
    return build_once(
        target, lambda path: distill(model_file, tokenizer(), path), lambda p: (p / "config.json").is_file()
    )


def distill(model_file: Path, tokenizer: Tokenizer, path: Path) -> None:
    """Write to `path` the static model of the export `model_file`: one weighted, PCA-reduced vector per word piece."""
    import onnxruntime as ort
    from model2vec import StaticModel

    session = ort.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    pieces = tokenizer.get_vocab_size()
    first, last = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    ids = np.stack([np.full(pieces, first), np.arange(pieces), np.full(pieces, last)], axis=1).astype(np.int64)
    vectors = np.concatenate(
        [
            session.run(None, {"input_ids": part, "attention_mask": np.ones_like(part)})[0]
            for part in np.array_split(ids, range(BATCH, pieces, BATCH))
        ]
    )
    centred = vectors - vectors.mean(axis=0)
    _, directions = np.linalg.eigh(centred.T @ centred)  # ascending: the last DIMS carry the most variance
    reduced = centred @ directions[:, ::-1][:, :DIMS]
    rank = 1 / np.arange(2, pieces + 2)  # a piece's id as its frequency rank, as model2vec assumes
    reduced *= (SIF / (SIF + rank / rank.sum()))[:, None]
    StaticModel(reduced.astype(np.float32), tokenizer, normalize=True).save_pretrained(path)


class StaticEmbeddings(Embeddings):
    """LangChain `Embeddings` over a distilled static model: unit vectors, no transformer.

    A text's vector is what model2vec's `StaticModel.encode` gives (the test compares them): the text cut to
    `max_length` times the median piece's length in characters, its word pieces up to `max_length` without
    [CLS], [SEP] or [UNK], the mean of their vectors, of unit length. Computed here with numpy, because
    constructing a `StaticModel` (it measures and copies its vocabulary) and importing model2vec took 0.12 s
    of every cold `rag ask` on a static index."""

    def __init__(self, folder: Path, max_length: int):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.vectors = load_file(folder / "model.safetensors")["embeddings"]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)  # the full model's: a chunk's vector covers what it would read
        self.unknown = self.tokenizer.token_to_id(self.tokenizer.model.unk_token)
        pieces = self.tokenizer.get_vocab()
        self.max_chars = max_length * int(np.median([len(piece) for piece in pieces]))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        encoded = self.tokenizer.encode_batch_fast([text[: self.max_chars] for text in texts], add_special_tokens=False)
        means = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float32)
        for row, encoding in enumerate(encoded):
            ids = [piece for piece in encoding.ids if piece != self.unknown]
            if ids:
                means[row] = self.vectors[ids].mean(axis=0)
        return (means / (np.linalg.norm(means, axis=1, keepdims=True) + 1e-32)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
