"""Ingest speed, memory and index size: our pipeline against the textbook LangChain one, in one run.

    python benchmarks/ingest.py --n 2000                      # ours, textbook, embedding alone
    python benchmarks/ingest.py --n 2000 --backends onnx-int8,onnx,torch   # several backends side by side
    python benchmarks/ingest.py --n 2000 --backends static,onnx-int8      # the static first stage (issue 42)
    python benchmarks/ingest.py --n 11672 --pipelines ours --backends onnx-int8 --keep /tmp/rag-full

The first N records of the ICLR 2025 list are ingested by:
  ours       `RagService.ingest`: token-sized chunks, the configured embedding backend, batched writes
  textbook   RecursiveCharacterTextSplitter(1000, 200) -> HuggingFaceEmbeddings -> Chroma.from_documents
  embedding  our embedding model alone, encoding the very chunks our pipeline made (no splitting, no store)
"searchable" is when every paper is stored and questions are answered (ours: the ingest's own `seconds`,
before the map is laid out; the textbook's store has no map, so its run time). Each runs in its own process
into its own folder, so peak memory (the process's RSS high-water mark)
and the index size on disk are its own. Times exclude Python start-up and imports; model loading is
reported apart ("load") from the work ("run"). Other processes slow every figure down: the load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

from machine import load_line  # benchmarks/machine.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
FULL_LIST = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"
PIPELINES = ("ours", "textbook", "embedding")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="papers: the first N records of the list")
    parser.add_argument("--corpus", type=Path, default=FULL_LIST)
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"comma-separated, of {', '.join(PIPELINES)}")
    parser.add_argument(
        "--backends", default="", help="comma-separated embedding backends for ours/embedding (default: the config's)"
    )
    parser.add_argument("--config", default="extractive")
    parser.add_argument("--keep", type=Path, default=None, help="build our index here and keep it (for query.py)")
    parser.add_argument("--child", choices=PIPELINES, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = json.dumps(run_child(args))
        with (args.work / "results.jsonl").open("a") as log:  # kept even if the parent is stopped early
            log.write(result + "\n")
        print(result)
        return 0

    work = Path(tempfile.mkdtemp(prefix="rag-bench-"))
    try:
        sample = write_sample(args.corpus, args.n, work / "sample.jsonl")
        print(f"{sample['papers']} papers from {args.corpus}; load average before: {load_line()}", flush=True)
        results = []
        backends = args.backends.split(",") if args.backends else [""]
        for name in args.pipelines.split(","):
            for backend in backends if name != "textbook" else [""]:
                target = args.keep if (name == "ours" and args.keep) else work / f"{name}-{backend}"
                results.append(run_in_child(name, backend, args, work, target))
                print(f"  {json.dumps(results[-1])}", flush=True)
        print(f"load average after: {load_line()}\n")
        print(table(results))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def write_sample(corpus: Path, n: int, path: Path) -> dict:
    with gzip.open(corpus, "rt", encoding="utf-8") as source, path.open("w", encoding="utf-8") as out:
        lines = list(islice(source, n))
        out.writelines(lines)
    return {"papers": len(lines)}


def run_in_child(name: str, backend: str, args: argparse.Namespace, work: Path, target: Path) -> dict:
    command = [sys.executable, __file__, "--child", name, "--work", str(work), "--config", args.config]
    command += ["--keep", str(target)] + (["--backends", backend] if backend else [])
    environment = {key: value for key, value in os.environ.items() if not key.startswith("RAG_")}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["index_mib"] = folder_mib(target) if name != "embedding" else None
    return result


def run_child(args: argparse.Namespace) -> dict:
    """One pipeline in this process; returns its figures."""
    sample = args.work / "sample.jsonl"
    shutil.rmtree(args.keep, ignore_errors=True)
    if args.child == "textbook":
        return textbook(sample, args.keep)
    from rag.core.config import with_overrides
    from rag.service import RagService

    embedding = {"onnx_cache": str(ROOT / ".rag" / "models")} | ({"backend": args.backends} if args.backends else {})
    settings = with_overrides(args.config, vectorstore={"path": str(args.keep)}, embedding=embedding)
    started = time.perf_counter()
    service = RagService(settings)
    service.index_embeddings.embed_query("warm-up")  # the model loads (a static one is distilled once) as "load"
    service.index.chunk_count()
    loaded = time.perf_counter()
    searchable = None
    if args.child == "ours":
        report = service.ingest([sample])
        papers, chunks, searchable = report.papers, report.chunks, report.seconds
    else:
        from rag.ingest.papers import load_papers

        texts = [chunk.page_content for paper in load_papers([sample]) for chunk in service.chunker.chunk(paper)]
        loaded = time.perf_counter()  # chunking is not the model's time
        service.index_embeddings.embed_documents(texts)
        papers, chunks = sum(1 for _ in load_papers([sample])), len(texts)
    finished = time.perf_counter()
    run_s = finished - loaded
    return figures(args.child, settings.embedding.backend, papers, chunks, loaded - started, run_s, searchable)


def textbook(sample: Path, folder: Path) -> dict:
    """The pipeline of the LangChain tutorials, with the same bundled model."""
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_huggingface import HuggingFaceEmbeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from rag.core.config import EmbeddingConfig
    from rag.index.embeddings import model_directory

    started = time.perf_counter()
    embeddings = HuggingFaceEmbeddings(
        model_name=str(model_directory(EmbeddingConfig())), model_kwargs={"device": "cpu", "local_files_only": True}
    )
    embeddings.embed_query("warm-up")
    loaded = time.perf_counter()
    with sample.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    documents = [
        Document(page_content=f"{r.get('title', '')}\n\n{r['abstract']}", metadata={"paper_id": r["id"]})
        for r in records
    ]
    splits = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200).split_documents(documents)
    Chroma.from_documents(splits, embeddings, persist_directory=str(folder), collection_name="textbook")
    finished = time.perf_counter()
    return figures(
        "textbook", "torch", len(records), len(splits), loaded - started, finished - loaded, finished - loaded
    )


def figures(
    name: str, backend: str, papers: int, chunks: int, load_s: float, run_s: float, searchable_s: float | None
) -> dict:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB
    return {
        "pipeline": name,
        "backend": backend,
        "papers": papers,
        "chunks": chunks,
        "load_s": round(load_s, 2),
        "run_s": round(run_s, 2),
        "searchable_s": None if searchable_s is None else round(searchable_s, 2),
        "papers_per_s": round(papers / run_s, 2),
        "peak_rss_mib": round(peak_kib / 1024),
    }


def folder_mib(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)


def table(results: list[dict]) -> str:
    head = (
        "| pipeline | backend | papers | chunks | load s | run s | searchable s | papers/s | peak RSS MiB | index MiB |"
    )
    rows = [head, "|" + "---|" * 10]
    for r in results:
        index = "-" if r["index_mib"] is None else f"{r['index_mib']:.1f}"
        searchable = "-" if r["searchable_s"] is None else f"{r['searchable_s']:.1f}"
        rows.append(
            f"| {r['pipeline']} | {r['backend']} | {r['papers']} | {r['chunks']} | {r['load_s']:.1f} | "
            f"{r['run_s']:.1f} | {searchable} | {r['papers_per_s']:.1f} | {r['peak_rss_mib']} | {index} |"
        )
    textbook = next((r for r in results if r["pipeline"] == "textbook"), None)
    for ours in (r for r in results if r["pipeline"] == "ours"):
        alone = next((r for r in results if r["pipeline"] == "embedding" and r["backend"] == ours["backend"]), None)
        if textbook:
            rows.append(f"textbook / ours ({ours['backend']}) run time: {textbook['run_s'] / ours['run_s']:.2f}x")
            rows.append(
                f"ours ({ours['backend']}) searchable / textbook: {ours['searchable_s'] / textbook['run_s']:.2f}x"
            )
        if alone:
            rows.append(f"ours / embedding alone ({ours['backend']}): {ours['run_s'] / alone['run_s']:.2f}x")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
