"""The map of the conference, measured: how long building it takes and how much memory, how big its data
is, and how long the page takes to show it.

    cp -r /tmp/full /tmp/full-map                                # never write into the index others use
    python benchmarks/map.py --index /tmp/full-map               # build (a full layout), size, page load
    python benchmarks/map.py --index /tmp/full-map --no-build    # only the size and the page load
    python benchmarks/map.py --index /tmp/full-map --no-build --loads 1 --screenshot docs/ui-map.png   # the README's

Printed: the build's seconds (a full layout: t-SNE and themes of every paper, as `rag map --rebuild`) and the
process's peak RSS (it includes the embedding model and Chroma, as a `rag ingest` holds them); the size of the
map's data the page receives (ui/map_data.py) and of the payload of /v1/map; then, with Chromium, the time from
opening the page to the map's points drawn on its canvas (`--loads` page loads; medians, and each load).
Targets (issue 30), on a 2-core machine: built in <= 5 minutes and <= 2 GB, data <= 10 MB, shown in about a second.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

from machine import load_line  # benchmarks/machine.py, beside this script

from rag.answering.paper_map import read_map, update_map
from rag.core.config import with_overrides
from rag.service import RagService

CHROMIUM = "/usr/bin/chromium"
# the page's canvas (ui/paper_map.js) says how many points it drew
DRAWN = "Number(document.querySelector('#rag-map canvas')?.dataset.points) > 0"


def page_loads(
    service: RagService, loads: int, screenshot: Path | None = None, question: str = ""
) -> list[tuple[float, float]]:
    """Seconds from `goto` to the question box (the page without its map) and to the map drawn on its canvas,
    `loads` times (a first load not counted); with `screenshot`, then `question` asked and the map section
    saved as a PNG."""
    from harness.servers import free_port  # benchmarks/harness/, beside this script
    from playwright.sync_api import sync_playwright

    from ui.app import build_app, launch

    demo = build_app(service)
    url = launch(demo, "127.0.0.1", free_port(), block=False)
    times = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless=new", "--no-sandbox"])
            for run in range(loads + 1):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                started = time.perf_counter()
                page.goto(f"{url}?__theme=light", wait_until="commit")
                page.locator("#rag-question textarea").wait_for(timeout=60_000)
                ready = time.perf_counter() - started
                page.wait_for_function(DRAWN, timeout=60_000, polling=50)
                if run:
                    times.append((ready, time.perf_counter() - started))
                if screenshot and run == loads:
                    shoot(page, screenshot, question)
                page.close()
            browser.close()
    finally:
        demo.close()
    return times


def shoot(page, path: Path, question: str) -> None:
    """Ask `question` on the page, wait for its papers to be highlighted on the map, and save the map section."""
    box = page.locator("#rag-question textarea")
    box.fill(question)
    box.press("Enter")
    highlighted = "Number(document.querySelector('#rag-map canvas')?.dataset.highlighted) > 0"
    page.wait_for_function(highlighted, timeout=300_000)
    page.locator("#rag-map-section").screenshot(path=str(path))
    print(f"saved {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder (a copy of the full list's)")
    parser.add_argument("--no-build", action="store_true", help="measure the stored map; build nothing")
    parser.add_argument("--loads", type=int, default=5, help="page loads timed (0: no browser)")
    parser.add_argument("--screenshot", type=Path, help="then ask --question and save the map section here (a PNG)")
    parser.add_argument("--question", default="Which papers are about mixture-of-experts?")
    args = parser.parse_args()
    service = RagService(with_overrides("extractive", vectorstore={"mode": "persistent", "path": str(args.index)}))
    print(f"load average before: {load_line()}; index: {service.stats()['papers']} papers")
    if not args.no_build:
        service.embeddings.embed_documents(["warm"])  # loaded, as in an ingest, so the RSS below includes it
        started = time.perf_counter()
        update = update_map(service.index, rebuild=True)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"build: {update.summary()}; {seconds:.1f} s, peak RSS {peak:,.0f} MB")
    from ui.map_data import map_data

    started = time.perf_counter()
    found = read_map(service)
    read = time.perf_counter() - started
    started = time.perf_counter()
    data = map_data(found)
    packed = time.perf_counter() - started
    payload = json.dumps(found.to_payload())
    print(
        f"read {read:.2f} s; the page's map data {len(data.encode()) / 1e6:.2f} MB (packed in {packed:.2f} s); "
        f"/v1/map payload {len(payload) / 1e6:.2f} MB"
    )
    if args.loads:
        times = page_loads(service, args.loads, args.screenshot, args.question)
        ready, drawn = (statistics.median(column) for column in zip(*times))
        print(f"page load: the page (its question box) in {ready:.2f} s, the map drawn in {drawn:.2f} s (medians);")
        print(f"  the map drawn, each load: {', '.join(f'{seconds:.2f}' for _, seconds in times)} s")
    print(f"load average after: {load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
