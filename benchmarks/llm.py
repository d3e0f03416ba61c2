"""Time answers from the configured model over the seed question set.

For each answerable question (non-empty `gold`) it measures, through `RagService.stream_answer`
(retrieval, generation, citation check: what a user waits for):
  - time to first token: question asked -> first streamed piece of the answer;
  - time to full answer: question asked -> final, checked `Answer`;
  - prompt and output tokens (llamacpp: counted with the model's own tokenizer and chat template);
and what came out: fallbacks, answers citing a gold paper, supported sentences.

    python benchmarks/llm.py                          # the default config: the bundled SmolLM2
    RAG_LLM__N_THREADS=1 python benchmarks/llm.py     # any setting, as an environment override
    python benchmarks/llm.py --shuffle 1              # questions in a random order (see --help)
    python benchmarks/llm.py --config openai --limit 10 --per-question

The index is built from the bundled seeds in a temporary folder unless --index names one. One
question is answered first and not counted (model load and first-call costs are reported apart).
Targets from issue 3: median full answer <= 4 s, median first token <= 1.5 s, on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rag.core.config import with_overrides
from rag.core.types import Answer
from rag.service import RagService

ROOT = Path(__file__).resolve().parent.parent


QUESTIONS = ROOT / "tests" / "eval" / "seed_questions.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="smollm2", help="config name or path (default: smollm2, the bundled model)")
    parser.add_argument("--questions", default=str(QUESTIONS), help="JSON Lines with question and gold")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--limit", type=int, default=0, help="only the first N answerable questions")
    parser.add_argument("--index", help="an existing index folder (default: seeds ingested into a temp folder)")
    parser.add_argument(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="ask in a shuffled order (the file groups "
        "questions by paper, which lets llama.cpp reuse the previous prompt's start)",
    )
    parser.add_argument("--per-question", action="store_true", help="print one row per question")
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()

    questions = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    questions = [q for q in questions if q["gold"] and args.split in ("all", q["split"])]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(questions)
    questions = questions[: args.limit] if args.limit else questions

    with tempfile.TemporaryDirectory() as scratch:
        service = RagService(
            with_overrides(args.config, vectorstore={"path": args.index or str(Path(scratch) / "index")})
        )
        started = time.perf_counter()
        service.ensure_index()
        indexed = time.perf_counter() - started
        started = time.perf_counter()
        label = service.provider.label
        loaded = time.perf_counter() - started
        counter = TokenCounter(service)
        started = time.perf_counter()
        service.answer(questions[0]["question"])  # first call: caches, thread pools, the prompt prefix
        warm = time.perf_counter() - started
        llm = service.config.llm
        print(
            f"config {service.config.name}: {label}; n_ctx {llm.n_ctx}, n_threads {llm.n_threads or 'all'}, "
            f"n_batch {llm.n_batch}, max_tokens {llm.max_tokens}, context_tokens {llm.context_tokens}"
        )
        print(f"index ready {indexed:.1f} s, model loaded {loaded:.2f} s, first (uncounted) answer {warm:.2f} s")
        if args.per_question:
            print(HEADER, flush=True)
        rows = []
        for question in questions:
            rows.append(measure(service, counter, question))
            if args.per_question:
                print(row_line(rows[-1]), flush=True)
    print_summary(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


class TokenCounter:
    """Prompt and output token counts with the model's own tokenizer (the onnx and llamacpp providers)."""

    def __init__(self, service: RagService):
        self.provider = service.provider
        model = getattr(getattr(self.provider, "answer_chain", None), "steps", [None, None])[1]
        self.onnx = getattr(model, "bound", None) if hasattr(getattr(model, "bound", None), "prompt_ids") else None
        llama = getattr(getattr(model, "bound", None), "client", None)
        self.llama = llama if llama is not None and hasattr(llama, "tokenize") else None
        if self.llama is not None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            template = self.llama.metadata.get("tokenizer.chat_template", "")
            vocab = self.llama._model
            self.formatter = Jinja2ChatFormatter(
                template,
                eos_token=vocab.token_get_text(vocab.token_eos()),
                bos_token=vocab.token_get_text(vocab.token_bos()),
            )

    def prompt(self, question: str, sources) -> int | None:
        if self.llama is None and self.onnx is None:
            return None
        from rag.answering.prompts import ANSWER_PROMPT, format_sources

        fitted = self.provider.prompt_sources(question, sources)
        messages = ANSWER_PROMPT.format_messages(sources=format_sources(fitted), question=question)
        if self.onnx is not None:
            return len(self.onnx.prompt_ids(messages))
        roles = {"system": "system", "human": "user", "ai": "assistant"}
        rendered = self.formatter(messages=[{"role": roles[m.type], "content": m.content} for m in messages]).prompt
        return len(self.llama.tokenize(rendered.encode(), add_bos=False, special=True))

    def output(self, text: str) -> int | None:
        if self.onnx is not None:
            return self.onnx.count_tokens(text) if text else 0
        return len(self.llama.tokenize(text.encode(), add_bos=False, special=False)) if self.llama and text else 0


