"""A GGUF language model (by default the bundled SmolLM2) run by ONNX Runtime GenAI: wheels only, no compile.

llama-cpp-python builds llama.cpp from source when it installs (6 to 19 minutes on 2 cores). ONNX Runtime
GenAI installs as a wheel and runs an ONNX model of the same network. The ONNX model is built once, on
first use, from the GGUF file: transformers reads the GGUF onto the CPU torch already installed (it
dequantises the weights), and ONNX Runtime GenAI's own model builder writes it as an int4 ONNX model into
the cache folder, under a name derived from the GGUF file and the recipe (about a minute; the MiniLM export
beside it works the same way). Later loads take under a second. Which GGUF files convert: those of the
model families transformers reads from GGUF and the builder writes (llama, mistral, qwen2, phi3, gemma...).

`OnnxChat` is the LangChain chat model over it, so the answer chain (rag/answering/providers.py) is the
same for every model: the prompt through the model's own chat template, generation token by token, the
configured stop strings cut from the text before they are streamed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from rag.core.built import build_once, content_key, dies_with_parent
from rag.core.errors import ModelError, first_line

RECIPE = 1  # bump when the conversion changes: cached models are then rebuilt
PRECISION = "int4"  # like the bundled Q4_1 file; measured against llama.cpp in docs/answers.md
REPEAT_WINDOW = 64  # llama.cpp's repeat_last_n: the tokens a repeat penalty looks back over
ROLES = {"system": "system", "human": "user", "ai": "assistant"}


def converted(gguf: Path, cache_dir: Path) -> Path:
    """The folder of the ONNX Runtime GenAI model made from `gguf`, built into `cache_dir` if missing."""
    folder = Path(cache_dir).expanduser() / f"{gguf.stem}-genai-{fingerprint(gguf, cache_dir)}"
    if not _complete(folder):
        print(f"converting {gguf.name} to ONNX once: {folder}", file=sys.stderr)
        try:
            build_once(folder, lambda work: _build(gguf, work), _complete)
        except OSError as err:  # the cache folder not writable, the disk full
            raise ModelError(f"onnx: cannot build {folder}: {first_line(err)}") from None
    return folder


def fingerprint(gguf: Path, cache_dir: Path) -> str:
    """A short hash of the GGUF file and the recipe: the converted model's cache key."""
    return content_key(f"recipe={RECIPE};precision={PRECISION};prune_lm_head", [gguf], cache_dir)


def _complete(folder: Path) -> bool:
    return (folder / "genai_config.json").is_file()


def _build(gguf: Path, out: Path) -> None:
    """The ONNX model of `gguf` written into the folder `out`, through a transformers folder beside it."""
    _hf_folder(gguf, out.parent / "hf")
    builder = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(out.parent / "hf")]
    builder += ["-o", str(out), "-p", PRECISION, "-e", "cpu", "-c", str(out.parent / "cache")]
    builder += ["--extra_options", "prune_lm_head=true"]  # a prompt's logits for its last token only
    offline = {**os.environ, "HF_HUB_OFFLINE": "1"}  # everything it reads is in the folder given
    done = subprocess.run(builder, capture_output=True, text=True, env=offline, preexec_fn=dies_with_parent)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ModelError(f"onnx: cannot convert {gguf}: the model builder failed: {last[:300]}")


