"""`rag fetch` at the size of a whole venue, without the internet: the ICLR 2025 list served as API v2
notes by the loopback fixture server (1,000 a page, as OpenReview does), fetched by the real client.

    python benchmarks/fetch.py                 # all 11,672 records of ../shared/corpus/iclr2025.jsonl.gz
    python benchmarks/fetch.py --n 2000

Measures what is ours and the client's (requests, parsing, writing), not the network; then checks that
the fetched file says what the list says: same ids, titles, abstracts and statuses.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import tempfile
import time
from itertools import islice
from pathlib import Path

from harness.openreview_server import FixtureServer, OpenReviewFixture  # benchmarks/harness/, beside this script

from rag.core.config import FetchConfig
from rag.ingest.fetch import fetch_venue

ROOT = Path(__file__).resolve().parent.parent

VENUE = "ICLR.cc/2025/Conference"
VENUEID = {
    "Reject": "Rejected_Submission",
    "Withdrawn": "Withdrawn_Submission",
    "Desk Rejected": "Desk_Rejected_Submission",
}


def as_note(record: dict) -> dict:
    """A list record as OpenReview API v2 would answer it (the inverse of `record_from_note`)."""
    venueid = f"{VENUE}/{VENUEID[record['status']]}" if record["status"] in VENUEID else VENUE
    fields = {
        "title": record["title"],
        "abstract": record["abstract"],
        "authors": record["authors"],
        "venue": record["venue"],
        "venueid": venueid,
        "primary_area": record["primary_area"],
    }
    return {
        "id": record["id"],
        "forum": record["id"],
        "invitations": [f"{VENUE}/-/Submission"],
        "content": {key: {"value": value} for key, value in fields.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="first N records of the list (default: all)")
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl.gz"))
    args = parser.parse_args()
    with gzip.open(args.corpus, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in islice(lines, args.n)]
    fixture = OpenReviewFixture(page_cap=1000)
    fixture.notes = {record["id"]: as_note(record) for record in records}
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with FixtureServer(fixture) as server, tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "venue.jsonl"
        started = time.perf_counter()
        report = fetch_venue(VENUE, out, FetchConfig(openreview_url=server.url))
        seconds = time.perf_counter() - started
        fetched = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
        size = out.stat().st_size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pages = len(fixture.notes_requests())
    print(f"{report.written} papers in {pages} requests, {seconds:.1f} s ({report.written / seconds:.0f} papers/s)")
    print(f"file {size / 2**20:.1f} MiB, peak RSS {peak:.0f} MiB (server and client in this process)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    fields = ("title", "status", "venue", "primary_area", "authors")
    differing = {f: sum(fetched[r["id"]][f] != r[f] for r in records) for f in fields}
    differing["abstract"] = sum(fetched[r["id"]]["abstract"] != r["abstract"].strip() for r in records)
    same_ids = fetched.keys() == {r["id"] for r in records}
    print(f"same ids as the list: {same_ids}; records differing by field: {differing}")


if __name__ == "__main__":
    main()