def prompted(service: RagService, answer: Answer) -> list:
    """The sources as the model saw them: each with its evidence sentences only."""
    from rag.answering.quoting import evidence_sources
    from rag.question.question import lookup

    return evidence_sources(service.picker.pick(lookup(answer.standalone_question), answer.sources), answer.sources)


def measure(service: RagService, counter: TokenCounter, item: dict) -> dict:
    question = item["question"]
    started = time.perf_counter()
    first, pieces, answer = None, [], None
    for piece in service.stream_answer(question):
        if isinstance(piece, Answer):
            answer = piece
        elif piece:
            first = first if first is not None else time.perf_counter() - started
            pieces.append(piece)
    total = time.perf_counter() - started
    streamed = "".join(pieces)
    return {
        "question": question,
        "first_token_s": round(first, 3) if first is not None else None,
        "full_answer_s": round(total, 3),
        "prompt_tokens": counter.prompt(answer.standalone_question, prompted(service, answer))
        if not answer.refused
        else None,
        "output_tokens": counter.output(streamed),
        "pieces": len(pieces),
        "refused": answer.refused,
        "fallback": answer.fallback,
        "replaced": answer.replaced,
        "cites_gold": bool(set(answer.cited) & set(item["gold"])),
        "supported": sum(check.supported for check in answer.checks),
        "sentences": len(answer.checks),
        "text": answer.text,
        "streamed": streamed,
    }


HEADER = f"\n{'first s':>8} {'full s':>7} {'prompt':>6} {'out':>4} {'gold':>4} {'supp':>5}  answer"


def row_line(row: dict) -> str:
    first = f"{row['first_token_s']:.2f}" if row["first_token_s"] is not None else "-"
    status = (
        "REFUSED " if row["refused"] else ("FALLBACK " if row["fallback"] else "SET ASIDE " if row["replaced"] else "")
    )
    return (
        f"{first:>8} {row['full_answer_s']:>7.2f} {row['prompt_tokens'] or '-':>6} {row['output_tokens']:>4} "
        f"{'yes' if row['cites_gold'] else 'no':>4} {row['supported']:>2}/{row['sentences']:<2}  "
        f"{status}{row['text'][:90]!r}"
    )


def print_summary(rows: list[dict]) -> None:
    answered = [r for r in rows if not r["refused"]]
    by_model = [r for r in answered if not r["fallback"] and not r["replaced"]]
    firsts = [r["first_token_s"] for r in answered if r["first_token_s"] is not None]
    fulls = [r["full_answer_s"] for r in answered]
    prompts = [r["prompt_tokens"] for r in answered if r["prompt_tokens"] is not None]
    outputs = [r["output_tokens"] for r in answered if r["output_tokens"] is not None]

    def stat(values, fn, digits=2):
        return f"{fn(values):.{digits}f}" if values else "-"

    def p90(values):
        return sorted(values)[min(len(values) - 1, int(0.9 * len(values)))]

    print(f"\n| measure ({len(rows)} answerable questions) | median | p90 | max |")
    print("|---|---|---|---|")
    print(
        f"| time to first token, s (model streams) | {stat(firsts, statistics.median)} | {stat(firsts, p90)} | "
        f"{stat(firsts, max)} |"
    )
    print(
        f"| time to full answer, s (all answers) | {stat(fulls, statistics.median)} | {stat(fulls, p90)} | "
        f"{stat(fulls, max)} |"
    )
    print(
        f"| prompt tokens | {stat(prompts, statistics.median, 0)} | {stat(prompts, p90, 0)} | {stat(prompts, max, 0)} |"
    )
    print(
        f"| output tokens | {stat(outputs, statistics.median, 0)} | {stat(outputs, p90, 0)} | {stat(outputs, max, 0)} |"
    )
    fallbacks = [r["fallback"] for r in rows if r["fallback"]]
    replaced = sum(bool(r["replaced"]) for r in rows)
    print(
        f"\nrefused {len(rows) - len(answered)}, fell back {len(fallbacks)}, set aside for the extractive answer "
        f"{replaced}, answered by the model {len(by_model)}"
    )
    for reason in sorted(set(fallbacks)):
        print(f"  fallback x{fallbacks.count(reason)}: {reason}")
    if by_model:
        gold = sum(r["cites_gold"] for r in by_model)
        supported = sum(r["supported"] for r in by_model)
        sentences = sum(r["sentences"] for r in by_model)
        print(f"model answers citing a gold paper: {gold}/{len(by_model)}; supported sentences {supported}/{sentences}")


if __name__ == "__main__":
    sys.exit(main())
