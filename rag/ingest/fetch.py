"""`rag fetch`: every submission of an OpenReview venue, written as the JSON Lines `rag ingest` reads.

The official client (`openreview-py`, the optional extra `[openreview]`) does the HTTP: it retries
429 and 5xx answers with backoff and waits as long as the server's Retry-After says. Pages are read
in id order (`sort=id`, `after=<last id>`), so the output is written page by page to `OUT.VENUE.part`:
a killed fetch continues after the last id in that file, with no duplicates, and only a complete
fetch replaces OUT. A fetch into an existing complete OUT therefore re-reads the venue (a refresh)
and keeps the old file until the new one is whole. VENUE is the venue id as a file name, a long one
cut short and hashed (`slug`).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.core.errors import ConfigError, FetchError, first_line

if TYPE_CHECKING:
    from rag.core.config import FetchConfig

# Short names for the venues people fetch most; `rag fetch openreview VENUE_ID` takes any other.
SHORTCUTS = {"iclr2025": "ICLR.cc/2025/Conference"}
EXTRA = 'pip install -e ".[openreview]"'
ACCEPTED_KINDS = ("oral", "spotlight", "poster")  # as written in an accepted paper's `venue`, any case
MAX_SLUG = 60  # characters of a venue id in a file name (real ones have about 25)


@dataclass(frozen=True)
class Venue:
    """The ids a venue's API v2 group names for its submissions and their outcomes."""

    id: str
    submission_invitation: str
    withdrawn: str
    desk_rejected: str
    rejected: str
    under_review: str

    @classmethod
    def from_group(cls, venue_id: str, content: dict[str, Any]) -> Venue:
        def named(key: str, default: str) -> str:
            return str((content.get(key) or {}).get("value") or default)

        return cls(
            id=venue_id,
            submission_invitation=named("submission_id", f"{venue_id}/-/Submission"),
            withdrawn=named("withdrawn_venue_id", f"{venue_id}/Withdrawn_Submission"),
            desk_rejected=named("desk_rejected_venue_id", f"{venue_id}/Desk_Rejected_Submission"),
            rejected=named("rejected_venue_id", f"{venue_id}/Rejected_Submission"),
            under_review=named("submission_venue_id", f"{venue_id}/Submission"),
        )

    def status(self, venueid: str, venue: str) -> str:
        """The record's status, in the vocabulary of the ICLR 2025 list (Oral ... Desk Rejected)."""
        outcome = {
            self.withdrawn: "Withdrawn",
            self.desk_rejected: "Desk Rejected",
            self.rejected: "Reject",
            self.under_review: "Submitted",
        }.get(venueid)
        if outcome:
            return outcome
        if venueid == self.id:
            words = set(re.findall(r"[a-z]+", venue.lower()))
            return next((kind.capitalize() for kind in ACCEPTED_KINDS if kind in words), "Accept")
        return venue  # a venueid this venue's group does not name (moved elsewhere): keep what it says


@dataclass
class FetchReport:
    """What a fetch did, for the CLI's summary line and for tests."""

    venue: str
    path: Path
    written: int = 0
    resumed: int = 0  # records already in OUT.VENUE.part from a fetch that was stopped
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        resumed = f" ({self.resumed} kept from the stopped fetch)" if self.resumed else ""
        return (
            f"{self.venue}: {self.written + self.resumed} papers{resumed} in {self.path}; "
            f"{len(self.problems)} skipped; {self.seconds:.1f} s"
        )


def resolve_venue(name: str) -> str:
    """A shortcut (`iclr2025`) or a venue id, as given."""
    return SHORTCUTS.get(name.lower(), name)


def output_file(given: str | None, venue_id: str, config: FetchConfig) -> Path:
    """Where a fetch writes: the file given, else fetch.folder/VENUE.jsonl, that folder made if missing
    (a fresh clone has none). A given file's folder must exist: a mistyped path makes no folders."""
    if given:
        return Path(given)
    out = default_output(venue_id, config)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"{out.parent}: cannot create the folder: {err.strerror}") from None
    return out


def default_output(venue_id: str, config: FetchConfig) -> Path:
    return config.folder / f"{slug(venue_id)}.jsonl"