def _hf_folder(gguf: Path, out: Path) -> None:
    """The GGUF model as a transformers folder (fp32 weights, config, tokenizer, chat template)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    where = {"pretrained_model_name_or_path": str(gguf.parent), "gguf_file": gguf.name}
    # transformers draws progress bars (the tensors read, the shards written) that no setting turns off;
    # `_build`'s one line says what is being built instead.
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            tokenizer = AutoTokenizer.from_pretrained(**where)
            read = AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32)
            # A model read from GGUF refuses to be saved; the same weights in a plain model of its config are saved.
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(**where), dtype=torch.float32)
            model.load_state_dict(read.state_dict())
        except Exception as err:  # the GGUF reader fails on a damaged or foreign file in its own ways
            raise ModelError(f"onnx: cannot read {gguf} with transformers: {first_line(err)[:200]}") from None
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)


def penalised(logits: np.ndarray, sequence: np.ndarray, penalty: float) -> np.ndarray:
    """llama.cpp's repeat penalty: the tokens among the sequence's last REPEAT_WINDOW made less likely (a
    positive score divided by the penalty, a negative one multiplied). ONNX Runtime GenAI's own penalises every
    token of the sequence, the prompt's too, and a model told to copy the evidence's words then writes around
    them: 2 to 10% of the answers were the model's, against about half with llama.cpp (docs/answers.md)."""
    recent = np.unique(np.asarray(sequence)[-REPEAT_WINDOW:])
    scores = logits[..., recent]
    logits[..., recent] = np.where(scores > 0, scores / penalty, scores * penalty)
    return logits


class OnnxChat(BaseChatModel):
    """A chat model over an ONNX Runtime GenAI model folder (see `converted`)."""

    folder: str
    threads: int | None = None
    max_tokens: int = 160
    temperature: float = 0.0
    repeat_penalty: float = 1.0
    model: Any = None
    tokenizer: Any = None

    def model_post_init(self, context: Any, /) -> None:
        import onnxruntime_genai as og

        config = og.Config(self.folder)
        if self.threads:
            options = {"intra_op_num_threads": self.threads, "inter_op_num_threads": 1}
            config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
        self.model = og.Model(config)
        self.tokenizer = og.Tokenizer(self.model)

    @property
    def _llm_type(self) -> str:
        return "onnxruntime-genai"

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def prompt_ids(self, messages: list[BaseMessage]) -> list[int]:
        """The messages as the model reads them: through its own chat template, ready to answer."""
        chat = [{"role": ROLES.get(message.type, "user"), "content": message.text} for message in messages]
        prompt = self.tokenizer.apply_chat_template(json.dumps(chat), add_generation_prompt=True)
        return list(self.tokenizer.encode(prompt))

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager=None, **kwargs):
        text = "".join(chunk.text for chunk in self._stream(messages, stop, run_manager, **kwargs))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager=None, **kwargs
    ) -> Iterator[ChatGenerationChunk]:
        for piece in self._pieces(messages, stop or [], kwargs.get("max_tokens", self.max_tokens)):
            if run_manager:
                run_manager.on_llm_new_token(piece)
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))

    def _pieces(self, messages: list[BaseMessage], stop: list[str], max_tokens: int) -> Iterator[str]:
        """The answer's text as it is generated, held back only while it could be the start of a stop string."""
        import onnxruntime_genai as og

        ids = self.prompt_ids(messages)
        params = og.GeneratorParams(self.model)
        greedy = self.temperature == 0
        sampling = {"do_sample": False} if greedy else {"do_sample": True, "temperature": self.temperature}
        params.set_search_options(max_length=len(ids) + max_tokens, **sampling)
        generator = og.Generator(self.model, params)
        generator.append_tokens(ids)
        decoder = self.tokenizer.create_stream()
        text, sent = "", 0
        hold = max((len(word) for word in stop), default=1) - 1
        while not generator.is_done():
            if self.repeat_penalty != 1:
                generator.set_logits(penalised(generator.get_logits(), generator.get_sequence(0), self.repeat_penalty))
            generator.generate_next_token()
            text += decoder.decode(generator.get_next_tokens()[0])
            ends = [at for word in stop if (at := text.find(word, max(sent - hold, 0))) >= 0]
            if ends:
                if min(ends) > sent:
                    yield text[sent : min(ends)]
                return
            if len(text) - hold > sent:
                yield text[sent : len(text) - hold]
                sent = len(text) - hold
        if len(text) > sent:
            yield text[sent:]
