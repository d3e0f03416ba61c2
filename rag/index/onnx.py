"""The sentence-transformers model run by ONNX Runtime: an fp32 export and an int8 one, built locally.

The export is made from the local weights on first use and kept in a cache folder, under a name
derived from the model's files and the export recipe, so a changed model or recipe gets a new
export and never a stale one. The graph takes token ids and returns the normalised mean-pooled
sentence vector, exactly what the model's sentence-transformers pipeline computes; the int8 one
moves the vectors slightly (the measured cosines: docs/operations.md, "Embedding backends").

Why not sentence-transformers' own ONNX backend: it needs `optimum`, whose releases pin a
`transformers` that cannot coexist with Gradio 6.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.core.built import build_once, content_key
from rag.core.errors import ModelError, first_line
from rag.index.tokens import WordPieces

EXPORT_RECIPE = 2  # bump when the export or the quantisation changes: caches are then rebuilt
OPSET = 17
MAX_PADDING = 0.2  # of a batch's tokens (see OnnxEmbeddings._batches)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def onnx_model_file(model_dir: Path, cache_dir: Path, quantized: bool) -> Path:
    """The ONNX export of the model in `model_dir` (int8 when `quantized`), built into `cache_dir` if missing."""
    folder = Path(cache_dir).expanduser() / f"{model_dir.name}-{model_fingerprint(model_dir, cache_dir)}"
    fp32 = _build(folder / "model.onnx", lambda path: export_onnx(model_dir, path), "exporting")
    if not quantized:
        return fp32
    return _build(folder / "model-int8.onnx", lambda path: quantize_onnx(fp32, path), "quantising")


def model_fingerprint(model_dir: Path, cache_dir: Path) -> str:
    """A short hash of the weights and model config plus the export recipe: the export's cache key."""
    weights = next((model_dir / name for name in WEIGHT_FILES if (model_dir / name).is_file()), None)
    if weights is None:
        raise ModelError(f"no model weights ({' or '.join(WEIGHT_FILES)}) in {model_dir}")
    return content_key(f"recipe={EXPORT_RECIPE};opset={OPSET}", [model_dir / "config.json", weights], cache_dir)


def _build(target: Path, write: Callable[[Path], None], doing: str) -> Path:
    if target.is_file():
        return target
    print(f"{doing} the embedding model to ONNX once: {target}", file=sys.stderr)
    try:
        return build_once(target, write, Path.is_file)
    except (OSError, RuntimeError, ValueError) as err:
        raise ModelError(f"cannot build the ONNX model {target}: {first_line(err)}") from None


def export_onnx(model_dir: Path, path: Path) -> None:
    """Export the transformer plus mean pooling and L2 normalisation as one ONNX graph (fp32)."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    # transformers draws a "Loading weights" bar under a new user's first answer; `_build`'s line says enough.
    transformers_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class SentenceEncoder(torch.nn.Module):
        """token ids + attention mask -> unit-length mean of the token vectors (padding excluded)."""

        def __init__(self, transformer):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask):
            tokens = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    example = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns about shape-dependent branches in the attention mask code; the exported
        # graph is checked against the torch vectors in tests/index/test_embeddings.py for many shapes.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SentenceEncoder(model),
            (example, example),
            str(path),
            dynamo=False,  # the TorchScript exporter: no onnxscript needed, and its graph quantises cleanly
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
        )
    fuse_transformer_ops(path, model.config.num_attention_heads, model.config.hidden_size)


def fuse_transformer_ops(path: Path, heads: int, hidden: int) -> None:
    """Rewrite the graph in place with ONNX Runtime's fused BERT operators (attention, skip layer norm,
    bias GELU): the same vectors, about 1.2x faster on CPU."""
    from onnxruntime.transformers.optimizer import optimize_model

    # opt_level 0: only these fusions, no hardware-specific rewrites, so the file stays portable.
    optimize_model(str(path), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0).save_model_to_file(
        str(path)
    )


def quantize_onnx(source: Path, path: Path) -> None:
    """Dynamic int8 quantisation of the matrix multiplications and embeddings, per output channel."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    # It logs a suggestion to pre-process the model, which is meant for static (calibrated) quantisation,
    # through `logging.info`, which also gives the root logger a stderr handler: left there, it would print
    # other libraries' debug lines ("DEBUG:bm25s:...") under a new user's first answer.
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            str(source),
            str(path),
            per_channel=True,
            weight_type=QuantType.QInt8,
            # The fused operators come from ONNX Runtime's own domain, which shape inference can't type.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


class OnnxEmbeddings(Embeddings):
    """LangChain `Embeddings` over an ONNX sentence encoder, tokenised with the model's own tokenizer.

    Texts are tokenised once, sorted by length and run in batches of similar length, so little
    time goes to padding; results come back in the order given.
    """

    def __init__(self, model_file: Path, tokenizer: WordPieces, batch_size: int = 64, threads: int | None = None):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        # Idle worker threads sleep instead of spinning: a spinning thread takes a core from the other
        # threads of this process and from other processes. On a loaded 2-core machine questions were
        # embedded faster and ingest lost nothing (docs/benchmarks.md, "Where a cold extractive answer's
        # time goes").
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own unnamed Fail/InvalidGraph types
            raise ModelError(f"cannot load the ONNX model {model_file}: {first_line(err)}") from None
        self.model_file = Path(model_file)
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors of `texts`, one row each, in the given order."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        ids = self.tokenizer.ids(list(texts))
        rows: dict[int, np.ndarray] = {}  # position in `texts` -> its vector; every position is in a batch
        for part in self._batches(ids):
            for position, vector in zip(part, self._run([ids[i] for i in part])):
                rows[position] = vector
        return np.stack([rows[position] for position in range(len(ids))])

    def _batches(self, ids: list[list[int]]) -> Iterator[list[int]]:
        """Positions in `ids`, shortest first, in batches of at most `batch_size` whose padding
        stays under MAX_PADDING of their tokens.

        Every row of a batch is padded to its longest; the sentences an extractive answer ranks differ
        enough in length that one batch is mostly padding (measured: docs/benchmarks.md, "Less padding").
        """
        batch: list[int] = []
        tokens = 0
        for position in sorted(range(len(ids)), key=lambda i: len(ids[i])):
            width = len(ids[position])  # the longest so far: rows come shortest first
            padded = (len(batch) + 1) * width
            if batch and (len(batch) == self.batch_size or padded > (1 + MAX_PADDING) * (tokens + width)):
                yield batch
                batch, tokens = [], 0
            batch.append(position)
            tokens += width
        if batch:
            yield batch

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(row) for row in batch)
        input_ids = np.full((len(batch), width), self.tokenizer.pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, tokens in enumerate(batch):
            input_ids[row, : len(tokens)] = tokens
            attention_mask[row, : len(tokens)] = 1
        return self.session.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})[0]