def slug(venue_id: str) -> str:
    """A venue id as a file name: ICLR.cc/2025/Conference -> ICLR.cc-2025-Conference. A long id keeps
    its start and gets a hash of the whole, so a name stays far below file systems' 255 bytes."""
    name = re.sub(r"[^A-Za-z0-9.]+", "-", venue_id).strip("-")
    if len(name) <= MAX_SLUG:
        return name
    return f"{name[: MAX_SLUG - 13]}-{hashlib.sha256(venue_id.encode()).hexdigest()[:12]}"


def fetch_venue(
    venue_id: str,
    out: Path,
    config: FetchConfig,
    on_progress: Callable[[int, int], None] | None = None,
) -> FetchReport:
    """Write every submission of `venue_id` to `out` (JSON Lines); `on_progress(done, total)` per page."""
    if not out.name.endswith(".jsonl"):
        raise ConfigError(f"{out}: the output of a fetch is a .jsonl file")
    if not out.parent.is_dir():
        raise ConfigError(f"{out.parent}: no such folder (the output's folder must exist)")
    started = time.perf_counter()
    part = out.with_name(f"{out.name}.{slug(venue_id)}.part")  # another venue into OUT never resumes this one
    with _file_errors():
        done = _resume(part)
    report = FetchReport(venue_id, out, resumed=len(done))
    # The client reports each retry with print(); stdout is for results, so they become short notes on stderr.
    # Innermost first: the client's errors (requests' are OSErrors too) are named before a file's would be.
    with _file_errors(), contextlib.redirect_stdout(_RetryNotes()), _client_errors(config.openreview_url, venue_id):
        client = open_client(config)
        venue = read_venue(client, venue_id)
        with part.open("a", encoding="utf-8") as sink:
            for page, total in _pages(client, venue, config.page_size, after=max(done, default=None)):
                for note in page:
                    if note.id in done:
                        continue
                    try:
                        record = record_from_note(note.id, note.forum or note.id, note.content or {}, venue, config)
                    except ValueError as err:
                        report.problems.append(f"{note.id}: {err}; skipped")
                        continue
                    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                    done.add(note.id)
                    report.written += 1
                sink.flush()  # a kill loses at most the page being read
                if on_progress:
                    on_progress(len(done) + len(report.problems), total)
    if not done:
        part.unlink(missing_ok=True)
        raise FetchError(
            f"{venue_id}: no public submissions at {config.openreview_url} "
            "(venues before 2024 are on API v1, which rag fetch does not read)"
        )
    with _file_errors():
        os.replace(part, out)
    report.seconds = time.perf_counter() - started
    return report


def openreview_module():
    """The `openreview` package, or one line naming the extra that installs it."""
    try:
        import openreview
    except ImportError:
        raise ConfigError(f"rag fetch needs the OpenReview client: {EXTRA}") from None
    return openreview


def open_client(config: FetchConfig):
    """The official API v2 client; logs in only when the environment holds credentials."""
    openreview = openreview_module()
    username, password = os.environ.get("OPENREVIEW_USERNAME"), os.environ.get("OPENREVIEW_PASSWORD")
    if bool(username) != bool(password):
        raise ConfigError("set both OPENREVIEW_USERNAME and OPENREVIEW_PASSWORD, or neither (public venues need none)")
    # Passed explicitly (None when unset) so the client reads no other variable of its own.
    return openreview.api.OpenReviewClient(baseurl=config.openreview_url, username=username, password=password)


def read_venue(client, venue_id: str) -> Venue:
    """The venue's group; a venue still on API v1 (before 2024) has no `domain` there and is refused."""
    groups = client.get_groups(id=venue_id)
    if not groups:
        raise FetchError(f"{venue_id}: no such venue at {client.baseurl}")
    group = groups[0]
    if not group.domain:
        raise FetchError(
            f"{venue_id} is on OpenReview's API v1 (venues before 2024); rag fetch reads API v2 venues only"
        )
    return Venue.from_group(venue_id, group.content or {})


def record_from_note(note_id: str, forum: str, content: dict[str, Any], venue: Venue, config: FetchConfig) -> dict:
    """One line of the ingest format from an API v2 note's content (`{"field": {"value": ...}}`)."""

    def value(key: str, default: Any = "") -> Any:
        item = content.get(key)
        return item.get("value", default) if isinstance(item, dict) else default

    if not isinstance(note_id, str) or not note_id:
        raise ValueError("no id")
    title, abstract, authors = value("title"), value("abstract"), value("authors", [])
    if not isinstance(title, str) or not isinstance(abstract, str) or not isinstance(authors, list):
        raise ValueError("title, abstract or authors of an unexpected type")
    if not abstract.strip():
        raise ValueError("no abstract")
    venueid, venue_name = str(value("venueid")), str(value("venue"))
    keywords = value("keywords", [])
    return {
        "id": note_id,
        # Entities decoded (titles hold "&amp;" as typed into a web form); LaTeX is left as submitted.
        "title": " ".join(html.unescape(title).split()),
        "abstract": abstract.strip(),
        "authors": [str(name) for name in authors],
        "status": venue.status(venueid, venue_name),
        "venue": venue_name,
        "primary_area": str(value("primary_area")),
        "keywords": [str(word) for word in keywords] if isinstance(keywords, list) else [],
        "openreview_url": f"{config.site_url.rstrip('/')}/forum?id={forum}",
    }


def _pages(client, venue: Venue, size: int, after: str | None) -> Iterator[tuple[list, int]]:
    """(notes, venue total) per page, in id order from just after `after`, until an empty page."""
    params = {"invitation": venue.submission_invitation, "sort": "id", "limit": size}
    notes, total = client.get_notes(**params, after=after, with_count=True)
    while notes:
        yield notes, total
        last = notes[-1].id
        if not isinstance(last, str) or (after is not None and last <= after):
            # Paging goes on from the last id: without one, or going backwards, it would never end.
            raise FetchError(f"OpenReview at {client.baseurl} sent a page out of id order (after {after!r})")
        after = last
        notes = client.get_notes(**params, after=after)


def _resume(part: Path) -> set[str]:
    """Ids already in a stopped fetch's file; a line cut short by the kill is dropped first."""
    if not part.exists():
        return set()
    data = part.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with part.open("r+b") as file:
            file.truncate(len(whole))
    ids = set()
    for line in whole.decode("utf-8").splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            ids.add(json.loads(line)["id"])
    return ids


@contextlib.contextmanager
def _client_errors(url: str, venue_id: str) -> Iterator[None]:
    """The client's exceptions as one FetchError line; what was written stays in OUT.VENUE.part."""
    import requests

    OpenReviewException = openreview_module().OpenReviewException  # noqa: N806 - an exception class
    try:
        yield
    except OpenReviewException as err:
        detail = err.args[0] if err.args else err
        message = detail.get("message", detail) if isinstance(detail, dict) else detail
        if isinstance(detail, dict) and detail.get("name") == "NotFoundError":
            raise FetchError(f"{venue_id}: no such venue at {url}") from None
        raise FetchError(f"OpenReview at {url} refused: {first_line(message) or 'no detail'}") from None
    except requests.exceptions.RequestException as err:
        raise FetchError(f"cannot reach OpenReview at {url}: {first_line(err)}") from None
    except ValueError as err:  # a body that is not the JSON the client expects
        raise FetchError(f"OpenReview at {url} sent an unreadable answer: {first_line(err)}") from None


@contextlib.contextmanager
def _file_errors() -> Iterator[None]:
    """A file that can't be read or written (a name too long, a full disk) as one ConfigError line."""
    try:
        yield
    except OSError as err:
        raise ConfigError(f"{err.filename or 'the output'}: {err.strerror or err}") from None


class _RetryNotes:
    """Stands in for stdout while the client runs: its "Retrying request: GET URL, response: BODY, error: ..."
    becomes "retrying GET URL (busy or failing server)" on stderr. Retries of a connection that failed are
    left out: when they fail too, the one error line says so."""

    def write(self, text: str) -> int:
        if text.startswith("Retrying request: ") and "response: no response" not in text:
            request = text.removeprefix("Retrying request: ").split(", response:")[0]
            print(f"note: OpenReview is busy or failing; retrying {request}", file=sys.stderr)
        return len(text)

    def flush(self) -> None:
        pass
